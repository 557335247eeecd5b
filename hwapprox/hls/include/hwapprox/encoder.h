// hwapprox/encoder.h -- a transformer encoder block, post-LN or pre-LN, with
// optional causal and key-padding masks (io_parallel).
//
// Contract: bit-exact with hwapprox.approx.block.EncoderBlock.model on the same
// raw codes (tests/test_hls_block.py, and through hls4ml compile()/predict()
// in tests/test_hls_hls4ml.py). x and y are row-major [seq][dim].
//   attention(A): Q,K,V = A.W + b; per head: P = softmax(Q_h.K_h^T (+ B_h); M) by
//                 rows, C_h = P.V_h; O = C.Wo + bo
//                 (CONFIG_T::score_bias == 1: B_h = sb[h][S][S], a constant table
//                 added to the scores in softmax_cfg::in_t, sbias_cfg; else sb is one
//                 unread value)
//                 (CONFIG_T::fused == 1: C_h row by row in one pass over the keys,
//                 attention.h; the scores are used as they are computed, never stored)
//                 (CONFIG_T::rope == 1: each head's Q_h and K_h rotated first,
//                 linear.h rotary with the [seq][head_dim] tables rc, rs, rope_t codes,
//                 the result in qkv_cfg::out_t; Llama's rotary position embedding)
//   FFN(Y)      = act(Y.W1 + b1).W2 + b2, act by CONFIG_T::ffn_act: 0 = the GELU unit
//                 (gelu_cfg; erf, tanh or quick_gelu, whatever its spec computes), 1 =
//                 ReLU, max(h, 0) in ffn1_cfg::out_t (exact; no gelu_cfg), 2 = gated
//                 (Llama): Z = gate_cfg::out_t(gelu_cfg unit(Y.W1 + b1) * up_cfg::out_t(
//                 Y.Wu + bu)), the gelu unit a SiLU, the product exact, one cast;
//                 FFN = Z.W2 + b2
//   post-LN (CONFIG_T::prenorm == 0):
//       R1 = x + attention(x); Y1 = LN1(R1); R2 = Y1 + FFN(Y1); y = LN2(R2)
//   pre-LN  (CONFIG_T::prenorm == 1; no final LayerNorm):
//       Y1 = LN1(x); R1 = x + attention(Y1); Y2 = LN2(R1); y = R1 + FFN(Y2)
//   M[i][j] (query i, key j; true = masked out, the softmax mask contract) =
//       (CONFIG_T::causal && j > i) || (CONFIG_T::window && i - j >= CONFIG_T::window)
//       || (CONFIG_T::masked && key_mask[j] == 0);
//   (window: a causal local window of that many keys, 0 = none); with neither causal
//   nor masked set, the unmasked softmax entry point is called.
// Interface (W = the 21 weight arrays wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, w2,
// b2, g1, be1, g2, be2, sb, wu, bu, rc, rs, in that order, of the config's weight_t /
// bias_t / gamma{1,2}_t / beta{1,2}_t / score_bias_t / rope_t; w* row-major [in][out];
// sb [score_bias_n] = [heads][seq][seq] or one value; wu [up_n] = [dim][ffn] and bu
// [up_bias_n] = [ffn] (ffn_act == 2) or one value each; rc, rs [rope_n] = [seq][head_dim]
// (rope == 1) or one value each; a one-value array is never read):
//   encoder_block<data_T, res_T, CONFIG_T>(x, y, W...)                   masked == 0
//   encoder_block<data_T, mask_T, res_T, CONFIG_T>(x, key_mask, y, W...) masked == 1
//   encoder_block_stream<...>: the same on hls::stream<nnet::array<T, dim>>
//     (io_stream: one pack of dim values per token, seq packs in and out)
// key_mask[seq]: nonzero = real token, 0 = padding (EncoderBlock.model's
// key_mask, True = real token); any type comparable with 0 (bool, ap_uint<1>,
// ap_fixed). The wrong overload for CONFIG_T::masked is a compile error.
// Every intermediate has the explicit type of its sub-config (CONFIG_T::*_cfg,
// generated from the specs): nothing is inherited from a model default. A
// LayerNorm's input is assigned to its in_t first (rounding/overflow of in_t,
// hwapprox.fixed.cast; a no-op where the types agree, as for post-LN).
// Weights are function arguments, as hls4ml passes a Dense layer's: the
// generated project declares them in firmware/weights/*.h (constant initialisers
// under __SYNTHESIS__, ROMs after synthesis; loaded from .txt in C-sim).
// Latency intent: the sub-units are pipelined and fully unrolled; the block
// is a chain (LN1 ->) QKV -> scores -> softmax -> PV -> O -> add (-> LN) -> FFN
// -> add (-> LN). DATAFLOW across these stages would need streams (io_stream);
// here the function is PIPELINE'd as a whole, so only tiny blocks fit (S, D <= 16).
#ifndef HWAPPROX_ENCODER_H
#define HWAPPROX_ENCODER_H

