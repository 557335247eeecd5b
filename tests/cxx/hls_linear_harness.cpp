// C-simulation harness for hwapprox/linear.h (see hls_harness.h for the protocol).
// MatMul record: id, A (n_rows*n_inner), B (n_inner*n_cols or transposed),
// bias (n_cols, only when has_bias) -> Y (n_rows*n_cols).
// Add record: id, a (n_elem), b (n_elem) -> y (n_elem).
#include "hls_harness.h"
#include "hwapprox/linear.h"
#include "hwapprox_instances.h"

template <typename C>
void run_matmul(std::istream& in, std::ostream& out) {
    typename C::a_t a[C::n_rows * C::n_inner];
    typename C::b_t b[C::n_inner * C::n_cols];
    typename C::bias_t bias[C::n_cols];
    typename C::out_t y[C::n_rows * C::n_cols];
    harness::read_array(in, a, C::n_rows * C::n_inner);
    harness::read_array(in, b, C::n_inner * C::n_cols);
    if (C::has_bias) {
        harness::read_array(in, bias, C::n_cols);
        hwapprox::matmul_bias<typename C::a_t, typename C::b_t, typename C::bias_t,
                              typename C::out_t, C>(a, b, bias, y);
    } else {
        hwapprox::matmul<typename C::a_t, typename C::b_t, typename C::out_t, C>(a, b, y);
    }
    harness::write_array(out, y, C::n_rows * C::n_cols);
}

template <typename C>
void run_add(std::istream& in, std::ostream& out) {
    typename C::a_t a[C::n_elem];
    typename C::b_t b[C::n_elem];
    typename C::out_t y[C::n_elem];
    harness::read_array(in, a, C::n_elem);
    harness::read_array(in, b, C::n_elem);
    hwapprox::add<typename C::a_t, typename C::b_t, typename C::out_t, C::n_elem>(a, b, y);
    harness::write_array(out, y, C::n_elem);
}

HWAPPROX_HARNESS_MAIN()
