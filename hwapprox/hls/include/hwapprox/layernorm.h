// hwapprox/layernorm.h -- LayerNorm units, one row of CONFIG_T::n_in values.
//
// Both functions are bit-exact with the spec of the same method in
// hwapprox/approx/layernorm.py on the same raw codes (tests/test_hls_layernorm.py):
//   layernorm_ibert      IBertLayerNorm   (I-BERT IntLayerNorm, exact integers)
//   layernorm_ivit       IVitLayerNorm    (I-ViT IntLayerNorm: Σy² unshifted, 10-step
//                                          isqrt from 2^16, (2^31 - 1) / std)
//   layernorm_hls4ml     Hls4mlLayerNorm  (hls4ml 1.3 layernorm_1d, written from the
//                                          model: accum_t arithmetic, 1/sqrt table)
//   layernorm_rsqrt_lut  RsqrtLutLayerNorm (single pass Σx, Σx²; 1/sqrt by table
//                        + Newton), and RmsNorm with CONFIG_T::CENTER = 0
//
// Interface (hls4ml style): data[n_in] -> res[n_in], gamma/beta[n_in] as
// values of CONFIG_T::gamma_t / beta_t; or through the op tags
// (CONFIG_T::op::template run<data_T, res_T, CONFIG_T>(data, res, gamma, beta)).
// Every element is first assigned to CONFIG_T::in_t (with its modes).
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
//
// io_stream: the same functions and op tags on hls::stream<data_T> /
// hls::stream<res_T> (gamma/beta stay arrays), one row of n_in elements per
// call, one element per cycle, bit-exact with the array units. DATAFLOW
// between the stages, each a PIPELINE II=1 loop; the row waits in a FIFO of
// n_in words:
//   rsqrt_lut  stats (S1, S2 while the row streams in; then the per-row chain
//              to 1/sqrt) -> emit (normalise, gamma, beta);
//   ibert      mean -> centre (y, Σy², the shift) -> variance (at s and s+1 in
//              one pass: the second I-BERT pass is never needed) -> emit.
// Latency per row ~ stages·n_in + the per-row chains; rows overlap in
// DATAFLOW, so the throughput is one element per cycle.
#ifndef HWAPPROX_LAYERNORM_H
#define HWAPPROX_LAYERNORM_H

#include "common.h"
#include "hls_stream.h"
#include "intmath.h"

namespace hwapprox {

// ---- rsqrt_lut / rmsnorm ---------------------------------------------------------------
template <typename C>
struct layernorm_rsqrt_types {
    // the elements the statistics use (pRMSNorm's k): the first PARTIAL_K when set, else
    // ceil(PARTIAL_NUM·n_in / 2^PARTIAL_F) (PARTIAL_NUM = 2^PARTIAL_F: the whole row)
    static const int NE_P =
        (int)(((long long)C::PARTIAL_NUM * C::n_in + (1LL << C::PARTIAL_F) - 1) >> C::PARTIAL_F);
    static const int NE = C::PARTIAL_K > 0 ? (C::PARTIAL_K < C::n_in ? C::PARTIAL_K : C::n_in)
                                           : (NE_P < C::n_in ? NE_P : C::n_in);
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
        const typename T::sq_t yy = HWAPPROX_NARROW(typename T::sq_t, y * y);
        const typename T::y_t sq = HWAPPROX_NARROW(typename T::y_t, yy >> p);
        const typename T::msq_t ms = HWAPPROX_NARROW(typename T::msq_t, m * sq);
        const typename T::m_t t = HWAPPROX_NARROW(typename T::m_t, ms >> p);
        const typename T::u_t u = HWAPPROX_NARROW(typename T::u_t, (typename T::u_t(3) << p) - t);
        const typename T::yu_t yu = HWAPPROX_NARROW(typename T::yu_t, y * u);
        y = HWAPPROX_NARROW(typename T::y_t, yu >> (p + 1));
    }
    return y;
}

// Per-row state of rsqrt_lut between the statistics and the outputs.
template <typename C>
struct layernorm_rsqrt_state {
    typename layernorm_rsqrt_types<C>::s1_t s1;  // ΣX (0 for RMSNorm)
    typename layernorm_rsqrt_types<C>::y_t y;    // 1/sqrt, P fraction bits
    int sh;                                      // P + k - G/2 - FZ
};