#include "attention.h"
#include "common.h"
#include "gelu.h"
#include "hls_stream.h"
#include "layernorm.h"
#include "linear.h"
#include "softmax.h"

namespace hwapprox {

// The 21 weight parameters (needs CONFIG_T in scope) and the arguments forwarding them.
#define HWAPPROX_ENCODER_WEIGHT_PARAMS                                    \
    const typename CONFIG_T::weight_t wq[CONFIG_T::dim * CONFIG_T::dim],  \
        const typename CONFIG_T::bias_t bq[CONFIG_T::dim],                \
        const typename CONFIG_T::weight_t wk[CONFIG_T::dim * CONFIG_T::dim], \
        const typename CONFIG_T::bias_t bk[CONFIG_T::dim],                \
        const typename CONFIG_T::weight_t wv[CONFIG_T::dim * CONFIG_T::dim], \
        const typename CONFIG_T::bias_t bv[CONFIG_T::dim],                \
        const typename CONFIG_T::weight_t wo[CONFIG_T::dim * CONFIG_T::dim], \
        const typename CONFIG_T::bias_t bo[CONFIG_T::dim],                \
        const typename CONFIG_T::weight_t w1[CONFIG_T::dim * CONFIG_T::ffn], \
        const typename CONFIG_T::bias_t b1[CONFIG_T::ffn],                \
        const typename CONFIG_T::weight_t w2[CONFIG_T::ffn * CONFIG_T::dim], \
        const typename CONFIG_T::bias_t b2[CONFIG_T::dim],                \
        const typename CONFIG_T::gamma1_t g1[CONFIG_T::dim],              \
        const typename CONFIG_T::beta1_t be1[CONFIG_T::dim],              \
        const typename CONFIG_T::gamma2_t g2[CONFIG_T::dim],              \
        const typename CONFIG_T::beta2_t be2[CONFIG_T::dim],              \
        const typename CONFIG_T::score_bias_t sb[CONFIG_T::score_bias_n], \
        const typename CONFIG_T::weight_t wu[CONFIG_T::up_n],             \
        const typename CONFIG_T::bias_t bu[CONFIG_T::up_bias_n],          \
        const typename CONFIG_T::rope_t rc[CONFIG_T::rope_n],             \
        const typename CONFIG_T::rope_t rs[CONFIG_T::rope_n]
#define HWAPPROX_ENCODER_WEIGHT_ARGS \
    wq, bq, wk, bk, wv, bv, wo, bo, w1, b1, w2, b2, g1, be1, g2, be2, sb, wu, bu, rc, rs

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

// One score plus its bias: sbias_cfg's add (the exact sum assigned to out_t, the
// softmax input type); score_bias == 1 only.
template <typename CONFIG_T>
typename CONFIG_T::sbias_cfg::out_t score_plus_bias(typename CONFIG_T::qk_cfg::out_t s,
                                                    typename CONFIG_T::score_bias_t b) {
    #pragma HLS INLINE
    const typename CONFIG_T::qk_cfg::out_t a[1] = {s};
    const typename CONFIG_T::score_bias_t c[1] = {b};
    typename CONFIG_T::sbias_cfg::out_t r[1];
    add<typename CONFIG_T::qk_cfg::out_t, typename CONFIG_T::score_bias_t,
        typename CONFIG_T::sbias_cfg::out_t, 1>(a, c, r);
    return r[0];
}

// One head's context C_h = attention(Q_h, K_h, V_h; M), [S][DH] each.
template <bool FUSED>
struct encoder_head_schedule;

// two_pass: the S x S scores, the softmax of each row (the row buffered), then P.V.
template <>
struct encoder_head_schedule<false> {
    template <typename CONFIG_T>
    static void run(const typename CONFIG_T::qkv_cfg::out_t qh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const typename CONFIG_T::qkv_cfg::out_t kh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const typename CONFIG_T::qkv_cfg::out_t vh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const bool drop[CONFIG_T::seq * CONFIG_T::seq],
                    const typename CONFIG_T::score_bias_t* sbh,
                    typename CONFIG_T::pv_cfg::out_t ch[CONFIG_T::seq * CONFIG_T::head_dim]) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq;
        typedef typename CONFIG_T::qkv_cfg QKV;
        typedef typename CONFIG_T::qk_cfg QK;
        typedef typename CONFIG_T::pv_cfg PV;
        typedef typename CONFIG_T::softmax_cfg SM;
        typename QK::out_t scores[S * S];
        matmul<typename QKV::out_t, typename QKV::out_t, typename QK::out_t, QK>(qh, kh, scores);
        if (CONFIG_T::score_bias != 0) {
        bias:
            for (int i = 0; i < S * S; i++) {
                scores[i] = score_plus_bias<CONFIG_T>(scores[i], sbh[i]);
            }
        }
        typename SM::out_t p[S * S];
        const bool any_mask = CONFIG_T::causal != 0 || CONFIG_T::masked != 0;
        encoder_softmax_rows<any_mask>::template run<SM, S>(scores, drop, p);
        matmul<typename SM::out_t, typename QKV::out_t, typename PV::out_t, PV>(p, vh, ch);
    }
};

