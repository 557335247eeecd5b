// hwapprox/rows.h -- one nonlinear unit applied over the rows of a tensor.
//
// The standalone hls4ml layers (HwApproxNonlinear) use these: data holds
// n_rows rows of n_in values (row-major, the unit's axis last). Each value is
// first assigned to the unit's in_t (with in_t's rounding/overflow: the exact
// model is hwapprox.fixed.cast from the previous layer's type), then the unit
// runs per row (softmax, LayerNorm) or per block of n_in values (GELU).
// LayerNorm gamma/beta are raw-code tables of the config (gamma(i), beta(i)).
// Latency intent: rows are independent; the loop is unrolled (io_parallel).
#ifndef HWAPPROX_ROWS_H
#define HWAPPROX_ROWS_H

#include "common.h"
#include "gelu.h"
#include "layernorm.h"
#include "softmax.h"

namespace hwapprox {

template <class data_T, class res_T, typename C>
void softmax_rows(const data_T data[C::n_rows * C::n_in], res_T res[C::n_rows * C::n_in]) {
    #pragma HLS INLINE off
rows:
    for (int r = 0; r < C::n_rows; r++) {
        #pragma HLS UNROLL
        typename C::in_t x[C::n_in];
        for (int i = 0; i < C::n_in; i++) x[i] = data[r * C::n_in + i];
        softmax<typename C::in_t, res_T, C>(x, res + r * C::n_in);
    }
}

template <class data_T, class res_T, typename C>
void gelu_rows(const data_T data[C::n_rows * C::n_in], res_T res[C::n_rows * C::n_in]) {
    #pragma HLS INLINE off
rows:
    for (int r = 0; r < C::n_rows; r++) {
        #pragma HLS UNROLL
        typename C::in_t x[C::n_in];
        for (int i = 0; i < C::n_in; i++) x[i] = data[r * C::n_in + i];
        gelu<typename C::in_t, res_T, C>(x, res + r * C::n_in);
    }
}

template <class data_T, class res_T, typename C>
void layernorm_rows(const data_T data[C::n_rows * C::n_in], res_T res[C::n_rows * C::n_in]) {
    #pragma HLS INLINE off
    typename C::gamma_t g[C::n_in];
    typename C::beta_t b[C::n_in];
params:
    for (int i = 0; i < C::n_in; i++) {
        g[i] = from_raw<typename C::gamma_t>(C::gamma(unsigned(i)));
        b[i] = from_raw<typename C::beta_t>(C::beta(unsigned(i)));
    }
rows:
    for (int r = 0; r < C::n_rows; r++) {
        #pragma HLS UNROLL
        typename C::in_t x[C::n_in];
        for (int i = 0; i < C::n_in; i++) x[i] = data[r * C::n_in + i];
        C::op::template run<typename C::in_t, res_T, C>(x, res + r * C::n_in, g, b);
    }
}

}  // namespace hwapprox

#endif  // HWAPPROX_ROWS_H
