// hwapprox/linear.h -- linear layers of a transformer block (io_parallel).
//
// Contract (bit-exact with hwapprox.approx.linear):
//   matmul:      Y[i][j] = res_T(acc_K),
//                acc_0 = accum_t(bias[j]) (matmul_bias) or 0 (matmul),
//                acc_{k+1} = accum_t(acc_k + A[i][k] * B[k][j]), k ascending.
//                Products are exact (ap_fixed<Wa+Wb, Ia+Ib>); every "+=" rounds
//                and overflows with accum_t's own modes; one cast to res_T.
//                With CONFIG_T::transpose_b, B is stored [n_cols][n_inner] (Q.K^T).
//   add:         y[i] = res_T(a[i] + b[i]), exact sum, one cast.
//   mul:         y[i] = res_T(a[i] * b[i]), exact product, one cast (a gated FFN's gate).
//   rotary:      per row s of one head's x[S][DH] (DH even, half = DH / 2):
//                y[s][j] = res_T(x[s][j] * c[s][j] + r[s][j] * sn[s][j]),
//                r[s][j] = -x[s][j + half] (j < half), x[s][j - half] (j >= half);
//                products, negation and sum exact, one cast (RotarySpec).
// Layout: row-major flat arrays, A [n_rows][n_inner], Y [n_rows][n_cols].
// Latency intent: fully unrolled (io_parallel): one multiplier per product,
// an adder chain of n_inner per output; PIPELINE lets HLS schedule it to the
// clock. Use small tiles (attention heads, S <= 16) or it will not fit.
//
// CONFIG_T members: n_rows, n_inner, n_cols (integers), transpose_b (0/1),
// typedef accum_t.
#ifndef HWAPPROX_LINEAR_H
#define HWAPPROX_LINEAR_H

#include "ap_fixed.h"

namespace hwapprox {

template <class a_T, class b_T, class res_T, typename CONFIG_T>
void matmul_acc(const a_T a[CONFIG_T::n_rows * CONFIG_T::n_inner],
                const b_T b[CONFIG_T::n_inner * CONFIG_T::n_cols],
                typename CONFIG_T::accum_t acc[CONFIG_T::n_rows * CONFIG_T::n_cols],
                res_T res[CONFIG_T::n_rows * CONFIG_T::n_cols]) {
    #pragma HLS INLINE
rows:
    for (int i = 0; i < CONFIG_T::n_rows; i++) {
        #pragma HLS UNROLL
    cols:
        for (int j = 0; j < CONFIG_T::n_cols; j++) {
            #pragma HLS UNROLL
            typename CONFIG_T::accum_t sum = acc[i * CONFIG_T::n_cols + j];
        inner:
            for (int k = 0; k < CONFIG_T::n_inner; k++) {
                #pragma HLS UNROLL
                const int bi = CONFIG_T::transpose_b ? j * CONFIG_T::n_inner + k
                                                     : k * CONFIG_T::n_cols + j;
                sum += a[i * CONFIG_T::n_inner + k] * b[bi];  // exact product, accum_t add
            }
            res[i * CONFIG_T::n_cols + j] = sum;  // one cast to res_T
        }
    }
}

// Y = A.B (no bias): activation x activation (Q.K^T, P.V) or bias-free dense.
template <class a_T, class b_T, class res_T, typename CONFIG_T>
void matmul(const a_T a[CONFIG_T::n_rows * CONFIG_T::n_inner],
            const b_T b[CONFIG_T::n_inner * CONFIG_T::n_cols],
            res_T res[CONFIG_T::n_rows * CONFIG_T::n_cols]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = a complete
    #pragma HLS ARRAY_PARTITION variable = b complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    typename CONFIG_T::accum_t acc[CONFIG_T::n_rows * CONFIG_T::n_cols];
    #pragma HLS ARRAY_PARTITION variable = acc complete
init:
    for (int i = 0; i < CONFIG_T::n_rows * CONFIG_T::n_cols; i++) {
        #pragma HLS UNROLL
        acc[i] = 0;
    }
    matmul_acc<a_T, b_T, res_T, CONFIG_T>(a, b, acc, res);
}

// Y = A.W + bias: a dense layer applied to every row (token) of A.
template <class a_T, class b_T, class bias_T, class res_T, typename CONFIG_T>
void matmul_bias(const a_T a[CONFIG_T::n_rows * CONFIG_T::n_inner],
                 const b_T b[CONFIG_T::n_inner * CONFIG_T::n_cols],
                 const bias_T bias[CONFIG_T::n_cols],
                 res_T res[CONFIG_T::n_rows * CONFIG_T::n_cols]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = a complete
    #pragma HLS ARRAY_PARTITION variable = b complete
    #pragma HLS ARRAY_PARTITION variable = bias complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    typename CONFIG_T::accum_t acc[CONFIG_T::n_rows * CONFIG_T::n_cols];
    #pragma HLS ARRAY_PARTITION variable = acc complete
init:
    for (int i = 0; i < CONFIG_T::n_rows; i++) {
        #pragma HLS UNROLL
        for (int j = 0; j < CONFIG_T::n_cols; j++) {
            #pragma HLS UNROLL
            acc[i * CONFIG_T::n_cols + j] = bias[j];  // cast with accum_t's modes
        }
    }
    matmul_acc<a_T, b_T, res_T, CONFIG_T>(a, b, acc, res);
}

// y = res_T(a + b) elementwise over n_elem values (residual connection).
template <class a_T, class b_T, class res_T, int N>
void add(const a_T a[N], const b_T b[N], res_T res[N]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = a complete
    #pragma HLS ARRAY_PARTITION variable = b complete
    #pragma HLS ARRAY_PARTITION variable = res complete
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        res[i] = a[i] + b[i];
    }
}

// y = res_T(a * b) elementwise over N values.
template <class a_T, class b_T, class res_T, int N>
void mul(const a_T a[N], const b_T b[N], res_T res[N]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = a complete
    #pragma HLS ARRAY_PARTITION variable = b complete
    #pragma HLS ARRAY_PARTITION variable = res complete
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        res[i] = a[i] * b[i];  // exact product, one cast
    }
}

// The rotary embedding of one head, x [S][DH] with the position tables c, sn [S][DH].
template <class x_T, class cs_T, class res_T, int S, int DH>
void rotary(const x_T x[S * DH], const cs_T c[S * DH], const cs_T sn[S * DH],
            res_T res[S * DH]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = x complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    static_assert(DH % 2 == 0, "rotary: the head size must be even");
    const int half = DH / 2;
    // -x needs one more integer bit than x; the products and their sum are exact
    typedef ap_fixed<x_T::width + 1, x_T::iwidth + 1> neg_t;
rows:
    for (int s = 0; s < S; s++) {
        #pragma HLS UNROLL
    cols:
        for (int j = 0; j < DH; j++) {
            #pragma HLS UNROLL
            const neg_t r = j < half ? neg_t(-neg_t(x[s * DH + j + half]))
                                     : neg_t(x[s * DH + j - half]);
            const int at = s * DH + j;
            res[at] = x[at] * c[at] + r * sn[at];  // exact products and sum, one cast
        }
    }
}

}  // namespace hwapprox

#endif  // HWAPPROX_LINEAR_H