// per row: D = N·S2 - S1² (>= 0), De = (D << G) + N²·eps_q, normalise, 1/sqrt
// (N: T::NE, the row or pRMSNorm's first PARTIAL_K elements)
template <typename C>
inline layernorm_rsqrt_state<C> layernorm_rsqrt_row(
    const typename layernorm_rsqrt_types<C>::s1_t& s1,
    const typename layernorm_rsqrt_types<C>::s2_t& s2) {
    #pragma HLS INLINE
    typedef layernorm_rsqrt_types<C> T;
    const int N = T::NE;
    const typename T::d_t ns2 = HWAPPROX_NARROW(typename T::d_t, s2 * ap_uint<C::N_BITS>(N));
    const typename T::d_t s1sq = HWAPPROX_NARROW(typename T::d_t, s1 * s1);
    const typename T::d_t d = HWAPPROX_NARROW(typename T::d_t, ns2 - s1sq);  // >= 0
    const typename T::de_t de = HWAPPROX_NARROW(
        typename T::de_t,
        HWAPPROX_SHL(typename T::de_t, d, C::G) + typename T::de_t((long long)N * N * C::EPS_Q));
    const int k = (bit_length(de) - 1) >> 1;
    const int e = 2 * k - C::P;
    const typename T::m_t m =
        e >= 0 ? typename T::m_t(de >> e)
               : HWAPPROX_SHL(typename T::m_t, de, -e);
    layernorm_rsqrt_state<C> st;
    st.s1 = s1;
    st.y = rsqrt_norm<C>(m);
    st.sh = C::P + k - C::G / 2 - C::FZ;
    return st;
}

// per element: A = N·X - S1, Z = round(A·y / 2^sh), out = cast(Z·γ + (β << BETA_SHIFT))
template <class res_T, typename C>
inline res_T layernorm_rsqrt_out(const typename layernorm_rsqrt_types<C>::x_t& x,
                                 const layernorm_rsqrt_state<C>& st,
                                 const typename C::gamma_t& gamma,
                                 const typename C::beta_t& beta) {
    #pragma HLS INLINE
    typedef layernorm_rsqrt_types<C> T;
    const typename T::a_t a =
        HWAPPROX_NARROW(typename T::a_t, x * ap_uint<C::N_BITS>(T::NE) - st.s1);
    const typename T::ay_t ay = HWAPPROX_NARROW(typename T::ay_t, a * st.y);
    const typename T::z_t z = HWAPPROX_NARROW(
        typename T::z_t, round_half_up_shift<C::AYS_W>(typename T::ays_t(ay), st.sh));
    const typename T::acc_t acc = HWAPPROX_NARROW(
        typename T::acc_t,
        z * code_of(gamma) + HWAPPROX_SHL(typename T::acc_t, code_of(beta), C::BETA_SHIFT));
    return cast_raw<C::ACC_F, res_T>(acc);
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
    typename T::x_t x[N];
    #pragma HLS ARRAY_PARTITION variable = x complete
    // pass 1: exact sums
    typename T::s1_t s1 = 0;
    typename T::s2_t s2 = 0;
sums:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        x[i] = code_of(typename CONFIG_T::in_t(data[i]));
        if (i < T::NE) s2 = HWAPPROX_NARROW(typename T::s2_t, s2 + x[i] * x[i]);
        if (CONFIG_T::CENTER) s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x[i]);
    }
    const layernorm_rsqrt_state<CONFIG_T> st = layernorm_rsqrt_row<CONFIG_T>(s1, s2);
    // pass 2: normalise and apply gamma, beta
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        res[i] = layernorm_rsqrt_out<res_T, CONFIG_T>(x[i], st, gamma[i], beta[i]);
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

// The steps I-BERT and I-ViT share (T: the unit's types): the mean and the output stage.
template <typename C, class T>
struct layernorm_int_steps {
    // mean = round(ΣX / N), ties to even
    static typename T::x_t mean(const typename T::s1_t& s1) {
        #pragma HLS INLINE
        const int N = C::n_in;
        typename T::s1_t q = s1 / N;  // truncates toward zero; make it the floor
        if (s1 < 0 && q * N != s1) q -= 1;
        const typename T::s1_t r2 = (s1 - q * N) * 2;
        return HWAPPROX_NARROW(typename T::x_t,
                               q + ((r2 > N || (r2 == N && q[0] == 1)) ? 1 : 0));
    }

