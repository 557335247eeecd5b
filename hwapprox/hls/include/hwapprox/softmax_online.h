// hwapprox/softmax_online.h -- the online softmax unit (softmax_online_op), bit-exact
// with hwapprox.approx.softmax.OnlineSoftmax (tests/test_hls_softmax.py,
// tests/test_hls_softmax_variants.py); the SV unit is hwa_softmax_online.
//
// Source: the online normaliser of Milakov & Gimelshein 2018 (Edge-MoE's
// finalize_attn), with an explicit fixed-point datapath.
//
// Contract, per row of n_in raw codes x (unmasked elements only):
//   first element: (m, d) = (x, ONE); later element: if x > m: d = R(d·E(x - m)) + ONE,
//   m = x, else d = d + (E(m - x) << SUM_UP); E(delta) = exp(-delta) by base 2
//   (delta·log2 e, exp2_neg table + interpolation) or a LUT; R rounds away EXP_F bits
//   (sum_fmt's mode);
//   r = 1/d once per row (PWL LUT or seed + Newton, recip_fmt);
//   y = cast_out(E(m - x)·r).
// Options (OnlineSoftmax, all off by default): OFF_BY_ONE (Softmax_1: the state starts
// at the zero logit, (m, d) = (0, ONE)); CLIP (clipped softmax, Bondarenko et al.: the
// stretch folded into r); SKIP (BLASST threshold skipping: an element more than SKIP_TAU
// below m is skipped, output 0); UNIFIED (FlashDecoding++ unified max phi, the exact
// path as fallback); OUT_CODE (RepQ-ViT log2 / log-sqrt2 output codes: log_code, which
// softmax.h's post-stage also uses for the other methods); schedule two_pass
// (C::TWO_PASS: a max pass, then a sum pass).
//
// Widths: softmax_online_types<C>, every one a spec hw_params() width (the SV
// parameters of hwa_softmax_online). Default spec (16-bit output, row_max 1024):
// delta 16, exp argument 27, E 29, sum 40, d·E 69 (the one type wider than 64 bits:
// the model splits it at bit EXP_F, exactly), Newton products 47, E·r 50 bits.
//
// Latency intent: io_parallel, one row per call; the running (m, d) recurrence is a
// serial chain of n_in compare/multiply-add steps (two_pass: a max tree and an adder
// tree); exps and output multiplies replicated per element. io_stream: ingest (reads
// the input once: running max and sum, the row into a FIFO; one reciprocal) -> emit
// (E(m - x)·r from the FIFO), DATAFLOW, each a PIPELINE II=1 loop; two_pass: ingest
// (max) -> sum -> emit.
#ifndef HWAPPROX_SOFTMAX_ONLINE_H
#define HWAPPROX_SOFTMAX_ONLINE_H

#include "common.h"
#include "intmath.h"
#include "softmax_common.h"
#include "softmax_stream.h"

