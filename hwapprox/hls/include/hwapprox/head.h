// hwapprox/head.h -- a dense head after the encoder chain (io_parallel and io_stream).
//
// Contract: bit-exact with hwapprox.hls.head.DenseHead.model on the same raw codes
// (tests/test_hls_head.py, and through hls4ml compile()/predict()).
//   Z = x[token] (one row, CONFIG_T::token >= 0) or x (every row, token == -1)
//   Y = LayerNorm(Z -> ln_cfg::in_t; g, be) by rows     (CONFIG_T::has_ln == 1)
//   y = Y.w + b -> out_t                                  (dense_cfg, hwapprox::matmul_bias)
// x: [seq][dim] row-major; y: [rows][n_out] (rows = 1 with a token, else seq);
// w: [dim][n_out] of weight_t, b: [n_out] of bias_t, g/be: [dim] of gamma_t/beta_t
// (read only when has_ln). Selecting the row first is exact: LayerNorm is row-wise.
// io_stream: seq packs of dim values in, rows packs of n_out values out.
#ifndef HWAPPROX_HEAD_H
#define HWAPPROX_HEAD_H

#include "encoder.h"
#include "hls_stream.h"
#include "linear.h"

namespace hwapprox {

// The normalisation step: the identity (no LayerNorm) or the LayerNorm unit by rows.
template <bool HAS_LN>
struct head_norm;

template <>
struct head_norm<false> {
    template <class x_T, typename CONFIG_T>
    static void run(const x_T z[CONFIG_T::rows * CONFIG_T::dim],
                    const typename CONFIG_T::gamma_t* /* g: unread */,
                    const typename CONFIG_T::beta_t* /* be: unread */,
                    typename CONFIG_T::dense_cfg::a_t y[CONFIG_T::rows * CONFIG_T::dim]) {
        #pragma HLS INLINE
        for (int i = 0; i < CONFIG_T::rows * CONFIG_T::dim; i++) y[i] = z[i];
    }
};

template <>
struct head_norm<true> {
    template <class x_T, typename CONFIG_T>
    static void run(const x_T z[CONFIG_T::rows * CONFIG_T::dim],
                    const typename CONFIG_T::gamma_t g[CONFIG_T::dim],
                    const typename CONFIG_T::beta_t be[CONFIG_T::dim],
                    typename CONFIG_T::dense_cfg::a_t y[CONFIG_T::rows * CONFIG_T::dim]) {
        #pragma HLS INLINE
        typedef typename CONFIG_T::ln_cfg LN;
        encoder_layernorm_rows<x_T, typename LN::out_t, LN, CONFIG_T::rows, CONFIG_T::dim>(z, g, be,
                                                                                          y);
    }
};

template <class data_T, class res_T, typename CONFIG_T>
void dense_head(const data_T x[CONFIG_T::seq * CONFIG_T::dim],
                res_T y[CONFIG_T::rows * CONFIG_T::n_out],
                const typename CONFIG_T::weight_t w[CONFIG_T::dim * CONFIG_T::n_out],
                const typename CONFIG_T::bias_t b[CONFIG_T::n_out],
                const typename CONFIG_T::gamma_t g[CONFIG_T::dim],
                const typename CONFIG_T::beta_t be[CONFIG_T::dim]) {
    #pragma HLS INLINE off
    const int R = CONFIG_T::rows, D = CONFIG_T::dim;
    static_assert(CONFIG_T::token < CONFIG_T::seq, "head token outside the sequence");
    static_assert(R == (CONFIG_T::token >= 0 ? 1 : CONFIG_T::seq), "rows = 1 with a token");
    typedef typename CONFIG_T::dense_cfg DN;
    const int first = CONFIG_T::token >= 0 ? CONFIG_T::token : 0;
    data_T z[R * D];
select:
    for (int i = 0; i < R * D; i++) z[i] = x[first * D + i];
    typename DN::a_t a[R * D];
    head_norm<CONFIG_T::has_ln != 0>::template run<data_T, CONFIG_T>(z, g, be, a);
    matmul_bias<typename DN::a_t, typename DN::b_t, typename DN::bias_t, res_T, DN>(a, w, b, y);
}

// io_stream: the sequence is buffered (a token head reads every pack, keeps one).
template <class data_T, class res_T, typename CONFIG_T>
void dense_head_stream(hls::stream<data_T>& x_s, hls::stream<res_T>& y_s,
                       const typename CONFIG_T::weight_t w[CONFIG_T::dim * CONFIG_T::n_out],
                       const typename CONFIG_T::bias_t b[CONFIG_T::n_out],
                       const typename CONFIG_T::gamma_t g[CONFIG_T::dim],
                       const typename CONFIG_T::beta_t be[CONFIG_T::dim]) {
    #pragma HLS INLINE off
    static_assert(int(data_T::size) == CONFIG_T::dim && int(res_T::size) == CONFIG_T::n_out,
                  "dense_head_stream: one pack per token in (dim), per row out (n_out)");
    typename data_T::value_type x[CONFIG_T::seq * CONFIG_T::dim];
    typename res_T::value_type y[CONFIG_T::rows * CONFIG_T::n_out];
    encoder_read_packs<data_T, CONFIG_T::seq * CONFIG_T::dim>(x_s, x);
    dense_head<typename data_T::value_type, typename res_T::value_type, CONFIG_T>(x, y, w, b, g,
                                                                                 be);
    encoder_write_packs<res_T, CONFIG_T::rows * CONFIG_T::n_out>(y, y_s);
}

}  // namespace hwapprox

#endif  // HWAPPROX_HEAD_H