    // y_int = y·factor >> 1; Z = round(y_int·sqrtn / 2^ZSHIFT); out = cast(Z·γ + (β << ..))
    template <class res_T>
    static res_T out(const typename T::yc_t& y, const typename T::factor_t& factor,
                     const typename C::gamma_t& gamma, const typename C::beta_t& beta) {
        #pragma HLS INLINE
        const typename T::yf_t yf = HWAPPROX_NARROW(typename T::yf_t, y * factor);
        const typename T::yi_t y_int = yf >> 1;
        const typename T::yq_t yq =
            HWAPPROX_NARROW(typename T::yq_t, y_int * typename T::sqrtn_t(C::SQRTN));
        const typename T::z_t z = HWAPPROX_NARROW(
            typename T::z_t, round_half_up_shift<C::YQ_W>(yq, C::ZSHIFT));
        const typename T::acc_t acc = HWAPPROX_NARROW(
            typename T::acc_t,
            z * code_of(gamma) + HWAPPROX_SHL(typename T::acc_t, code_of(beta), C::BETA_SHIFT));
        return cast_raw<C::ACC_F, res_T>(acc);
    }
};

// The I-BERT steps shared by the array and the stream unit.
template <typename C>
struct layernorm_ibert_steps : layernorm_int_steps<C, layernorm_ibert_types<C> > {
    typedef layernorm_ibert_types<C> T;

    // the least shift s >= SHIFT with Σy² <= 2^(32 + 2s) (need, as I-BERT)
    static int shift(const typename T::var0_t& var0) {
        #pragma HLS INLINE
        const int need = (bit_length(var0 > 0 ? typename T::var0_t(var0 - 1)
                                              : typename T::var0_t(0)) -
                          C::VAR_LIMIT_BITS + 1) >>
                         1;
        return need > C::SHIFT ? need : int(C::SHIFT);
    }

    // floor(y / 2^s)², one term of var
    static typename T::var_t term(const typename T::yc_t& y, int s) {
        #pragma HLS INLINE
        const typename T::ys_t ys = HWAPPROX_NARROW(typename T::ys_t, y >> s);
        return HWAPPROX_NARROW(typename T::var_t, ys * ys);
    }

    // var_a = Σ floor(y/2^s)², var_b = the same at s + 1 (taken when the floors
    // push var_a to 2^32 or more; never more: see hw_params) -> 2^31 / std
    static typename T::factor_t factor(const typename T::var_t& var_a,
                                       const typename T::var_t& var_b, int s) {
        #pragma HLS INLINE
        typedef ap_uint<C::VAR_LIMIT_BITS + 1> lim_t;  // 2^32 (var_t may be narrower)
        const bool over = var_a >= (lim_t(1) << C::VAR_LIMIT_BITS);
        const typename T::var_t var = over ? var_b : var_a;
        const int sv = over ? s + 1 : s;
        const typename T::root_t root = HWAPPROX_NARROW(
            typename T::root_t, isqrt(HWAPPROX_NARROW(ap_uint<C::VAR_LIMIT_BITS>, var)));
        const typename T::std_t std_ =
            HWAPPROX_SHL(typename T::std_t, root, sv);
        return std_ > 0 ? HWAPPROX_NARROW(typename T::factor_t,
                                          (typename T::factor_t(1) << C::FACTOR_NUM_BITS) / std_)
                        : typename T::factor_t(0);
    }
};

// ---- I-ViT -------------------------------------------------------------------------------
template <typename C>
struct layernorm_ivit_types {
    typedef ap_int<C::X_W> x_t;            // input code (and the mean)
    typedef ap_int<C::S1_W> s1_t;          // ΣX
    typedef ap_int<C::YC_W> yc_t;          // y = X - mean
    typedef ap_uint<C::VAR0_W> var0_t;     // Σy² (I-ViT: no shift)
    typedef ap_uint<C::K_W> k_t;           // the Newton iterate
    typedef ap_uint<C::Q_W> q_t;           // var0 / k
    typedef ap_uint<C::KS_W> ks_t;         // k + var0 / k
    typedef ap_uint<C::STD_W> std_t;       // std, the last iterate
    typedef ap_uint<C::FACTOR_W> factor_t; // (2^31 - 1) / std
    typedef ap_int<C::YF_W> yf_t;          // y·factor
    typedef ap_int<C::YI_W> yi_t;          // y_int
    typedef ap_uint<C::SQRTN_W> sqrtn_t;   // round(sqrt(N)·2^16)
    typedef ap_int<C::YQ_W> yq_t;          // y_int·sqrtn
    typedef ap_int<C::Z_W> z_t;            // normalised value, norm_frac bits
    typedef ap_int<C::ACC_W> acc_t;        // Z·γ + (β << BETA_SHIFT)
};

