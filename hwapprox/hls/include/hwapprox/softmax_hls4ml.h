// hwapprox/softmax_hls4ml.h -- hls4ml 1.3 softmax baselines (softmax_hls4ml_op),
// bit-exact with hwapprox.approx.softmax.Hls4mlStableSoftmax / Hls4mlLatencySoftmax
// (tests/test_hls_softmax.py), written from the model.
//
// Source: hls4ml 1.3.0 templates/vivado/nnet_utils/nnet_activation.h,
// softmax_stable (C::STABLE) and softmax_latency.
//
// Contract, per row of n_in values x (accum_t arithmetic, as hls4ml):
//   stable: d = x_max - x assigned to exp_addr_t (wraps); latency: d = the bits of x;
//   e = exp_table[top EXP_ADDR_BITS bits of d];  s = the adder tree of hls4ml's
//   nnet::reduce over e in accum_t, assigned to inv_inp_t;
//   inv = invert_table[top INV_ADDR_BITS bits of s];  y = res_T(e·inv).
// Masks (an hwapprox extension): x_max over the unmasked elements, masked e = 0
// (needs accum_t overflow AP_WRAP, AP_SAT or AP_SAT_SYM; checked at compile time).
//
// io_stream: the row buffered, the array unit, the row streamed out
// (softmax_buffered_stream).
#ifndef HWAPPROX_SOFTMAX_HLS4ML_H
#define HWAPPROX_SOFTMAX_HLS4ML_H

#include "common.h"
#include "softmax_common.h"
#include "softmax_stream.h"

namespace hwapprox {

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

template <>
struct softmax_stream_of<softmax_hls4ml_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_buffered_stream<softmax_hls4ml_op, data_T, res_T, C>(data, mask, res);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_HLS4ML_H
