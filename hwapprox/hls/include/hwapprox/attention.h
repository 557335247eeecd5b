// hwapprox/attention.h -- a single-pass attention row: online softmax fused with P.V.
//
// Contract: bit-exact with hwapprox.approx.attention.AttentionRowSpec.model on the same
// raw codes (tests/test_hls_attention.py). One query q[dim] against n_keys keys, each
// key a K row k[dim], a V row v[dim_v] and a mask bit (true = masked out):
//   s_j = score_t(q.k_j [* SCALE])              exact dot product, one cast
//   new max (or first key): E = E(s_j - m); d = R_s(d.E) + ONE; o = acc_t(acc_t(o.E) + v_j)
//   otherwise:              E = E(m - s_j); d = d + E;         o = acc_t(o + acc_t(E.v_j))
//   y = out_t(o . r), r = 1/d; a fully masked row outputs zeros.
//   softmax_cfg::OFF_BY_ONE (Softmax_1): the state starts at (m, d, o) = (0, ONE, 0).
//   softmax_cfg::SKIP (BLASST threshold skipping): a key that is not a new max with
//   m - s_j > SKIP_TAU changes no state, like a masked key: no exp, no V use.
// E, the d update and r are the online softmax unit's (softmax_online_op over
// CONFIG_T::softmax_cfg, its hw_params widths); acc_t/out_t assignments round and
// saturate as the formats say (ap_fixed semantics = hwapprox.fixed.cast).
// Interfaces:
//   attention_row<q_T, k_T, v_T, res_T, CONFIG_T>(q[dim], k[n_keys*dim], v[n_keys*dim_v],
//                                                 mask[n_keys], y[dim_v])       (arrays)
//   attention_row_stream<qp_T, kp_T, vp_T, yp_T, CONFIG_T>(q_s, k_s, v_s, mask_s, y_s)
//     q_s: one pack of dim values; then per key one K pack (dim), one V pack (dim_v)
//     and one mask bit; y_s: one pack of dim_v values. Packs: nnet::array or any type
//     with value_type, size and operator[].
// Schedule: the key loop is PIPELINE II=1 and reads each stream once per key, so
// no row of scores and no V is stored (state: m, d and dim_v accumulators). The
// m -> E -> (d, o) update is the loop-carried dependence (compare, exp unit, one
// multiply-add per lane); the achieved II is the HLS tool's report. A masked key
// changes no state; its K and V packs are still read (the streams stay in step),
// a memory front end would skip fetching them.
#ifndef HWAPPROX_ATTENTION_H
#define HWAPPROX_ATTENTION_H

#include "common.h"
#include "hls_stream.h"
#include "softmax.h"

