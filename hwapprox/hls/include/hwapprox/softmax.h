// hwapprox/softmax.h -- softmax units over one row of CONFIG_T::n_in values.
//
// Each op tag is bit-exact with the spec of the same method in
// hwapprox/approx/softmax.py on the same raw codes (tests/test_hls_softmax.py):
//   softmax_online_op     OnlineSoftmax        running max + running sum (one read of the
//                                              row), base-2 or LUT exp, one reciprocal
//                                              per row (PWL LUT or seed + Newton);
//                                              OFF_BY_ONE: Softmax_1, the state starts
//                                              at the zero logit (m, d) = (0, ONE);
//                                              CLIP: clipped softmax (Bondarenko et
//                                              al.), the stretch folded into r;
//                                              SKIP: threshold skipping (BLASST);
//                                              UNIFIED: unified max phi (FlashDecoding++)
//                                              with the exact path as fallback;
//                                              OUT_CODE: log2 / log-sqrt2 output codes
//                                              (RepQ-ViT), res_T = the code type
//   softmax_ibert_op      IBertSoftmax         I-BERT IntSoftmax: i-exp polynomial,
//                                              16-bit requantisation (calibrated
//                                              multiply or shift), 2^32 / sum
//   softmax_shiftmax_op   ShiftmaxSoftmax      I-ViT Shiftmax: shift-exp, the sum
//                                              clamped to 2^31 - 1, (2^31 - 1) / sum
//   softmax_softermax_op  SoftermaxSoftmax     Softermax: base 2, integer running max
//                                              (a right shift rescales), PWL 2^x and 1/x
//   softmax_hls4ml_op     Hls4mlStableSoftmax  hls4ml 1.3 softmax_stable / _latency
//                         Hls4mlLatencySoftmax (exp and 1/x tables, adder tree), as a
//                                              baseline written from the model
//
// Interface (io_parallel, one row per call), dispatched on CONFIG_T::op:
//   softmax<data_T, res_T, CONFIG_T>(data[n_in], res[n_in])
//   softmax<data_T, res_T, CONFIG_T>(data[n_in], const bool mask[n_in], res[n_in])
// mask: one bit per element, true = masked out (the spec's mask contract,
// hwapprox.approx.softmax.SoftmaxSpec): a masked element takes no part in the
// (running) max or the sum and outputs 0; the others get exactly the codes of
// the row without it; a fully masked row outputs zeros. The unmasked overload
// is the masked datapath with every bit false (no_mask: the mask logic folds
// away), bit-identical to the model without a mask.
//
// Widths: CONFIG_T is generated from the spec (hwapprox.hls.units): its
// constants are the spec's hw_params() -- the same numbers the SV unit
// hwa_softmax_online takes as parameters -- and every intermediate below is
// an ap_int/ap_uint of one of those widths (softmax_*_types<C>; the spec's
// hw_params docstring derives each from the largest magnitude). Online, for
// the default spec (16-bit output, row_max 1024): delta 16, exp argument 27
// (exp_arg_fmt), E 29, sum 40, d·E 69, Newton products 47, E·r 50 bits.
// Two types may be wider than 64 bits: I-BERT's requantising product e·m (82
// at 16-bit inputs, a constant multiplier: the model's mul_round_shift needs
// every bit of it to round) and the online rescale product d·E (sum_fmt x
// exp_fmt, derived from the output width and row_max; the model splits it at
// bit EXP_F, exactly).
//
// Latency intent (io_parallel): one row per call, PIPELINE II=1 over rows in
// the caller. The online unit's running (m, d) recurrence is a serial chain of
// n_in compare/multiply-add steps (what makes it single-pass on a stream);
// with schedule two_pass it becomes a max tree plus an adder tree. Exp and
// output multiplies are replicated per element (ARRAY_PARTITION complete).
//
// io_stream: the same units on hls::stream, one element per cycle:
//   softmax<data_T, res_T, CONFIG_T>(hls::stream<data_T>& data, hls::stream<res_T>& res)
//   softmax<data_T, res_T, CONFIG_T>(hls::stream<data_T>& data, hls::stream<bool>& mask,
//                                    hls::stream<res_T>& res)
// take one row of n_in elements (and n_in mask bits) per call and write n_in
// results, bit-exact with the array units. DATAFLOW between the stages, each
// a PIPELINE II=1 loop over the elements; FIFOs of n_in words between them:
//   online   ingest (reads the input stream ONCE: running max and sum, the row
//            into a local FIFO; one reciprocal at the end) -> emit (E(m - x)·r
//            from the FIFO). The d = f(d, E) update is the one loop-carried
//            dependence (a multiply-add per element, as in hwa_softmax_online).
//            two_pass: ingest (max) -> sum (from the FIFO) -> emit.
//   ibert    ingest (max) -> exps (i-exp, requantise, sum; one divider) -> emit.
//   hls4ml   buffers the row, then the array unit (its adder tree is the
//            model's), then streams the row out; shiftmax and softermax likewise.
// Latency per row ~ n_in + the per-row chain (reciprocal / divider); rows
// overlap in DATAFLOW, so the throughput is one element per cycle.
#ifndef HWAPPROX_SOFTMAX_H
#define HWAPPROX_SOFTMAX_H

