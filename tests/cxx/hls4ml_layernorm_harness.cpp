// C-simulation harness for hls4ml 1.3's own nnet_layernorm.h (the baseline that
// hwapprox.approx.layernorm.Hls4mlLayerNorm models bit for bit).
//
// hwapprox_instances.h (written by the test from the spec) holds one struct per
// (spec, N) with in_t, out_t, gamma_t, beta_t, accum_t, table_t, n_in and the
// hw_params() constants; ln_config<C> turns it into an nnet::layernorm_config
// exactly as hls4ml's LayerNormalizationConfigTemplate does (seq_len = 1, one
// row per call, product = nnet::product::mult).
//
// Records (see hls_harness.h): "id x[n_in] gamma[n_in] beta[n_in]" -> y[n_in];
// "id" of a DUMP_TABLE instance -> the table_size entries hls4ml's own
// init_invert_sqr_table computes.
#include "hls_harness.h"
#include "nnet_utils/nnet_layernorm.h"
#include "hwapprox_instances.h"

template <class C>
struct ln_config : nnet::layernorm_config {
    static const unsigned n_in = C::n_in;
    static const unsigned seq_len = 1;
    static const unsigned axis = 2;
    static const unsigned epsilon_power_of_10 = C::EPS_POW10;
    static const unsigned table_range_power2 = C::TABLE_RANGE_POW2;
    static const unsigned table_size = C::TABLE_SIZE;
    typedef typename C::accum_t accum_t;
    typedef typename C::beta_t bias_t;
    typedef typename C::gamma_t scale_t;
    typedef typename C::table_t table_t;
    static const unsigned io_type = nnet::io_parallel;
    static const unsigned reuse_factor = 1;
    template <class x_T, class y_T>
    using product = nnet::product::mult<x_T, y_T>;
};

template <class C>
void run_ln(std::istream& in, std::ostream& out) {
    typedef ln_config<C> cfg;
    typename C::in_t x[C::n_in];
    typename C::out_t y[C::n_in];
    typename cfg::scale_t gamma[C::n_in];
    typename cfg::bias_t beta[C::n_in];
    harness::read_array(in, x, C::n_in);
    harness::read_array(in, gamma, C::n_in);
    harness::read_array(in, beta, C::n_in);
    nnet::layernormalize<typename C::in_t, typename C::out_t, cfg>(x, y, gamma, beta);
    harness::write_array(out, y, C::n_in);
}

template <class C>
void dump_table(std::istream&, std::ostream& out) {
    typedef ln_config<C> cfg;
    static typename cfg::table_t table[cfg::table_size];
    nnet::init_invert_sqr_table<cfg, cfg::table_size>(table);
    harness::write_array(out, table, cfg::table_size);
}

int main() {
    int id;
    while (std::cin >> id) {
        switch (id) {
#define X(ID, RUN, CFG)                \
    case ID:                           \
        RUN<CFG>(std::cin, std::cout); \
        break;
            HWAPPROX_INSTANCES(X)
#undef X
            default:
                std::cerr << "unknown instance id " << id << "\n";
                return 2;
        }
    }
    return 0;
}