// fused: per query row one pass over the keys (attention.h's running m, d and DH
// accumulators; hwapprox.approx.attention.AttentionRowSpec.model_scores): each score
// is the qk stage's dot product (accum_t adds, one cast), used at once, never stored.
template <>
struct encoder_head_schedule<true> {
    template <typename CONFIG_T>
    static void run(const typename CONFIG_T::qkv_cfg::out_t qh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const typename CONFIG_T::qkv_cfg::out_t kh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const typename CONFIG_T::qkv_cfg::out_t vh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const bool drop[CONFIG_T::seq * CONFIG_T::seq],
                    const typename CONFIG_T::score_bias_t* sbh,
                    typename CONFIG_T::pv_cfg::out_t ch[CONFIG_T::seq * CONFIG_T::head_dim]) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, DH = CONFIG_T::head_dim;
        typedef typename CONFIG_T::qk_cfg QK;
        typedef typename CONFIG_T::attn_cfg AR;
    queries:
        for (int i = 0; i < S; i++) {
            attention_state<AR> st;
            attention_init<AR>(st);
        keys:
            for (int j = 0; j < S; j++) {
                #pragma HLS PIPELINE II = 1
                typename QK::accum_t acc = 0;
                for (int k = 0; k < DH; k++) acc += qh[i * DH + k] * kh[j * DH + k];
                typename QK::out_t s = acc;  // = the two_pass score, one cast
                if (CONFIG_T::score_bias != 0) s = score_plus_bias<CONFIG_T>(s, sbh[i * S + j]);
                attention_step<typename CONFIG_T::qkv_cfg::out_t, AR>(st, s, vh + j * DH,
                                                                      drop[i * S + j]);
            }
            attention_finish<typename CONFIG_T::pv_cfg::out_t, AR>(st, ch + i * DH);
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

// Each head's Q_h and K_h rotated in place (CONFIG_T::rope == 1; a no-op otherwise):
// RotarySpec(qkv_fmt, rope_fmt, qkv_fmt), linear.h rotary.
template <bool ROPE>
struct encoder_rope {
    template <typename CONFIG_T>
    static void run(typename CONFIG_T::qkv_cfg::out_t* /* qh */,
                    typename CONFIG_T::qkv_cfg::out_t* /* kh */,
                    const typename CONFIG_T::rope_t* /* rc */,
                    const typename CONFIG_T::rope_t* /* rs */) {
        #pragma HLS INLINE
    }
};

template <>
struct encoder_rope<true> {
    template <typename CONFIG_T>
    static void run(typename CONFIG_T::qkv_cfg::out_t qh[CONFIG_T::seq * CONFIG_T::head_dim],
                    typename CONFIG_T::qkv_cfg::out_t kh[CONFIG_T::seq * CONFIG_T::head_dim],
                    const typename CONFIG_T::rope_t rc[CONFIG_T::rope_n],
                    const typename CONFIG_T::rope_t rs[CONFIG_T::rope_n]) {
        #pragma HLS INLINE
        const int N = CONFIG_T::seq * CONFIG_T::head_dim;
        typedef typename CONFIG_T::qkv_cfg::out_t qkv_t;
        typedef typename CONFIG_T::rope_t rope_t;
        static_assert(CONFIG_T::rope_n == N, "rope: the tables are [seq][head_dim]");
        qkv_t q0[N], k0[N];
        for (int i = 0; i < N; i++) {
            q0[i] = qh[i];
            k0[i] = kh[i];
        }
        rotary<qkv_t, rope_t, qkv_t, CONFIG_T::seq, CONFIG_T::head_dim>(q0, rc, rs, qh);
        rotary<qkv_t, rope_t, qkv_t, CONFIG_T::seq, CONFIG_T::head_dim>(k0, rc, rs, kh);
    }
};

// O = attention(a): a is the attention input (x post-LN, LN1's output pre-LN);
// real[j] = key j is a real token (read only when CONFIG_T::masked).
template <class a_T, typename CONFIG_T>
void encoder_attention(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                       const bool real[CONFIG_T::seq],
                       typename CONFIG_T::o_cfg::out_t o[CONFIG_T::seq * CONFIG_T::dim],
                       const typename CONFIG_T::weight_t wq[CONFIG_T::dim * CONFIG_T::dim],
                       const typename CONFIG_T::bias_t bq[CONFIG_T::dim],
                       const typename CONFIG_T::weight_t wk[CONFIG_T::dim * CONFIG_T::dim],
                       const typename CONFIG_T::bias_t bk[CONFIG_T::dim],
                       const typename CONFIG_T::weight_t wv[CONFIG_T::dim * CONFIG_T::dim],
                       const typename CONFIG_T::bias_t bv[CONFIG_T::dim],
                       const typename CONFIG_T::weight_t wo[CONFIG_T::dim * CONFIG_T::dim],
                       const typename CONFIG_T::bias_t bo[CONFIG_T::dim],
                       const typename CONFIG_T::score_bias_t sb[CONFIG_T::score_bias_n],
                       const typename CONFIG_T::rope_t rc[CONFIG_T::rope_n],
                       const typename CONFIG_T::rope_t rs[CONFIG_T::rope_n]) {
    #pragma HLS INLINE
    const int S = CONFIG_T::seq, D = CONFIG_T::dim, H = CONFIG_T::heads;
    const int DH = CONFIG_T::head_dim;
    typedef typename CONFIG_T::qkv_cfg QKV;
    typedef typename CONFIG_T::pv_cfg PV;
    typedef typename CONFIG_T::o_cfg O;

    // mask bits, shared by every head (constant-folded when neither flag is set)
    bool drop[S * S];
mask_rows:
    for (int i = 0; i < S; i++) {
        for (int j = 0; j < S; j++) {
            const bool future = CONFIG_T::causal != 0 && j > i;
            const bool behind = CONFIG_T::window != 0 && i - j >= CONFIG_T::window;
            drop[i * S + j] = future || behind || (CONFIG_T::masked != 0 && !real[j]);
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
        encoder_rope<CONFIG_T::rope != 0>::template run<CONFIG_T>(qh, kh, rc, rs);
        typename PV::out_t ch[S * DH];
        const int sb_at = CONFIG_T::score_bias != 0 ? h * S * S : 0;  // head h's table
        const typename CONFIG_T::score_bias_t* sbh = sb + sb_at;
        encoder_head_schedule<CONFIG_T::fused != 0>::template run<CONFIG_T>(qh, kh, vh, drop, sbh,
                                                                            ch);
        for (int s = 0; s < S; s++) {
            for (int j = 0; j < DH; j++) ctx[s * D + h * DH + j] = ch[s * DH + j];
        }
    }
    matmul_bias<typename PV::out_t, typename O::b_t, typename O::bias_t, typename O::out_t, O>(
        ctx, wo, bo, o);
}

// The FFN body by activation (CONFIG_T::ffn_act): 0 = the GELU unit, 1 = ReLU, 2 =
// gated (wu, bu read only there).
template <int ACT>
struct encoder_ffn_body;

template <>
struct encoder_ffn_body<0> {  // GELU(h1): gelu_cfg's unit, h1 in its in_t, g in its out_t
    template <class a_T, typename CONFIG_T>
    static void run(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                    typename CONFIG_T::ffn2_cfg::out_t f[CONFIG_T::seq * CONFIG_T::dim],
                    const typename CONFIG_T::weight_t w1[CONFIG_T::dim * CONFIG_T::ffn],
                    const typename CONFIG_T::bias_t b1[CONFIG_T::ffn],
                    const typename CONFIG_T::weight_t w2[CONFIG_T::ffn * CONFIG_T::dim],
                    const typename CONFIG_T::bias_t b2[CONFIG_T::dim],
                    const typename CONFIG_T::weight_t* /* wu: unread */,
                    const typename CONFIG_T::bias_t* /* bu: unread */) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, F = CONFIG_T::ffn;
        typedef typename CONFIG_T::ffn1_cfg F1;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typedef typename CONFIG_T::gelu_cfg GE;
        typename F1::out_t h1[S * F];
        matmul_bias<a_T, typename F1::b_t, typename F1::bias_t, typename F1::out_t, F1>(a, w1,
                                                                                         b1, h1);
        typename GE::out_t g[S * F];
        gelu<typename GE::in_t, typename GE::out_t, GE>(h1, g);
        matmul_bias<typename GE::out_t, typename F2::b_t, typename F2::bias_t,
                    typename F2::out_t, F2>(g, w2, b2, f);
    }
};

template <>
struct encoder_ffn_body<1> {  // ReLU(h1): exact, in ffn1_cfg::out_t (hid_fmt)
    template <class a_T, typename CONFIG_T>
    static void run(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                    typename CONFIG_T::ffn2_cfg::out_t f[CONFIG_T::seq * CONFIG_T::dim],
                    const typename CONFIG_T::weight_t w1[CONFIG_T::dim * CONFIG_T::ffn],
                    const typename CONFIG_T::bias_t b1[CONFIG_T::ffn],
                    const typename CONFIG_T::weight_t w2[CONFIG_T::ffn * CONFIG_T::dim],
                    const typename CONFIG_T::bias_t b2[CONFIG_T::dim],
                    const typename CONFIG_T::weight_t* /* wu: unread */,
                    const typename CONFIG_T::bias_t* /* bu: unread */) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, F = CONFIG_T::ffn;
        typedef typename CONFIG_T::ffn1_cfg F1;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typename F1::out_t h1[S * F];
        matmul_bias<a_T, typename F1::b_t, typename F1::bias_t, typename F1::out_t, F1>(a, w1,
                                                                                         b1, h1);
        typename F1::out_t g[S * F];
    relu:
        for (int i = 0; i < S * F; i++) g[i] = h1[i] > 0 ? h1[i] : typename F1::out_t(0);
        matmul_bias<typename F1::out_t, typename F2::b_t, typename F2::bias_t,
                    typename F2::out_t, F2>(g, w2, b2, f);
    }
};

template <>
struct encoder_ffn_body<2> {  // SiLU(h1) * U: gelu_cfg's unit (a SiLU), up_cfg, gate_cfg
    template <class a_T, typename CONFIG_T>
    static void run(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                    typename CONFIG_T::ffn2_cfg::out_t f[CONFIG_T::seq * CONFIG_T::dim],
                    const typename CONFIG_T::weight_t w1[CONFIG_T::dim * CONFIG_T::ffn],
                    const typename CONFIG_T::bias_t b1[CONFIG_T::ffn],
                    const typename CONFIG_T::weight_t w2[CONFIG_T::ffn * CONFIG_T::dim],
                    const typename CONFIG_T::bias_t b2[CONFIG_T::dim],
                    const typename CONFIG_T::weight_t wu[CONFIG_T::up_n],
                    const typename CONFIG_T::bias_t bu[CONFIG_T::up_bias_n]) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, F = CONFIG_T::ffn;
        static_assert(CONFIG_T::up_n == CONFIG_T::dim * CONFIG_T::ffn &&
                          CONFIG_T::up_bias_n == CONFIG_T::ffn,
                      "gated FFN: wu is [dim][ffn] and bu [ffn]");
        typedef typename CONFIG_T::ffn1_cfg F1;
        typedef typename CONFIG_T::up_cfg UP;
        typedef typename CONFIG_T::gate_cfg GT;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typedef typename CONFIG_T::gelu_cfg GE;
        typename F1::out_t h1[S * F];
        matmul_bias<a_T, typename F1::b_t, typename F1::bias_t, typename F1::out_t, F1>(a, w1,
                                                                                         b1, h1);
        typename GE::out_t g[S * F];
        gelu<typename GE::in_t, typename GE::out_t, GE>(h1, g);
        typename UP::out_t u[S * F];
        matmul_bias<a_T, typename UP::b_t, typename UP::bias_t, typename UP::out_t, UP>(a, wu,
                                                                                         bu, u);
        typename GT::out_t z[S * F];
        mul<typename GE::out_t, typename UP::out_t, typename GT::out_t, S * F>(g, u, z);
        matmul_bias<typename GT::out_t, typename F2::b_t, typename F2::bias_t,
                    typename F2::out_t, F2>(z, w2, b2, f);
    }
};

