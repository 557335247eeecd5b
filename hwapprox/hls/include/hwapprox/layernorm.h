// hwapprox/layernorm.h -- LayerNorm units, one row of CONFIG_T::n_in values.
//
// Both functions are bit-exact with the spec of the same method in
// hwapprox/approx/layernorm.py on the same raw codes (tests/test_hls_layernorm.py):
//   layernorm_ibert      IBertLayerNorm   (I-BERT IntLayerNorm, exact integers)
//   layernorm_rsqrt_lut  RsqrtLutLayerNorm (single pass Σx, Σx²; 1/sqrt by table
//                        + Newton), and RmsNorm with CONFIG_T::CENTER = 0
//
// Interface (hls4ml style): data[n_in] -> res[n_in], gamma/beta[n_in] as
// values of CONFIG_T::gamma_t / beta_t; or through the op tags
// (CONFIG_T::op::template run<data_T, res_T, CONFIG_T>(data, res, gamma, beta)).
// Constants and tables come from the generated config.
//
// Widths: every intermediate is an ap_int/ap_uint of a width from the spec's
// hw_params() (layernorm_*_types<C>; derivations in the spec docstrings).
// rsqrt_lut takes the same numbers as the SV unit hwa_layernorm_rsqrt (S1_W,
// S2_W, D_W, DE_W, A_W, AY_W, Z_W, ACC_W); its accumulators are sized for the
// spec's max_n, not for n_in. Default rsqrt_lut (16-bit input, max_n 1024):
// S2 41, De 55, A·y 49, Newton products <= 2P+2 = 42 bits. I-BERT: its
// variance is kept below 2^32 by the per-row shift (var 33, y·factor 34 bits).
//
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

// ---- rsqrt_lut / rmsnorm ---------------------------------------------------------------
template <typename C>
struct layernorm_rsqrt_types {
    typedef ap_int<C::X_W> x_t;      // input code
    typedef ap_int<C::S1_W> s1_t;    // ΣX
    typedef ap_uint<C::S2_W> s2_t;   // ΣX²
    typedef ap_uint<C::D_W> d_t;     // N·S2 - S1²
    typedef ap_uint<C::DE_W> de_t;   // (D << G) + N²·eps_q
    typedef ap_uint<C::M_W> m_t;     // normalised mantissa in [2^P, 2^(P+2))
    typedef ap_uint<C::Y_W> y_t;     // 1/sqrt(m), P fraction bits
    typedef ap_uint<C::SQ_W> sq_t;   // y·y
    typedef ap_uint<C::MSQ_W> msq_t; // m·(y² >> P)
    typedef ap_uint<C::U_W> u_t;     // 3·2^P - t
    typedef ap_uint<C::YU_W> yu_t;   // y·u
    typedef ap_int<C::A_W> a_t;      // N·X - S1
    typedef ap_int<C::AY_W> ay_t;    // A·y
    typedef ap_int<C::AYS_W> ays_t;  // A·y before the rounding shift
    typedef ap_int<C::Z_W> z_t;      // normalised value, FZ fraction bits
    typedef ap_int<C::ACC_W> acc_t;  // Z·γ + (β << BETA_SHIFT)
};

// y·2^-P ≈ 1/sqrt(m·2^-P) for m in [2^P, 2^(P+2)) (layernorm.rsqrt_norm).
template <typename C>
inline typename layernorm_rsqrt_types<C>::y_t rsqrt_norm(
    const typename layernorm_rsqrt_types<C>::m_t& m) {
    #pragma HLS INLINE
    typedef layernorm_rsqrt_types<C> T;
    const int p = C::P;
    const int b = C::TB;
    const int h = (m >> (p + 1)).to_int();
    const ap_uint<(C::TB > 1 ? C::TB - 1 : 1)> j = m >> (p + h - (b - 1));
    typename T::y_t y = C::rsqrt_table(unsigned((h << (b - 1)) + j.to_uint()));
newton:
    for (int s = 0; s < C::NEWTON; s++) {
        #pragma HLS UNROLL
        const typename T::sq_t yy = y * y;
        const typename T::y_t sq = HWAPPROX_NARROW(typename T::y_t, yy >> p);
        const typename T::msq_t ms = m * sq;
        const typename T::m_t t = HWAPPROX_NARROW(typename T::m_t, ms >> p);
        const typename T::u_t u = HWAPPROX_NARROW(typename T::u_t, (typename T::u_t(3) << p) - t);
        const typename T::yu_t yu = y * u;
        y = HWAPPROX_NARROW(typename T::y_t, yu >> (p + 1));
    }
    return y;
}

