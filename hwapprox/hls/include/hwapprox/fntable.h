// hwapprox/fntable.h -- table datapaths of smooth elementwise functions.
//
// Bit-exact with hwapprox/approx/fntable.py (PwlTable, LutTable) on the same raw
// codes; used by GELU (gelu.h: gelu_pwl_op, gelu_lut_op) and sigmoid attention
// (attnact.h) with the function folded into the tables:
//   pwl_fn_op  x < B_0: 0; x >= B_N: x (TOP_ONE = 0) or 1 (TOP_ONE = 1);
//              else s_i·x + c_i exact, one cast to res_T (N-1 comparators + one MAC)
//   lut_fn_op  T[(x - min_code) >> INDEX_SHIFT] (one ROM read)
// Widths from the spec's hw_params(), the numbers the SV units hwa_pwl and hwa_lut take.
// elementwise_array / elementwise_stream: the shared entry loops.
#ifndef HWAPPROX_FNTABLE_H
#define HWAPPROX_FNTABLE_H

#include "common.h"
#include "hls_stream.h"

namespace hwapprox {

// The elementwise loops every such unit's entry function runs (gelu.h, attnact.h):
// n_in values through CONFIG_T::op::one, unrolled (arrays) or one per cycle (streams).
template <class data_T, class res_T, typename CONFIG_T>
void elementwise_array(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS INLINE
elems:
    for (int i = 0; i < CONFIG_T::n_in; i++) {
        #pragma HLS UNROLL
        const typename CONFIG_T::in_t x = data[i];
        res[i] = CONFIG_T::op::template one<res_T, CONFIG_T>(code_of(x));
    }
}

template <class data_T, class res_T, typename CONFIG_T>
void elementwise_stream(hls::stream<data_T>& data, hls::stream<res_T>& res) {
    #pragma HLS INLINE
elems:
    for (int i = 0; i < CONFIG_T::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        const typename CONFIG_T::in_t x = data.read();
        res.write(CONFIG_T::op::template one<res_T, CONFIG_T>(code_of(x)));
    }
}

template <typename C>
struct pwl_fn_types {
    typedef ap_int<C::IN_W> x_t;      // input code (and breakpoints)
    typedef ap_int<C::S_W> s_t;       // slope code
    typedef ap_int<C::C_W> c_t;       // intercept code
    typedef ap_int<C::PROD_W> prod_t; // x·s
    typedef ap_int<C::ACC_W> acc_t;   // the exact sum, FA fraction bits
};

struct pwl_fn_op {
    // acc = (x·s_i << SH_XS) + (c_i << SH_C), exact (FA fraction bits, as the
    // model and hwa_pwl), or above the last breakpoint x << SH_X (TOP_ONE = 0:
    // GELU) or 1 << FA (TOP_ONE = 1: sigmoid), or 0 below the first; then one
    // cast to res_T. Segment select compares codes.
    template <class res_T, typename C>
    static res_T one(const ap_int<C::IN_W>& x) {
        #pragma HLS INLINE
        typedef pwl_fn_types<C> T;
        const int n = C::NSEG;
        unsigned seg = 0;
    compare:
        for (int j = 1; j < n; j++) {
            #pragma HLS UNROLL
            if (x >= typename T::x_t(C::breakpoints(j))) seg++;
        }
        typename T::acc_t acc;
        if (x < typename T::x_t(C::breakpoints(0))) {
            acc = 0;
        } else if (x >= typename T::x_t(C::breakpoints(n))) {
            acc = C::TOP_ONE ? HWAPPROX_SHL(typename T::acc_t, typename T::acc_t(1), C::FA)
                             : HWAPPROX_SHL(typename T::acc_t, x, C::SH_X);
        } else {
            const typename T::prod_t p = x * typename T::s_t(C::slopes(seg));
            acc = HWAPPROX_SHL(typename T::acc_t, p, C::SH_XS) +
                  HWAPPROX_SHL(typename T::acc_t, typename T::c_t(C::intercepts(seg)), C::SH_C);
        }
        return cast_raw<C::FA, res_T>(acc);
    }
};

template <typename C>
struct lut_fn_types {
    typedef ap_uint<C::CODE_W> code_t;        // x - min_code: the sign bit inverted
    typedef ap_uint<C::INDEX_BITS> index_t;   // its top INDEX_BITS bits
};

struct lut_fn_op {
    template <class res_T, typename C>
    static res_T one(const ap_int<C::IN_W>& x) {
        #pragma HLS INLINE
        typedef lut_fn_types<C> T;
        typename T::code_t code = x;
        code[C::CODE_W - 1] = !code[C::CODE_W - 1];
        const typename T::index_t idx = code >> C::INDEX_SHIFT;
        return from_raw<res_T>(C::lut(unsigned(idx)));
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_FNTABLE_H
