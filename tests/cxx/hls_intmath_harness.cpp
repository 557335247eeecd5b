// C-simulation harness for hwapprox/intmath.h against hwapprox/approx/intmath.py.
// Records (all integers), one output line each:
//   0 mode shift n v...            -> round_shift<mode>(v, shift) for n values
//   1 x0 b_int c_int nexp n v...   -> i_exp
//   2 x0 nexp tvm n v...           -> shift_exp
//   3 cfg tfb ab ofb tabfb interp mode n v...   -> exp2_neg with table config cfg
//   4 cfg dfb ofb newton ab tabfb wf steps mode n v... -> reciprocal with table cfg
//   5 n v...                       -> isqrt
// Table configs come from hwapprox_instances.h as t0, t1, ... (X-macro rows
// "id, cfg"); outputs are signed decimal integers.
#include <iostream>

#include "hwapprox/intmath.h"
#include "hwapprox_instances.h"

typedef ap_int<64> i64;

template <ap_q_mode Q>
i64 rs(i64 v, int s) {
    return hwapprox::round_shift<Q, 64>(v, s);
}

i64 round_shift_mode(int mode, i64 v, int s) {
    switch (mode) {
        case 0: return rs<AP_TRN>(v, s);
        case 1: return rs<AP_TRN_ZERO>(v, s);
        case 2: return rs<AP_RND>(v, s);
        case 3: return rs<AP_RND_ZERO>(v, s);
        case 4: return rs<AP_RND_INF>(v, s);
        case 5: return rs<AP_RND_MIN_INF>(v, s);
        default: return rs<AP_RND_CONV>(v, s);
    }
}

template <ap_q_mode Q, class T>
i64 exp2_call(i64 v, int tfb, int ab, int ofb, int tabfb, bool interp) {
    return hwapprox::exp2_neg<Q, 64, T>(v, tfb, ab, ofb, tabfb, interp);
}

template <ap_q_mode Q, class T>
i64 recip_call(i64 v, int dfb, int ofb, bool newton, int ab, int tabfb, int wf, int steps) {
    return hwapprox::reciprocal<Q, 64, T>(v, dfb, ofb, newton, ab, tabfb, wf, steps);
}

template <class T>
i64 exp2_mode(int mode, i64 v, int tfb, int ab, int ofb, int tabfb, bool interp) {
    switch (mode) {
        case 0: return exp2_call<AP_TRN, T>(v, tfb, ab, ofb, tabfb, interp);
        case 2: return exp2_call<AP_RND, T>(v, tfb, ab, ofb, tabfb, interp);
        default: return exp2_call<AP_RND_CONV, T>(v, tfb, ab, ofb, tabfb, interp);
    }
}

template <class T>
i64 recip_mode(int mode, i64 v, int dfb, int ofb, bool nt, int ab, int tabfb, int wf, int st) {
    switch (mode) {
        case 0: return recip_call<AP_TRN, T>(v, dfb, ofb, nt, ab, tabfb, wf, st);
        case 2: return recip_call<AP_RND, T>(v, dfb, ofb, nt, ab, tabfb, wf, st);
        default: return recip_call<AP_RND_CONV, T>(v, dfb, ofb, nt, ab, tabfb, wf, st);
    }
}

int main() {
    int op;
    while (std::cin >> op) {
        long long a[9] = {0};
        int nargs = op == 0 ? 2 : op == 1 ? 4 : op == 2 ? 3 : op == 3 ? 7 : op == 4 ? 9 : 0;
        for (int i = 0; i < nargs; i++) std::cin >> a[i];
        int n;
        std::cin >> n;
        for (int i = 0; i < n; i++) {
            long long x;
            std::cin >> x;
            i64 v = x, y = 0;
            switch (op) {
                case 0: y = round_shift_mode(int(a[0]), v, int(a[1])); break;
                case 1: y = hwapprox::i_exp<64>(v, a[0], a[1], a[2], int(a[3])); break;
                case 2: y = hwapprox::shift_exp<64>(v, a[0], int(a[1]), a[2] != 0); break;
                case 3:
                    switch (a[0]) {
#define X(ID, CFG) \
    case ID: y = exp2_mode<CFG>(int(a[6]), v, a[1], a[2], a[3], a[4], a[5] != 0); break;
                        HWAPPROX_INSTANCES(X)
#undef X
                    }
                    break;
                case 4:
                    switch (a[0]) {
#define X(ID, CFG)                                                                     \
    case ID:                                                                           \
        y = recip_mode<CFG>(int(a[8]), v, a[1], a[2], a[3] != 0, a[4], a[5], a[6], a[7]); \
        break;
                        HWAPPROX_INSTANCES(X)
#undef X
                    }
                    break;
                case 5: y = hwapprox::isqrt<64>(v); break;
                default: std::cerr << "bad op " << op << "\n"; return 2;
            }
            std::cout << y.to_int64() << (i + 1 < n ? ' ' : '\n');
        }
    }
    return 0;
}
