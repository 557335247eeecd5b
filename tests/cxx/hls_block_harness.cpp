// C-simulation harness for hwapprox/encoder.h (protocol: hls_harness.h).
// run_block (CONFIG masked = 0): "id n x..." with n = k*seq*dim codes -> k blocks of
// outputs. run_block_masked (masked = 1): "id k {x[seq*dim] key_mask[seq]}*k" with
// key_mask 1 = real token, 0 = padding -> k blocks of outputs.
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

template <typename C>
void run_block_masked(std::istream& in, std::ostream& out) {
    const int N = C::seq * C::dim;
    int samples;
    in >> samples;
    for (int b = 0; b < samples; b++) {
        typename C::in_t x[N];
        ap_uint<1> key_mask[C::seq];
        typename C::out_t y[N];
        harness::read_array(in, x, N);
        harness::read_array(in, key_mask, C::seq);
        hwapprox::encoder_block<typename C::in_t, ap_uint<1>, typename C::out_t, C>(x, key_mask, y);
        for (int i = 0; i < N; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
