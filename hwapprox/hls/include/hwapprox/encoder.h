// hwapprox/encoder.h -- a transformer encoder block, post-LN or pre-LN, with
// optional causal and key-padding masks (io_parallel).
//
// Contract: bit-exact with hwapprox.hls.block.EncoderBlock.model on the same
// raw codes (tests/test_hls_block.py, and through hls4ml compile()/predict()
// in tests/test_hls_hls4ml.py). x and y are row-major [seq][dim].
//   attention(A): Q,K,V = A.W + b; per head: P = softmax(Q_h.K_h^T; M) by rows,
//                 C_h = P.V_h; O = C.Wo + bo
//   FFN(Y)      = GELU(Y.W1 + b1).W2 + b2
//   post-LN (CONFIG_T::prenorm == 0):
//       R1 = x + attention(x); Y1 = LN1(R1); R2 = Y1 + FFN(Y1); y = LN2(R2)
//   pre-LN  (CONFIG_T::prenorm == 1; no final LayerNorm):
//       Y1 = LN1(x); R1 = x + attention(Y1); Y2 = LN2(R1); y = R1 + FFN(Y2)
//   M[i][j] (query i, key j; true = masked out, the softmax mask contract) =
//       (CONFIG_T::causal && j > i) || (CONFIG_T::masked && key_mask[j] == 0);
//   with neither flag set, the unmasked softmax entry point is called.
// Interface:
//   encoder_block<data_T, res_T, CONFIG_T>(x, y)                   masked == 0
//   encoder_block<data_T, mask_T, res_T, CONFIG_T>(x, key_mask, y) masked == 1
// key_mask[seq]: nonzero = real token, 0 = padding (EncoderBlock.model's
// key_mask, True = real token); any type comparable with 0 (bool, ap_uint<1>,
// ap_fixed). The wrong overload for CONFIG_T::masked is a compile error.
// Every intermediate has the explicit type of its sub-config (CONFIG_T::*_cfg,
// generated from the specs): nothing is inherited from a model default. A
// LayerNorm's input is assigned to its in_t first (rounding/overflow of in_t,
// hwapprox.fixed.cast; a no-op where the types agree, as for post-LN).
// Weights are ROM tables of raw codes in the generated config (accessors
// CONFIG_T::wq(i), ...), loaded into typed arrays that HLS folds into constants.
// Latency intent: the sub-units are pipelined and fully unrolled; the block
// is a chain (LN1 ->) QKV -> scores -> softmax -> PV -> O -> add (-> LN) -> FFN
// -> add (-> LN). DATAFLOW across these stages would need streams (io_stream);
// here the function is PIPELINE'd as a whole, so only tiny blocks fit (S, D <= 16).
#ifndef HWAPPROX_ENCODER_H
#define HWAPPROX_ENCODER_H

#include "common.h"
#include "gelu.h"
#include "layernorm.h"
#include "linear.h"
#include "softmax.h"

