// C-simulation harness for hwapprox/softmax.h (protocol: hls_harness.h).
// Every instance is listed with three runners (tests/test_hls_softmax.py):
//   run_softmax         "id rows x..."         rows*n_in input codes -> rows*n_in outputs
//   run_softmax_masked  "id rows x... m..."    the same rows, then rows*n_in mask bits
//                                              (1 = masked out), the masked entry point
//   run_widths          "id"                   the unit's type widths (hls_widths.h)
//   run_softmax_stream  "id rows x..."         as run_softmax, through hls::stream (io_stream)
//   run_softmax_stream_masked                  as run_softmax_masked, the mask bits on a
//                       "id rows x... m..."    second hls::stream
// every narrowing of a derived width is checked (hwapprox/common.h)
#define HWAPPROX_CHECK_WIDTHS
#include "hls_harness.h"
#include "hls_widths.h"
#include "hwapprox/softmax.h"
#include "hwapprox_instances.h"

template <typename C>
void run_softmax(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int rows;
    in >> rows;
    for (int r = 0; r < rows; r++) {
        typename C::in_t x[N];
        typename C::out_t y[N];
        harness::read_array(in, x, N);
        hwapprox::softmax<typename C::in_t, typename C::out_t, C>(x, y);
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_softmax_masked(std::istream& in, std::ostream& out) {
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
        typename C::out_t y[N];
        hwapprox::softmax<typename C::in_t, typename C::out_t, C>(x[r], m, y);
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    delete[] x;
    out << '\n';
}

template <typename C>
void run_softmax_stream(std::istream& in, std::ostream& out) {
    int rows;
    in >> rows;
    for (int r = 0; r < rows; r++) {
        hls::stream<typename C::in_t> x;
        hls::stream<typename C::out_t> y;
        harness::read_stream(in, x, C::n_in);
        hwapprox::softmax<typename C::in_t, typename C::out_t, C>(x, y);
        harness::write_stream(out, y, C::n_in);
    }
    out << '\n';
}

template <typename C>
void run_softmax_stream_masked(std::istream& in, std::ostream& out) {
    int rows;
    in >> rows;
    hls::stream<typename C::in_t> x;
    harness::read_stream(in, x, rows * C::n_in);  // the whole input, then the mask bits
    for (int r = 0; r < rows; r++) {
        hls::stream<bool> m;
        for (int i = 0; i < C::n_in; i++) {
            int b;
            in >> b;
            m.write(b != 0);
        }
        hls::stream<typename C::out_t> y;
        hwapprox::softmax<typename C::in_t, typename C::out_t, C>(x, m, y);
        harness::write_stream(out, y, C::n_in);
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
