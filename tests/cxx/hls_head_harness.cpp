// C-simulation harness for hwapprox/head.h (protocol: hls_harness.h).
// run_head: "id W n x..." with W = w[dim*n_out] b[n_out] g[dim] be[dim] raw codes and
// n = k*seq*dim input codes -> k blocks of rows*n_out outputs.
// run_head_stream: the same through dense_head_stream (nnet::array packs).
#include "hls_harness.h"
#include "hwapprox/head.h"
#include "hwapprox_instances.h"
#include "nnet_utils/nnet_types.h"

template <typename C>
struct head_weights {
    typename C::weight_t w[C::dim * C::n_out];
    typename C::bias_t b[C::n_out];
    typename C::gamma_t g[C::dim];
    typename C::beta_t be[C::dim];

    void read(std::istream& in) {
        harness::read_array(in, w, C::dim * C::n_out);
        harness::read_array(in, b, C::n_out);
        harness::read_array(in, g, C::dim);
        harness::read_array(in, be, C::dim);
    }
};

template <typename C>
void run_head(std::istream& in, std::ostream& out) {
    static head_weights<C> w;
    w.read(in);
    int count;
    in >> count;
    for (int done = 0; done < count; done += C::seq * C::dim) {
        typename C::in_t x[C::seq * C::dim];
        typename C::out_t y[C::rows * C::n_out];
        harness::read_array(in, x, C::seq * C::dim);
        hwapprox::dense_head<typename C::in_t, typename C::out_t, C>(x, y, w.w, w.b, w.g, w.be);
        for (int i = 0; i < C::rows * C::n_out; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_head_stream(std::istream& in, std::ostream& out) {
    typedef nnet::array<typename C::in_t, C::dim> in_pack;
    typedef nnet::array<typename C::out_t, C::n_out> out_pack;
    static head_weights<C> w;
    w.read(in);
    int count;
    in >> count;
    for (int done = 0; done < count; done += C::seq * C::dim) {
        hls::stream<in_pack> xs;
        hls::stream<out_pack> ys;
        for (int s = 0; s < C::seq; s++) {
            in_pack pk;
            harness::read_array(in, &pk[0], C::dim);
            xs.write(pk);
        }
        hwapprox::dense_head_stream<in_pack, out_pack, C>(xs, ys, w.w, w.b, w.g, w.be);
        for (int r = 0; r < C::rows; r++) {
            const out_pack pk = ys.read();
            for (int i = 0; i < C::n_out; i++) out << harness::to_raw(pk[i]) << ' ';
        }
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