#include "common.h"
#include "hls_stream.h"
#include "intmath.h"

namespace hwapprox {

// Row masks: no_mask (every element takes part) or mask_bits over a bool
// array, true = masked out.
struct no_mask {
    bool operator[](int) const { return false; }
};
struct mask_bits {
    const bool* bits;
    bool operator[](int i) const { return bits[i]; }
};

// The two io_parallel entry points of a unit (CRTP): OP::row<data_T, res_T, C>(data,
// mask policy, res) with no_mask, or with the caller's mask bits.
template <class OP>
struct softmax_row_entry {
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        OP::template row<data_T, res_T, C>(data, no_mask(), res);
    }
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], const bool mask[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        const mask_bits m = {mask};
        OP::template row<data_T, res_T, C>(data, m, res);
    }
};

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

// ---- I-BERT ----------------------------------------------------------------------------
template <typename C>
struct softmax_ibert_types {
    typedef ap_int<C::X_W> x_t;                   // an input code
    typedef ap_int<C::DIFF_W> diff_t;             // x - max
    typedef ap_uint<C::IE_W> e_t;                 // i-exp result
    typedef ap_uint<C::REQUANT_MULT_W> mult_t;    // the QuantAct multiplier
    typedef ap_uint<C::RQ_W> rq_t;                // e·mult (exact, see the header note)
    typedef ap_uint<C::E16_W> e16_t;              // requantised exp
    typedef ap_uint<C::SUM_W> sum_t;              // row sum of e16
    typedef ap_uint<C::FACTOR_W> factor_t;        // 2^factor_bits / sum
    typedef ap_uint<C::PROD_W> prod_t;            // e16·factor
    typedef ap_int<C::Y_W> y_t;                   // the output before out_fmt's overflow
};

// I-BERT's method in the three-pass skeleton (softmax_3pass_op below).
struct ibert_3pass {
    template <typename C>
    struct types : softmax_ibert_types<C> {
        typedef typename softmax_ibert_types<C>::e16_t term_t;  // the summed exp term
    };
    // steps 2-3 of IBertSoftmax: e16 of diff = x - max (<= 0)
    template <typename C>
    static typename softmax_ibert_types<C>::e16_t exp16(
        const typename softmax_ibert_types<C>::diff_t& diff) {
        #pragma HLS INLINE
        typedef softmax_ibert_types<C> T;
        const typename T::e_t e = i_exp<C>(diff);
        if (C::CALIBRATED) {
            // QuantAct(16): e·m / 2^shift, ties to even, clamped to 2^(exp_bits-1) - 1
            const typename T::rq_t prod =
                HWAPPROX_NARROW(typename T::rq_t, e * typename T::mult_t(C::REQUANT_MULT));
            const typename T::rq_t r = round_shift<AP_RND_CONV, C::RQ_W>(prod, C::REQUANT_SHIFT);
            return r > typename T::rq_t(C::E16_MAX) ? typename T::e16_t(C::E16_MAX)
                                                     : typename T::e16_t(r);
        }
        return HWAPPROX_NARROW(typename T::e16_t, e >> C::EXP_SHIFT);
    }
    template <typename C>
    static typename softmax_ibert_types<C>::e16_t term(
        const typename softmax_ibert_types<C>::diff_t& diff) {
        #pragma HLS INLINE
        return exp16<C>(diff);
    }
    // 2^factor_bits / sum, one divider per row (a fully masked row sums to 0: 1)
    template <typename C>
    static typename softmax_ibert_types<C>::factor_t factor(
        typename softmax_ibert_types<C>::sum_t total) {
        #pragma HLS INLINE
        typedef softmax_ibert_types<C> T;
        if (total == 0) total = 1;  // only a fully masked row: its outputs are all 0
        return HWAPPROX_NARROW(typename T::factor_t,
                               typename T::factor_t(1) << C::FACTOR_BITS) / total;
    }
};

