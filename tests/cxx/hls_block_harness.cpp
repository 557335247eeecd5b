// C-simulation harness for hwapprox/encoder.h (protocol: hls_harness.h).
// Every record starts with the 21 weight arrays as raw codes (WEIGHT_NAMES order:
// wq bq wk bk wv bv wo bo w1 b1 w2 b2 g1 be1 g2 be2 sb wu bu rc rs, sizes from the config).
// run_block (masked = 0): "id W n x..." with n = k*seq*dim codes -> k blocks of outputs.
// run_block_masked (masked = 1): "id W k {x[seq*dim] key_mask[seq]}*k" with key_mask
// 1 = real token, 0 = padding -> k blocks of outputs.
// run_block_stream / run_block_stream_masked: the same through encoder_block_stream
// (hls::stream of nnet::array packs, one per token).
#include "hls_harness.h"
#include "hwapprox/encoder.h"
#include "hwapprox_instances.h"
#include "nnet_utils/nnet_types.h"

template <typename C>
struct block_weights {
    static const int D = C::dim, F = C::ffn;
    typename C::weight_t wq[D * D], wk[D * D], wv[D * D], wo[D * D], w1[D * F], w2[F * D];
    typename C::bias_t bq[D], bk[D], bv[D], bo[D], b1[F], b2[D];
    typename C::gamma1_t g1[D];
    typename C::beta1_t be1[D];
    typename C::gamma2_t g2[D];
    typename C::beta2_t be2[D];
    typename C::score_bias_t sb[C::score_bias_n];
    typename C::weight_t wu[C::up_n];
    typename C::bias_t bu[C::up_bias_n];
    typename C::rope_t rc[C::rope_n], rs[C::rope_n];

    void read(std::istream& in) {
        harness::read_array(in, wq, D * D);
        harness::read_array(in, bq, D);
        harness::read_array(in, wk, D * D);
        harness::read_array(in, bk, D);
        harness::read_array(in, wv, D * D);
        harness::read_array(in, bv, D);
        harness::read_array(in, wo, D * D);
        harness::read_array(in, bo, D);
        harness::read_array(in, w1, D * F);
        harness::read_array(in, b1, F);
        harness::read_array(in, w2, F * D);
        harness::read_array(in, b2, D);
        harness::read_array(in, g1, D);
        harness::read_array(in, be1, D);
        harness::read_array(in, g2, D);
        harness::read_array(in, be2, D);
        harness::read_array(in, sb, C::score_bias_n);
        harness::read_array(in, wu, C::up_n);
        harness::read_array(in, bu, C::up_bias_n);
        harness::read_array(in, rc, C::rope_n);
        harness::read_array(in, rs, C::rope_n);
    }
};
#define BLOCK_WEIGHTS(w)                                                                   \
    w.wq, w.bq, w.wk, w.bk, w.wv, w.bv, w.wo, w.bo, w.w1, w.b1, w.w2, w.b2, w.g1, w.be1, w.g2, \
        w.be2, w.sb, w.wu, w.bu, w.rc, w.rs

template <typename C>
void run_block(std::istream& in, std::ostream& out) {
    const int N = C::seq * C::dim;
    static block_weights<C> w;
    w.read(in);
    int count;
    in >> count;
    for (int done = 0; done < count; done += N) {
        typename C::in_t x[N];
        typename C::out_t y[N];
        harness::read_array(in, x, N);
        hwapprox::encoder_block<typename C::in_t, typename C::out_t, C>(x, y, BLOCK_WEIGHTS(w));
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_block_masked(std::istream& in, std::ostream& out) {
    const int N = C::seq * C::dim;
    static block_weights<C> w;
    w.read(in);
    int samples;
    in >> samples;
    for (int b = 0; b < samples; b++) {
        typename C::in_t x[N];
        ap_uint<1> key_mask[C::seq];
        typename C::out_t y[N];
        harness::read_array(in, x, N);
        harness::read_array(in, key_mask, C::seq);
        hwapprox::encoder_block<typename C::in_t, ap_uint<1>, typename C::out_t, C>(
            x, key_mask, y, BLOCK_WEIGHTS(w));
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

// The stream versions: packs of dim values per token, the mask one pack of seq.
template <typename C>
void run_block_stream(std::istream& in, std::ostream& out) {
    typedef nnet::array<typename C::in_t, C::dim> in_pack;
    typedef nnet::array<typename C::out_t, C::dim> out_pack;
    static block_weights<C> w;
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
        hwapprox::encoder_block_stream<in_pack, out_pack, C>(xs, ys, BLOCK_WEIGHTS(w));
        for (int s = 0; s < C::seq; s++) {
            const out_pack pk = ys.read();
            for (int i = 0; i < C::dim; i++) out << harness::to_raw(pk[i]) << ' ';
        }
    }
    out << '\n';
}

template <typename C>
void run_block_stream_masked(std::istream& in, std::ostream& out) {
    typedef nnet::array<typename C::in_t, C::dim> in_pack;
    typedef nnet::array<ap_uint<1>, C::seq> mask_pack;
    typedef nnet::array<typename C::out_t, C::dim> out_pack;
    static block_weights<C> w;
    w.read(in);
    int samples;
    in >> samples;
    for (int b = 0; b < samples; b++) {
        hls::stream<in_pack> xs;
        hls::stream<mask_pack> ms;
        hls::stream<out_pack> ys;
        for (int s = 0; s < C::seq; s++) {
            in_pack pk;
            harness::read_array(in, &pk[0], C::dim);
            xs.write(pk);
        }
        mask_pack m;
        harness::read_array(in, &m[0], C::seq);
        ms.write(m);
        hwapprox::encoder_block_stream<in_pack, mask_pack, out_pack, C>(xs, ms, ys,
                                                                        BLOCK_WEIGHTS(w));
        for (int s = 0; s < C::seq; s++) {
            const out_pack pk = ys.read();
            for (int i = 0; i < C::dim; i++) out << harness::to_raw(pk[i]) << ' ';
        }
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
