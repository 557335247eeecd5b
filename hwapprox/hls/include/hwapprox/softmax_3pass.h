// hwapprox/softmax_3pass.h -- the three-pass integer softmax skeleton
// (softmax_3pass_op<METHOD>) of I-BERT (softmax_ibert.h) and I-ViT's Shiftmax
// (softmax_shiftmax.h); the SV counterpart is hwa_softmax_3pass.
//
// Contract, per row of n_in raw codes x (masked elements: no part, output 0):
//   m = max of the unmasked x;  e_i = METHOD::term(x_i - m);  S = sum of e_i;
//   f = METHOD::factor(S) (one divider per row);
//   y_i = cast_out((e_i·f) >> OUT_SHIFT) (OUT_F fraction bits, out_fmt's modes).
// METHOD::types<C> names every intermediate's type (x_t, diff_t, term_t, sum_t,
// factor_t, prod_t, y_t), each of a spec hw_params() width.
//
// Latency intent: io_parallel, one row per call: a max tree, the exps and an adder
// tree, the per-row divider, then the output products in parallel.
#ifndef HWAPPROX_SOFTMAX_3PASS_H
#define HWAPPROX_SOFTMAX_3PASS_H

#include "common.h"
#include "softmax_common.h"

namespace hwapprox {

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

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_3PASS_H