// hwapprox rsqrt_lut LayerNorm (RsqrtLutLayerNorm; RmsNorm when CENTER = 0).
template <class data_T, class res_T, typename CONFIG_T>
void layernorm_rsqrt_lut(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                         const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                         const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    #pragma HLS ARRAY_PARTITION variable = gamma complete
    #pragma HLS ARRAY_PARTITION variable = beta complete
    typedef layernorm_rsqrt_types<CONFIG_T> T;
    const int N = CONFIG_T::n_in;
    const int P = CONFIG_T::P;
    const int G = CONFIG_T::G;
    typename T::x_t x[N];
    #pragma HLS ARRAY_PARTITION variable = x complete
    // pass 1: exact sums
    typename T::s1_t s1 = 0;
    typename T::s2_t s2 = 0;
sums:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        x[i] = code_of(typename CONFIG_T::in_t(data[i]));
        s2 = HWAPPROX_NARROW(typename T::s2_t, s2 + x[i] * x[i]);
        if (CONFIG_T::CENTER) s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x[i]);
    }
    // per row: D = N·S2 - S1² (>= 0), De = (D << G) + N²·eps_q, normalise, 1/sqrt
    const typename T::d_t ns2 = HWAPPROX_NARROW(typename T::d_t, s2 * ap_uint<CONFIG_T::N_BITS>(N));
    const typename T::d_t s1sq = HWAPPROX_NARROW(typename T::d_t, s1 * s1);
    const typename T::d_t d = ns2 - s1sq;
    const typename T::de_t de = HWAPPROX_NARROW(
        typename T::de_t,
        (typename T::de_t(d) << G) + typename T::de_t((long long)N * N * CONFIG_T::EPS_Q));
    const int k = (bit_length(de) - 1) >> 1;
    const int e = 2 * k - P;
    const typename T::m_t m =
        e >= 0 ? typename T::m_t(de >> e)
               : HWAPPROX_NARROW(typename T::m_t, typename T::m_t(de) << (-e));
    const typename T::y_t y = rsqrt_norm<CONFIG_T>(m);
    const int sh = P + k - G / 2 - CONFIG_T::FZ;
    // pass 2: normalise and apply gamma, beta
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        const typename T::a_t a =
            HWAPPROX_NARROW(typename T::a_t, x[i] * ap_uint<CONFIG_T::N_BITS>(N) - s1);
        const typename T::ay_t ay = HWAPPROX_NARROW(typename T::ay_t, a * y);
        const typename T::z_t z = HWAPPROX_NARROW(
            typename T::z_t, round_half_up_shift<CONFIG_T::AYS_W>(typename T::ays_t(ay), sh));
        const typename T::acc_t acc = HWAPPROX_NARROW(
            typename T::acc_t,
            z * code_of(gamma[i]) + (typename T::acc_t(code_of(beta[i])) << CONFIG_T::BETA_SHIFT));
        res[i] = cast_raw<CONFIG_T::ACC_F, res_T>(acc);
    }
}

// ---- I-BERT ----------------------------------------------------------------------------
template <typename C>
struct layernorm_ibert_types {
    typedef ap_int<C::X_W> x_t;            // input code (and the mean)
    typedef ap_int<C::S1_W> s1_t;          // ΣX
    typedef ap_int<C::YC_W> yc_t;          // y = X - mean
    typedef ap_uint<C::VAR0_W> var0_t;     // Σy²
    typedef ap_uint<C::VAR_W> var_t;       // Σ floor(y / 2^s)²
    typedef ap_int<C::YS_W> ys_t;          // floor(y / 2^s)
    typedef ap_uint<C::ROOT_W> root_t;     // isqrt(var)
    typedef ap_uint<C::STD_W> std_t;       // isqrt(var)·2^s
    typedef ap_uint<C::FACTOR_W> factor_t; // 2^31 / std
    typedef ap_int<C::YF_W> yf_t;          // y·factor
    typedef ap_int<C::YI_W> yi_t;          // y_int
    typedef ap_uint<C::SQRTN_W> sqrtn_t;   // round(sqrt(N)·2^16)
    typedef ap_int<C::YQ_W> yq_t;          // y_int·sqrtn
    typedef ap_int<C::Z_W> z_t;            // normalised value, norm_frac bits
    typedef ap_int<C::ACC_W> acc_t;        // Z·γ + (β << BETA_SHIFT)
};

