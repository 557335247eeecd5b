// C-simulation harness for hwapprox/layernorm.h (protocol: hls_harness.h).
// Record: id, gamma (n_in), beta (n_in), then rows of n_in input codes until
// the record's count: "id nrows gamma... beta... x..." -> one line of outputs:
// run_ln on arrays, run_ln_stream through hls::stream (io_stream);
// run_widths "id" reports the unit's type widths (hls_widths.h).
// every narrowing of a derived width is checked (hwapprox/common.h)
#define HWAPPROX_CHECK_WIDTHS
#include "hls_harness.h"
#include "hls_widths.h"
#include "hwapprox/layernorm.h"
#include "hwapprox_instances.h"

template <typename C>
void run_ln(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int rows;
    in >> rows;
    typename C::gamma_t g[N];
    typename C::beta_t b[N];
    harness::read_array(in, g, N);
    harness::read_array(in, b, N);
    for (int r = 0; r < rows; r++) {
        typename C::in_t x[N];
        typename C::out_t y[N];
        harness::read_array(in, x, N);
        C::op::template run<typename C::in_t, typename C::out_t, C>(x, y, g, b);
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_ln_stream(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int rows;
    in >> rows;
    typename C::gamma_t g[N];
    typename C::beta_t b[N];
    harness::read_array(in, g, N);
    harness::read_array(in, b, N);
    for (int r = 0; r < rows; r++) {
        hls::stream<typename C::in_t> x;
        hls::stream<typename C::out_t> y;
        harness::read_stream(in, x, N);
        C::op::template run<typename C::in_t, typename C::out_t, C>(x, y, g, b);
        harness::write_stream(out, y, N);
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
