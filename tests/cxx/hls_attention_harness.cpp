// C-simulation harness for hwapprox/attention.h (protocol: hls_harness.h).
// run_rows / run_rows_stream: "id R {q[dim] k[n_keys*dim] v[n_keys*dim_v] mask[n_keys]}*R"
// -> R rows of dim_v outputs (arrays / streams of nnet::array packs).
#include "hls_harness.h"
#include "hwapprox/attention.h"
#include "hwapprox_instances.h"
#include "nnet_utils/nnet_types.h"

template <typename C>
struct row_in {
    typename C::q_t q[C::dim];
    typename C::k_t k[C::n_keys * C::dim];
    typename C::v_t v[C::n_keys * C::dim_v];
    bool mask[C::n_keys];

    void read(std::istream& in) {
        harness::read_array(in, q, C::dim);
        harness::read_array(in, k, C::n_keys * C::dim);
        harness::read_array(in, v, C::n_keys * C::dim_v);
        for (int j = 0; j < C::n_keys; j++) {
            long long b;
            in >> b;
            mask[j] = b != 0;
        }
    }
};

template <typename C>
void run_rows(std::istream& in, std::ostream& out) {
    static row_in<C> r;
    int rows;
    in >> rows;
    for (int n = 0; n < rows; n++) {
        r.read(in);
        typename C::out_t y[C::dim_v];
        hwapprox::attention_row<typename C::q_t, typename C::k_t, typename C::v_t,
                                typename C::out_t, C>(r.q, r.k, r.v, r.mask, y);
        for (int i = 0; i < C::dim_v; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_rows_stream(std::istream& in, std::ostream& out) {
    typedef nnet::array<typename C::q_t, C::dim> q_pack;
    typedef nnet::array<typename C::k_t, C::dim> k_pack;
    typedef nnet::array<typename C::v_t, C::dim_v> v_pack;
    typedef nnet::array<typename C::out_t, C::dim_v> y_pack;
    static row_in<C> r;
    int rows;
    in >> rows;
    for (int n = 0; n < rows; n++) {
        r.read(in);
        hls::stream<q_pack> qs;
        hls::stream<k_pack> ks;
        hls::stream<v_pack> vs;
        hls::stream<bool> ms;
        hls::stream<y_pack> ys;
        q_pack qp;
        for (int i = 0; i < C::dim; i++) qp[i] = r.q[i];
        qs.write(qp);
        for (int j = 0; j < C::n_keys; j++) {
            k_pack kp;
            v_pack vp;
            for (int i = 0; i < C::dim; i++) kp[i] = r.k[j * C::dim + i];
            for (int i = 0; i < C::dim_v; i++) vp[i] = r.v[j * C::dim_v + i];
            ks.write(kp);
            vs.write(vp);
            ms.write(r.mask[j]);
        }
        hwapprox::attention_row_stream<q_pack, k_pack, v_pack, y_pack, C>(qs, ks, vs, ms, ys);
        const y_pack yp = ys.read();
        for (int i = 0; i < C::dim_v; i++) out << harness::to_raw(yp[i]) << ' ';
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