// The three-pass integer softmax of I-BERT and I-ViT's Shiftmax (the SV's
// hwa_softmax_3pass): max of the row; each exp term (METHOD::term of x - max) and
// their sum; one per-row factor (METHOD::factor of the sum); out = term·factor >>
// OUT_SHIFT into res_T. METHOD::types<C> names every intermediate's type.
template <class METHOD>
struct softmax_3pass_op : softmax_row_entry<softmax_3pass_op<METHOD> > {
    template <class data_T, class res_T, typename C, class M>
    static void row(const data_T data[C::n_in], const M& mask, res_T res[C::n_in]) {
        #pragma HLS INLINE
        typedef typename METHOD::template types<C> T;
        typename T::x_t x[C::n_in];
        typename T::term_t e[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = x complete
        #pragma HLS ARRAY_PARTITION variable = e complete
        typename T::x_t m = 0;
        bool any = false;
    load:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            x[i] = code_of(data[i]);
            if (!mask[i] && (!any || x[i] > m)) m = x[i];
            any = any || !mask[i];
        }
        typename T::sum_t total = 0;
    exps:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            e[i] = mask[i] ? typename T::term_t(0)
                           : METHOD::template term<C>(
                                 HWAPPROX_NARROW(typename T::diff_t, x[i] - m));
            total = HWAPPROX_NARROW(typename T::sum_t, total + e[i]);
        }
        const typename T::factor_t factor = METHOD::template factor<C>(total);
    out:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            const typename T::prod_t p = HWAPPROX_NARROW(typename T::prod_t, e[i] * factor);
            const typename T::y_t y = HWAPPROX_NARROW(typename T::y_t, p >> C::OUT_SHIFT);
            res[i] = mask[i] ? res_T(0) : cast_raw<C::OUT_F, res_T>(y);
        }
    }
};

typedef softmax_3pass_op<ibert_3pass> softmax_ibert_op;

// ---- I-ViT Shiftmax ----------------------------------------------------------------------
template <typename C>
struct softmax_shiftmax_types {
    typedef ap_int<C::X_W> x_t;          // an input code
    typedef ap_int<C::DIFF_W> diff_t;    // x - max
    typedef ap_uint<C::SE_W> e_t;        // shift-exp result
    typedef ap_uint<C::SUM_W> sum_t;     // row sum of e, before the 2^31 - 1 clamp
    typedef ap_uint<C::FACTOR_W> factor_t;  // the clamped sum and (2^31 - 1) / sum
    typedef ap_uint<C::PROD_W> prod_t;   // e·factor
    typedef ap_int<C::Y_W> y_t;          // the output before out_fmt's overflow
};

// Shiftmax's method in the three-pass skeleton.
struct shiftmax_3pass {
    template <typename C>
    struct types : softmax_shiftmax_types<C> {
        typedef typename softmax_shiftmax_types<C>::e_t term_t;  // the summed exp term
    };
    template <typename C>
    static typename softmax_shiftmax_types<C>::e_t term(
        const typename softmax_shiftmax_types<C>::diff_t& diff) {
        #pragma HLS INLINE
        return shift_exp<C>(diff);
    }
    // I-ViT clamps the sum to 2^31 - 1; (2^31 - 1) / sum, one divider per row (only a
    // fully masked row sums to 0: 1)
    template <typename C>
    static typename softmax_shiftmax_types<C>::factor_t factor(
        typename softmax_shiftmax_types<C>::sum_t total) {
        #pragma HLS INLINE
        typedef softmax_shiftmax_types<C> T;
        typename T::factor_t sum = total > typename T::sum_t(C::SUM_MAX)
                                       ? typename T::factor_t(C::SUM_MAX)
                                       : HWAPPROX_NARROW(typename T::factor_t, total);
        if (sum == 0) sum = 1;
        return typename T::factor_t(C::SUM_MAX) / sum;
    }
};

