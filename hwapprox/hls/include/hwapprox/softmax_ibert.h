// hwapprox/softmax_ibert.h -- I-BERT IntSoftmax (softmax_ibert_op), bit-exact with
// hwapprox.approx.softmax.IBertSoftmax (tests/test_hls_softmax.py); the SV unit is
// hwa_softmax_ibert.
//
// Source: Kim et al., ICML 2021, I-BERT (kssteven418/I-BERT quant_modules.py
// IntSoftmax), in exact integer arithmetic.
//
// Contract, per row of n_in raw codes x (the three-pass skeleton, softmax_3pass.h):
//   m = max of the unmasked x;  e = i_exp(x - m) (second-order polynomial, intmath.h);
//   e16 = QuantAct(16) of e: CALIBRATED: min(round_half_even(e·REQUANT_MULT /
//   2^REQUANT_SHIFT), E16_MAX), else e >> EXP_SHIFT;
//   factor = floor(2^FACTOR_BITS / max(sum e16, 1));
//   y = cast_out((e16·factor) >> OUT_SHIFT).
// Widths: softmax_ibert_types<C> (spec hw_params()); the requantising product e·m
// (RQ_W, 82 bits at 16-bit inputs) is wider than 64 bits: rounding it needs every bit.
//
// io_stream: ingest (max) -> exps (i-exp, requantise, sum; one divider) -> emit,
// DATAFLOW, each a PIPELINE II=1 loop, FIFOs of n_in words between them.
#ifndef HWAPPROX_SOFTMAX_IBERT_H
#define HWAPPROX_SOFTMAX_IBERT_H

#include "common.h"
#include "intmath.h"
#include "softmax_3pass.h"
#include "softmax_stream.h"

namespace hwapprox {

// ---- I-BERT ----------------------------------------------------------------------------
template <typename C>
struct softmax_ibert_types {
    typedef ap_int<C::X_W> x_t;                   // an input code
    typedef ap_int<C::DIFF_W> diff_t;             // x - max
    typedef ap_uint<C::IE_W> e_t;                 // i-exp result
    typedef ap_uint<C::REQUANT_MULT_W> mult_t;    // the QuantAct multiplier
    typedef ap_uint<C::RQ_W> rq_t;                // e·mult (exact, see the header note)
    typedef ap_uint<C::E16_W> e16_t;              // requantised exp
    typedef ap_uint<C::SUM_W> sum_t;              // row sum of e16
    typedef ap_uint<C::FACTOR_W> factor_t;        // 2^factor_bits / sum
    typedef ap_uint<C::PROD_W> prod_t;            // e16·factor
    typedef ap_int<C::Y_W> y_t;                   // the output before out_fmt's overflow
};

// I-BERT's method in the three-pass skeleton (softmax_3pass_op, softmax_3pass.h).
struct ibert_3pass {
    template <typename C>
    struct types : softmax_ibert_types<C> {
        typedef typename softmax_ibert_types<C>::e16_t term_t;  // the summed exp term
    };
    // steps 2-3 of IBertSoftmax: e16 of diff = x - max (<= 0)
    template <typename C>
    static typename softmax_ibert_types<C>::e16_t exp16(
        const typename softmax_ibert_types<C>::diff_t& diff) {
        #pragma HLS INLINE
        typedef softmax_ibert_types<C> T;
        const typename T::e_t e = i_exp<C>(diff);
        if (C::CALIBRATED) {
            // QuantAct(16): e·m / 2^shift, ties to even, clamped to 2^(exp_bits-1) - 1
            const typename T::rq_t prod =
                HWAPPROX_NARROW(typename T::rq_t, e * typename T::mult_t(C::REQUANT_MULT));
            const typename T::rq_t r = round_shift<AP_RND_CONV, C::RQ_W>(prod, C::REQUANT_SHIFT);
            return r > typename T::rq_t(C::E16_MAX) ? typename T::e16_t(C::E16_MAX)
                                                     : typename T::e16_t(r);
        }
        return HWAPPROX_NARROW(typename T::e16_t, e >> C::EXP_SHIFT);
    }
    template <typename C>
    static typename softmax_ibert_types<C>::e16_t term(
        const typename softmax_ibert_types<C>::diff_t& diff) {
        #pragma HLS INLINE
        return exp16<C>(diff);
    }
    // 2^factor_bits / sum, one divider per row (a fully masked row sums to 0: 1)
    template <typename C>
    static typename softmax_ibert_types<C>::factor_t factor(
        typename softmax_ibert_types<C>::sum_t total) {
        #pragma HLS INLINE
        typedef softmax_ibert_types<C> T;
        if (total == 0) total = 1;  // only a fully masked row: its outputs are all 0
        return HWAPPROX_NARROW(typename T::factor_t,
                               typename T::factor_t(1) << C::FACTOR_BITS) / total;
    }
};

typedef softmax_3pass_op<ibert_3pass> softmax_ibert_op;

// ---- io_stream -------------------------------------------------------------------------

template <typename C>
struct softmax_ibert_stages {
    typedef softmax_ibert_types<C> T;

