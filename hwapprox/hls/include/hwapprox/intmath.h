// hwapprox/intmath.h -- integer primitives shared by the nonlinear units.
//
// Each function mirrors the function of the same name in
// hwapprox/approx/intmath.py (or hwapprox/fixed.py for round_shift) bit for
// bit. The Python models compute in int64; here every intermediate has the
// width its caller's hardware parameter set states (hwapprox.approx.hwparams):
// i_exp, shift_exp, exp2_neg and reciprocal take a parameter struct P whose
// static constants carry those widths and shifts under the names of the
// spec's hw_params() (the generated config struct itself, or a unit's adapter
// around it). round_shift, bit_length and isqrt are generic in W.
// All functions are INLINE: they are building blocks of pipelined units and
// add no latency of their own beyond their adders/shifters/multipliers.
//
// Rounding modes are ap_q_mode values (AP_TRN, AP_RND, ...) used as template
// parameters, so a unit's rounding is fixed at compile time.
#ifndef HWAPPROX_INTMATH_H
#define HWAPPROX_INTMATH_H

#include "ap_fixed.h"
#include "ap_int.h"
#include "common.h"

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

// r / 2^shift rounded with mode Q (fixed.round_shift), exact for every W-bit
// r and every shift: shift <= 0 multiplies (the caller gives the room);
// shift >= W leaves a floor quotient of -1 or 0, decided as the model does.
template <ap_q_mode Q, int W>
inline ap_int<W> round_shift(const ap_int<W>& r, int shift) {
    #pragma HLS INLINE
    if (shift <= 0) return r << (-shift);
    const bool neg = r < 0;
    if (shift >= W) {
        // remainder r + 2^shift (negative r) is >= half, equal only for
        // r = -2^(W-1) at shift = W; a non-negative r is below half
        const bool at = neg && shift == W && r == (ap_int<W>(1) << (W - 1));
        const ap_int<W> q = neg ? -1 : 0;
        return q + (round_up<Q>(neg && !at, at, r != 0, neg, neg) ? 1 : 0);
    }
    const ap_int<W> q = r >> shift;
    const ap_uint<W> mask = (ap_uint<W>(1) << shift) - 1;
    const ap_uint<W> rem = ap_uint<W>(r) & mask;
    const ap_uint<W> half = ap_uint<W>(1) << (shift - 1);
    const bool up = round_up<Q>(rem > half, rem == half, rem != 0, q[0] == 1, neg);
    return q + (up ? 1 : 0);
}

// The same for a non-negative W-bit value (result < 2^W).
template <ap_q_mode Q, int W>
inline ap_uint<W> round_shift(const ap_uint<W>& r, int shift) {
    #pragma HLS INLINE
    return ap_uint<W>(round_shift<Q, W + 1>(ap_int<W + 1>(r), shift));
}