// F = FFN(a): a is LN1's output (post-LN) or LN2's output (pre-LN).
template <class a_T, typename CONFIG_T>
void encoder_ffn(const a_T a[CONFIG_T::seq * CONFIG_T::dim],
                 typename CONFIG_T::ffn2_cfg::out_t f[CONFIG_T::seq * CONFIG_T::dim],
                 const typename CONFIG_T::weight_t w1[CONFIG_T::dim * CONFIG_T::ffn],
                 const typename CONFIG_T::bias_t b1[CONFIG_T::ffn],
                 const typename CONFIG_T::weight_t w2[CONFIG_T::ffn * CONFIG_T::dim],
                 const typename CONFIG_T::bias_t b2[CONFIG_T::dim],
                 const typename CONFIG_T::weight_t wu[CONFIG_T::up_n],
                 const typename CONFIG_T::bias_t bu[CONFIG_T::up_bias_n]) {
    #pragma HLS INLINE
    encoder_ffn_body<CONFIG_T::ffn_act>::template run<a_T, CONFIG_T>(a, f, w1, b1, w2, b2, wu,
                                                                     bu);
}

// The two block orders, each given the key bits real[seq].
template <bool PRENORM>
struct encoder_order;

template <>
struct encoder_order<false> {  // post-LN
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T x[CONFIG_T::seq * CONFIG_T::dim], const bool real[CONFIG_T::seq],
                    res_T y[CONFIG_T::seq * CONFIG_T::dim], HWAPPROX_ENCODER_WEIGHT_PARAMS) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, D = CONFIG_T::dim;
        typedef typename CONFIG_T::o_cfg O;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typedef typename CONFIG_T::add1_cfg A1;
        typedef typename CONFIG_T::add2_cfg A2;
        typedef typename CONFIG_T::ln1_cfg L1;
        typedef typename CONFIG_T::ln2_cfg L2;
        typename O::out_t o[S * D];
        encoder_attention<data_T, CONFIG_T>(x, real, o, wq, bq, wk, bk, wv, bv, wo, bo, sb, rc,
                                            rs);
        typename A1::out_t r1[S * D];
        add<data_T, typename O::out_t, typename A1::out_t, S * D>(x, o, r1);
        typename L1::out_t y1[S * D];
        encoder_layernorm_rows<typename A1::out_t, typename L1::out_t, L1, S, D>(r1, g1, be1, y1);
        typename F2::out_t f[S * D];
        encoder_ffn<typename L1::out_t, CONFIG_T>(y1, f, w1, b1, w2, b2, wu, bu);
        typename A2::out_t r2[S * D];
        add<typename L1::out_t, typename F2::out_t, typename A2::out_t, S * D>(y1, f, r2);
        encoder_layernorm_rows<typename A2::out_t, res_T, L2, S, D>(r2, g2, be2, y);
    }
};

