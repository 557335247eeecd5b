// C-simulation harness for hwapprox/intmath.h against hwapprox/approx/intmath.py
// (protocol: hls_harness.h). Every instance is one parameter struct P of the
// generated hwapprox_instances.h (X-macro rows "id, run_*, P"); its constant
// RND is the hwa_pkg rounding code. Record "id n v..." -> one line of n
// signed decimal results:
//   run_round_shift  record "id shift n v...": round_shift<RND, W = P::W>(v, shift)
//   run_i_exp        i_exp<P>(v)
//   run_shift_exp    shift_exp<P>(v)
//   run_exp2         exp2_neg<RND, P>(v), P::table = 2^-k/2^A
//   run_recip        reciprocal<RND, P>(v), P::table = seed or PWL end points
//   run_isqrt        isqrt<62>(v)
#define HWAPPROX_CHECK_WIDTHS
#include "hls_harness.h"
#include "hwapprox/intmath.h"
#include "hwapprox_instances.h"

// hwa_pkg rounding code -> ap_q_mode
template <int CODE>
struct q_mode;
template <>
struct q_mode<0> {
    static const ap_q_mode value = AP_TRN;
};
template <>
struct q_mode<1> {
    static const ap_q_mode value = AP_TRN_ZERO;
};
template <>
struct q_mode<2> {
    static const ap_q_mode value = AP_RND;
};
template <>
struct q_mode<3> {
    static const ap_q_mode value = AP_RND_ZERO;
};
template <>
struct q_mode<4> {
    static const ap_q_mode value = AP_RND_INF;
};
template <>
struct q_mode<5> {
    static const ap_q_mode value = AP_RND_MIN_INF;
};
template <>
struct q_mode<6> {
    static const ap_q_mode value = AP_RND_CONV;
};

template <class F>
void each_value(std::istream& in, std::ostream& out, F f) {
    int n;
    in >> n;
    for (int i = 0; i < n; i++) {
        long long x;
        in >> x;
        out << f(x) << (i + 1 < n ? ' ' : '\n');
    }
    if (n == 0) out << '\n';
}

template <typename P>
void run_round_shift(std::istream& in, std::ostream& out) {
    int shift;
    in >> shift;
    each_value(in, out, [shift](long long x) {
        const ap_int<P::W> v = x;
        return hwapprox::round_shift<q_mode<P::RND>::value, P::W>(v, shift).to_int64();
    });
}

template <typename P>
void run_i_exp(std::istream& in, std::ostream& out) {
    each_value(in, out, [](long long x) { return hwapprox::i_exp<P>(ap_int<64>(x)).to_int64(); });
}

template <typename P>
void run_shift_exp(std::istream& in, std::ostream& out) {
    each_value(in, out,
               [](long long x) { return hwapprox::shift_exp<P>(ap_int<64>(x)).to_int64(); });
}

template <typename P>
void run_exp2(std::istream& in, std::ostream& out) {
    each_value(in, out, [](long long x) {
        const typename hwapprox::exp2_types<P>::t_t t = x;
        return hwapprox::exp2_neg<q_mode<P::RND>::value, P>(t).to_int64();
    });
}

template <typename P>
void run_recip(std::istream& in, std::ostream& out) {
    each_value(in, out, [](long long x) {
        const typename hwapprox::recip_types<P>::d_t d = x;
        return hwapprox::reciprocal<q_mode<P::RND>::value, P>(d).to_int64();
    });
}

template <typename P>
void run_isqrt(std::istream& in, std::ostream& out) {
    each_value(in, out, [](long long x) {
        return (long long)hwapprox::isqrt<62>(ap_uint<62>(x)).to_uint64();
    });
}

HWAPPROX_HARNESS_MAIN()