// I-BERT IntLayerNorm (IBertLayerNorm). CONFIG_T::SQRTN = round(sqrt(n_in)·2^16).
template <class data_T, class res_T, typename CONFIG_T>
void layernorm_ibert(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                     const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                     const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    #pragma HLS ARRAY_PARTITION variable = gamma complete
    #pragma HLS ARRAY_PARTITION variable = beta complete
    typedef layernorm_ibert_types<CONFIG_T> T;
    const int N = CONFIG_T::n_in;
    typename T::x_t x[N];
    #pragma HLS ARRAY_PARTITION variable = x complete
    // mean = round(Σx / N), ties to even
    typename T::s1_t s1 = 0;
sum:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        x[i] = code_of(typename CONFIG_T::in_t(data[i]));
        s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x[i]);
    }
    typename T::s1_t q = s1 / N;  // truncates toward zero; make it the floor
    if (s1 < 0 && q * N != s1) q -= 1;
    const typename T::s1_t r2 = (s1 - q * N) * 2;
    const typename T::x_t mean =
        HWAPPROX_NARROW(typename T::x_t, q + ((r2 > N || (r2 == N && q[0] == 1)) ? 1 : 0));
    typename T::yc_t y[N];
    #pragma HLS ARRAY_PARTITION variable = y complete
    typename T::var0_t var0 = 0;
center:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        y[i] = HWAPPROX_NARROW(typename T::yc_t, x[i] - mean);
        var0 = HWAPPROX_NARROW(typename T::var0_t, var0 + y[i] * y[i]);
    }
    // smallest s >= shift with Σ floor(y / 2^s)^2 < 2^32: s = max(shift, need), and
    // one more when the floors push the sum over (never more: see hw_params)
    const int need = (bit_length(var0 > 0 ? typename T::var0_t(var0 - 1) : typename T::var0_t(0)) -
                      CONFIG_T::VAR_LIMIT_BITS + 1) >> 1;
    int s = need > CONFIG_T::SHIFT ? need : int(CONFIG_T::SHIFT);
    typename T::var_t var = 0;
var_search:
    for (int it = 0; it < 2; it++) {
        var = 0;
        for (int i = 0; i < N; i++) {
            #pragma HLS UNROLL
            const typename T::ys_t ys = HWAPPROX_NARROW(typename T::ys_t, y[i] >> s);
            var = HWAPPROX_NARROW(typename T::var_t, var + ys * ys);
        }
        if (var < (typename T::var_t(1) << CONFIG_T::VAR_LIMIT_BITS)) break;
        s++;
    }
    const typename T::root_t root =
        HWAPPROX_NARROW(typename T::root_t,
                        isqrt(HWAPPROX_NARROW(ap_uint<CONFIG_T::VAR_LIMIT_BITS>, var)));
    const typename T::std_t std_ = HWAPPROX_NARROW(typename T::std_t, typename T::std_t(root) << s);
    const typename T::factor_t factor =
        std_ > 0 ? HWAPPROX_NARROW(typename T::factor_t,
                                   (typename T::factor_t(1) << CONFIG_T::FACTOR_NUM_BITS) / std_)
                 : typename T::factor_t(0);
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        const typename T::yf_t yf = HWAPPROX_NARROW(typename T::yf_t, y[i] * factor);
        const typename T::yi_t y_int = yf >> 1;
        const typename T::yq_t yq =
            HWAPPROX_NARROW(typename T::yq_t, y_int * typename T::sqrtn_t(CONFIG_T::SQRTN));
        const typename T::z_t z = HWAPPROX_NARROW(
            typename T::z_t, round_half_up_shift<CONFIG_T::YQ_W>(yq, CONFIG_T::ZSHIFT));
        const typename T::acc_t acc = HWAPPROX_NARROW(
            typename T::acc_t,
            z * code_of(gamma[i]) + (typename T::acc_t(code_of(beta[i])) << CONFIG_T::BETA_SHIFT));
        res[i] = cast_raw<CONFIG_T::ACC_F, res_T>(acc);
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
