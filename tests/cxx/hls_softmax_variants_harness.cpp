// C-simulation harness for the issue-15 options of hwapprox/softmax.h's online unit
// (unified max, threshold skipping, log-coded outputs; tests/test_hls_softmax_variants.py).
// The result type is the instance's code_t when it has one (a log out_code), else out_t.
//   run_array   "id rows x... m..."   rows*n_in codes, then rows*n_in mask bits
//   run_stream  "id rows x... m..."   the same through the hls::stream unit
//   run_widths  "id"                  the unit's type widths (hls_widths.h)
// every narrowing of a derived width is checked (hwapprox/common.h)
#define HWAPPROX_CHECK_WIDTHS
#include "hls_harness.h"
#include "hls_widths.h"
#include "hwapprox/softmax.h"
#include "hwapprox_instances.h"

template <class C, class = void>
struct res_of {
    typedef typename C::out_t type;
};
template <class C>
struct res_of<C, decltype(void(sizeof(typename C::code_t)))> {
    typedef typename C::code_t type;
};

template <typename C>
void run_array(std::istream& in, std::ostream& out) {
    typedef typename res_of<C>::type res_t;
    const int N = C::n_in;
    int rows;
    in >> rows;
    typedef typename C::in_t row_t[N];
    row_t* x = new row_t[rows];
    for (int r = 0; r < rows; r++) harness::read_array(in, x[r], N);
    for (int r = 0; r < rows; r++) {
        bool m[N];
        for (int i = 0; i < N; i++) {
            int b;
            in >> b;
            m[i] = b != 0;
        }
        res_t y[N];
        hwapprox::softmax<typename C::in_t, res_t, C>(x[r], m, y);
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    delete[] x;
    out << '\n';
}

template <typename C>
void run_stream(std::istream& in, std::ostream& out) {
    typedef typename res_of<C>::type res_t;
    int rows;
    in >> rows;
    hls::stream<typename C::in_t> x;
    harness::read_stream(in, x, rows * C::n_in);
    for (int r = 0; r < rows; r++) {
        hls::stream<bool> m;
        for (int i = 0; i < C::n_in; i++) {
            int b;
            in >> b;
            m.write(b != 0);
        }
        hls::stream<res_t> y;
        hwapprox::softmax<typename C::in_t, res_t, C>(x, m, y);
        harness::write_stream(out, y, C::n_in);
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
