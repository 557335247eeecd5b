// hwapprox/attnact.h -- elementwise attention normalisers (no row reduction).
//
// Each op tag is bit-exact with the spec of the same operator/method in
// hwapprox/approx/attnact.py on the same raw codes (tests/test_hls_attnact.py):
//   sigmoid_attention  lut  lut_fn_op  table of sigmoid(x + b), bias folded in (fntable.h)
//   sigmoid_attention  pwl  pwl_fn_op  minimax PWL of sigmoid(x + b), TOP_ONE (fntable.h)
//   relu_attention     wortsman relu_attention_op  max(x, 0)·MULT, one cast
//                                 (MULT = 1 for a power-of-two n: a shift)
//
// Interface as gelu.h: sigmoid_attention / relu_attention <data_T, res_T, CONFIG_T>
// on arrays of n_in (io_parallel, unrolled, PIPELINE) or hls::stream (io_stream,
// n_in per call, II = 1), dispatched on CONFIG_T::op. Widths from hw_params()
// (relu_attention_types<C>), the numbers the SV unit hwa_relu_attention takes.
#ifndef HWAPPROX_ATTNACT_H
#define HWAPPROX_ATTNACT_H

#include "common.h"
#include "fntable.h"
#include "hls_stream.h"

namespace hwapprox {

template <typename C>
struct relu_attention_types {
    typedef ap_uint<C::IN_W - 1> relu_t;  // max(x, 0): the magnitude bits
    typedef ap_uint<C::MULT_W> mult_t;    // K = round(2^(R+e) / n), or 1
    typedef ap_int<C::ACC_W> acc_t;       // relu·K, FA fraction bits, < 2^(ACC_W-1)
};

struct relu_attention_op {
    template <class res_T, typename C>
    static res_T one(const ap_int<C::IN_W>& x) {
        #pragma HLS INLINE
        typedef relu_attention_types<C> T;
        const typename T::relu_t r = x < 0 ? typename T::relu_t(0) : typename T::relu_t(x);
        const typename T::acc_t acc = HWAPPROX_NARROW(
            typename T::acc_t, typename T::acc_t(r) * typename T::mult_t(C::MULT));
        return cast_raw<C::FA, res_T>(acc);
    }
};

// sigmoid attention p = sigmoid(x + b) per score
template <class data_T, class res_T, typename CONFIG_T>
void sigmoid_attention(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    elementwise_array<data_T, res_T, CONFIG_T>(data, res);
}

template <class data_T, class res_T, typename CONFIG_T>
void sigmoid_attention(hls::stream<data_T>& data, hls::stream<res_T>& res) {
    #pragma HLS INLINE off
    elementwise_stream<data_T, res_T, CONFIG_T>(data, res);
}

// ReLU attention p = max(x, 0) / n per score
template <class data_T, class res_T, typename CONFIG_T>
void relu_attention(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    elementwise_array<data_T, res_T, CONFIG_T>(data, res);
}

template <class data_T, class res_T, typename CONFIG_T>
void relu_attention(hls::stream<data_T>& data, hls::stream<res_T>& res) {
    #pragma HLS INLINE off
    elementwise_stream<data_T, res_T, CONFIG_T>(data, res);
}

}  // namespace hwapprox

#endif  // HWAPPROX_ATTNACT_H