template <>
struct encoder_order<true> {  // pre-LN
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T x[CONFIG_T::seq * CONFIG_T::dim], const bool real[CONFIG_T::seq],
                    res_T y[CONFIG_T::seq * CONFIG_T::dim], HWAPPROX_ENCODER_WEIGHT_PARAMS) {
        #pragma HLS INLINE
        const int S = CONFIG_T::seq, D = CONFIG_T::dim;
        typedef typename CONFIG_T::o_cfg O;
        typedef typename CONFIG_T::ffn2_cfg F2;
        typedef typename CONFIG_T::add1_cfg A1;
        typedef typename CONFIG_T::ln1_cfg L1;
        typedef typename CONFIG_T::ln2_cfg L2;
        typename L1::out_t y1[S * D];
        encoder_layernorm_rows<data_T, typename L1::out_t, L1, S, D>(x, g1, be1, y1);
        typename O::out_t o[S * D];
        encoder_attention<typename L1::out_t, CONFIG_T>(y1, real, o, wq, bq, wk, bk, wv, bv, wo,
                                                         bo, sb, rc, rs);
        typename A1::out_t r1[S * D];  // the residual stream (res_fmt)
        add<data_T, typename O::out_t, typename A1::out_t, S * D>(x, o, r1);
        typename L2::out_t y2[S * D];
        encoder_layernorm_rows<typename A1::out_t, typename L2::out_t, L2, S, D>(r1, g2, be2, y2);
        typename F2::out_t f[S * D];
        encoder_ffn<typename L2::out_t, CONFIG_T>(y2, f, w1, b1, w2, b2, wu, bu);
        add<typename A1::out_t, typename F2::out_t, res_T, S * D>(r1, f, y);  // out_fmt
    }
};