namespace hwapprox {

// ---- online ----------------------------------------------------------------------------
template <typename C>
struct softmax_online_types {
    typedef ap_int<C::X_W> x_t;              // an input code
    typedef ap_uint<C::DELTA_W> delta_t;     // |x_j - m|
    typedef ap_uint<C::EXP_W> e_t;           // E(delta), exp_fmt code (<= 1.0)
    typedef ap_uint<C::SUM_W> d_t;           // running sum d, sum_fmt code
    typedef ap_uint<C::RESCALE_W> rescale_t; // d·E
    typedef ap_uint<C::R_W> r_t;             // 1/d, recip_fmt code
    typedef ap_uint<C::OUTP_W> outp_t;       // E·r
    typedef ap_uint<C::CS_W> cs_t;           // clipped: the stretch S = ζ - γ
    typedef ap_uint<C::CRS_W> crs_t;         // clipped: S·r and r_s
    typedef ap_int<C::CZ_W> cz_t;            // clipped: E·r_s + γ
    typedef ap_uint<C::UOUTP_W> uoutp_t;     // unified max: (E·r) << s
    typedef ap_uint<C::U_S_W> us_t;          // unified max: the normalising shift s
};

// The per-row result of the ingest: what the output stage needs.
template <typename C>
struct softmax_online_state {
    typename softmax_online_types<C>::x_t m;   // the row max
    typename softmax_online_types<C>::r_t r;   // 1/d (unified rows: 1/(d_phi << s))
    bool uni;                                  // UNIFIED: the row took the phi path
    typename softmax_online_types<C>::us_t s;  // UNIFIED: its shift
};
template <typename C>
struct softmax_online_base2_types {
    typedef ap_uint<C::LOG2E_W> log2e_t;  // the LOG2E constant
    typedef ap_uint<C::PROD_W> prod_t;    // delta·LOG2E
};

// exp2_neg / reciprocal parameter structs over the config (wiring only).
template <typename C>
struct online_exp2_p : C {
    static typename C::exp2_table_entry_t table(unsigned i) {
        #pragma HLS INLINE
        return C::exp2_table(i);
    }
};
template <typename C>
struct online_recip_p : C {
    static const int D_W = C::SUM_W;
    static const int D_F = C::SUM_F;
    static const int OUT_F = C::R_F;  // the reciprocal's fraction bits (hides the row output's)
    static typename C::recip_table_entry_t table(unsigned i) {
        #pragma HLS INLINE
        return C::recip_table(i);
    }
};

// E(delta) = exp(-delta) of OnlineSoftmax.exp_unit_raw; BASE2 picks the unit.
template <bool BASE2>
struct online_exp;

template <>
struct online_exp<true> {
    template <typename C>
    static typename softmax_online_types<C>::e_t eval(
        const typename softmax_online_types<C>::delta_t& delta) {
        #pragma HLS INLINE
        typedef softmax_online_base2_types<C> B;
        const typename B::prod_t prod = delta * typename B::log2e_t(C::LOG2E);  // exact
        const typename C::exp_arg_t t = cast_raw<C::IN_F + C::LOG2E_F, typename C::exp_arg_t>(prod);
        return exp2_neg<C::exp_t::qmode, online_exp2_p<C> >(code_of(t));
    }
};

template <>
struct online_exp<false> {
    template <typename C>
    static typename softmax_online_types<C>::e_t eval(
        const typename softmax_online_types<C>::delta_t& delta) {
        #pragma HLS INLINE
        // delta >= 2^LIM_BITS: exp = 0 (never when LIM_BITS >= DELTA_W)
        const int lim = C::LIM_BITS < C::DELTA_W ? C::LIM_BITS : 0;
        if (C::LIM_BITS < C::DELTA_W && (delta >> lim) != 0) return 0;
        return C::exp_lut(unsigned(delta >> C::LUT_SHIFT));
    }
};

struct softmax_online_op : softmax_row_entry<softmax_online_op> {
    template <typename C>
    static typename softmax_online_types<C>::e_t exp(
        const typename softmax_online_types<C>::delta_t& delta) {
        #pragma HLS INLINE
        return online_exp<C::BASE2 != 0>::template eval<C>(delta);
    }

    // One element of the running state: the first element of the row sets
    // (m, d) = (x, ONE); then a new maximum rescales d, any other adds E.
    // SKIP (BLASST): an element more than SKIP_TAU below m is skipped (no exp, d
    // unchanged); the return value says so (its output is 0).
    template <typename C>
    static bool update(const typename softmax_online_types<C>::x_t& x,
                       typename softmax_online_types<C>::x_t& m,
                       typename softmax_online_types<C>::d_t& d, bool& any) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        if (!any) {
            m = x;
            d = C::SUM_ONE;
            any = true;
            return false;
        }
        const ap_int<C::X_W + 1> diff = x - m;
        const bool is_new = diff > 0;
        const typename T::delta_t dl =
            HWAPPROX_NARROW(typename T::delta_t, is_new ? diff : ap_int<C::X_W + 1>(-diff));
        if (C::SKIP && !is_new && dl > typename T::delta_t(C::SKIP_TAU)) return true;
        const typename T::e_t e = exp<C>(dl);
        if (is_new) {
            const typename T::rescale_t p = d * e;
            d = HWAPPROX_NARROW(typename T::d_t,
                                round_shift<C::sum_t::qmode, C::RESCALE_W>(p, C::EXP_F) +
                                    typename T::d_t(C::SUM_ONE));
            m = x;
        } else {
            d = HWAPPROX_NARROW(typename T::d_t, d + HWAPPROX_SHL(typename T::d_t, e, C::SUM_UP));
        }
        return false;
    }

