// hwapprox/softmax_shiftmax.h -- I-ViT Shiftmax (softmax_shiftmax_op), bit-exact with
// hwapprox.approx.softmax.ShiftmaxSoftmax (tests/test_hls_softmax.py); the SV unit is
// hwa_softmax_shiftmax.
//
// Source: Li & Gu, ICCV 2023, I-ViT (zkkli/I-ViT quant_modules.py IntSoftmax).
//
// Contract, per row of n_in raw codes x (the three-pass skeleton, softmax_3pass.h):
//   m = max of the unmasked x;  e = shift_exp(x - m) (intmath.h);  S = sum of e;
//   factor = floor((2^31 - 1) / max(min(S, 2^31 - 1), 1));
//   y = cast_out((e·factor) >> OUT_SHIFT).
// Widths: softmax_shiftmax_types<C> (spec hw_params()).
//
// io_stream: the row buffered, the array unit, the row streamed out
// (softmax_buffered_stream).
#ifndef HWAPPROX_SOFTMAX_SHIFTMAX_H
#define HWAPPROX_SOFTMAX_SHIFTMAX_H

#include "common.h"
#include "intmath.h"
#include "softmax_3pass.h"
#include "softmax_stream.h"

namespace hwapprox {

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

// ---- io_stream -------------------------------------------------------------------------

template <>
struct softmax_stream_of<softmax_shiftmax_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_buffered_stream<softmax_shiftmax_op, data_T, res_T, C>(data, mask, res);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_SHIFTMAX_H
