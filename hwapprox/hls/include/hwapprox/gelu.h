// hwapprox/gelu.h -- elementwise GELU units.
//
// Each op tag below is bit-exact with the spec of the same method in
// hwapprox/approx/gelu.py on the same raw codes (tests/test_hls_gelu.py):
//   gelu_ibert_op      IBertGelu    I-BERT i-GELU (erf polynomial, dyadic requantisation)
//   gelu_shiftgelu_op  ShiftGelu    I-ViT ShiftGELU (x·sigmoid(1.702x) with shift-exp)
//   gelu_edgemoe_op    EdgeMoeGelu  Edge-MoE ReLU(x) - delta(|x|), interpolated table
//   gelu_pwl_op        PwlGelu      minimax piecewise-linear, breakpoint compare + MAC
//   gelu_lut_op        LutGelu      direct table indexed by the top input bits
//
// Interface: gelu<data_T, res_T, CONFIG_T>(data[n_in], res[n_in]), dispatched
// on CONFIG_T::op. Per element, one<res_T, C>(x) takes the raw input code
// (ap_int<IN_W>) and returns the output value; the final conversion uses
// res_T's own rounding and overflow modes, exactly like the model's cast into
// out_fmt. Constants and tables come from the generated config.
//
// Widths: every intermediate is an ap_int/ap_uint of a width from the spec's
// hw_params() (gelu_*_types<C>; derivations in each spec's hw_params
// docstring); pwl and lut take the same numbers as the SV units hwa_pwl
// and hwa_lut. Default specs: ibert requantising product 52 bits, pwl
// accumulator 35, edgemoe interpolation 29, shiftgelu divider 31/28 bits.
//
// Latency intent: io_parallel, fully unrolled over n_in, PIPELINE II=1; each
// element is a short chain (ibert: square, multiply, requantise; shiftgelu: two
// shift-exps and one divider; pwl: N-1 comparators + one MAC; edgemoe: 2 ROM
// reads + one multiply; lut: one ROM read).
//
// io_stream: gelu<data_T, res_T, CONFIG_T>(hls::stream<data_T>&, hls::stream<res_T>&)
// takes n_in elements per call, one per cycle (PIPELINE II=1 over the same
// per-element chain), bit-exact with the array unit.
#ifndef HWAPPROX_GELU_H
#define HWAPPROX_GELU_H

#include "common.h"
#include "fntable.h"
#include "hls_stream.h"
#include "intmath.h"