template <typename C>
struct layernorm_ivit_steps : layernorm_int_steps<C, layernorm_ivit_types<C> > {
    typedef layernorm_ivit_types<C> T;

    // I-ViT's isqrt: NEWTON_ITERS steps k = (k + var0 / k) >> 1 from k = NEWTON_K0, no
    // stop test (var0 = 0 or 1 gives 64, as the source); factor = (2^31 - 1) / std
    static typename T::factor_t factor(const typename T::var0_t& var0) {
        #pragma HLS INLINE
        typename T::k_t k = C::NEWTON_K0;
    newton:
        for (int it = 0; it < C::NEWTON_ITERS; it++) {
            const typename T::q_t q = HWAPPROX_NARROW(typename T::q_t, var0 / k);
            const typename T::ks_t ks = HWAPPROX_NARROW(typename T::ks_t, k + q);
            k = HWAPPROX_NARROW(typename T::k_t, ks >> 1);
        }
        const typename T::std_t std_ = HWAPPROX_NARROW(typename T::std_t, k);
        return HWAPPROX_NARROW(typename T::factor_t, typename T::factor_t(C::FACTOR_NUM) / std_);
    }
};

// I-ViT IntLayerNorm (IVitLayerNorm): I-BERT's mean and output stage, Σy² unshifted,
// I-ViT's 10-step isqrt and (2^31 - 1) / std.
template <class data_T, class res_T, typename CONFIG_T>
void layernorm_ivit(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                    const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                    const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    #pragma HLS ARRAY_PARTITION variable = gamma complete
    #pragma HLS ARRAY_PARTITION variable = beta complete
    typedef layernorm_ivit_steps<CONFIG_T> S;
    typedef typename S::T T;
    const int N = CONFIG_T::n_in;
    typename T::x_t x[N];
    #pragma HLS ARRAY_PARTITION variable = x complete
    typename T::s1_t s1 = 0;
sum:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        x[i] = code_of(typename CONFIG_T::in_t(data[i]));
        s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x[i]);
    }
    const typename T::x_t mean = S::mean(s1);
    typename T::yc_t y[N];
    #pragma HLS ARRAY_PARTITION variable = y complete
    typename T::var0_t var0 = 0;
center:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        y[i] = HWAPPROX_NARROW(typename T::yc_t, x[i] - mean);
        var0 = HWAPPROX_NARROW(typename T::var0_t, var0 + y[i] * y[i]);
    }
    const typename T::factor_t factor = S::factor(var0);
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        res[i] = S::template out<res_T>(y[i], factor, gamma[i], beta[i]);
    }
}

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
    typedef layernorm_ibert_steps<CONFIG_T> S;
    typedef typename S::T T;
    const int N = CONFIG_T::n_in;
    typename T::x_t x[N];
    #pragma HLS ARRAY_PARTITION variable = x complete
    typename T::s1_t s1 = 0;
sum:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        x[i] = code_of(typename CONFIG_T::in_t(data[i]));
        s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x[i]);
    }
    const typename T::x_t mean = S::mean(s1);
    typename T::yc_t y[N];
    #pragma HLS ARRAY_PARTITION variable = y complete
    typename T::var0_t var0 = 0;
center:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        y[i] = HWAPPROX_NARROW(typename T::yc_t, x[i] - mean);
        var0 = HWAPPROX_NARROW(typename T::var0_t, var0 + y[i] * y[i]);
    }
    const int s = S::shift(var0);
    typename T::var_t var_a = 0, var_b = 0;
var:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        var_a = HWAPPROX_NARROW(typename T::var_t, var_a + S::term(y[i], s));
        var_b = HWAPPROX_NARROW(typename T::var_t, var_b + S::term(y[i], s + 1));
    }
    const typename T::factor_t factor = S::factor(var_a, var_b, s);
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        res[i] = S::template out<res_T>(y[i], factor, gamma[i], beta[i]);
    }
}