    template <class data_T, class MS>
    static void ingest(hls::stream<data_T>& data, MS& mask, hls::stream<typename T::x_t>& buf,
                       hls::stream<bool>& bits, hls::stream<typename T::x_t>& max) {
        #pragma HLS INLINE off
        typename T::x_t m = 0;
        bool any = false;
    ingest:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = code_of(typename C::in_t(data.read()));
            const bool b = mask.read();
            buf.write(x);
            bits.write(b);
            if (!b && (!any || x > m)) m = x;
            any = any || !b;
        }
        max.write(m);
    }

    static void exps(hls::stream<typename T::x_t>& buf, hls::stream<bool>& bits_in,
                     hls::stream<typename T::x_t>& max, hls::stream<typename T::e16_t>& ebuf,
                     hls::stream<bool>& bits, hls::stream<typename T::factor_t>& factor) {
        #pragma HLS INLINE off
        const typename T::x_t m = max.read();
        typename T::sum_t total = 0;
    exps:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = buf.read();
            const bool b = bits_in.read();
            const typename T::e16_t e =
                b ? typename T::e16_t(0)
                  : ibert_3pass::exp16<C>(HWAPPROX_NARROW(typename T::diff_t, x - m));
            total = HWAPPROX_NARROW(typename T::sum_t, total + e);
            ebuf.write(e);
            bits.write(b);
        }
        factor.write(ibert_3pass::factor<C>(total));  // the array unit's divider
    }

    template <class res_T>
    static void emit(hls::stream<typename T::e16_t>& ebuf, hls::stream<bool>& bits,
                     hls::stream<typename T::factor_t>& factor, hls::stream<res_T>& res) {
        #pragma HLS INLINE off
        const typename T::factor_t f = factor.read();
    emit:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::e16_t e = ebuf.read();
            const bool b = bits.read();
            const typename T::prod_t p = HWAPPROX_NARROW(typename T::prod_t, e * f);
            const typename T::y_t y = HWAPPROX_NARROW(typename T::y_t, p >> C::OUT_SHIFT);
            res.write(b ? res_T(0) : cast_raw<C::OUT_F, res_T>(y));
        }
    }
};

template <class data_T, class res_T, typename C, class MS>
void softmax_ibert_stream(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
    #pragma HLS DATAFLOW
    typedef softmax_ibert_stages<C> S;
    typedef typename S::T T;
    hls::stream<typename T::x_t> buf, max;
    hls::stream<typename T::e16_t> ebuf;
    hls::stream<bool> bits0, bits1;
    hls::stream<typename T::factor_t> factor;
    constexpr int depth __attribute__((unused)) = C::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf depth = depth
    #pragma HLS STREAM variable = bits0 depth = depth
    #pragma HLS STREAM variable = ebuf depth = depth
    #pragma HLS STREAM variable = bits1 depth = depth
    S::template ingest<data_T>(data, mask, buf, bits0, max);
    S::exps(buf, bits0, max, ebuf, bits1, factor);
    S::template emit<res_T>(ebuf, bits1, factor, res);
}

template <>
struct softmax_stream_of<softmax_ibert_op> {
    template <class data_T, class res_T, typename C, class MS>
    static void run(hls::stream<data_T>& data, MS& mask, hls::stream<res_T>& res) {
        #pragma HLS INLINE
        softmax_ibert_stream<data_T, res_T, C>(data, mask, res);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_IBERT_H