namespace hwapprox {

template <typename C>
struct gelu_ibert_types {
    typedef ap_int<C::IN_W> x_t;      // input code
    typedef ap_uint<C::ABS_W> abs_t;  // |x|
    typedef ap_uint<C::T_W> t_t;      // min(|x|, -b_int)
    typedef ap_int<C::TB_W> tb_t;     // t + b_int
    typedef ap_uint<C::SQ_W> sq_t;    // (t + b_int)^2
    typedef ap_int<C::POLY_W> poly_t; // polynomial, and with x's sign
    typedef ap_int<C::ERF_W> erf_t;   // >> erf_shift
    typedef ap_int<C::SUM_W> sum_t;   // erf + 1
    typedef ap_int<C::PROD_W> prod_t; // x·(erf + 1)
    typedef ap_int<C::Q_W> q_t;       // requantising product
};

struct gelu_ibert_op {
    template <class res_T, typename C>
    static res_T one(const ap_int<C::IN_W>& x) {
        #pragma HLS INLINE
        typedef gelu_ibert_types<C> T;
        const typename T::abs_t a = x < 0 ? typename T::abs_t(-x) : typename T::abs_t(x);
        const typename T::t_t lim = -C::B_INT;
        const typename T::t_t t = a < lim ? typename T::t_t(a) : lim;
        const typename T::tb_t tb =
            HWAPPROX_NARROW(typename T::tb_t, t + typename T::tb_t(C::B_INT));
        const typename T::sq_t sq = HWAPPROX_NARROW(typename T::sq_t, tb * tb);
        const typename T::poly_t poly =
            HWAPPROX_NARROW(typename T::poly_t, sq + typename T::poly_t(C::C_INT));
        const typename T::poly_t sp =
            x > 0 ? poly : (x < 0 ? typename T::poly_t(-poly) : typename T::poly_t(0));
        const typename T::erf_t erf =
            HWAPPROX_NARROW(typename T::erf_t, sp >> C::ERF_SHIFT);  // floor
        const typename T::sum_t sum =
            HWAPPROX_NARROW(typename T::sum_t, erf + typename T::sum_t(C::ERF_ONE));
        const typename T::prod_t p = HWAPPROX_NARROW(typename T::prod_t, x * sum);
        const typename T::q_t q = HWAPPROX_NARROW(typename T::q_t, -(p * typename T::q_t(C::MULT)));
        return cast_raw<C::MULT_SHIFT + C::OUT_F, res_T>(q);
    }
};

template <typename C>
struct gelu_shiftgelu_types {
    typedef ap_int<C::IN_W> x_t;         // input code
    typedef ap_uint<C::M_W> m_t;         // max(x, 0)
    typedef ap_int<C::SX_W> sx_t;        // shift-exp argument (<= 0)
    typedef ap_uint<C::SE_W> se_t;       // shift-exp result
    typedef ap_uint<C::ESUM_W> esum_t;   // e1 + e2
    typedef ap_uint<C::FACTOR_W> factor_t;  // (2^31 - 1) / (e1 + e2)
    typedef ap_uint<C::SIGP_W> sigp_t;   // e1·factor
    typedef ap_uint<C::SIG_W> sig_t;     // sigmoid, sigmoid_bits - 1 fraction bits
    typedef ap_int<C::YP_W> yp_t;        // x·sig
};

struct gelu_shiftgelu_op {
    template <class res_T, typename C>
    static res_T one(const ap_int<C::IN_W>& x) {
        #pragma HLS INLINE
        typedef gelu_shiftgelu_types<C> T;
        const typename T::m_t m = x > 0 ? typename T::m_t(x) : typename T::m_t(0);
        const typename T::se_t e1 = shift_exp<C>(HWAPPROX_NARROW(typename T::sx_t, x - m));
        const typename T::se_t e2 = shift_exp<C>(HWAPPROX_NARROW(typename T::sx_t, -m));
        const typename T::esum_t s = HWAPPROX_NARROW(typename T::esum_t, e1 + e2);
        const typename T::factor_t factor =
            HWAPPROX_NARROW(typename T::factor_t, typename T::factor_t((1LL << 31) - 1) / s);
        const typename T::sigp_t sp = HWAPPROX_NARROW(typename T::sigp_t, e1 * factor);
        const typename T::sig_t sig = HWAPPROX_NARROW(typename T::sig_t, sp >> C::SIGMOID_SHIFT);
        const typename T::yp_t y = HWAPPROX_NARROW(typename T::yp_t, x * sig);
        return cast_raw<C::PROD_F, res_T>(y);
    }
};

template <typename C>
struct gelu_edgemoe_types {
    typedef ap_int<C::IN_W> x_t;           // input code
    typedef ap_uint<C::ABS_W> abs_t;       // |x|
    typedef ap_uint<C::IDX_W> idx_t;       // table position of |x|
    typedef ap_uint<C::T_W> t_t;           // interpolation bits below it
    typedef ap_uint<C::ENTRY_W> entry_t;   // table entry
    typedef ap_int<C::INTERP_W> interp_t;  // interpolation sum
    typedef ap_uint<C::DELTA_W> delta_t;   // the correction, entry_fmt code
    typedef ap_int<C::ACC_W> acc_t;        // ReLU(x) - delta, FA fraction bits
};

struct gelu_edgemoe_op {
    template <class res_T, typename C>
    static res_T one(const ap_int<C::IN_W>& x) {
        #pragma HLS INLINE
        typedef gelu_edgemoe_types<C> T;
        const int f_in = C::IN_F, k = C::K;
        const typename T::abs_t a = x < 0 ? typename T::abs_t(-x) : typename T::abs_t(x);
        typename T::idx_t idx;
        typename T::t_t t = 0;
        if (f_in >= k) {
            const int g = f_in >= k ? f_in - k : 0;
            idx = HWAPPROX_NARROW(typename T::idx_t, a >> g);
            // the g bits below the index, of which the top FT are kept
            t = HWAPPROX_NARROW(typename T::t_t, (a & ((typename T::abs_t(1) << g) - 1)) >>
                                                     (g - C::FT));
        } else {
            const int g = f_in < k ? k - f_in : 0;
            idx = HWAPPROX_SHL(typename T::idx_t, a, g);
        }
        // compared as plain integers: TABLE_SIZE - 1 may not fit idx_t (a narrow input
        // reaches only the first part of a wide table), as the SV compares in 32 bits
        const bool inside = unsigned(idx) < unsigned(C::TABLE_SIZE - 1);
        const unsigned i = inside ? unsigned(idx) : 0u;
        const typename T::entry_t lo = C::delta(i);
        const typename T::entry_t hi = C::delta(i + 1);
        const typename T::interp_t exact = HWAPPROX_NARROW(
            typename T::interp_t, HWAPPROX_SHL(typename T::interp_t, lo, C::FT) + t * (hi - lo));
        typename T::delta_t delta = HWAPPROX_NARROW(
            typename T::delta_t, round_shift<C::entry_t::qmode, C::INTERP_W>(exact, C::FT));
        if (!inside) delta = 0;
        const typename T::acc_t relu = x > 0 ? typename T::acc_t(x) : typename T::acc_t(0);
        const typename T::acc_t y = HWAPPROX_NARROW(
            typename T::acc_t,
            HWAPPROX_SHL(typename T::acc_t, relu, C::FA - C::IN_F) -
                HWAPPROX_SHL(typename T::acc_t, delta, C::FA - C::ENTRY_F));
        return cast_raw<C::FA, res_T>(y);
    }
};

// pwl and lut are the shared table datapaths of fntable.h (also sigmoid attention)
typedef pwl_fn_op gelu_pwl_op;
typedef lut_fn_op gelu_lut_op;

// Elementwise GELU over n_in values with the unit named by CONFIG_T::op.
template <class data_T, class res_T, typename CONFIG_T>
void gelu(const data_T data[CONFIG_T::n_in], res_T res[CONFIG_T::n_in]) {
    #pragma HLS PIPELINE
    #pragma HLS ARRAY_PARTITION variable = data complete
    #pragma HLS ARRAY_PARTITION variable = res complete
    elementwise_array<data_T, res_T, CONFIG_T>(data, res);
}

// io_stream: n_in values from data, one per cycle, their GELU to res.
template <class data_T, class res_T, typename CONFIG_T>
void gelu(hls::stream<data_T>& data, hls::stream<res_T>& res) {
    #pragma HLS INLINE off
    elementwise_stream<data_T, res_T, CONFIG_T>(data, res);
}

}  // namespace hwapprox

#endif  // HWAPPROX_GELU_H