// Number of bits of a non-negative integer (int.bit_length); 0 -> 0.
template <int W, bool S>
inline int bit_length(const ap_int_base<W, S>& x) {
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
template <int W, bool S>
inline int leading_one(const ap_int_base<W, S>& x) {
    #pragma HLS INLINE
    return bit_length(x) - 1;
}

// I-BERT i-exp of x <= 0 (intmath.i_exp). P: X0 < 0, B_INT, C_INT, EXP_N and
// the widths IT_W (clipped argument), IQ_W (q), IR_W (r), IZ_W (polynomial),
// IE_W (result). t = max(x, EXP_N*X0); q = floor(t / X0); r = t - X0*q;
// z = r*(r + B_INT) + C_INT; result max(z << (EXP_N - q), 0). One divider by
// the constant X0 per element.
template <class P>
struct i_exp_types {
    typedef ap_int<P::IT_W> t_t;   // clipped argument
    typedef ap_uint<P::IQ_W> q_t;  // floor(t / X0)
    typedef ap_int<P::IR_W> r_t;   // t - X0*q
    typedef ap_int<P::IZ_W> z_t;   // r + B_INT, r*(r + B_INT), the polynomial
    typedef ap_uint<P::IE_W> e_t;  // result
};

template <class P, int W>
inline typename i_exp_types<P>::e_t i_exp(const ap_int<W>& x) {
    #pragma HLS INLINE
    typedef i_exp_types<P> T;
    typedef typename T::t_t t_t;
    typedef typename T::z_t z_t;
    const t_t lo = t_t(P::EXP_N * P::X0);
    const t_t t = x < lo ? lo : HWAPPROX_NARROW(t_t, x);
    // t <= 0 and X0 < 0: the quotient is >= 0 and C's (toward zero) is the floor
    const typename T::q_t q = HWAPPROX_NARROW(typename T::q_t, t / t_t(P::X0));
    const typename T::r_t r = HWAPPROX_NARROW(typename T::r_t, t - t_t(P::X0) * q);
    const z_t rb = HWAPPROX_NARROW(z_t, r + z_t(P::B_INT));
    const z_t z = HWAPPROX_NARROW(z_t, r * rb + z_t(P::C_INT));
    if (z < 0) return 0;
    return HWAPPROX_SHL(typename T::e_t, z, P::EXP_N - int(q));
}

// I-ViT shift-exp of x <= 0 (intmath.shift_exp); P::TVM selects the TVM
// variant. P: X0 < 0, EXP_N, widths ST_W (t and the clip), SQ_W (q), SR_W (r),
// SEI_W (before the final halving), SE_W (result).
template <class P>
struct shift_exp_types {
    typedef ap_int<P::ST_W> t_t;     // x·log2(e) by shifts, and the clip
    typedef ap_uint<P::SQ_W> q_t;    // floor(t / X0)
    typedef ap_int<P::SR_W> r_t;     // t - X0*q
    typedef ap_uint<P::SEI_W> ei_t;  // (r - 2*X0) << (EXP_N - q), before halving
    typedef ap_uint<P::SE_W> e_t;    // result
};

template <class P, int W>
inline typename shift_exp_types<P>::e_t shift_exp(const ap_int<W>& x) {
    #pragma HLS INLINE
    typedef shift_exp_types<P> T;
    typedef typename T::t_t t_t;
    const t_t xs = HWAPPROX_NARROW(t_t, x);
    t_t t = HWAPPROX_NARROW(t_t, xs + (xs >> 1) - (xs >> 4));
    const t_t lo = t_t(P::EXP_N * P::X0);
    if (t < lo) t = lo;
    const typename T::q_t q = HWAPPROX_NARROW(typename T::q_t, t / t_t(P::X0));
    const typename T::r_t r = HWAPPROX_NARROW(typename T::r_t, t - t_t(P::X0) * q);
    const int sh = P::EXP_N - int(q);
    if (P::TVM) {
        const typename T::e_t b = HWAPPROX_NARROW(typename T::e_t, (r >> 1) - t_t(P::X0));
        return HWAPPROX_SHL(typename T::e_t, b, sh);
    }
    const typename T::ei_t b = HWAPPROX_NARROW(typename T::ei_t, r - t_t(2 * P::X0));
    return HWAPPROX_NARROW(typename T::e_t, HWAPPROX_SHL(typename T::ei_t, b, sh) >> 1);
}

// Types of exp2_neg for parameter struct P (the widths its caller states).
template <class P>
struct exp2_types {
    typedef ap_uint<P::T_W> t_t;    // argument t >= 0, T_F fraction bits
    typedef ap_uint<P::V_W> v_t;    // interpolated table value, TABLE_F + G fraction bits
    typedef ap_uint<P::EXP_W> e_t;  // 2^-t, EXP_F fraction bits
};

// 2^-t for t >= 0 (intmath.exp2_neg). P: T_W, T_F (t), A (address bits),
// G = T_F - A, V_W, TABLE_F, INTERP, EXP_W, EXP2_SHIFT = TABLE_F + G - EXP_F,
// and table(i) (2^A + 1 entries of 2^(-i/2^A), TABLE_F fraction bits).
// v = T[i]·2^G - (T[i] - T[i+1])·u, then one rounding by k + EXP2_SHIFT
// (k = integer part of t); a shift beyond V_W leaves 0, so it is clamped there.
template <ap_q_mode Q, class P>
inline typename exp2_types<P>::e_t exp2_neg(const typename exp2_types<P>::t_t& t) {
    #pragma HLS INLINE
    typedef typename exp2_types<P>::v_t v_t;
    const int k = (t >> P::T_F).to_int();
    const ap_uint<P::T_F> f = t;
    const ap_uint<P::A> i = f >> P::G;
    const v_t lo = P::table(unsigned(i));
    v_t v = HWAPPROX_SHL(v_t, lo, P::G);
    if (P::INTERP && P::G > 0) {
        const ap_uint<(P::G > 0 ? P::G : 1)> u = f;
        const v_t hi = P::table(unsigned(i) + 1);
        v = v - (lo - hi) * u;  // T is decreasing: the product is >= 0 and v >= hi·2^G
    }
    int total = k + P::EXP2_SHIFT;
    if (total > P::V_W + 1) total = P::V_W + 1;
    return HWAPPROX_NARROW(typename exp2_types<P>::e_t, round_shift<Q, P::V_W>(v, total));
}

// Types of reciprocal for parameter struct P.
template <class P>
struct recip_types {
    typedef ap_uint<P::D_W> d_t;       // d > 0, D_F fraction bits
    typedef ap_uint<P::RU_W> u_t;      // mantissa U in [2^WF, 2^(WF+1))
    typedef ap_uint<P::RT_W> rt_t;     // lut: T[i]·2^RG - (T[i] - T[i+1])·w
    typedef ap_int<P::RN_W> rn_t;      // Newton R and e
    typedef ap_int<P::RP_W> rp_t;      // Newton products U·R, R·e and 2^(2·WF+1)
    typedef ap_int<P::RS_W> rs_t;      // R on its way to OUT_F fraction bits
    typedef ap_int<P::RPRE_W> rpre_t;  // 1/d with OUT_F fraction bits
};

// 1/d for d > 0 (intmath.reciprocal with table_frac_bits = WF). P: D_W, D_F,
// OUT_F, WF, TB, RG = WF - TB, NEWTON (seed + STEPS Newton steps, table =
// recip_seed_table) or not (table = recip_pwl_table, 2^TB + 1 end points), the
// widths of recip_types and table(i) (WF fraction bits). Leading-one
// normalisation of d to U in [1, 2) with WF fraction bits.
template <ap_q_mode Q, class P>
inline typename recip_types<P>::rpre_t reciprocal(const typename recip_types<P>::d_t& d) {
    #pragma HLS INLINE
    typedef recip_types<P> T;
    typedef typename T::rn_t rn_t;
    typedef typename T::rp_t rp_t;
    const int p = leading_one(d);
    const int sh = P::WF - p;
    // sh >= 0: d < 2^(p+1) fits U; sh < 0: the shifted-out bits are dropped (truncation)
    const typename T::u_t u =
        sh >= 0 ? HWAPPROX_SHL(typename T::u_t, d, sh) : typename T::u_t(d >> (-sh));
    const ap_uint<P::WF> frac = u;  // U - 2^WF
    const ap_uint<P::TB> i = frac >> P::RG;
    rn_t r;
    if (!P::NEWTON) {
        const ap_uint<(P::RG > 0 ? P::RG : 1)> w = frac;
        const ap_uint<P::WF + 1> lo = P::table(unsigned(i));
        const ap_uint<P::WF + 1> hi = P::table(unsigned(i) + 1);
        const typename T::rt_t rx = HWAPPROX_SHL(typename T::rt_t, lo, P::RG) - (lo - hi) * w;
        r = HWAPPROX_NARROW(rn_t, round_shift<Q, P::RT_W>(rx, P::RG));
    } else {
        r = rn_t(P::table(unsigned(i)));
        const rp_t two = rp_t(1) << (2 * P::WF + 1);
    newton:
        for (int s = 0; s < P::STEPS; s++) {
            #pragma HLS UNROLL
            const rn_t e = HWAPPROX_NARROW(
                rn_t, round_shift<Q, P::RP_W>(HWAPPROX_NARROW(rp_t, two - u * r), P::WF));
            r = HWAPPROX_NARROW(rn_t, round_shift<Q, P::RP_W>(HWAPPROX_NARROW(rp_t, r * e), P::WF));
        }
    }
    const typename T::rs_t rs = r;
    return HWAPPROX_NARROW(typename T::rpre_t,
                           round_shift<Q, P::RS_W>(rs, P::WF + p - P::D_F - P::OUT_F));
}

// Integer square root floor(sqrt(n)) of n >= 0 (math.isqrt), bit by bit:
// (W+1)/2 iterations of compare-and-subtract, no divider.
template <int W>
inline ap_uint<(W + 1) / 2> isqrt(const ap_uint<W>& n) {
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
    return root;
}

}  // namespace hwapprox

#endif  // HWAPPROX_INTMATH_H
