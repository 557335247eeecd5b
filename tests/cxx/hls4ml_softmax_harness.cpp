// Bit-exactness harness for the hls4ml 1.3 softmax baselines.
//
// Runs hls4ml's own nnet::softmax (nnet_activation.h, bundled with the
// installed hls4ml) on raw input codes and prints raw output codes, so the
// Python models in hwapprox/approx/softmax.py can be compared with it on the
// same integers.
//
// Types are those hls4ml 1.3.0 generates for a Softmax with model precision
// ap_fixed<16,6> (see Hls4mlStableSoftmax's docstring):
//   input_t = result_t = ap_fixed<16,6>, inp_norm_t = ap_ufixed<15,5>,
//   exp_table_t = inv_table_t = inv_inp_t = ap_fixed<18,8,AP_RND,AP_SAT>,
//   accum_t = ap_fixed<16,6> ("a16", granularity=model) or
//             ap_fixed<18,8,AP_RND,AP_SAT> ("a18", granularity=name/type),
//   exp_table_size = inv_table_size = 1024, exp_scale = 1.0.
//
// Usage:
//   harness run <stable|latency> <a16|a18> <N>   stdin: R, then R*N raw codes
//                                                stdout: R*N raw output codes
//   harness tables <stable|latency>              stdout: 1024 exp entries,
//                                                then 1024 invert entries (raw)
// Supported N: 1 2 3 5 8 17 64 256 (tests/test_softmax.py HARNESS_N; every N is
// 4 more template instantiations, which dominate the compile time).

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "ap_fixed.h"
#include "nnet_activation.h"

namespace {

typedef ap_fixed<16, 6> input_t;
typedef ap_fixed<16, 6> result_t;
typedef ap_fixed<18, 8, AP_RND, AP_SAT> table18_t;
typedef ap_fixed<16, 6> accum16_t;
typedef ap_fixed<18, 8, AP_RND, AP_SAT> accum18_t;

template <unsigned N, class ACCUM_T, nnet::softmax_implementation IMPL>
struct softmax_cfg : nnet::activ_config {
    static const unsigned n_in = N;
    static const unsigned n_slice = N;
    static const unsigned n_outer = 1;
    static const unsigned n_inner = 1;
    static const unsigned parallelization_factor = -1;
    static const unsigned exp_table_size = 1024;
    static const unsigned inv_table_size = 1024;
    static const unsigned io_type = nnet::io_parallel;
    static const unsigned reuse_factor = 1;
    static const unsigned axis = -1;
    static const nnet::softmax_implementation implementation = IMPL;
    static constexpr float exp_scale = 1.0;
    typedef table18_t exp_table_t;
    typedef table18_t inv_table_t;
    typedef ACCUM_T accum_t;
    typedef table18_t inv_inp_t;
    typedef ap_ufixed<15, 5> inp_norm_t;
};

template <class T> void set_raw(T &x, long long raw) {
    ap_int<T::width> v = raw;
    x.range(T::width - 1, 0) = v.range(T::width - 1, 0);
}

template <class T> long long get_raw(const T &x) {
    ap_int<T::width> v;
    v.range(T::width - 1, 0) = x.range(T::width - 1, 0);
    return v.to_int64();
}

template <unsigned N, class ACCUM_T, nnet::softmax_implementation IMPL> int run_rows() {
    long rows = 0;
    if (std::scanf("%ld", &rows) != 1 || rows < 0) {
        std::fprintf(stderr, "expected a row count on stdin\n");
        return 2;
    }
    input_t in[N];
    result_t out[N];
    for (long r = 0; r < rows; r++) {
        for (unsigned i = 0; i < N; i++) {
            long long raw = 0;
            if (std::scanf("%lld", &raw) != 1) {
                std::fprintf(stderr, "row %ld: expected %u raw codes\n", r, N);
                return 2;
            }
            set_raw(in[i], raw);
        }
        nnet::softmax<input_t, result_t, softmax_cfg<N, ACCUM_T, IMPL>>(in, out);
        for (unsigned i = 0; i < N; i++) {
            std::printf("%lld%c", get_raw(out[i]), i + 1 == N ? '\n' : ' ');
        }
    }
    return 0;
}

template <class ACCUM_T, nnet::softmax_implementation IMPL> int dispatch_n(unsigned n) {
    switch (n) {
    case 1: return run_rows<1, ACCUM_T, IMPL>();
    case 2: return run_rows<2, ACCUM_T, IMPL>();
    case 3: return run_rows<3, ACCUM_T, IMPL>();
    case 5: return run_rows<5, ACCUM_T, IMPL>();
    case 8: return run_rows<8, ACCUM_T, IMPL>();
    case 17: return run_rows<17, ACCUM_T, IMPL>();
    case 64: return run_rows<64, ACCUM_T, IMPL>();
    case 256: return run_rows<256, ACCUM_T, IMPL>();
    default: std::fprintf(stderr, "unsupported N=%u\n", n); return 2;
    }
}

template <class ACCUM_T> int dispatch_impl(const char *variant, unsigned n) {
    if (std::strcmp(variant, "stable") == 0) {
        return dispatch_n<ACCUM_T, nnet::softmax_implementation::stable>(n);
    }
    if (std::strcmp(variant, "latency") == 0) {
        return dispatch_n<ACCUM_T, nnet::softmax_implementation::latency>(n);
    }
    std::fprintf(stderr, "variant must be stable or latency, got %s\n", variant);
    return 2;
}

int dump_tables(const char *variant) {
    typedef softmax_cfg<1, accum16_t, nnet::softmax_implementation::stable> cfg_t;
    static table18_t exp_table[1024];
    static table18_t inv_table[1024];
    if (std::strcmp(variant, "stable") == 0) {
        nnet::init_exp_table<cfg_t::inp_norm_t, cfg_t>(exp_table, true);
    } else if (std::strcmp(variant, "latency") == 0) {
        nnet::init_exp_table<input_t, cfg_t>(exp_table);
    } else {
        std::fprintf(stderr, "variant must be stable or latency, got %s\n", variant);
        return 2;
    }
    nnet::init_invert_table<cfg_t::inv_inp_t, cfg_t>(inv_table);
    for (int i = 0; i < 1024; i++) {
        std::printf("%lld\n", get_raw(exp_table[i]));
    }
    for (int i = 0; i < 1024; i++) {
        std::printf("%lld\n", get_raw(inv_table[i]));
    }
    return 0;
}

} // namespace

int main(int argc, char **argv) {
    if (argc == 3 && std::strcmp(argv[1], "tables") == 0) {
        return dump_tables(argv[2]);
    }
    if (argc != 5 || std::strcmp(argv[1], "run") != 0) {
        std::fprintf(stderr, "usage: %s run <stable|latency> <a16|a18> <N> | tables <variant>\n",
                     argv[0]);
        return 2;
    }
    unsigned n = (unsigned)std::atoi(argv[4]);
    if (std::strcmp(argv[3], "a16") == 0) {
        return dispatch_impl<accum16_t>(argv[2], n);
    }
    if (std::strcmp(argv[3], "a18") == 0) {
        return dispatch_impl<accum18_t>(argv[2], n);
    }
    std::fprintf(stderr, "accum must be a16 or a18, got %s\n", argv[3]);
    return 2;
}