typedef softmax_3pass_op<shiftmax_3pass> softmax_shiftmax_op;

// ---- Softermax ---------------------------------------------------------------------------
template <typename C>
struct softmax_softermax_types {
    typedef ap_int<C::X_W> x_t;          // an input code
    typedef ap_int<C::PROD_W> prod_t;    // x·LOG2E, exact
    typedef ap_int<C::M_W> m_t;          // the integer running max floor(t)
    typedef ap_uint<C::SH_W> sh_t;       // M_new - M_old
    typedef ap_int<C::A_W> a_t;          // a = t - M·2^F_t
    typedef ap_uint<C::EXP_W> p_t;       // P(a) = 2^a, P_F fraction bits (exp2_neg's e_t)
    typedef ap_uint<C::SUM_W> d_t;       // running sum, sum_fmt code
    typedef ap_uint<C::R_W> r_t;         // 1/d, recip_fmt code
    typedef ap_uint<C::OUTP_W> outp_t;   // P·r
};

template <typename C>
struct softermax_exp2_p : C {
    static typename C::pow2_table_entry_t table(unsigned i) {
        #pragma HLS INLINE
        return C::pow2_table(i);
    }
};
template <typename C>
struct softermax_recip_p : C {
    static const int D_W = C::SUM_W;
    static const int D_F = C::SUM_F;
    static const int OUT_F = C::R_F;  // the reciprocal's fraction bits
    static typename C::recip_table_entry_t table(unsigned i) {
        #pragma HLS INLINE
        return C::recip_table(i);
    }
};

struct softmax_softermax_op : softmax_row_entry<softmax_softermax_op> {
    // P(t - M·2^F_t) = 2^a (a < 1) as exp2_neg(1 - a) with P_F + 1 fraction bits; a is
    // clamped at A_MIN, below which P is 0 (SoftermaxSoftmax._pow2_fn)
    template <typename C>
    static typename softmax_softermax_types<C>::p_t pow2(
        const typename C::t_t& t, const typename softmax_softermax_types<C>::m_t& m) {
        #pragma HLS INLINE
        typedef softmax_softermax_types<C> T;
        typename T::a_t a = HWAPPROX_NARROW(
            typename T::a_t, code_of(t) - HWAPPROX_SHL(typename T::a_t, m, C::T_F));
        if (a < typename T::a_t(C::A_MIN)) a = C::A_MIN;
        const typename exp2_types<C>::t_t arg =
            HWAPPROX_NARROW(typename exp2_types<C>::t_t, (typename T::a_t(1) << C::T_F) - a);
        return exp2_neg<C::pow2_t::qmode, softermax_exp2_p<C> >(arg);
    }

    template <class data_T, class res_T, typename C, class M>
    static void row(const data_T data[C::n_in], const M& mask, res_T res[C::n_in]) {
        #pragma HLS INLINE
        typedef softmax_softermax_types<C> T;
        typename C::t_t t[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = t complete
    scale:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            const typename T::x_t x = code_of(data[i]);
            const typename T::prod_t pr =
                HWAPPROX_NARROW(typename T::prod_t, x * ap_uint<C::LOG2E_W>(C::LOG2E));
            t[i] = cast_raw<C::IN_F + C::LOG2E_F, typename C::t_t>(pr);
        }
        // pass 1: integer running max and the running sum (a new max shifts d right)
        typename T::m_t m = 0;
        typename T::d_t d = 0;
        bool any = false;
    pass1:
        for (int j = 0; j < C::n_in; j++) {
            #pragma HLS UNROLL
            if (mask[j]) continue;
            const typename T::m_t mj = HWAPPROX_NARROW(typename T::m_t, code_of(t[j]) >> C::T_F);
            if (!any || mj > m) {
                if (any) {
                    const typename T::sh_t sh = HWAPPROX_NARROW(typename T::sh_t, mj - m);
                    d = sh >= C::SUM_W ? typename T::d_t(0) : typename T::d_t(d >> sh);
                }
                m = mj;
                any = true;
            }
            d = HWAPPROX_NARROW(typename T::d_t,
                                d + HWAPPROX_SHL(typename T::d_t, pow2<C>(t[j], m), C::SUM_UP));
        }
        // one reciprocal per row; a fully masked row (d = 0) divides nothing
        const typename recip_types<softermax_recip_p<C> >::rpre_t rr =
            reciprocal<C::recip_t::qmode, softermax_recip_p<C> >(
                any ? d : typename T::d_t(C::SUM_ONE));
        const typename T::r_t r = code_of(cast_raw<C::R_F, typename C::recip_t>(rr));
    pass2:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            if (mask[i]) {  // masked (its t may lie above the max): 0, no exp
                res[i] = 0;
                continue;
            }
            const typename T::outp_t pr = pow2<C>(t[i], m) * r;
            res[i] = cast_raw<C::P_F + C::R_F, res_T>(pr);
        }
    }
};