    // UNIFIED: one element of the phi sum d_phi = sum E(PHI - x); an element above PHI
    // leaves the safe range (the row falls back). No max dependency.
    template <typename C>
    static void unified_add(const typename softmax_online_types<C>::x_t& x,
                            typename softmax_online_types<C>::d_t& du, bool& over) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        const typename T::x_t phi = C::PHI;
        if (x > phi) {
            over = true;
            return;
        }
        const typename T::e_t e = exp<C>(HWAPPROX_NARROW(typename T::delta_t, phi - x));
        du = HWAPPROX_NARROW(typename T::d_t, du + HWAPPROX_SHL(typename T::d_t, e, C::SUM_UP));
    }

    // The row's state for the output stage: the phi path when UNIFIED and the row is
    // in the safe range (no element above PHI, d_phi >= U_FLOOR), with the shift s
    // (d_phi << s >= ONE, s <= U_LOW) and r = 1/(d_phi << s); else the exact (m, d).
    template <typename C>
    static softmax_online_state<C> finish(const typename softmax_online_types<C>::x_t& m,
                                          const typename softmax_online_types<C>::d_t& d,
                                          bool any, const typename softmax_online_types<C>::d_t& du,
                                          bool over) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        softmax_online_state<C> st;
        st.m = m;
        st.uni = C::UNIFIED && any && !over && du >= typename T::d_t(C::U_FLOOR);
        st.s = 0;
        typename T::d_t dn = du;
    norm:
        for (int k = 0; k < C::U_LOW; k++) {
            #pragma HLS UNROLL
            if (dn < typename T::d_t(C::SUM_ONE)) {
                dn = HWAPPROX_NARROW(typename T::d_t, HWAPPROX_SHL(typename T::d_t, dn, 1));
                st.s = HWAPPROX_NARROW(typename T::us_t, st.s + 1);
            }
        }
        // one reciprocal per row; a fully masked row (no element) divides nothing
        st.r = recip<C>(st.uni ? dn : any ? d : typename T::d_t(C::SUM_ONE));
        return st;
    }

    // r = 1/d as a recip_fmt code (its overflow mode applied).
    template <typename C>
    static typename softmax_online_types<C>::r_t recip(
        const typename softmax_online_types<C>::d_t& d) {
        #pragma HLS INLINE
        const typename recip_types<online_recip_p<C> >::rpre_t r =
            reciprocal<C::recip_t::qmode, online_recip_p<C> >(d);
        return code_of(cast_raw<C::R_F, typename C::recip_t>(r));
    }

    // y = cast_out(E(m - x)·r)
    template <class res_T, typename C>
    static res_T output(const typename softmax_online_types<C>::x_t& x,
                        const typename softmax_online_types<C>::x_t& m,
                        const typename softmax_online_types<C>::r_t& r) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        const typename T::e_t e = exp<C>(HWAPPROX_NARROW(typename T::delta_t, m - x));
        const typename T::outp_t p = e * r;
        return cast_raw<C::EXP_F + C::R_F, res_T>(p);
    }

    // clipped softmax: r_s = round(S·r / 2^CLIP_F), the stretch ζ - γ folded into r
    template <typename C>
    static typename softmax_online_types<C>::crs_t clip_scale(
        const typename softmax_online_types<C>::r_t& r) {
        #pragma HLS INLINE
        typedef typename softmax_online_types<C>::crs_t crs_t;
        const crs_t p =
            HWAPPROX_NARROW(crs_t, r * typename softmax_online_types<C>::cs_t(C::CLIP_S));
        return HWAPPROX_NARROW(crs_t, (p + (crs_t(1) << (C::CLIP_F - 1))) >> C::CLIP_F);
    }

    // y = clamp(cast_out(E(m - x)·r_s + γ), 0, 1.0): OnlineSoftmax._clipped_out
    template <class res_T, typename C>
    static res_T output_clipped(const typename softmax_online_types<C>::x_t& x,
                                const typename softmax_online_types<C>::x_t& m,
                                const typename softmax_online_types<C>::crs_t& rs) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        typedef typename T::cz_t cz_t;
        const typename T::e_t e = exp<C>(HWAPPROX_NARROW(typename T::delta_t, m - x));
        const cz_t z = HWAPPROX_NARROW(
            cz_t, cz_t(HWAPPROX_NARROW(cz_t, e * rs)) +
                      HWAPPROX_SHL(cz_t, cz_t(C::CLIP_G), C::EXP_F + C::R_F - C::CLIP_F));
        const res_T y = cast_raw<C::EXP_F + C::R_F, res_T>(z);
        if (code_of(y) < 0) return res_T(0);
        if (code_of(y) > C::CLIP_ONE) return from_raw<res_T>(ap_uint<C::OUT_W>(C::CLIP_ONE));
        return y;
    }

    // UNIFIED: y = cast_out((E(PHI - x)·r) << s)
    template <class res_T, typename C>
    static res_T output_unified(const typename softmax_online_types<C>::x_t& x,
                                const softmax_online_state<C>& st) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        const typename T::x_t phi = C::PHI;
        const typename T::e_t e = exp<C>(HWAPPROX_NARROW(typename T::delta_t, phi - x));
        const typename T::outp_t p = e * st.r;
        return cast_raw<C::EXP_F + C::R_F, res_T>(
            HWAPPROX_SHL(typename T::uoutp_t, typename T::uoutp_t(p), st.s));
    }

    // OUT_CODE: the log code of a probability code p (SoftmaxSpec.log_encode): e =
    // floor(log2 p) by a priority encoder, the mantissa normalised to CODE_NW bits,
    // c = CODE_F - e - [n > C12] (log2) or 2(CODE_F - e) - [n > C14] - [n > C34]
    // (log-sqrt2), clamped at 0; p <= 0 or c >= CODE_ZERO: CODE_ZERO (= 0).
    template <typename C, class P>
    static ap_uint<C::CODE_BITS> log_code(const P& p) {
        #pragma HLS INLINE
        const ap_int<C::CODE_NW + 1> q = p;
        if (q <= 0) return C::CODE_ZERO;
        int e = 0;
    lead:
        for (int b = 0; b < C::CODE_NW; b++) {
            #pragma HLS UNROLL
            if (q[b]) e = b;
        }
        const ap_uint<C::CODE_NW> n = ap_uint<C::CODE_NW>(q) << (C::CODE_NW - 1 - e);
        int c = C::OUT_CODE == 1
                    ? C::CODE_F - e - int(n > ap_uint<C::CODE_NW>(C::CODE_C12))
                    : 2 * (C::CODE_F - e) - int(n > ap_uint<C::CODE_NW>(C::CODE_C14)) -
                          int(n > ap_uint<C::CODE_NW>(C::CODE_C34));
        if (c < 0) c = 0;
        if (c >= C::CODE_ZERO) return C::CODE_ZERO;
        return c;
    }

    // The probability of one buffered (unmasked, unskipped) element as a prob_T value.
    template <class prob_T, typename C>
    static prob_T prob(const typename softmax_online_types<C>::x_t& x,
                       const softmax_online_state<C>& st,
                       const typename softmax_online_types<C>::crs_t& rs) {
        #pragma HLS INLINE
        if (C::UNIFIED && st.uni) return output_unified<prob_T, C>(x, st);
        if (C::CLIP) return output_clipped<prob_T, C>(x, st.m, rs);
        return output<prob_T, C>(x, st.m, st.r);
    }

    // One output: 0 (the zero code) when masked or skipped, else the probability as
    // res_T, or (OUT_CODE) its log code as res_T's raw bits.
    template <class res_T, typename C>
    static res_T emit_one(const typename softmax_online_types<C>::x_t& x, bool zero,
                          const softmax_online_state<C>& st,
                          const typename softmax_online_types<C>::crs_t& rs) {
        #pragma HLS INLINE
        if (C::OUT_CODE == 0) return zero ? res_T(0) : prob<res_T, C>(x, st, rs);
        const ap_uint<C::CODE_BITS> c =
            zero ? ap_uint<C::CODE_BITS>(C::CODE_ZERO)
                 : log_code<C>(code_of(prob<typename C::out_t, C>(x, st, rs)));
        return from_raw<res_T>(c);
    }

    template <class data_T, class res_T, typename C, class M>
    static void row(const data_T data[C::n_in], const M& mask, res_T res[C::n_in]) {
        #pragma HLS INLINE
        typedef softmax_online_types<C> T;
        typename T::x_t x[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = x complete
    load:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            x[i] = code_of(data[i]);
        }
        typename T::x_t m = 0;
        typename T::d_t d = 0;
        bool any = false;
        bool skip[C::n_in];  // SKIP: a skip bit per buffered element
        #pragma HLS ARRAY_PARTITION variable = skip complete
        if (C::OFF_BY_ONE) {  // Softmax_1: a zero logit in front of the row, counted
            d = C::SUM_ONE;
            any = true;
        }
        typename T::d_t du = 0;  // UNIFIED: the phi sum, and an element above PHI
        bool over = false;
        if (C::UNIFIED) {
        phi_sum:
            for (int j = 0; j < C::n_in; j++) {
                #pragma HLS UNROLL
                if (!mask[j]) unified_add<C>(x[j], du, over);
            }
        }
        if (C::TWO_PASS) {
        max_pass:
            for (int j = 0; j < C::n_in; j++) {
                #pragma HLS UNROLL
                if (!mask[j] && (!any || x[j] > m)) m = x[j];
                any = any || !mask[j];
            }
            // Softmax_1: the zero logit's E(m - 0)
            if (C::OFF_BY_ONE)
                d = HWAPPROX_SHL(typename T::d_t, exp<C>(HWAPPROX_NARROW(typename T::delta_t, m)),
                                 C::SUM_UP);
        sum_pass:
            for (int j = 0; j < C::n_in; j++) {
                #pragma HLS UNROLL
                skip[j] = C::SKIP && !mask[j] &&
                          typename T::delta_t(HWAPPROX_NARROW(typename T::delta_t, m - x[j])) >
                              typename T::delta_t(C::SKIP_TAU);
                if (mask[j] || skip[j]) continue;
                const typename T::e_t e = exp<C>(HWAPPROX_NARROW(typename T::delta_t, m - x[j]));
                d = HWAPPROX_NARROW(typename T::d_t,
                                    d + HWAPPROX_SHL(typename T::d_t, e, C::SUM_UP));
            }
        } else {
        online:
            for (int j = 0; j < C::n_in; j++) {
                #pragma HLS UNROLL
                skip[j] = !mask[j] && update<C>(x[j], m, d, any);
            }
        }
        const softmax_online_state<C> st = finish<C>(m, d, any, du, over);
        const typename T::crs_t rs = clip_scale<C>(st.r);  // used when C::CLIP
    out:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            res[i] = emit_one<res_T, C>(x[i], mask[i] || skip[i], st, rs);
        }
    }
};

