// hwapprox/layernorm.h -- LayerNorm units, one row of CONFIG_T::n_in values.
//
// Both functions are bit-exact with the spec of the same method in
// hwapprox/approx/layernorm.py on the same raw codes (tests/test_hls_layernorm.py):
//   layernorm_ibert      IBertLayerNorm   (I-BERT IntLayerNorm, exact integers)
//   layernorm_rsqrt_lut  RsqrtLutLayerNorm (single pass Σx, Σx²; 1/sqrt by table
//                        + Newton), and RmsNorm with CONFIG_T::center = 0
// Interface (hls4ml style): data[n_in] -> res[n_in], gamma/beta[n_in] as codes
// of CONFIG_T::gamma_t / beta_t. Constants come from the generated config
// (the spec's params() plus n_in; tables through accessors).
// Latency intent: io_parallel, one row per call; the row statistics are a
// reduction tree, the per-row part (variance, 1/sqrt) is a short serial chain
// (ibert: a divider and an isqrt; rsqrt_lut: leading-one + table + Newton
// multiplies), then every element is normalised in parallel. PIPELINE the
// caller over rows.
#ifndef HWAPPROX_LAYERNORM_H
#define HWAPPROX_LAYERNORM_H

#include "common.h"
#include "intmath.h"

namespace hwapprox {

// y·2^-P ≈ 1/sqrt(m·2^-P) for m in [2^P, 2^(P+2)) (layernorm.rsqrt_norm).
template <typename CONFIG_T>
inline ap_int<64> rsqrt_norm(ap_int<64> m) {
    #pragma HLS INLINE
    const int p = CONFIG_T::rsqrt_frac_bits;
    const int b = CONFIG_T::rsqrt_table_bits;
    ap_int<64> h = m >> (p + 1);
    ap_int<64> j = (m >> (p + int(h) - (b - 1))) & ((ap_int<64>(1) << (b - 1)) - 1);
    ap_int<64> y = CONFIG_T::rsqrt_table(unsigned((h << (b - 1)) + j));
newton:
    for (int s = 0; s < CONFIG_T::newton_steps; s++) {
        #pragma HLS UNROLL
        ap_int<64> sq = (y * y) >> p;
        ap_int<64> t = (m * sq) >> p;
        ap_int<64> u = (ap_int<64>(3) << p) - t;
        y = (y * u) >> (p + 1);
    }
    return y;
}

// hwapprox rsqrt_lut LayerNorm (RsqrtLutLayerNorm; RmsNorm when center = 0).
template <class data_T, class res_T, typename CONFIG_T>
void layernorm_rsqrt_lut(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                         const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                         const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    #pragma HLS ARRAY_PARTITION variable = gamma complete
    #pragma HLS ARRAY_PARTITION variable = beta complete
    const int N = CONFIG_T::n_in;
    const int P = CONFIG_T::rsqrt_frac_bits;
    const int G = CONFIG_T::eps_guard_bits;
    typedef ap_int<CONFIG_T::s1_bits> s1_t;
    typedef ap_int<CONFIG_T::s2_bits + 1> s2_t;
    typedef ap_int<CONFIG_T::de_bits + 1> de_t;
    // pass 1: exact sums
    s1_t s1 = 0;
    s2_t s2 = 0;
sums:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        ap_int<data_T::width + 1> x = raw_of(data[i]);
        s2 += x * x;
        if (CONFIG_T::center) s1 += x;
    }
    // per row: D = N·S2 - S1², De = (D << G) + N²·eps_q, normalise, 1/sqrt
    de_t d = de_t(N) * de_t(s2) - de_t(s1) * de_t(s1);
    de_t de = (d << G) + de_t((long long)N * N * CONFIG_T::eps_q);
    const int k = (bit_length<CONFIG_T::de_bits + 1>(de) - 1) >> 1;
    const int e = 2 * k - P;
    ap_int<64> m = e >= 0 ? ap_int<64>(de >> e) : ap_int<64>(ap_int<64>(de) << (-e));
    ap_int<64> y = rsqrt_norm<CONFIG_T>(m);
    const int sh = P + k - G / 2 - CONFIG_T::norm_frac_bits;
    // pass 2: normalise and apply gamma, beta
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        ap_int<data_T::width + 1> x = raw_of(data[i]);
        ap_int<CONFIG_T::a_bits> a = ap_int<CONFIG_T::a_bits>(N) * x - s1;
        // A·y and its rounding shift in 64 bits: sh may be negative (a left
        // shift) for some parameter sets; Z itself fits z_bits.
        ap_int<64> ay = a * ap_int<CONFIG_T::y_bits + 1>(y);
        ap_int<CONFIG_T::z_bits> z = round_half_up_shift<64>(ay, sh);
        ap_int<CONFIG_T::acc_bits + 1> acc =
            z * raw_of(gamma[i]) +
            (ap_int<CONFIG_T::acc_bits + 1>(raw_of(beta[i])) << CONFIG_T::beta_shift);
        res[i] = cast_raw<CONFIG_T::acc_frac_bits, res_T>(acc);
    }
}