// ---- io_stream -------------------------------------------------------------------------
// rsqrt_lut: statistics while the row streams in (the row into a FIFO), then
// the outputs from the FIFO.
template <class data_T, typename C>
void layernorm_rsqrt_stats(hls::stream<data_T>& data,
                           hls::stream<typename layernorm_rsqrt_types<C>::x_t>& buf,
                           hls::stream<layernorm_rsqrt_state<C> >& state) {
    #pragma HLS INLINE off
    typedef layernorm_rsqrt_types<C> T;
    typename T::s1_t s1 = 0;
    typename T::s2_t s2 = 0;
sums:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        const typename T::x_t x = code_of(typename C::in_t(data.read()));
        buf.write(x);
        if (i < T::NE) s2 = HWAPPROX_NARROW(typename T::s2_t, s2 + x * x);
        if (C::CENTER) s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x);
    }
    state.write(layernorm_rsqrt_row<C>(s1, s2));
}

template <class res_T, typename C>
void layernorm_rsqrt_emit(hls::stream<typename layernorm_rsqrt_types<C>::x_t>& buf,
                          hls::stream<layernorm_rsqrt_state<C> >& state, hls::stream<res_T>& res,
                          const typename C::gamma_t gamma[C::n_in],
                          const typename C::beta_t beta[C::n_in]) {
    #pragma HLS INLINE off
    const layernorm_rsqrt_state<C> st = state.read();
elems:
    for (int i = 0; i < C::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        res.write(layernorm_rsqrt_out<res_T, C>(buf.read(), st, gamma[i], beta[i]));
    }
}

template <class data_T, class res_T, typename CONFIG_T>
void layernorm_rsqrt_lut(hls::stream<data_T>& data, hls::stream<res_T>& res,
                         const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                         const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS DATAFLOW
    hls::stream<typename layernorm_rsqrt_types<CONFIG_T>::x_t> buf;
    hls::stream<layernorm_rsqrt_state<CONFIG_T> > state;
    constexpr int depth __attribute__((unused)) = CONFIG_T::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf depth = depth
    layernorm_rsqrt_stats<data_T, CONFIG_T>(data, buf, state);
    layernorm_rsqrt_emit<res_T, CONFIG_T>(buf, state, res, gamma, beta);
}

// ibert: mean (ΣX) -> centre (y, Σy², the shift) -> variance at s and s + 1
// (2^31/std) -> outputs; the row travels between the stages in FIFOs.
template <typename C>
struct layernorm_ibert_stream_stages {
    typedef layernorm_ibert_steps<C> S;
    typedef typename S::T T;

    template <class data_T>
    static void mean(hls::stream<data_T>& data, hls::stream<typename T::x_t>& buf,
                     hls::stream<typename T::x_t>& mean_out) {
        #pragma HLS INLINE off
        typename T::s1_t s1 = 0;
    sum:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = code_of(typename C::in_t(data.read()));
            buf.write(x);
            s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x);
        }
        mean_out.write(S::mean(s1));
    }

    static void centre(hls::stream<typename T::x_t>& buf, hls::stream<typename T::x_t>& mean_in,
                       hls::stream<typename T::yc_t>& ybuf, hls::stream<int>& shift) {
        #pragma HLS INLINE off
        const typename T::x_t mean = mean_in.read();
        typename T::var0_t var0 = 0;
    centre:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::yc_t y = HWAPPROX_NARROW(typename T::yc_t, buf.read() - mean);
            ybuf.write(y);
            var0 = HWAPPROX_NARROW(typename T::var0_t, var0 + y * y);
        }
        shift.write(S::shift(var0));
    }

    static void variance(hls::stream<typename T::yc_t>& ybuf_in, hls::stream<int>& shift,
                         hls::stream<typename T::yc_t>& ybuf,
                         hls::stream<typename T::factor_t>& factor) {
        #pragma HLS INLINE off
        const int s = shift.read();
        typename T::var_t var_a = 0, var_b = 0;
    var:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::yc_t y = ybuf_in.read();
            ybuf.write(y);
            var_a = HWAPPROX_NARROW(typename T::var_t, var_a + S::term(y, s));
            var_b = HWAPPROX_NARROW(typename T::var_t, var_b + S::term(y, s + 1));
        }
        factor.write(S::factor(var_a, var_b, s));
    }

    template <class res_T>
    static void emit(hls::stream<typename T::yc_t>& ybuf, hls::stream<typename T::factor_t>& factor,
                     hls::stream<res_T>& res, const typename C::gamma_t gamma[C::n_in],
                     const typename C::beta_t beta[C::n_in]) {
        #pragma HLS INLINE off
        const typename T::factor_t f = factor.read();
    elems:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            res.write(S::template out<res_T>(ybuf.read(), f, gamma[i], beta[i]));
        }
    }
};