namespace hwapprox {

template <typename C>
struct attention_types {
    typedef typename C::softmax_cfg SM;
    typedef softmax_online_types<SM> T;
    // E as a value (exp_fmt: unsigned, EXP_F fraction bits) and r as one (recip_fmt)
    typedef ap_ufixed<SM::EXP_W, SM::EXP_W - SM::EXP_F> e_fx;
    typedef ap_ufixed<SM::R_W, SM::R_W - SM::R_F> r_fx;
};

// The running state of one row.
template <typename C>
struct attention_state {
    typename attention_types<C>::T::x_t m;
    typename attention_types<C>::T::d_t d;
    typename C::acc_t o[C::dim_v];
    bool any;
};

// s = score_t(q.k [* SCALE]): the exact dot product, then one cast.
template <class q_T, class k_T, typename C>
typename C::score_t attention_score(const q_T q[C::dim], const k_T k[C::dim]) {
    #pragma HLS INLINE
    typename C::dot_t dot = 0;
dot:
    for (int i = 0; i < C::dim; i++) {
        #pragma HLS UNROLL
        dot += q[i] * k[i];  // exact: dot_t holds the sum of dim products
    }
    if (C::has_scale) {
        const typename C::scale_t sc =
            from_raw<typename C::scale_t>(ap_uint<C::scale_t::width>(C::scale_raw));
        return typename C::score_t(dot * sc);  // exact product, one cast
    }
    return typename C::score_t(dot);
}

// One key of the recurrence (skipped when masked).
template <class v_T, typename C>
void attention_step(attention_state<C>& st, const typename C::score_t& s, const v_T v[C::dim_v],
                    bool masked) {
    #pragma HLS INLINE
    typedef attention_types<C> A;
    typedef typename A::SM SM;
    typedef typename A::T T;
    if (masked) return;
    const typename T::x_t x = code_of(s);
    const ap_int<SM::X_W + 1> diff = x - st.m;
    const bool is_new = !st.any || diff > 0;
    const typename T::delta_t dl = !st.any ? typename T::delta_t(0)
                                   : HWAPPROX_NARROW(typename T::delta_t,
                                                     is_new ? diff : ap_int<SM::X_W + 1>(-diff));
    if (SM::SKIP && !is_new && dl > typename T::delta_t(SM::SKIP_TAU)) return;  // BLASST
    const typename T::e_t e = softmax_online_op::exp<SM>(dl);
    const typename A::e_fx ef = from_raw<typename A::e_fx>(e);
    if (is_new) {
        const typename T::rescale_t p = st.d * e;
        st.d = HWAPPROX_NARROW(typename T::d_t,
                               round_shift<SM::sum_t::qmode, SM::RESCALE_W>(p, SM::EXP_F) +
                                   typename T::d_t(SM::SUM_ONE));
    lanes_new:
        for (int i = 0; i < C::dim_v; i++) {
            #pragma HLS UNROLL
            const typename C::acc_t scaled = st.o[i] * ef;  // R_a, saturated
            st.o[i] = scaled + v[i];                         // v exact in acc_t; saturated
        }
        st.m = x;
        st.any = true;
    } else {
        st.d = HWAPPROX_NARROW(typename T::d_t,
                               st.d + HWAPPROX_SHL(typename T::d_t, e, SM::SUM_UP));
    lanes_old:
        for (int i = 0; i < C::dim_v; i++) {
            #pragma HLS UNROLL
            const typename C::acc_t term = ef * v[i];  // R_a, saturated
            st.o[i] = st.o[i] + term;                  // saturated
        }
    }
}

// y = out_t(o . r); zeros for a fully masked row.
template <class res_T, typename C>
void attention_finish(const attention_state<C>& st, res_T y[C::dim_v]) {
    #pragma HLS INLINE
    typedef attention_types<C> A;
    typedef typename A::SM SM;
    typedef typename A::T T;
    const typename T::r_t r =
        softmax_online_op::recip<SM>(st.any ? st.d : typename T::d_t(SM::SUM_ONE));
    const typename A::r_fx rf = from_raw<typename A::r_fx>(r);
out:
    for (int i = 0; i < C::dim_v; i++) {
        #pragma HLS UNROLL
        y[i] = st.any ? res_T(st.o[i] * rf) : res_T(0);
    }
}

template <typename C>
void attention_init(attention_state<C>& st) {
    #pragma HLS INLINE
    typedef typename C::softmax_cfg SM;
    st.m = 0;
    st.d = SM::OFF_BY_ONE ? SM::SUM_ONE : 0;  // Softmax_1: a zero logit with V = 0
    st.any = SM::OFF_BY_ONE != 0;
    for (int i = 0; i < C::dim_v; i++) st.o[i] = 0;
}

// Arrays (io_parallel): one query row.
template <class q_T, class k_T, class v_T, class res_T, typename C>
void attention_row(const q_T q[C::dim], const k_T k[C::n_keys * C::dim],
                   const v_T v[C::n_keys * C::dim_v], const bool mask[C::n_keys],
                   res_T y[C::dim_v]) {
    #pragma HLS INLINE off
    attention_state<C> st;
    #pragma HLS ARRAY_PARTITION variable = st.o complete
    attention_init<C>(st);
keys:
    for (int j = 0; j < C::n_keys; j++) {
        #pragma HLS PIPELINE II = 1
        const typename C::score_t s = attention_score<q_T, k_T, C>(q, k + j * C::dim);
        attention_step<v_T, C>(st, s, v + j * C::dim_v, mask[j]);
    }
    attention_finish<res_T, C>(st, y);
}

// Streams (io_stream): q once, then per key K, V and the mask bit; one output pack.
template <class qp_T, class kp_T, class vp_T, class yp_T, typename C>
void attention_row_stream(hls::stream<qp_T>& q_s, hls::stream<kp_T>& k_s,
                          hls::stream<vp_T>& v_s, hls::stream<bool>& mask_s,
                          hls::stream<yp_T>& y_s) {
    #pragma HLS INLINE off
    static_assert(int(qp_T::size) == C::dim && int(kp_T::size) == C::dim,
                  "attention_row_stream: q and K packs of dim values");
    static_assert(int(vp_T::size) == C::dim_v && int(yp_T::size) == C::dim_v,
                  "attention_row_stream: V and output packs of dim_v values");
    typename qp_T::value_type q[C::dim];
    #pragma HLS ARRAY_PARTITION variable = q complete
    const qp_T qp = q_s.read();
    for (int i = 0; i < C::dim; i++) q[i] = qp[i];
    attention_state<C> st;
    #pragma HLS ARRAY_PARTITION variable = st.o complete
    attention_init<C>(st);
keys:
    for (int j = 0; j < C::n_keys; j++) {
        #pragma HLS PIPELINE II = 1
        const kp_T kp = k_s.read();
        const vp_T vp = v_s.read();
        const bool masked = mask_s.read();
        typename kp_T::value_type k[C::dim];
        typename vp_T::value_type v[C::dim_v];
        for (int i = 0; i < C::dim; i++) k[i] = kp[i];
        for (int i = 0; i < C::dim_v; i++) v[i] = vp[i];
        const typename C::score_t s =
            attention_score<typename qp_T::value_type, typename kp_T::value_type, C>(q, k);
        attention_step<typename vp_T::value_type, C>(st, s, v, masked);
    }
    typename yp_T::value_type y[C::dim_v];
    attention_finish<typename yp_T::value_type, C>(st, y);
    yp_T yp;
    for (int i = 0; i < C::dim_v; i++) yp[i] = y[i];
    y_s.write(yp);
}

}  // namespace hwapprox

#endif  // HWAPPROX_ATTENTION_H