// A block without a key mask (CONFIG_T::masked == 0; it may still be causal).
template <class data_T, class res_T, typename CONFIG_T>
void encoder_block(const data_T x[CONFIG_T::seq * CONFIG_T::dim],
                   res_T y[CONFIG_T::seq * CONFIG_T::dim], HWAPPROX_ENCODER_WEIGHT_PARAMS) {
    #pragma HLS INLINE off
    static_assert(CONFIG_T::masked == 0,
                  "this encoder block is key-masked (masked = 1): call "
                  "encoder_block<data_T, mask_T, res_T, CONFIG_T>(x, key_mask, y, ...)");
    bool real[CONFIG_T::seq];
    for (int j = 0; j < CONFIG_T::seq; j++) real[j] = true;
    encoder_order<CONFIG_T::prenorm != 0>::template run<data_T, res_T, CONFIG_T>(
        x, real, y, HWAPPROX_ENCODER_WEIGHT_ARGS);
}

// A key-masked block (CONFIG_T::masked == 1): key_mask[j] != 0 = key j is a real token.
template <class data_T, class mask_T, class res_T, typename CONFIG_T>
void encoder_block(const data_T x[CONFIG_T::seq * CONFIG_T::dim],
                   const mask_T key_mask[CONFIG_T::seq], res_T y[CONFIG_T::seq * CONFIG_T::dim],
                   HWAPPROX_ENCODER_WEIGHT_PARAMS) {
    #pragma HLS INLINE off
    #pragma HLS ARRAY_PARTITION variable = key_mask complete
    static_assert(CONFIG_T::masked != 0,
                  "this encoder block has no key mask (masked = 0): call "
                  "encoder_block<data_T, res_T, CONFIG_T>(x, y, ...)");
    bool real[CONFIG_T::seq];
keys:
    for (int j = 0; j < CONFIG_T::seq; j++) real[j] = key_mask[j] != 0;
    encoder_order<CONFIG_T::prenorm != 0>::template run<data_T, res_T, CONFIG_T>(
        x, real, y, HWAPPROX_ENCODER_WEIGHT_ARGS);
}