// ivit: mean (ΣX) -> centre (y, Σy², then isqrt and the factor) -> outputs.
template <typename C>
struct layernorm_ivit_stream_stages {
    typedef layernorm_ivit_steps<C> S;
    typedef typename S::T T;

    template <class data_T>
    static void mean(hls::stream<data_T>& data, hls::stream<typename T::x_t>& buf,
                     hls::stream<typename T::x_t>& mean_out) {
        #pragma HLS INLINE off
        typename T::s1_t s1 = 0;
    sum:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::x_t x = code_of(typename C::in_t(data.read()));
            buf.write(x);
            s1 = HWAPPROX_NARROW(typename T::s1_t, s1 + x);
        }
        mean_out.write(S::mean(s1));
    }

    static void centre(hls::stream<typename T::x_t>& buf, hls::stream<typename T::x_t>& mean_in,
                       hls::stream<typename T::yc_t>& ybuf,
                       hls::stream<typename T::factor_t>& factor) {
        #pragma HLS INLINE off
        const typename T::x_t mean = mean_in.read();
        typename T::var0_t var0 = 0;
    centre:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            const typename T::yc_t y = HWAPPROX_NARROW(typename T::yc_t, buf.read() - mean);
            ybuf.write(y);
            var0 = HWAPPROX_NARROW(typename T::var0_t, var0 + y * y);
        }
        factor.write(S::factor(var0));
    }

    template <class res_T>
    static void emit(hls::stream<typename T::yc_t>& ybuf, hls::stream<typename T::factor_t>& factor,
                     hls::stream<res_T>& res, const typename C::gamma_t gamma[C::n_in],
                     const typename C::beta_t beta[C::n_in]) {
        #pragma HLS INLINE off
        const typename T::factor_t f = factor.read();
    elems:
        for (int i = 0; i < C::n_in; i++) {
            #pragma HLS PIPELINE II = 1
            res.write(S::template out<res_T>(ybuf.read(), f, gamma[i], beta[i]));
        }
    }
};

template <class data_T, class res_T, typename CONFIG_T>
void layernorm_ivit(hls::stream<data_T>& data, hls::stream<res_T>& res,
                    const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                    const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS DATAFLOW
    typedef layernorm_ivit_stream_stages<CONFIG_T> St;
    typedef typename St::T T;
    hls::stream<typename T::x_t> buf, mean;
    hls::stream<typename T::yc_t> ybuf;
    hls::stream<typename T::factor_t> factor;
    constexpr int depth __attribute__((unused)) = CONFIG_T::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf depth = depth
    #pragma HLS STREAM variable = ybuf depth = depth
    St::template mean<data_T>(data, buf, mean);
    St::centre(buf, mean, ybuf, factor);
    St::template emit<res_T>(ybuf, factor, res, gamma, beta);
}

