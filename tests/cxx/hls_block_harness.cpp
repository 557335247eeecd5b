// C-simulation harness for hwapprox/encoder.h (protocol: hls_harness.h).
// Record: "id n_inputs x..." with n_inputs = k*seq*dim codes -> k blocks of outputs.
#include "hls_harness.h"
#include "hwapprox/encoder.h"
#include "hwapprox_instances.h"

template <typename C>
void run_block(std::istream& in, std::ostream& out) {
    const int N = C::seq * C::dim;
    int count;
    in >> count;
    for (int done = 0; done < count; done += N) {
        typename C::in_t x[N];
        typename C::out_t y[N];
        harness::read_array(in, x, N);
        hwapprox::encoder_block<typename C::in_t, typename C::out_t, C>(x, y);
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
