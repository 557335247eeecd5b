// hwapprox/softmax.h -- softmax units over one row of CONFIG_T::n_in values.
//
// Each op tag is bit-exact with the spec of the same method in
// hwapprox/approx/softmax.py on the same raw codes (tests/test_hls_softmax.py):
//   softmax_online_op     OnlineSoftmax        running max + running sum (one read of the
//                                              row), base-2 or LUT exp, one reciprocal
//                                              per row (PWL LUT or seed + Newton)
//   softmax_ibert_op      IBertSoftmax         I-BERT IntSoftmax: i-exp polynomial,
//                                              16-bit requantisation (calibrated
//                                              multiply or shift), 2^32 / sum
//   softmax_hls4ml_op     Hls4mlStableSoftmax  hls4ml 1.3 softmax_stable / _latency
//                         Hls4mlLatencySoftmax (exp and 1/x tables, adder tree), as a
//                                              baseline written from the model
// Interface: softmax<data_T, res_T, CONFIG_T>(data[n_in], res[n_in]) dispatched
// on CONFIG_T::op. Constants and tables come from the generated config.
// Latency intent: io_parallel, one row per call, PIPELINE II=1 over rows in the
// caller. The online unit's running (m, d) recurrence is a serial chain of
// n_in compare/multiply-add steps (what makes it single-pass on a stream);
// with schedule two_pass it becomes a max tree plus an adder tree. Exp and
// output multiplies are replicated per element (ARRAY_PARTITION complete).
#ifndef HWAPPROX_SOFTMAX_H
#define HWAPPROX_SOFTMAX_H

#include "common.h"
#include "intmath.h"

namespace hwapprox {

typedef ap_int<64> sm_w_t;

// Table adapters: intmath's exp2_neg/reciprocal read TABLE::table(i).
template <typename C>
struct online_exp2_table {
    static sm_w_t table(unsigned i) {
        #pragma HLS INLINE
        return C::exp2_table(i);
    }
};
template <typename C>
struct online_recip_table {
    static sm_w_t table(unsigned i) {
        #pragma HLS INLINE
        return C::recip_table(i);
    }
};

// E(delta) = exp(-delta) of OnlineSoftmax.exp_unit_raw; BASE2 picks the unit.
template <bool BASE2>
struct online_exp;

template <>
struct online_exp<true> {
    template <typename C>
    static sm_w_t eval(sm_w_t delta) {
        #pragma HLS INLINE
        sm_w_t prod = delta * sm_w_t(C::LOG2E);  // exact, IN_F + LOG2E_F fraction bits
        typename C::exp_arg_t t = cast_raw<C::IN_F + C::LOG2E_F, typename C::exp_arg_t>(prod);
        return exp2_neg<C::exp_t::qmode, 64, online_exp2_table<C> >(
            sm_w_t(raw_of(t)), C::T_F, C::EXP2_ADDR_BITS, C::EXP_F, C::EXP2_TABLE_F,
            C::EXP2_INTERP != 0);
    }
};

template <>
struct online_exp<false> {
    template <typename C>
    static sm_w_t eval(sm_w_t delta) {
        #pragma HLS INLINE
        const sm_w_t limit = sm_w_t(1) << (C::IN_F + C::EXP_LUT_INT_BITS);
        if (delta >= limit) return 0;
        return C::exp_lut(unsigned(delta >> C::EXP_LUT_SHIFT));
    }
};

struct softmax_online_op {
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        typedef online_exp<C::EXP_UNIT_BASE2 != 0> E;
        const sm_w_t one = C::SUM_ONE;
        const int up = C::SUM_F - C::EXP_F;
        sm_w_t x[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = x complete
    load:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            x[i] = raw_of(data[i]);
        }
        sm_w_t m = x[0];
        sm_w_t d = one;
        if (C::TWO_PASS) {
        max_pass:
            for (int j = 1; j < C::n_in; j++) {
                #pragma HLS UNROLL
                if (x[j] > m) m = x[j];
            }
            d = 0;
        sum_pass:
            for (int j = 0; j < C::n_in; j++) {
                #pragma HLS UNROLL
                d += E::template eval<C>(m - x[j]) << up;
            }
        } else {
        online:
            for (int j = 1; j < C::n_in; j++) {
                #pragma HLS UNROLL
                const bool is_new = x[j] > m;
                sm_w_t e = E::template eval<C>(is_new ? sm_w_t(x[j] - m) : sm_w_t(m - x[j]));
                if (is_new) {
                    d = round_shift<C::sum_t::qmode, 64>(d * e, C::EXP_F) + one;
                    m = x[j];
                } else {
                    d = d + (e << up);
                }
            }
        }
        // one reciprocal per row, then recip_fmt's overflow mode
        sm_w_t r = reciprocal<C::recip_t::qmode, 64, online_recip_table<C> >(
            d, C::SUM_F, C::RECIP_F, C::RECIP_NEWTON != 0, C::RECIP_TABLE_BITS, C::RECIP_WORK_F,
            C::RECIP_WORK_F, C::NEWTON_STEPS);
        typename C::recip_t rs = cast_raw<C::RECIP_F, typename C::recip_t>(r);
        sm_w_t rr = raw_of(rs);
    out:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            sm_w_t e = E::template eval<C>(m - x[i]);
            res[i] = cast_raw<C::EXP_F + C::RECIP_F, res_T>(sm_w_t(e * rr));
        }
    }
};