template <class data_T, class res_T, typename CONFIG_T>
void layernorm_ibert(hls::stream<data_T>& data, hls::stream<res_T>& res,
                     const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                     const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS DATAFLOW
    typedef layernorm_ibert_stream_stages<CONFIG_T> St;
    typedef typename St::T T;
    hls::stream<typename T::x_t> buf, mean;
    hls::stream<typename T::yc_t> ybuf0, ybuf1;
    hls::stream<int> shift;
    hls::stream<typename T::factor_t> factor;
    constexpr int depth __attribute__((unused)) = CONFIG_T::n_in;  // a row per FIFO (pragmas)
    #pragma HLS STREAM variable = buf depth = depth
    #pragma HLS STREAM variable = ybuf0 depth = depth
    #pragma HLS STREAM variable = ybuf1 depth = depth
    St::template mean<data_T>(data, buf, mean);
    St::centre(buf, mean, ybuf0, shift);
    St::variance(ybuf0, shift, ybuf1, factor);
    St::template emit<res_T>(ybuf1, factor, res, gamma, beta);
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
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(hls::stream<data_T>& data, hls::stream<res_T>& res,
                    const typename CONFIG_T::gamma_t* gamma,
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
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(hls::stream<data_T>& data, hls::stream<res_T>& res,
                    const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_ibert<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
};

// ---- hls4ml 1.3 baseline (Hls4mlLayerNorm), written from the model -----------------------
// ap_fixed arithmetic on the config's own types: every assignment into accum_t rounds and
// overflows with its modes; the index var·TSCALE >> ACCUM_F clamped to the table; the
// output d·r·γ + β exact, one cast to res_T.
template <typename C>
struct layernorm_hls4ml_types {
    typedef ap_int<C::IDX_W> idx_t;    // var·TSCALE as raw accum_t codes
    typedef ap_uint<C::ADDR_W> addr_t; // the table index
};

template <class data_T, class res_T, typename CONFIG_T>
void layernorm_hls4ml(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in],
                      const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                      const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    typedef typename CONFIG_T::accum_t acc_t;
    typedef layernorm_hls4ml_types<CONFIG_T> T;
    const int N = CONFIG_T::n_in;
    const acc_t k_inv = from_raw<acc_t>(ap_int<CONFIG_T::ACCUM_W>(CONFIG_T::K_INV));  // 1/N
    acc_t xa[N], d[N];
    #pragma HLS ARRAY_PARTITION variable = xa complete
    #pragma HLS ARRAY_PARTITION variable = d complete
    acc_t sum = 0;
sum:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        xa[i] = data[i];
        sum += xa[i];
    }
    const acc_t mean = sum * k_inv;
    acc_t sum2 = 0;
centre:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        d[i] = xa[i] - mean;
        const acc_t sq = d[i] * d[i];
        sum2 += sq;
    }
    const acc_t var = sum2 * k_inv;
    const typename T::idx_t idx =
        HWAPPROX_NARROW(typename T::idx_t, (typename T::idx_t(code_of(var)) * CONFIG_T::TSCALE) >>
                                               CONFIG_T::ACCUM_F);
    const typename T::addr_t addr =
        idx < 0 ? typename T::addr_t(0)
                : idx > typename T::idx_t(CONFIG_T::TABLE_SIZE - 1)
                      ? typename T::addr_t(CONFIG_T::TABLE_SIZE - 1)
                      : HWAPPROX_NARROW(typename T::addr_t, idx);
    const typename CONFIG_T::table_t r =
        from_raw<typename CONFIG_T::table_t>(CONFIG_T::invert_sqr_table(unsigned(addr)));
elems:
    for (int i = 0; i < N; i++) {
        #pragma HLS UNROLL
        res[i] = d[i] * r * gamma[i] + beta[i];  // exact products and sum, one cast
    }
}

// io_stream: the row buffered, the array unit, the row streamed out (as hls4ml's).
template <class data_T, class res_T, typename CONFIG_T>
void layernorm_hls4ml(hls::stream<data_T>& data, hls::stream<res_T>& res,
                      const typename CONFIG_T::gamma_t gamma[CONFIG_T::n_in],
                      const typename CONFIG_T::beta_t beta[CONFIG_T::n_in]) {
    data_T x[CONFIG_T::n_in];
    res_T y[CONFIG_T::n_in];
load:
    for (int i = 0; i < CONFIG_T::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        x[i] = data.read();
    }
    layernorm_hls4ml<data_T, res_T, CONFIG_T>(x, y, gamma, beta);
store:
    for (int i = 0; i < CONFIG_T::n_in; i++) {
        #pragma HLS PIPELINE II = 1
        res.write(y[i]);
    }
}

struct layernorm_hls4ml_op {
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T* data, res_T* res, const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_hls4ml<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(hls::stream<data_T>& data, hls::stream<res_T>& res,
                    const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_hls4ml<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
};

struct layernorm_ivit_op {
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(const data_T* data, res_T* res, const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_ivit<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
    template <class data_T, class res_T, typename CONFIG_T>
    static void run(hls::stream<data_T>& data, hls::stream<res_T>& res,
                    const typename CONFIG_T::gamma_t* gamma,
                    const typename CONFIG_T::beta_t* beta) {
        #pragma HLS INLINE
        layernorm_ivit<data_T, res_T, CONFIG_T>(data, res, gamma, beta);
    }
};

}  // namespace hwapprox

#endif  // HWAPPROX_LAYERNORM_H
