// hwapprox/intmath.h -- integer primitives shared by the nonlinear units.
//
// Each function mirrors the function of the same name in
// hwapprox/approx/intmath.py (or hwapprox/fixed.py for round_shift) bit for
// bit on ap_int<W> values. W is the datapath width chosen by the caller; the
// Python models work on int64, so W = 64 is always exact, and a unit may use a
// narrower W where its config states the intermediate widths. All functions
// are INLINE: they are building blocks of pipelined units and add no latency
// of their own beyond their adders/shifters.
//
// Rounding modes are ap_q_mode values (AP_TRN, AP_RND, ...) used as template
// parameters, so a unit's rounding is fixed at compile time.
#ifndef HWAPPROX_INTMATH_H
#define HWAPPROX_INTMATH_H

#include "ap_fixed.h"
#include "ap_int.h"

namespace hwapprox {

// 0/1 increment to add to the floor quotient (fixed.py _round_up).
template <ap_q_mode Q>
inline bool round_up(bool above_half, bool at_half, bool inexact, bool floor_odd, bool negative) {
    #pragma HLS INLINE
    switch (Q) {
        case AP_TRN:
            return false;
        case AP_TRN_ZERO:
            return inexact && negative;
        case AP_RND:
            return above_half || at_half;
        case AP_RND_ZERO:
            return above_half || (at_half && negative);
        case AP_RND_INF:
            return above_half || (at_half && !negative);
        case AP_RND_MIN_INF:
            return above_half;
        default:  // AP_RND_CONV: ties to even
            return above_half || (at_half && floor_odd);
    }
}

// r / 2^shift rounded with mode Q (fixed.round_shift). shift <= 0 multiplies
// exactly. For shift >= W - 1 the quotient is -1 or 0 (valid for |r| < 2^(W-2),
// as the model assumes |r| < 2^62 for int64).
template <ap_q_mode Q, int W>
inline ap_int<W> round_shift(ap_int<W> r, int shift) {
    #pragma HLS INLINE
    if (shift <= 0) return r << (-shift);
    const bool neg = r < 0;
    if (shift >= W - 1) {
        ap_int<W> q = neg ? -1 : 0;
        return q + (round_up<Q>(neg, false, r != 0, neg, neg) ? 1 : 0);
    }
    ap_int<W> q = r >> shift;
    ap_uint<W> mask = (ap_uint<W>(1) << shift) - 1;
    ap_uint<W> rem = ap_uint<W>(r) & mask;
    ap_uint<W> half = ap_uint<W>(1) << (shift - 1);
    bool up = round_up<Q>(rem > half, rem == half, rem != 0, q[0] == 1, neg);
    return q + (up ? 1 : 0);
}

// Number of bits of a non-negative integer (int.bit_length); 0 -> 0.
template <int W>
inline int bit_length(ap_int<W> x) {
    #pragma HLS INLINE
    int n = 0;
bits:
    for (int i = 0; i < W; i++) {
        #pragma HLS UNROLL
        if (x[i]) n = i + 1;
    }
    return n;
}

// Most significant set bit of a positive integer (bit_length - 1).
template <int W>
inline int leading_one(ap_int<W> x) {
    #pragma HLS INLINE
    return bit_length<W>(x) - 1;
}

// I-BERT i-exp of x <= 0 (intmath.i_exp). Constants x0 < 0, b_int, c_int, n.
// x = max(x, n*x0); q = floor(x / x0); r = x - x0*q; z = r*(r + b_int) + c_int;
// result max(z << (n - q), 0). One divider by the constant x0 per element.
template <int W>
inline ap_int<W> i_exp(ap_int<W> x, long long x0, long long b_int, long long c_int, int n) {
    #pragma HLS INLINE
    ap_int<W> lo = ap_int<W>(n) * ap_int<W>(x0);
    ap_int<W> t = x < lo ? lo : x;
    // floor division of t <= 0 by x0 < 0: the quotient is >= 0 and the C
    // quotient (toward zero) equals the floor.
    ap_int<W> q = t / ap_int<W>(x0);
    ap_int<W> r = t - ap_int<W>(x0) * q;
    ap_int<W> z = r * (r + ap_int<W>(b_int)) + ap_int<W>(c_int);
    ap_int<W> e = z << (n - int(q));
    return e < 0 ? ap_int<W>(0) : e;
}

// I-ViT shift-exp of x <= 0 (intmath.shift_exp); tvm selects the TVM variant.
template <int W>
inline ap_int<W> shift_exp(ap_int<W> x, long long x0, int n, bool tvm) {
    #pragma HLS INLINE
    ap_int<W> t = x + (x >> 1) - (x >> 4);
    ap_int<W> lo = ap_int<W>(n) * ap_int<W>(x0);
    t = t < lo ? lo : t;
    ap_int<W> q = t / ap_int<W>(x0);  // t <= 0, x0 < 0: truncation == floor
    ap_int<W> r = t - ap_int<W>(x0) * q;
    int sh = n - int(q);
    if (tvm) return ((r >> 1) - ap_int<W>(x0)) << sh;
    return ((r - ap_int<W>(2 * x0)) << sh) >> 1;
}

// 2^-t for raw t >= 0 with t_frac_bits (intmath.exp2_neg). TABLE is a config
// type with a static accessor table(i) (2^addr_bits + 1 entries,
// table_frac_bits). interp enables linear interpolation between entries.
template <ap_q_mode Q, int W, class TABLE>
inline ap_int<W> exp2_neg(ap_int<W> t, int t_frac_bits, int addr_bits, int out_frac_bits,
                          int table_frac_bits, bool interp) {
    #pragma HLS INLINE
    const int g = t_frac_bits - addr_bits;
    ap_int<W> k = t >> t_frac_bits;
    ap_int<W> f = t & ((ap_int<W>(1) << t_frac_bits) - 1);
    ap_int<W> i = f >> g;
    ap_int<W> lo = TABLE::table(unsigned(i));
    ap_int<W> v = lo << g;
    if (interp && g > 0) {
        ap_int<W> u = f & ((ap_int<W>(1) << g) - 1);
        ap_int<W> hi = TABLE::table(unsigned(i) + 1);
        v = v - (lo - hi) * u;
    }
    const int shift = table_frac_bits + g - out_frac_bits;
    ap_int<W> total = k + shift;
    if (total > 62) total = 62;
    return round_shift<Q, W>(v, int(total));
}

// 1/d for raw d > 0 with d_frac_bits (intmath.reciprocal). unit_newton selects
// the seed + Newton unit (TABLE = recip_seed_table), else the PWL LUT unit
// (TABLE = recip_pwl_table). Leading-one normalisation to u in [1, 2).
template <ap_q_mode Q, int W, class TABLE>
inline ap_int<W> reciprocal(ap_int<W> d, int d_frac_bits, int out_frac_bits, bool unit_newton,
                            int addr_bits, int table_frac_bits, int work_frac_bits,
                            int newton_steps) {
    #pragma HLS INLINE
    const int p = leading_one<W>(d);
    const int wf = work_frac_bits;
    const int sh = wf - p;
    ap_int<W> u_full = sh >= 0 ? ap_int<W>(d << sh) : ap_int<W>(d >> (-sh));
    const int g = wf - addr_bits;
    ap_int<W> frac = u_full - (ap_int<W>(1) << wf);
    ap_int<W> i = frac >> g;
    ap_int<W> w = frac & ((ap_int<W>(1) << g) - 1);
    ap_int<W> r;
    if (!unit_newton) {
        ap_int<W> lo = TABLE::table(unsigned(i));
        ap_int<W> hi = TABLE::table(unsigned(i) + 1);
        ap_int<W> r_exact = (lo << g) - (lo - hi) * w;
        r = round_shift<Q, W>(r_exact, table_frac_bits + g - wf);
    } else {
        r = round_shift<Q, W>(ap_int<W>(TABLE::table(unsigned(i))), table_frac_bits - wf);
        ap_int<W> two = ap_int<W>(2) << wf;
    newton:
        for (int s = 0; s < newton_steps; s++) {
            ap_int<W> e = round_shift<Q, W>((two << wf) - u_full * r, wf);
            r = round_shift<Q, W>(r * e, wf);
        }
    }
    return round_shift<Q, W>(r, wf + p - d_frac_bits - out_frac_bits);
}

// Integer square root floor(sqrt(n)) of n >= 0 (math.isqrt), bit by bit:
// W/2 iterations of compare-and-subtract, no divider.
template <int W>
inline ap_int<W> isqrt(ap_int<W> n) {
    #pragma HLS INLINE
    ap_uint<W> rem = n;
    ap_uint<W> root = 0;
    ap_uint<W> bit = ap_uint<W>(1) << (((W - 1) / 2) * 2);
isqrt_bits:
    for (int i = 0; i < (W + 1) / 2; i++) {
        #pragma HLS UNROLL
        if (bit != 0) {
            if (rem >= root + bit) {
                rem -= root + bit;
                root = (root >> 1) + bit;
            } else {
                root >>= 1;
            }
            bit >>= 2;
        }
    }
    return ap_int<W>(root);
}

}  // namespace hwapprox

#endif  // HWAPPROX_INTMATH_H