// ---- io_stream -------------------------------------------------------------------------

template <bool TWO_PASS>
struct softmax_online_stream;

// schedule online: the input is read once; running (m, d); then the outputs
template <>
struct softmax_online_stream<false> {
    template <class data_T, typename C, class MS>
    static void ingest(hls::stream<data_T>& data, MS& mask,
                       hls::stream<typename softmax_online_types<C>::x_t>& buf,
                       hls::stream<bool>& bits, hls::stream<softmax_online_state<C> >& state) {
        #pragma HLS INLINE off
        typedef softmax_online_types<C> T;
        typename T::x_t m = 0;
        typename T::d_t d = C::OFF_BY_ONE ? C::SUM_ONE : 0;  // Softmax_1: the zero logit
        bool any = C::OFF_BY_ONE != 0;
        typename T::d_t du = 0;  // UNIFIED: the phi sum
        bool over = false;
    ingest:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = code_of(typename C::in_t(data.read()));
            const bool b = mask.read();
            buf.write(x);
            // the bit the output stage zeroes on: masked, or skipped (SKIP)
            const bool skipped = !b && softmax_online_op::update<C>(x, m, d, any);
            bits.write(b || skipped);
            if (C::UNIFIED && !b) softmax_online_op::unified_add<C>(x, du, over);
        }
        state.write(softmax_online_op::finish<C>(m, d, any, du, over));
    }

    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res);
};