// io_stream: seq packs of dim values (hls4ml's nnet::array<T, dim>, or any type
// with value_type, size and operator[]) in, the same out. Every token has to
// arrive before the first output (each query row attends to every key), so the
// block buffers the sequence: a read loop and a write loop at one pack per
// cycle (II=1) around the io_parallel block.
template <class pack_T, int N>
void encoder_read_packs(hls::stream<pack_T>& in, typename pack_T::value_type x[N]) {
    #pragma HLS INLINE
read:
    for (int s = 0; s < N / int(pack_T::size); s++) {
        #pragma HLS PIPELINE II = 1
        const pack_T pk = in.read();
        for (int i = 0; i < int(pack_T::size); i++) {
            #pragma HLS UNROLL
            x[s * pack_T::size + i] = pk[i];
        }
    }
}

template <class pack_T, int N>
void encoder_write_packs(const typename pack_T::value_type y[N], hls::stream<pack_T>& out) {
    #pragma HLS INLINE
write:
    for (int s = 0; s < N / int(pack_T::size); s++) {
        #pragma HLS PIPELINE II = 1
        pack_T pk;
        for (int i = 0; i < int(pack_T::size); i++) {
            #pragma HLS UNROLL
            pk[i] = y[s * pack_T::size + i];
        }
        out.write(pk);
    }
}