// ---- hls4ml 1.3 baselines --------------------------------------------------------------
// hls4ml nnet::reduce<accum_t, N, Op_add>: left = 2^floor(log2(N-1)) elements.
template <class T, int N>
struct hls4ml_reduce_add {
    static T sum(const T* x) {
        #pragma HLS INLINE
        const int left = N <= 2 ? 1 : (1 << (31 - __builtin_clz(N - 1)));
        T a = hls4ml_reduce_add<T, left>::sum(x);
        T b = hls4ml_reduce_add<T, N - left>::sum(x + left);
        T s = a + b;
        return s;
    }
};
template <class T>
struct hls4ml_reduce_add<T, 1> {
    static T sum(const T* x) { return x[0]; }
};
template <class T>
struct hls4ml_reduce_add<T, 0> {
    static T sum(const T*) { return 0; }
};

template <typename C>
struct softmax_hls4ml_types {
    typedef ap_fixed<C::DIFF_W, C::in_t::iwidth + 1> diff_t;  // x_max - x, exact
    typedef ap_fixed<C::PROD_W, C::PROD_I> prod_t;            // exp_res·inv, exact
};

// Masks (an hwapprox extension; hls4ml has none): x_max over the unmasked
// elements, masked exp_res = 0 in hls4ml's adder tree. The model sums the
// unmasked elements only (hls4ml's tree for N' inputs); zeros in the N-input
// tree give the same sum when accum_t's overflow is AP_WRAP (modular) or
// AP_SAT/AP_SAT_SYM (the addends are >= 0: min(total, max) in any tree), so a
// masked row needs one of those (checked at compile time).
struct softmax_hls4ml_op {
    template <class data_T, class res_T, typename C, class M>
    static void row(const data_T data[C::n_in], const M& mask, res_T res[C::n_in]) {
        #pragma HLS INLINE
        typedef typename C::exp_addr_t addr_t;
        typedef softmax_hls4ml_types<C> T;
        const int na = C::EXP_ADDR_BITS;
        const int ni = C::INV_ADDR_BITS;
        data_T xmax = 0;
        bool any = false;
    maxv:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            if (!mask[i] && (!any || data[i] > xmax)) xmax = data[i];
            any = any || !mask[i];
        }
        typename C::accum_t e[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = e complete
    exps:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            addr_t d;
            if (C::STABLE) {
                const typename T::diff_t diff = xmax - data[i];
                d = diff;  // the exact difference assigned to inp_norm_t (wraps)
            } else {
                d.range(addr_t::width - 1, 0) = data[i].range(addr_t::width - 1, 0);
            }
            const unsigned idx = d.range(addr_t::width - 1, addr_t::width - na).to_uint();
            e[i] = mask[i] ? typename C::accum_t(0)
                           : typename C::accum_t(
                                 from_raw<typename C::exp_table_t>(C::exp_table(idx)));
        }
        typename C::inv_inp_t s = hls4ml_reduce_add<typename C::accum_t, C::n_in>::sum(e);
        const int wi = C::inv_inp_t::width;
        const unsigned iidx = s.range(wi - 1, wi - ni).to_uint();
        const typename C::inv_table_t inv =
            from_raw<typename C::inv_table_t>(C::invert_table(iidx));
    out:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            const typename T::prod_t p = e[i] * inv;
            res[i] = mask[i] ? res_T(0) : res_T(p);
        }
    }

    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        row<data_T, res_T, C>(data, no_mask(), res);
    }
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], const bool mask[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        static_assert(C::accum_t::omode != AP_SAT_ZERO,
                      "a masked hls4ml softmax needs an accum_t overflow mode whose adder "
                      "tree does not depend on the masked zeros (AP_WRAP, AP_SAT, AP_SAT_SYM)");
        const mask_bits m = {mask};
        row<data_T, res_T, C>(data, m, res);
    }
};