// schedule two_pass: max while reading, then the sum from the row FIFO
template <>
struct softmax_online_stream<true> {
    template <class data_T, typename C, class MS>
    static void ingest(hls::stream<data_T>& data, MS& mask,
                       hls::stream<typename softmax_online_types<C>::x_t>& buf,
                       hls::stream<bool>& bits,
                       hls::stream<typename softmax_online_types<C>::x_t>& max) {
        #pragma HLS INLINE off
        typedef softmax_online_types<C> T;
        typename T::x_t m = 0;
        bool any = C::OFF_BY_ONE != 0;  // Softmax_1: the zero logit takes part in the max
    ingest:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = code_of(typename C::in_t(data.read()));
            const bool b = mask.read();
            buf.write(x);
            bits.write(b);
            if (!b && (!any || x > m)) m = x;
            any = any || !b;
        }
        max.write(m);
    }

    template <typename C>
    static void sum(hls::stream<typename softmax_online_types<C>::x_t>& buf_in,
                    hls::stream<bool>& bits_in,
                    hls::stream<typename softmax_online_types<C>::x_t>& max,
                    hls::stream<typename softmax_online_types<C>::x_t>& buf,
                    hls::stream<bool>& bits, hls::stream<softmax_online_state<C> >& state) {
        #pragma HLS INLINE off
        typedef softmax_online_types<C> T;
        const typename T::x_t m = max.read();
        // Softmax_1: the zero logit's E(m - 0)
        typename T::d_t d =
            C::OFF_BY_ONE
                ? HWAPPROX_SHL(typename T::d_t,
                               softmax_online_op::exp<C>(HWAPPROX_NARROW(typename T::delta_t, m)),
                               C::SUM_UP)
                : typename T::d_t(0);
        bool any = C::OFF_BY_ONE != 0;
        typename T::d_t du = 0;  // UNIFIED: the phi sum
        bool over = false;
    sum:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = buf_in.read();
            const bool b = bits_in.read();
            const typename T::delta_t dl =
                b ? typename T::delta_t(0) : HWAPPROX_NARROW(typename T::delta_t, m - x);
            const bool skipped = C::SKIP && !b && dl > typename T::delta_t(C::SKIP_TAU);
            buf.write(x);
            bits.write(b || skipped);
            if (!b && !skipped) {
                const typename T::e_t e = softmax_online_op::exp<C>(dl);
                d = HWAPPROX_NARROW(typename T::d_t,
                                    d + HWAPPROX_SHL(typename T::d_t, e, C::SUM_UP));
            }
            if (C::UNIFIED && !b) softmax_online_op::unified_add<C>(x, du, over);
            any = any || !b;
        }
        state.write(softmax_online_op::finish<C>(m, d, any, du, over));
    }

    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res);
};

