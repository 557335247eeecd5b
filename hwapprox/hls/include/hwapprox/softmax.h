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
//
// Files: softmax_common.h (mask policies, the io_parallel row entry),
// softmax_stream.h (io_stream helpers and the stream dispatch), one header per
// method -- softmax_online.h, softmax_3pass.h (the I-BERT / Shiftmax skeleton),
// softmax_ibert.h, softmax_shiftmax.h, softmax_softermax.h, softmax_hls4ml.h --
// and this one: the log-code post-stage and the softmax() entry points.
// Include this header; the per-method ones compile on their own as well.
#ifndef HWAPPROX_SOFTMAX_H
#define HWAPPROX_SOFTMAX_H

#include "common.h"
#include "hls_stream.h"
#include "intmath.h"
#include "softmax_3pass.h"
#include "softmax_common.h"
#include "softmax_hls4ml.h"
#include "softmax_ibert.h"
#include "softmax_online.h"
#include "softmax_shiftmax.h"
#include "softmax_softermax.h"
#include "softmax_stream.h"

namespace hwapprox {

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
