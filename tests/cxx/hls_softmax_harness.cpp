// C-simulation harness for hwapprox/softmax.h (protocol: hls_harness.h).
// Record: "id rows x..." with rows*n_in input codes -> rows*n_in outputs.
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

HWAPPROX_HARNESS_MAIN()