// ---- io_stream -------------------------------------------------------------------------
// Mask sources of the stream units: no bits, or one bool per element from a stream.
struct no_mask_stream {
    bool read() { return false; }
};

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

template <typename C>
struct softmax_ibert_stages {
    typedef softmax_ibert_types<C> T;

    template <class data_T, class MS>
    static void ingest(hls::stream<data_T>& data, MS& mask, hls::stream<typename T::x_t>& buf,
                       hls::stream<bool>& bits, hls::stream<typename T::x_t>& max) {
        #pragma HLS INLINE off
        typename T::x_t m = 0;
        bool any = false;
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

    static void exps(hls::stream<typename T::x_t>& buf, hls::stream<bool>& bits_in,
                     hls::stream<typename T::x_t>& max, hls::stream<typename T::e16_t>& ebuf,
                     hls::stream<bool>& bits, hls::stream<typename T::factor_t>& factor) {
        #pragma HLS INLINE off
        const typename T::x_t m = max.read();
        typename T::sum_t total = 0;
    exps:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = buf.read();
            const bool b = bits_in.read();
            const typename T::e16_t e =
                b ? typename T::e16_t(0)
                  : ibert_3pass::exp16<C>(HWAPPROX_NARROW(typename T::diff_t, x - m));
            total = HWAPPROX_NARROW(typename T::sum_t, total + e);
            ebuf.write(e);
            bits.write(b);
        }
        factor.write(ibert_3pass::factor<C>(total));  // the array unit's divider
    }

    template <class res_T>
    static void emit(hls::stream<typename T::e16_t>& ebuf, hls::stream<bool>& bits,
                     hls::stream<typename T::factor_t>& factor, hls::stream<res_T>& res) {
        #pragma HLS INLINE off
        const typename T::factor_t f = factor.read();
    emit:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::e16_t e = ebuf.read();
            const bool b = bits.read();
            const typename T::prod_t p = HWAPPROX_NARROW(typename T::prod_t, e * f);
            const typename T::y_t y = HWAPPROX_NARROW(typename T::y_t, p >> C::OUT_SHIFT);
            res.write(b ? res_T(0) : cast_raw<C::OUT_F, res_T>(y));
        }
    }
};

template <class data_T, class res_T, typename C, class MS>
void softmax_ibert_stream(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
    #pragma HLS DATAFLOW
    typedef softmax_ibert_stages<C> S;
    typedef typename S::T T;
    hls::stream<typename T::x_t> buf, max;
    hls::stream<typename T::e16_t> ebuf;
    hls::stream<bool> bits0, bits1;
    hls::stream<typename T::factor_t> factor;
    constexpr int depth __attribute__((unused)) = C::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf depth = depth
    #pragma HLS STREAM variable = bits0 depth = depth
    #pragma HLS STREAM variable = ebuf depth = depth
    #pragma HLS STREAM variable = bits1 depth = depth
    S::template ingest<data_T>(data, mask, buf, bits0, max);
    S::exps(buf, bits0, max, ebuf, bits1, factor);
    S::template emit<res_T>(ebuf, bits1, factor, res);
}

// hls4ml and shiftmax: the row buffered, the array unit, the row streamed out.
template <class OP, class data_T, class res_T, typename C, class MS>
void softmax_buffered_stream(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
    typename C::in_t x[C::n_in];
    bool b[C::n_in];
    res_T y[C::n_in];
    #pragma HLS ARRAY_PARTITION variable = x complete
    #pragma HLS ARRAY_PARTITION variable = b complete
    #pragma HLS ARRAY_PARTITION variable = y complete
load:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        x[i] = data.read();
        b[i] = mask.read();
    }
    const mask_bits m = {b};
    OP::template row<typename C::in_t, res_T, C>(x, m, y);
store:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        res.write(y[i]);
    }
}

