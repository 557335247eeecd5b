// C-simulation harness for hwapprox/gelu.h (protocol: hls_harness.h).
// Record: "id count x..." -> count outputs; the values are processed in calls
// of n_in elements (the last call padded with zeros, padding not printed):
// run_gelu on arrays, run_gelu_stream through hls::stream (io_stream);
// run_widths "id" reports the unit's type widths (hls_widths.h).
// every narrowing of a derived width is checked (hwapprox/common.h)
#define HWAPPROX_CHECK_WIDTHS
#include "hls_harness.h"
#include "hls_widths.h"
#include "hwapprox/gelu.h"
#include "hwapprox_instances.h"

template <typename C>
void run_gelu(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int count;
    in >> count;
    for (int done = 0; done < count; done += N) {
        typename C::in_t x[N];
        typename C::out_t y[N];
        const int n = count - done < N ? count - done : N;
        harness::read_array(in, x, n);
        for (int i = n; i < N; i++) x[i] = 0;
        hwapprox::gelu<typename C::in_t, typename C::out_t, C>(x, y);
        for (int i = 0; i < n; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_gelu_stream(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int count;
    in >> count;
    for (int done = 0; done < count; done += N) {
        const int n = count - done < N ? count - done : N;
        hls::stream<typename C::in_t> x;
        hls::stream<typename C::out_t> y;
        harness::read_stream(in, x, n);
        for (int i = n; i < N; i++) x.write(0);
        hwapprox::gelu<typename C::in_t, typename C::out_t, C>(x, y);
        harness::write_stream(out, y, n);
        for (int i = n; i < N; i++) y.read();
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
