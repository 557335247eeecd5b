// hwapprox/gelu.h -- elementwise GELU units.
//
// Each op tag below is bit-exact with the spec of the same method in
// hwapprox/approx/gelu.py on the same raw codes (tests/test_hls_gelu.py):
//   gelu_ibert_op      IBertGelu    I-BERT i-GELU (erf polynomial, dyadic requantisation)
//   gelu_shiftgelu_op  ShiftGelu    I-ViT ShiftGELU (x·sigmoid(1.702x) with shift-exp)
//   gelu_edgemoe_op    EdgeMoeGelu  Edge-MoE ReLU(x) - delta(|x|), interpolated table
//   gelu_pwl_op        PwlGelu      minimax piecewise-linear, breakpoint compare + MAC
//   gelu_lut_op        LutGelu      direct table indexed by the top input bits
// Per element: one(x) takes the raw input code and returns the output value;
// the final conversion uses res_T's own rounding and overflow modes, exactly
// like the model's cast into out_fmt. Constants (params()) and tables come
// from the generated config. I-BERT uses the widths its params() state
// (poly_bits, sum_bits, prod_bits); PWL is written in ap_fixed arithmetic
// (exact growth); the other units compute in ap_int<64> (the models' int64).
// Interface: gelu<data_T, res_T, CONFIG_T>(data[n_in], res[n_in]), dispatched
// on CONFIG_T::op. Latency intent: io_parallel, fully unrolled over n_in,
// PIPELINE II=1; each element is a short chain (ibert: square, multiply,
// requantise; pwl: N-1 comparators + one MAC; edgemoe: 2 ROM reads + one
// multiply; lut: one ROM read).
#ifndef HWAPPROX_GELU_H
#define HWAPPROX_GELU_H

#include "common.h"
#include "intmath.h"

namespace hwapprox {

typedef ap_int<64> gelu_w_t;

struct gelu_ibert_op {
    // Widths from params(): poly_bits, sum_bits, prod_bits; the requantising
    // product (prod_bits + requant_bits) in 64 bits.
    template <class res_T, typename C>
    static res_T one(gelu_w_t x) {
        #pragma HLS INLINE
        typedef ap_int<C::in_width + 1> x_t;
        typedef ap_int<C::poly_bits> poly_t;
        const x_t xi = x;
        const x_t b_int = C::b_int;
        x_t a = xi < 0 ? x_t(-xi) : xi;
        x_t t = a < x_t(-b_int) ? a : x_t(-b_int);
        poly_t poly = poly_t(t + b_int) * poly_t(t + b_int) + poly_t(C::c_int);
        poly_t sp = xi > 0 ? poly : (xi < 0 ? poly_t(-poly) : poly_t(0));
        poly_t erf_int = sp >> C::erf_shift;  // floor
        ap_int<C::sum_bits> sum = erf_int + ap_int<C::sum_bits>(C::erf_one);
        ap_int<C::prod_bits> p = xi * sum;
        gelu_w_t q = gelu_w_t(-p) * gelu_w_t(C::mult);
        return cast_raw<C::mult_shift + C::out_frac_bits, res_T>(q);
    }
};

struct gelu_shiftgelu_op {
    template <class res_T, typename C>
    static res_T one(gelu_w_t x) {
        #pragma HLS INLINE
        gelu_w_t m = x > 0 ? x : gelu_w_t(0);
        gelu_w_t e1 = shift_exp<64>(x - m, C::x0, C::n, false);
        gelu_w_t e2 = shift_exp<64>(-m, C::x0, C::n, false);
        gelu_w_t factor = gelu_w_t((1LL << 31) - 1) / (e1 + e2);  // one divider
        gelu_w_t sig = (e1 * factor) >> C::sigmoid_shift;
        return cast_raw<C::in_frac_bits + C::sigmoid_bits - 1, res_T>(gelu_w_t(x * sig));
    }
};

struct gelu_edgemoe_op {
    template <class res_T, typename C>
    static res_T one(gelu_w_t x) {
        #pragma HLS INLINE
        const int f_in = C::in_frac_bits;
        const int k = -C::step_log2;
        const int fe = C::entry_frac_bits;
        const int fa = f_in > fe ? f_in : fe;
        gelu_w_t a = x < 0 ? gelu_w_t(-x) : x;
        gelu_w_t idx, t;
        int ft;
        if (f_in >= k) {
            idx = a >> (f_in - k);
            t = a & ((gelu_w_t(1) << (f_in - k)) - 1);
            ft = f_in - k;
            if (ft > fe) {
                t = t >> (ft - fe);
                ft = fe;
            }
        } else {
            idx = a << (k - f_in);
            t = 0;
            ft = 0;
        }
        const bool inside = idx < C::table_size - 1;
        unsigned i = inside ? unsigned(idx) : 0u;
        gelu_w_t lo = C::delta(i);
        gelu_w_t hi = C::delta(i + 1);
        gelu_w_t exact = (lo << ft) + t * (hi - lo);
        gelu_w_t delta = round_shift<C::entry_t::qmode, 64>(exact, ft);
        if (!inside) delta = 0;
        gelu_w_t relu = x > 0 ? x : gelu_w_t(0);
        gelu_w_t y = (relu << (fa - f_in)) - (delta << (fa - fe));
        return cast_raw<(C::in_frac_bits > C::entry_frac_bits ? C::in_frac_bits
                                                              : C::entry_frac_bits),
                        res_T>(y);
    }
};

struct gelu_pwl_op {
    // y = s_i·x + c_i in ap_fixed arithmetic: the product and the sum grow
    // exactly (fraction bits max(F_in + F_s, F_c) = acc_frac_bits, as the
    // model), then one cast to res_T. Segment select compares raw codes.
    template <class res_T, typename C>
    static res_T one(gelu_w_t x) {
        #pragma HLS INLINE
        const int n = C::segments;
        unsigned seg = 0;
    compare:
        for (int j = 1; j < n; j++) {
            #pragma HLS UNROLL
            if (x >= gelu_w_t(C::breakpoints(j))) seg++;
        }
        const typename C::in_t xv = from_raw<typename C::in_t>(ap_int<64>(x));
        if (x < gelu_w_t(C::breakpoints(0))) return res_T(0);
        if (x >= gelu_w_t(C::breakpoints(n))) return res_T(xv);
        const typename C::slope_t sl = from_raw<typename C::slope_t>(ap_int<64>(C::slopes(seg)));
        const typename C::intercept_t ic =
            from_raw<typename C::intercept_t>(ap_int<64>(C::intercepts(seg)));
        return res_T(xv * sl + ic);
    }
};

struct gelu_lut_op {
    template <class res_T, typename C>
    static res_T one(gelu_w_t x) {
        #pragma HLS INLINE
        gelu_w_t idx = (x + (gelu_w_t(1) << (C::in_width - 1))) >> C::index_shift;
        return from_raw<res_T>(ap_int<64>(C::lut(unsigned(idx))));
    }
};

// Elementwise GELU over n_in values with the unit named by CONFIG_T::op.
template <class data_T, class res_T, typename CONFIG_T>
void gelu(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
elems:
    for (int i = 0; i < CONFIG_T::n_in; i++) {
        #pragma HLS UNROLL
        res[i] = CONFIG_T::op::template one<res_T, CONFIG_T>(gelu_w_t(raw_of(data[i])));
    }
}

}  // namespace hwapprox

#endif  // HWAPPROX_GELU_H
