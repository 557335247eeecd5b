// C-simulation harness for hwapprox/attnact.h (sigmoid and ReLU attention;
// protocol: hls_harness.h). Record: "id count x..." -> count outputs; the values
// are processed in calls of n_in elements (the last call padded with zeros,
// padding not printed): run_attnact on arrays, run_attnact_stream through
// hls::stream (io_stream); run_widths "id" reports the unit's type widths.
// Each instance calls its operator's entry function (sigmoid_attention or
// relu_attention), chosen by its op tag.
#define HWAPPROX_CHECK_WIDTHS
#include "hls_harness.h"
#include "hls_widths.h"
#include "hwapprox/attnact.h"
#include "hwapprox_instances.h"

template <typename C, class X, class Y>
void entry(const hwapprox::relu_attention_op&, X& x, Y& y) {
    hwapprox::relu_attention<typename C::in_t, typename C::out_t, C>(x, y);
}
template <typename C, class Op, class X, class Y>
void entry(const Op&, X& x, Y& y) {
    hwapprox::sigmoid_attention<typename C::in_t, typename C::out_t, C>(x, y);
}

template <typename C>
void run_attnact(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int count;
    in >> count;
    for (int done = 0; done < count; done += N) {
        typename C::in_t x[N];
        typename C::out_t y[N];
        const int n = count - done < N ? count - done : N;
        harness::read_array(in, x, n);
        for (int i = n; i < N; i++) x[i] = 0;
        entry<C>(typename C::op(), x, y);
        for (int i = 0; i < n; i++) out << harness::to_raw(y[i]) << ' ';
    }
    out << '\n';
}

template <typename C>
void run_attnact_stream(std::istream& in, std::ostream& out) {
    const int N = C::n_in;
    int count;
    in >> count;
    for (int done = 0; done < count; done += N) {
        const int n = count - done < N ? count - done : N;
        hls::stream<typename C::in_t> x;
        hls::stream<typename C::out_t> y;
        harness::read_stream(in, x, n);
        for (int i = n; i < N; i++) x.write(0);
        entry<C>(typename C::op(), x, y);
        harness::write_stream(out, y, n);
        for (int i = n; i < N; i++) y.read();
    }
    out << '\n';
}

HWAPPROX_HARNESS_MAIN()