namespace hwapprox {

// dst[i] = raw code CONFIG_T::NAME(i) as dst's type (a bit copy), i < n. A macro
// rather than a function pointer: HLS tools do not synthesise function pointers.
template <class T>
inline void set_code(T& dst, const ap_int<64>& code) {
    #pragma HLS INLINE
    dst = from_raw<T>(code);
}
#define HWAPPROX_LOAD_CODES(dst, n, NAME)                                      \
    for (int i_ = 0; i_ < (n); i_++) {                                         \
        hwapprox::set_code(dst[i_], ap_int<64>(CONFIG_T::NAME(unsigned(i_)))); \
    }

// The softmax of every row of one head's S x S scores; MASKED: with the mask
// bits drop[S * S] (true = masked out), else the unmasked unit (drop unread).
template <bool MASKED>
struct encoder_softmax_rows;

template <>
struct encoder_softmax_rows<false> {
    template <typename SM, int S>
    static void run(const typename SM::in_t scores[S * S], const bool* /* drop: unread */,
                    typename SM::out_t p[S * S]) {
        #pragma HLS INLINE
    rows:
        for (int s = 0; s < S; s++) {
            softmax<typename SM::in_t, typename SM::out_t, SM>(scores + s * S, p + s * S);
        }
    }
};

template <>
struct encoder_softmax_rows<true> {
    template <typename SM, int S>
    static void run(const typename SM::in_t scores[S * S], const bool drop[S * S],
                    typename SM::out_t p[S * S]) {
        #pragma HLS INLINE
    rows:
        for (int s = 0; s < S; s++) {
            softmax<typename SM::in_t, typename SM::out_t, SM>(scores + s * S, drop + s * S,
                                                               p + s * S);
        }
    }
};

// LayerNorm over S rows of D: each value assigned to LN::in_t, then the unit.
template <class x_T, class res_T, typename LN, int S, int D>
void encoder_layernorm_rows(const x_T x[S * D], const typename LN::gamma_t gamma[D],
                            const typename LN::beta_t beta[D], res_T y[S * D]) {
    #pragma HLS INLINE
rows:
    for (int s = 0; s < S; s++) {
        typename LN::in_t row[D];
        for (int i = 0; i < D; i++) row[i] = x[s * D + i];
        LN::op::template run<typename LN::in_t, res_T, LN>(row, y + s * D, gamma, beta);
    }
}

// O = attention(a): a is the attention input (x post-LN, LN1's output pre-LN);
// real[j] = key j is a real token (read only when CONFIG_T::masked).
template <class a_T, typename CONFIG_T>
void encoder_attention(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                       const bool real[CONFIG_T::seq],
                       typename CONFIG_T::o_cfg::out_t o[CONFIG_T::seq * CONFIG_T::dim]) {
    #pragma HLS INLINE
    const int S = CONFIG_T::seq, D = CONFIG_T::dim, H = CONFIG_T::heads;
    const int DH = CONFIG_T::head_dim;
    typedef typename CONFIG_T::qkv_cfg QKV;
    typedef typename CONFIG_T::qk_cfg QK;
    typedef typename CONFIG_T::pv_cfg PV;
    typedef typename CONFIG_T::o_cfg O;
    typedef typename CONFIG_T::softmax_cfg SM;

    typename QKV::b_t wq[D * D], wk[D * D], wv[D * D];
    typename QKV::bias_t bq[D], bk[D], bv[D];
    typename O::b_t wo[D * D];
    typename O::bias_t bo[D];
    HWAPPROX_LOAD_CODES(wq, D * D, wq);
    HWAPPROX_LOAD_CODES(wk, D * D, wk);
    HWAPPROX_LOAD_CODES(wv, D * D, wv);
    HWAPPROX_LOAD_CODES(bq, D, bq);
    HWAPPROX_LOAD_CODES(bk, D, bk);
    HWAPPROX_LOAD_CODES(bv, D, bv);
    HWAPPROX_LOAD_CODES(wo, D * D, wo);
    HWAPPROX_LOAD_CODES(bo, D, bo);

    // mask bits, shared by every head (constant-folded when neither flag is set)
    bool drop[S * S];
mask_rows:
    for (int i = 0; i < S; i++) {
        for (int j = 0; j < S; j++) {
            const bool future = CONFIG_T::causal != 0 && j > i;
            drop[i * S + j] = future || (CONFIG_T::masked != 0 && !real[j]);
        }
    }

    typename QKV::out_t q[S * D], k[S * D], v[S * D];
    matmul_bias<a_T, typename QKV::b_t, typename QKV::bias_t, typename QKV::out_t, QKV>(
        a, wq, bq, q);
    matmul_bias<a_T, typename QKV::b_t, typename QKV::bias_t, typename QKV::out_t, QKV>(
        a, wk, bk, k);
    matmul_bias<a_T, typename QKV::b_t, typename QKV::bias_t, typename QKV::out_t, QKV>(
        a, wv, bv, v);
    typename PV::out_t ctx[S * D];
heads:
    for (int h = 0; h < H; h++) {
        typename QKV::out_t qh[S * DH], kh[S * DH], vh[S * DH];
        for (int s = 0; s < S; s++) {
            for (int j = 0; j < DH; j++) {
                qh[s * DH + j] = q[s * D + h * DH + j];
                kh[s * DH + j] = k[s * D + h * DH + j];
                vh[s * DH + j] = v[s * D + h * DH + j];
            }
        }
        typename QK::out_t scores[S * S];
        matmul<typename QKV::out_t, typename QKV::out_t, typename QK::out_t, QK>(qh, kh, scores);
        typename SM::out_t p[S * S];
        const bool any_mask = CONFIG_T::causal != 0 || CONFIG_T::masked != 0;
        encoder_softmax_rows<any_mask>::template run<SM, S>(scores, drop, p);
        typename PV::out_t ch[S * DH];
        matmul<typename SM::out_t, typename QKV::out_t, typename PV::out_t, PV>(p, vh, ch);
        for (int s = 0; s < S; s++) {
            for (int j = 0; j < DH; j++) ctx[s * D + h * DH + j] = ch[s * DH + j];
        }
    }
    matmul_bias<typename PV::out_t, typename O::b_t, typename O::bias_t, typename O::out_t, O>(
        ctx, wo, bo, o);
}

// F = FFN(a): a is LN1's output (post-LN) or LN2's output (pre-LN).
template <class a_T, typename CONFIG_T>
void encoder_ffn(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                 typename CONFIG_T::ffn2_cfg::out_t f[CONFIG_T::seq * CONFIG_T::dim]) {
    #pragma HLS INLINE
    const int S = CONFIG_T::seq, D = CONFIG_T::dim, F = CONFIG_T::ffn;
    typedef typename CONFIG_T::ffn1_cfg F1;
    typedef typename CONFIG_T::ffn2_cfg F2;
    typedef typename CONFIG_T::gelu_cfg GE;

    typename F1::b_t w1[D * F];
    typename F1::bias_t b1[F];
    typename F2::b_t w2[F * D];
    typename F2::bias_t b2[D];
    HWAPPROX_LOAD_CODES(w1, D * F, w1);
    HWAPPROX_LOAD_CODES(b1, F, b1);
    HWAPPROX_LOAD_CODES(w2, F * D, w2);
    HWAPPROX_LOAD_CODES(b2, D, b2);

    typename F1::out_t h1[S * F];
    matmul_bias<a_T, typename F1::b_t, typename F1::bias_t, typename F1::out_t, F1>(a, w1, b1,
                                                                                     h1);
    typename GE::out_t g[S * F];
    gelu<typename GE::in_t, typename GE::out_t, GE>(h1, g);
    matmul_bias<typename GE::out_t, typename F2::b_t, typename F2::bias_t, typename F2::out_t,
                F2>(g, w2, b2, f);
}

// The two block orders, each given the key bits real[seq].
template <bool PRENORM>
struct encoder_order;

template <>
struct encoder_order<false> {  // post-LN
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T x[CONFIG_T::seq * CONFIG_T::dim], const bool real[CONFIG_T::seq],
                    res_T y[CONFIG_T::seq * CONFIG_T::dim]) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, D = CONFIG_T::dim;
        typedef typename CONFIG_T::o_cfg O;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typedef typename CONFIG_T::add1_cfg A1;
        typedef typename CONFIG_T::add2_cfg A2;
        typedef typename CONFIG_T::ln1_cfg L1;
        typedef typename CONFIG_T::ln2_cfg L2;
        typename L1::gamma_t g1[D];
        typename L1::beta_t be1[D];
        typename L2::gamma_t g2[D];
        typename L2::beta_t be2[D];
        HWAPPROX_LOAD_CODES(g1, D, g1);
        HWAPPROX_LOAD_CODES(be1, D, be1);
        HWAPPROX_LOAD_CODES(g2, D, g2);
        HWAPPROX_LOAD_CODES(be2, D, be2);

