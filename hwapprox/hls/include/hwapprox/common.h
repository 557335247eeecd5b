// hwapprox/common.h -- raw-code access to ap_fixed values.
//
// The Python models work on raw integer codes; these helpers move between an
// ap_fixed/ap_ufixed value and its raw code without any rounding (bit copy),
// and turn an exact integer with F fraction bits into any result type with
// that type's own quantisation and overflow modes (one rounding, as
// hwapprox.fixed.cast). They compile to wires.
#ifndef HWAPPROX_COMMON_H
#define HWAPPROX_COMMON_H

#include "ap_fixed.h"
#include "ap_int.h"

namespace hwapprox {

// Raw code of a signed value, sign-extended to W+1 bits.
template <int W, int I, ap_q_mode Q, ap_o_mode O, int N>
inline ap_int<W + 1> raw_of(const ap_fixed<W, I, Q, O, N>& x) {
    #pragma HLS INLINE
    ap_int<W> r;
    r.range(W - 1, 0) = x.range(W - 1, 0);
    return r;
}

// Raw code of an unsigned value, zero-extended to W+1 bits.
template <int W, int I, ap_q_mode Q, ap_o_mode O, int N>
inline ap_int<W + 1> raw_of(const ap_ufixed<W, I, Q, O, N>& x) {
    #pragma HLS INLINE
    ap_uint<W> r;
    r.range(W - 1, 0) = x.range(W - 1, 0);
    return r;
}

// The value v * 2^-F (exact, W bits) assigned to res_T: rounds with res_T's
// quantisation mode and applies its overflow mode (fixed.cast semantics).
template <int F, class res_T, int W>
inline res_T cast_raw(const ap_int<W>& v) {
    #pragma HLS INLINE
    ap_fixed<W, W - F> t;
    t.range(W - 1, 0) = v.range(W - 1, 0);
    return res_T(t);
}

// A value of type T holding the raw code r (bit copy, no rounding).
template <class T, int W>
inline T from_raw(const ap_int<W>& r) {
    #pragma HLS INLINE
    T x;
    x.range(T::width - 1, 0) = r.range(T::width - 1, 0);
    return x;
}

// round(x / 2^sh) with ties toward +inf; sh <= 0 shifts left exactly
// (layernorm._round_half_up_shift).
template <int W>
inline ap_int<W> round_half_up_shift(const ap_int<W>& x, int sh) {
    #pragma HLS INLINE
    if (sh > 0) return (x + (ap_int<W>(1) << (sh - 1))) >> sh;
    return x << (-sh);
}

}  // namespace hwapprox

#endif  // HWAPPROX_COMMON_H