// I-BERT IntLayerNorm (IBertLayerNorm). CONFIG_T::sqrtn = round(sqrt(n_in)·2^sqrtn_frac).
template <class data_T, class res_T, typename CONFIG_T>
void layernorm_ibert(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                     const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                     const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    #pragma HLS ARRAY_PARTITION variable = gamma complete
    #pragma HLS ARRAY_PARTITION variable = beta complete
    const int N = CONFIG_T::n_in;
    typedef ap_int<64> w_t;
    // mean = round(Σx / N), ties to even
    w_t s1 = 0;
sum:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        s1 += raw_of(data[i]);
    }
    w_t q = s1 / N;  // truncates toward zero; make it the floor
    if (s1 < 0 && q * N != s1) q -= 1;
    w_t r2 = (s1 - q * N) * 2;
    w_t mean = q + ((r2 > N || (r2 == N && q[0] == 1)) ? 1 : 0);
    w_t y[CONFIG_T::n_in];
    #pragma HLS ARRAY_PARTITION variable = y complete
    w_t var0 = 0;
center:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        y[i] = w_t(raw_of(data[i])) - mean;
        var0 += y[i] * y[i];
    }
    // smallest s >= shift with Σ floor(y / 2^s)^2 < 2^32
    int need = (bit_length<64>(var0 > 0 ? w_t(var0 - 1) : w_t(0)) -
                CONFIG_T::var_limit_bits + 1) >> 1;
    int s = need > CONFIG_T::shift ? need : int(CONFIG_T::shift);
    w_t var = 0;
var_search:
    for (int it = 0; it < 4; it++) {
        var = 0;
        for (int i = 0; i < N; i++) {
            #pragma HLS UNROLL
            w_t ys = y[i] >> s;
            var += ys * ys;
        }
        if (var < (w_t(1) << CONFIG_T::var_limit_bits)) break;
        s++;
    }
    w_t std_ = isqrt<64>(var) << s;
    w_t factor = std_ > 0 ? w_t((w_t(1) << CONFIG_T::factor_num_bits) / std_) : w_t(0);
    const int zshift = CONFIG_T::y_int_scale_bits + CONFIG_T::sqrtn_frac - CONFIG_T::norm_frac;
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        w_t y_int = (y[i] * factor) >> 1;
        w_t z = round_half_up_shift<64>(w_t(y_int * w_t(CONFIG_T::sqrtn)), zshift);
        const int f_acc = CONFIG_T::norm_frac + CONFIG_T::gamma_frac;
        w_t acc = z * w_t(raw_of(gamma[i])) +
                  (w_t(raw_of(beta[i])) << (f_acc - CONFIG_T::beta_frac));
        res[i] = cast_raw<CONFIG_T::norm_frac + CONFIG_T::gamma_frac, res_T>(acc);
    }
}

// Method tags: the generated config names one (typedef ... op) and callers
// (the encoder block) dispatch with CONFIG_T::op::template run<...>.
struct layernorm_rsqrt_lut_op {
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T* data, res_T* res, const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_rsqrt_lut<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
};

struct layernorm_ibert_op {
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T* data, res_T* res, const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_ibert<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_LAYERNORM_H