        typename O::out_t o[S * D];
        encoder_attention<data_T, CONFIG_T>(x, real, o);
        typename A1::out_t r1[S * D];
        add<data_T, typename O::out_t, typename A1::out_t, S * D>(x, o, r1);
        typename L1::out_t y1[S * D];
        encoder_layernorm_rows<typename A1::out_t, typename L1::out_t, L1, S, D>(r1, g1, be1, y1);
        typename F2::out_t f[S * D];
        encoder_ffn<typename L1::out_t, CONFIG_T>(y1, f);
        typename A2::out_t r2[S * D];
        add<typename L1::out_t, typename F2::out_t, typename A2::out_t, S * D>(y1, f, r2);
        encoder_layernorm_rows<typename A2::out_t, res_T, L2, S, D>(r2, g2, be2, y);
    }
};

template <>
struct encoder_order<true> {  // pre-LN
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T x[CONFIG_T::seq * CONFIG_T::dim], const bool real[CONFIG_T::seq],
                    res_T y[CONFIG_T::seq * CONFIG_T::dim]) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, D = CONFIG_T::dim;
        typedef typename CONFIG_T::o_cfg O;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typedef typename CONFIG_T::add1_cfg A1;
        typedef typename CONFIG_T::ln1_cfg L1;
        typedef typename CONFIG_T::ln2_cfg L2;
        typename L1::gamma_t g1[D];
        typename L1::beta_t be1[D];
        typename L2::gamma_t g2[D];
        typename L2::beta_t be2[D];
        HWAPPROX_LOAD_CODES(g1, D, g1);
        HWAPPROX_LOAD_CODES(be1, D, be1);
        HWAPPROX_LOAD_CODES(g2, D, g2);
        HWAPPROX_LOAD_CODES(be2, D, be2);

        typename L1::out_t y1[S * D];
        encoder_layernorm_rows<data_T, typename L1::out_t, L1, S, D>(x, g1, be1, y1);
        typename O::out_t o[S * D];
        encoder_attention<typename L1::out_t, CONFIG_T>(y1, real, o);
        typename A1::out_t r1[S * D];  // the residual stream (res_fmt)
        add<data_T, typename O::out_t, typename A1::out_t, S * D>(x, o, r1);
        typename L2::out_t y2[S * D];
        encoder_layernorm_rows<typename A1::out_t, typename L2::out_t, L2, S, D>(r1, g2, be2, y2);
        typename F2::out_t f[S * D];
        encoder_ffn<typename L2::out_t, CONFIG_T>(y2, f);
        add<typename A1::out_t, typename F2::out_t, res_T, S * D>(r1, f, y);  // out_fmt
    }
};