template <class res_T, typename C>
void softmax_online_emit(hls::stream<typename softmax_online_types<C>::x_t>& buf,
                         hls::stream<bool>& bits, hls::stream<softmax_online_state<C> >& state,
                         hls::stream<res_T>& res) {
    #pragma HLS INLINE off
    const softmax_online_state<C> st = state.read();
    const typename softmax_online_types<C>::crs_t rs =
        softmax_online_op::clip_scale<C>(st.r);  // used when C::CLIP
emit:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        const typename softmax_online_types<C>::x_t x = buf.read();
        const bool b = bits.read();  // masked or skipped
        res.write(softmax_online_op::emit_one<res_T, C>(x, b, st, rs));
    }
}

template <class data_T, class res_T, typename C, class MS>
void softmax_online_stream<false>::run(hls::stream<data_T>& data, MS& mask,
                                       hls::stream<res_T>& res) {
    #pragma HLS DATAFLOW
    hls::stream<typename softmax_online_types<C>::x_t> buf;
    hls::stream<bool> bits;
    hls::stream<softmax_online_state<C> > state;
    constexpr int depth __attribute__((unused)) = C::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf depth = depth
    #pragma HLS STREAM variable = bits depth = depth
    ingest<data_T, C>(data, mask, buf, bits, state);
    softmax_online_emit<res_T, C>(buf, bits, state, res);
}

template <class data_T, class res_T, typename C, class MS>
void softmax_online_stream<true>::run(hls::stream<data_T>& data, MS& mask,
                                      hls::stream<res_T>& res) {
    #pragma HLS DATAFLOW
    hls::stream<typename softmax_online_types<C>::x_t> buf0, buf1, max;
    hls::stream<bool> bits0, bits1;
    hls::stream<softmax_online_state<C> > state;
    constexpr int depth __attribute__((unused)) = C::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf0 depth = depth
    #pragma HLS STREAM variable = bits0 depth = depth
    #pragma HLS STREAM variable = buf1 depth = depth
    #pragma HLS STREAM variable = bits1 depth = depth
    ingest<data_T, C>(data, mask, buf0, bits0, max);
    sum<C>(buf0, bits0, max, buf1, bits1, state);
    softmax_online_emit<res_T, C>(buf1, bits1, state, res);
}

template <>
struct softmax_stream_of<softmax_online_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_online_stream<C::TWO_PASS != 0>::template run<data_T, res_T, C>(data, mask, res);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_ONLINE_H
