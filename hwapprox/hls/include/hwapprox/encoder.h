// hwapprox/encoder.h -- a post-LN transformer encoder block (io_parallel).
//
// Contract: bit-exact with hwapprox.hls.block.EncoderBlock.model on the same
// raw codes (tests/test_hls_block.py, and through hls4ml compile()/predict()
// in tests/test_hls_hls4ml.py). x and y are row-major [seq][dim]:
//   Q,K,V = x.W + b; per head: P = softmax(Q_h.K_h^T), C_h = P.V_h;
//   R1 = x + (C.Wo + bo); Y1 = LN1(R1); R2 = Y1 + (GELU(Y1.W1 + b1).W2 + b2);
//   y = LN2(R2).
// Every intermediate has the explicit type of its sub-config (CONFIG_T::*_cfg,
// generated from the specs): nothing is inherited from a model default.
// Weights are ROM tables of raw codes in the generated config (accessors
// CONFIG_T::wq(i), ...), loaded into typed arrays that HLS folds into constants.
// Latency intent: the sub-units are pipelined and fully unrolled; the block
// is a chain QKV -> scores -> softmax -> PV -> O -> add/LN -> FFN -> add/LN.
// DATAFLOW across these stages would need streams (io_stream); here the
// function is PIPELINE'd as a whole, so only tiny blocks fit (S, D <= 16).
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

template <class data_T, class res_T, typename CONFIG_T>
void encoder_block(const data_T x[CONFIG_T::seq * CONFIG_T::dim],
                   res_T y[CONFIG_T::seq * CONFIG_T::dim]) {
    #pragma HLS INLINE off
    const int S = CONFIG_T::seq, D = CONFIG_T::dim, H = CONFIG_T::heads;
    const int DH = CONFIG_T::head_dim, F = CONFIG_T::ffn;
    typedef typename CONFIG_T::qkv_cfg QKV;
    typedef typename CONFIG_T::qk_cfg QK;
    typedef typename CONFIG_T::pv_cfg PV;
    typedef typename CONFIG_T::o_cfg O;
    typedef typename CONFIG_T::ffn1_cfg F1;
    typedef typename CONFIG_T::ffn2_cfg F2;
    typedef typename CONFIG_T::add1_cfg A1;
    typedef typename CONFIG_T::add2_cfg A2;
    typedef typename CONFIG_T::softmax_cfg SM;
    typedef typename CONFIG_T::gelu_cfg GE;
    typedef typename CONFIG_T::ln1_cfg L1;
    typedef typename CONFIG_T::ln2_cfg L2;

    // weights (raw codes -> typed constants)
    typename QKV::b_t wq[D * D], wk[D * D], wv[D * D];
    typename QKV::bias_t bq[D], bk[D], bv[D];
    typename O::b_t wo[D * D];
    typename O::bias_t bo[D];
    typename F1::b_t w1[D * F];
    typename F1::bias_t b1[F];
    typename F2::b_t w2[F * D];
    typename F2::bias_t b2[D];
    typename L1::gamma_t g1[D];
    typename L1::beta_t be1[D];
    typename L2::gamma_t g2[D];
    typename L2::beta_t be2[D];
    HWAPPROX_LOAD_CODES(wq, D * D, wq);
    HWAPPROX_LOAD_CODES(wk, D * D, wk);
    HWAPPROX_LOAD_CODES(wv, D * D, wv);
    HWAPPROX_LOAD_CODES(bq, D, bq);
    HWAPPROX_LOAD_CODES(bk, D, bk);
    HWAPPROX_LOAD_CODES(bv, D, bv);
    HWAPPROX_LOAD_CODES(wo, D * D, wo);
    HWAPPROX_LOAD_CODES(bo, D, bo);
    HWAPPROX_LOAD_CODES(w1, D * F, w1);
    HWAPPROX_LOAD_CODES(b1, F, b1);
    HWAPPROX_LOAD_CODES(w2, F * D, w2);
    HWAPPROX_LOAD_CODES(b2, D, b2);
    HWAPPROX_LOAD_CODES(g1, D, g1);
    HWAPPROX_LOAD_CODES(be1, D, be1);
    HWAPPROX_LOAD_CODES(g2, D, g2);
    HWAPPROX_LOAD_CODES(be2, D, be2);

    // attention
    typename QKV::out_t q[S * D], k[S * D], v[S * D];
    matmul_bias<data_T, typename QKV::b_t, typename QKV::bias_t, typename QKV::out_t, QKV>(
        x, wq, bq, q);
    matmul_bias<data_T, typename QKV::b_t, typename QKV::bias_t, typename QKV::out_t, QKV>(
        x, wk, bk, k);
    matmul_bias<data_T, typename QKV::b_t, typename QKV::bias_t, typename QKV::out_t, QKV>(
        x, wv, bv, v);
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
    rows:
        for (int s = 0; s < S; s++) {
            softmax<typename SM::in_t, typename SM::out_t, SM>(scores + s * S, p + s * S);
        }
        typename PV::out_t ch[S * DH];
        matmul<typename SM::out_t, typename QKV::out_t, typename PV::out_t, PV>(p, vh, ch);
        for (int s = 0; s < S; s++) {
            for (int j = 0; j < DH; j++) ctx[s * D + h * DH + j] = ch[s * DH + j];
        }
    }
    typename O::out_t o[S * D];
    matmul_bias<typename PV::out_t, typename O::b_t, typename O::bias_t, typename O::out_t, O>(
        ctx, wo, bo, o);
    typename A1::out_t r1[S * D];
    add<data_T, typename O::out_t, typename A1::out_t, S * D>(x, o, r1);
    typename L1::out_t y1[S * D];
ln1_rows:
    for (int s = 0; s < S; s++) {
        L1::op::template run<typename L1::in_t, typename L1::out_t, L1>(r1 + s * D, y1 + s * D,
                                                                        g1, be1);
    }
    // feed-forward
    typename F1::out_t h1[S * F];
    matmul_bias<typename L1::out_t, typename F1::b_t, typename F1::bias_t, typename F1::out_t,
                F1>(y1, w1, b1, h1);
    typename GE::out_t g[S * F];
    gelu<typename GE::in_t, typename GE::out_t, GE>(h1, g);
    typename F2::out_t f2[S * D];
    matmul_bias<typename GE::out_t, typename F2::b_t, typename F2::bias_t, typename F2::out_t,
                F2>(g, w2, b2, f2);
    typename A2::out_t r2[S * D];
    add<typename L1::out_t, typename F2::out_t, typename A2::out_t, S * D>(y1, f2, r2);
ln2_rows:
    for (int s = 0; s < S; s++) {
        L2::op::template run<typename L2::in_t, res_T, L2>(r2 + s * D, y + s * D, g2, be2);
    }
}

}  // namespace hwapprox

#endif  // HWAPPROX_ENCODER_H