// A block without a key mask (CONFIG_T::masked == 0; it may still be causal).
template <class data_T, class res_T, typename CONFIG_T>
void encoder_block(const data_T x[CONFIG_T::seq * CONFIG_T::dim],
                   res_T y[CONFIG_T::seq * CONFIG_T::dim]) {
    #pragma HLS INLINE off
    static_assert(CONFIG_T::masked == 0,
                  "this encoder block is key-masked (masked = 1): call "
                  "encoder_block<data_T, mask_T, res_T, CONFIG_T>(x, key_mask, y)");
    bool real[CONFIG_T::seq];
    for (int j = 0; j < CONFIG_T::seq; j++) real[j] = true;
    encoder_order<CONFIG_T::prenorm != 0>::template run<data_T, res_T, CONFIG_T>(x, real, y);
}

// A key-masked block (CONFIG_T::masked == 1): key_mask[j] != 0 = key j is a real token.
template <class data_T, class mask_T, class res_T, typename CONFIG_T>
void encoder_block(const data_T x[CONFIG_T::seq * CONFIG_T::dim],
                   const mask_T key_mask[CONFIG_T::seq],
                   res_T y[CONFIG_T::seq * CONFIG_T::dim]) {
    #pragma HLS INLINE off
    #pragma HLS ARRAY_PARTITION variable = key_mask complete
    static_assert(CONFIG_T::masked != 0,
                  "this encoder block has no key mask (masked = 0): call "
                  "encoder_block<data_T, res_T, CONFIG_T>(x, y)");
    bool real[CONFIG_T::seq];
keys:
    for (int j = 0; j < CONFIG_T::seq; j++) real[j] = key_mask[j] != 0;
    encoder_order<CONFIG_T::prenorm != 0>::template run<data_T, res_T, CONFIG_T>(x, real, y);
}

}  // namespace hwapprox

#endif  // HWAPPROX_ENCODER_H