template <class data_T, class res_T, typename CONFIG_T>
void encoder_block_stream(hls::stream<data_T>& x_s, hls::stream<res_T>& y_s,
                          HWAPPROX_ENCODER_WEIGHT_PARAMS) {
    #pragma HLS INLINE off
    const int N = CONFIG_T::seq * CONFIG_T::dim;
    static_assert(int(data_T::size) == CONFIG_T::dim && int(res_T::size) == CONFIG_T::dim,
                  "encoder_block_stream: one stream pack per token (pack size = dim)");
    typename data_T::value_type x[N];
    typename res_T::value_type y[N];
    encoder_read_packs<data_T, N>(x_s, x);
    encoder_block<typename data_T::value_type, typename res_T::value_type, CONFIG_T>(
        x, y, HWAPPROX_ENCODER_WEIGHT_ARGS);
    encoder_write_packs<res_T, N>(y, y_s);
}

// key_mask_s: one pack of seq values (hls4ml's stream of a [seq] input).
template <class data_T, class mask_T, class res_T, typename CONFIG_T>
void encoder_block_stream(hls::stream<data_T>& x_s, hls::stream<mask_T>& key_mask_s,
                          hls::stream<res_T>& y_s, HWAPPROX_ENCODER_WEIGHT_PARAMS) {
    #pragma HLS INLINE off
    const int N = CONFIG_T::seq * CONFIG_T::dim;
    static_assert(int(data_T::size) == CONFIG_T::dim && int(res_T::size) == CONFIG_T::dim,
                  "encoder_block_stream: one stream pack per token (pack size = dim)");
    static_assert(int(mask_T::size) == CONFIG_T::seq,
                  "encoder_block_stream: the key mask is one pack of seq values");
    typename data_T::value_type x[N];
    typename mask_T::value_type key_mask[CONFIG_T::seq];
    typename res_T::value_type y[N];
    encoder_read_packs<mask_T, CONFIG_T::seq>(key_mask_s, key_mask);
    encoder_read_packs<data_T, N>(x_s, x);
    encoder_block<typename data_T::value_type, typename mask_T::value_type,
                  typename res_T::value_type, CONFIG_T>(x, key_mask, y,
                                                        HWAPPROX_ENCODER_WEIGHT_ARGS);
    encoder_write_packs<res_T, N>(y, y_s);
}

}  // namespace hwapprox

#endif  // HWAPPROX_ENCODER_H