// Stream dispatch per op tag.
template <class OP>
struct softmax_stream_of;
template <>
struct softmax_stream_of<softmax_online_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_online_stream<C::TWO_PASS != 0>::template run<data_T, res_T, C>(data, mask, res);
    }
};
template <>
struct softmax_stream_of<softmax_ibert_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_ibert_stream<data_T, res_T, C>(data, mask, res);
    }
};
template <>
struct softmax_stream_of<softmax_hls4ml_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_buffered_stream<softmax_hls4ml_op, data_T, res_T, C>(data, mask, res);
    }
};
template <>
struct softmax_stream_of<softmax_softermax_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_buffered_stream<softmax_softermax_op, data_T, res_T, C>(data, mask, res);
    }
};
template <>
struct softmax_stream_of<softmax_shiftmax_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_buffered_stream<softmax_shiftmax_op, data_T, res_T, C>(data, mask, res);
    }
};

// Log-coded outputs (OUT_CODE, SoftmaxSpec.out_code) of every method: the online unit
// encodes inside its output stage; any other unit runs as usual into out_t
// probabilities and softmax_code_post encodes each one (softmax_online_op::log_code:
// the priority encoder and constant compares, the same function) into res_T's raw
// bits -- one more step after the unit, elementwise, at the stream rate.
template <class OP>
struct softmax_codes_inside {
    static const bool value = false;
};
template <>
struct softmax_codes_inside<softmax_online_op> {
    static const bool value = true;
};

template <bool POST>
struct softmax_code_post;

template <>
struct softmax_code_post<false> {
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        C::op::template run<data_T, res_T, C>(data, res);
    }
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], const bool mask[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        C::op::template run<data_T, res_T, C>(data, mask, res);
    }
    template <class data_T, class res_T, typename C, class MS>
    static void stream(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_stream_of<typename C::op>::template run<data_T, res_T, C>(data, mask, res);
    }
};

template <>
struct softmax_code_post<true> {
    template <class res_T, typename C>
    static void encode(const typename C::out_t p[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
    codes:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            res[i] = from_raw<res_T>(softmax_online_op::template log_code<C>(code_of(p[i])));
        }
    }
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        typename C::out_t p[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = p complete
        C::op::template run<data_T, typename C::out_t, C>(data, p);
        encode<res_T, C>(p, res);
    }
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], const bool mask[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        typename C::out_t p[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = p complete
        C::op::template run<data_T, typename C::out_t, C>(data, mask, p);
        encode<res_T, C>(p, res);
    }
    template <class data_T, class res_T, typename C, class MS>
    static void stream(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        #pragma HLS DATAFLOW
        hls::stream<typename C::out_t> p;
        #pragma HLS STREAM variable = p depth = 2
        softmax_stream_of<typename C::op>::template run<data_T, typename C::out_t, C>(data, mask,
                                                                                     p);
    codes:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            res.write(from_raw<res_T>(softmax_online_op::template log_code<C>(code_of(p.read()))));
        }
    }
};

template <typename C>
struct softmax_post_of {
    typedef softmax_code_post<C::OUT_CODE != 0 && !softmax_codes_inside<typename C::op>::value>
        type;
};

// Softmax over one row of n_in values with the unit named by CONFIG_T::op.
template <class data_T, class res_T, typename CONFIG_T>
void softmax(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    softmax_post_of<CONFIG_T>::type::template run<data_T, res_T, CONFIG_T>(data, res);
}

// The same with mask bits (true = masked out); a fully masked row is all zeros.
template <class data_T, class res_T, typename CONFIG_T>
void softmax(const data_T data[CONFIG_T::n_in], const bool mask[CONFIG_T::n_in],
             res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = mask complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    softmax_post_of<CONFIG_T>::type::template run<data_T, res_T, CONFIG_T>(data, mask, res);
}

// io_stream: one row of n_in elements from data, n_in results to res.
template <class data_T, class res_T, typename CONFIG_T>
void softmax(hls::stream<data_T>& data, hls::stream<res_T>& res) {
    #pragma HLS INLINE off
    no_mask_stream none;
    softmax_post_of<CONFIG_T>::type::template stream<data_T, res_T, CONFIG_T>(data, none, res);
}

// io_stream with one mask bit per element (true = masked out).
template <class data_T, class res_T, typename CONFIG_T>
void softmax(hls::stream<data_T>& data, hls::stream<bool>& mask, hls::stream<res_T>& res) {
    #pragma HLS INLINE off
    softmax_post_of<CONFIG_T>::type::template stream<data_T, res_T, CONFIG_T>(data, mask, res);
}

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_H
