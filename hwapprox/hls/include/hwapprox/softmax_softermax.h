// hwapprox/softmax_softermax.h -- Softermax (softmax_softermax_op), bit-exact with
// hwapprox.approx.softmax.SoftermaxSoftmax (tests/test_hls_softmax.py); the SV unit is
// hwa_softmax_softermax.
//
// Source: Stevens et al., DAC 2021, Softermax.
//
// Contract, per row of n_in raw codes x (unmasked elements only):
//   t = cast(x·LOG2E) into t_fmt (a code with T_F fraction bits);
//   pass 1: M' = max(M, t >> T_F); d = (d >> (M' - M)) + (P(t - M'·2^T_F) << SUM_UP)
//   (the first element: M = t >> T_F, d = P(.) << SUM_UP); P(a) = 2^a (a < 1) by the
//   PWL exp2_neg of 1 - max(a, A_MIN) (intmath.h);
//   r = 1/d once per row (PWL reciprocal, recip_fmt);
//   pass 2: y = cast_out(P(t - M·2^T_F)·r).
// Widths: softmax_softermax_types<C> (spec hw_params()).
//
// io_stream: the row buffered, the array unit, the row streamed out
// (softmax_buffered_stream).
#ifndef HWAPPROX_SOFTMAX_SOFTERMAX_H
#define HWAPPROX_SOFTMAX_SOFTERMAX_H

#include "common.h"
#include "intmath.h"
#include "softmax_common.h"
#include "softmax_stream.h"

namespace hwapprox {

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

// ---- io_stream -------------------------------------------------------------------------

template <>
struct softmax_stream_of<softmax_softermax_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_buffered_stream<softmax_softermax_op, data_T, res_T, C>(data, mask, res);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_SOFTERMAX_H
