// Compile-only lint unit for the HLS headers (tests/test_hls_lint.py): every
// unit of the generated instance table is instantiated with its own types, at
// every entry point (arrays, mask bits, hls::stream), so g++ -Wall -Wextra
// -Werror sees every template the units expand to.
#include "hls_harness.h"
#include "hwapprox/attnact.h"
#include "hwapprox/gelu.h"
#include "hwapprox/layernorm.h"
#include "hwapprox/rows.h"
#include "hwapprox/softmax.h"
#include "hwapprox_instances.h"

// io_parallel (with and without mask bits) and io_stream entry points
template <typename C>
void lint_softmax(std::istream&, std::ostream& out) {
    typedef typename C::in_t in_t;
    typedef typename C::out_t out_t;
    in_t x[C::n_in] = {};
    bool m[C::n_in] = {};
    out_t y[C::n_in];
    hwapprox::softmax<in_t, out_t, C>(x, y);
    hwapprox::softmax<in_t, out_t, C>(x, m, y);
    hls::stream<in_t> xs;
    hls::stream<bool> ms;
    hls::stream<out_t> ys;
    hwapprox::softmax<in_t, out_t, C>(xs, ys);
    hwapprox::softmax<in_t, out_t, C>(xs, ms, ys);
    harness::write_array(out, y, C::n_in);
}

template <typename C>
void lint_gelu(std::istream&, std::ostream& out) {
    typename C::in_t x[C::n_in] = {};
    typename C::out_t y[C::n_in];
    hwapprox::gelu<typename C::in_t, typename C::out_t, C>(x, y);
    hls::stream<typename C::in_t> xs;
    hls::stream<typename C::out_t> ys;
    hwapprox::gelu<typename C::in_t, typename C::out_t, C>(xs, ys);
    harness::write_array(out, y, C::n_in);
}

template <typename C>
void lint_sigmoid_attention(std::istream&, std::ostream& out) {
    typename C::in_t x[C::n_in] = {};
    typename C::out_t y[C::n_in];
    hwapprox::sigmoid_attention<typename C::in_t, typename C::out_t, C>(x, y);
    hls::stream<typename C::in_t> xs;
    hls::stream<typename C::out_t> ys;
    hwapprox::sigmoid_attention<typename C::in_t, typename C::out_t, C>(xs, ys);
    harness::write_array(out, y, C::n_in);
}

template <typename C>
void lint_relu_attention(std::istream&, std::ostream& out) {
    typename C::in_t x[C::n_in] = {};
    typename C::out_t y[C::n_in];
    hwapprox::relu_attention<typename C::in_t, typename C::out_t, C>(x, y);
    hls::stream<typename C::in_t> xs;
    hls::stream<typename C::out_t> ys;
    hwapprox::relu_attention<typename C::in_t, typename C::out_t, C>(xs, ys);
    harness::write_array(out, y, C::n_in);
}

template <typename C>
void lint_layernorm(std::istream&, std::ostream& out) {
    typename C::in_t x[C::n_in] = {};
    typename C::out_t y[C::n_in];
    typename C::gamma_t g[C::n_in] = {};
    typename C::beta_t b[C::n_in] = {};
    C::op::template run<typename C::in_t, typename C::out_t, C>(x, y, g, b);
    hls::stream<typename C::in_t> xs;
    hls::stream<typename C::out_t> ys;
    C::op::template run<typename C::in_t, typename C::out_t, C>(xs, ys, g, b);
    harness::write_array(out, y, C::n_in);
}

HWAPPROX_HARNESS_MAIN()
