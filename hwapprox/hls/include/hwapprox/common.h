// hwapprox/common.h -- raw-code access to ap_fixed values, checked narrowing.
//
// The Python models work on raw integer codes; these helpers move between an
// ap_fixed/ap_ufixed value and its raw code without any rounding (bit copy),
// and turn an exact integer with F fraction bits into any result type with
// that type's own quantisation and overflow modes (one rounding, as
// hwapprox.fixed.cast). They compile to wires.
//
// Widths: every unit types its intermediates from the spec's hardware
// parameter set (hwapprox.approx.hwparams; constants of the generated config
// struct). narrow<T>(v) assigns an exact wider value to such a type; with
// HWAPPROX_CHECK_WIDTHS defined (the C-simulation harnesses define it) a
// value that does not fit stops the program: the width derivation was wrong.
#ifndef HWAPPROX_COMMON_H
#define HWAPPROX_COMMON_H

#include "ap_fixed.h"
#include "ap_int.h"

#ifdef HWAPPROX_CHECK_WIDTHS
#include <cstdio>
#include <cstdlib>
#endif

namespace hwapprox {

// Raw code of a signed value, sign-extended to W+1 bits (a signed carrier
// for either signedness).
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

// Raw code in its exact type: ap_int<W> of an ap_fixed, ap_uint<W> of an ap_ufixed.
template <int W, int I, ap_q_mode Q, ap_o_mode O, int N>
inline ap_int<W> code_of(const ap_fixed<W, I, Q, O, N>& x) {
    #pragma HLS INLINE
    ap_int<W> r;
    r.range(W - 1, 0) = x.range(W - 1, 0);
    return r;
}
template <int W, int I, ap_q_mode Q, ap_o_mode O, int N>
inline ap_uint<W> code_of(const ap_ufixed<W, I, Q, O, N>& x) {
    #pragma HLS INLINE
    ap_uint<W> r;
    r.range(W - 1, 0) = x.range(W - 1, 0);
    return r;
}

// The value v * 2^-F (exact) assigned to res_T: rounds with res_T's
// quantisation mode and applies its overflow mode (fixed.cast semantics).
// v is an ap_int<W> or ap_uint<W> (zero-extended by one bit).
template <int F, class res_T, int W, bool S>
inline res_T cast_raw(const ap_int_base<W, S>& v) {
    #pragma HLS INLINE
    const int WS = S ? W : W + 1;
    const ap_int<WS> c = v;
    ap_fixed<WS, WS - F> t;
    t.range(WS - 1, 0) = c.range(WS - 1, 0);
    return res_T(t);
}

// A value of type T holding the raw code r (bit copy, no rounding); r is an
// ap_int or ap_uint at least T::width bits wide, or a narrower one that is
// extended with its own signedness first.
template <class T, int W, bool S>
inline T from_raw(const ap_int_base<W, S>& r) {
    #pragma HLS INLINE
    const int WX = W > T::width ? W : T::width;
    const ap_int_base<WX, S> e = r;
    T x;
    x.range(T::width - 1, 0) = e.range(T::width - 1, 0);
    return x;
}

// v assigned to the narrower integer type T; v must fit (checked in C
// simulation with HWAPPROX_CHECK_WIDTHS, reporting T's width and the line).
// HWAPPROX_NARROW(T, expr) passes the line.
template <class T, class V>
inline T narrow_at(const V& v, int line) {
    #pragma HLS INLINE
    const T t = v;
#ifdef HWAPPROX_CHECK_WIDTHS
    if (!(t == v)) {
        std::fprintf(stderr, "hwapprox: a value does not fit %d bits (line %d)\n", int(T::width),
                     line);
        std::abort();
    }
#else
    (void)line;
#endif
    return t;
}
#define HWAPPROX_NARROW(T, ...) ::hwapprox::narrow_at<T>((__VA_ARGS__), __LINE__)

// v << s in the integer type T (a left shift keeps T's width): v must fit T
// and no set bit may shift out (both checked with HWAPPROX_CHECK_WIDTHS).
template <class T, class V>
inline T shl_at(const V& v, int s, int line) {
    #pragma HLS INLINE
    const T t = narrow_at<T>(v, line);
    const T r = t << s;
#ifdef HWAPPROX_CHECK_WIDTHS
    if (!((r >> s) == t)) {
        std::fprintf(stderr, "hwapprox: a left shift by %d overflows %d bits (line %d)\n", s,
                     int(T::width), line);
        std::abort();
    }
#endif
    return r;
}
#define HWAPPROX_SHL(T, v, s) ::hwapprox::shl_at<T>((v), (s), __LINE__)

// round(x / 2^sh) with ties toward +inf; sh <= 0 shifts left exactly
// (layernorm._round_half_up_shift). x must have room for the result.
template <int W>
inline ap_int<W> round_half_up_shift(const ap_int<W>& x, int sh) {
    #pragma HLS INLINE
    if (sh > 0) return (x + (ap_int<W>(1) << (sh - 1))) >> sh;
    return x << (-sh);
}

}  // namespace hwapprox

#endif  // HWAPPROX_COMMON_H