struct softmax_ibert_op {
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        sm_w_t x[C::n_in], e[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = x complete
        #pragma HLS ARRAY_PARTITION variable = e complete
        sm_w_t m = raw_of(data[0]);
    load:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            x[i] = raw_of(data[i]);
            if (x[i] > m) m = x[i];
        }
        sm_w_t total = 0;
    exps:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            sm_w_t ex = i_exp<64>(sm_w_t(x[i] - m), C::x0, C::b_int, C::c_int, C::n);
            if (C::calibrated) {
                // QuantAct(16): e·m / 2^shift, ties to even (93-bit exact product),
                // clamped to the signed exp_bits range
                ap_int<96> prod = ap_int<96>(ex) * ap_int<96>(C::requant_mult);
                ap_int<96> r = round_shift<AP_RND_CONV, 96>(prod, C::requant_shift);
                const sm_w_t cap = (sm_w_t(1) << (C::exp_bits - 1)) - 1;
                e[i] = r > cap ? cap : sm_w_t(r);
            } else {
                e[i] = ex >> C::exp_shift;
            }
            total += e[i];
        }
        const sm_w_t factor = (sm_w_t(1) << C::factor_bits) / total;  // one divider per row
    out:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            sm_w_t y = (e[i] * factor) >> C::out_shift;
            res[i] = cast_raw<res_T::width - res_T::iwidth, res_T>(y);
        }
    }
};

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

struct softmax_hls4ml_op {
    template <class data_T, class res_T, typename C>
    static void run(const data_T data[C::n_in], res_T res[C::n_in]) {
        #pragma HLS INLINE
        typedef typename C::exp_addr_t addr_t;
        const int na = C::exp_addr_bits;
        const int ni = C::inv_addr_bits;
        data_T xmax = data[0];
    maxv:
        for (int i = 1; i < C::n_in; i++) {
            #pragma HLS UNROLL
            if (data[i] > xmax) xmax = data[i];
        }
        typename C::accum_t e[C::n_in];
        #pragma HLS ARRAY_PARTITION variable = e complete
    exps:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            addr_t d;
            if (C::stable) {
                d = xmax - data[i];  // exact difference assigned to inp_norm_t (wraps)
            } else {
                d.range(addr_t::width - 1, 0) = data[i].range(addr_t::width - 1, 0);
            }
            unsigned idx = d.range(addr_t::width - 1, addr_t::width - na).to_uint();
            e[i] = from_raw<typename C::exp_table_t>(ap_int<64>(C::exp_table(idx)));
        }
        typename C::inv_inp_t s = hls4ml_reduce_add<typename C::accum_t, C::n_in>::sum(e);
        const int wi = C::inv_inp_t::width;
        unsigned iidx = s.range(wi - 1, wi - ni).to_uint();
        typename C::inv_table_t inv =
            from_raw<typename C::inv_table_t>(ap_int<64>(C::invert_table(iidx)));
    out:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS UNROLL
            res[i] = e[i] * inv;
        }
    }
};

// Softmax over one row of n_in values with the unit named by CONFIG_T::op.
template <class data_T, class res_T, typename CONFIG_T>
void softmax(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    CONFIG_T::op::template run<data_T, res_T, CONFIG_T>(data, res);
}

}  // namespace hwapprox

#endif  // HWAPPROX_SOFTMAX_H
