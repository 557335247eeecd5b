// Width report of the HLS units, for the C-simulation harnesses
// (protocol: hls_harness.h): run_widths<C> answers a record "id" with one
// line "NAME=width NAME=width ..." -- the width of every type the unit's
// header declares for config C, named by the hardware parameter it must equal
// (tests/hls_widths_check.py compares them with spec.hw_params() and the SV
// parameters of the same spec). Nothing here computes a width: each entry
// reads T::width of a type the unit itself uses. A harness lists each
// instance a second time with run_widths, so the report comes from the very
// binary (and types) the bit-exactness tests run.
#ifndef HWAPPROX_TESTS_HLS_WIDTHS_H
#define HWAPPROX_TESTS_HLS_WIDTHS_H

#include <iostream>

#include "hwapprox/attnact.h"
#include "hwapprox/gelu.h"
#include "hwapprox/layernorm.h"
#include "hwapprox/softmax.h"

namespace widths {

template <class T>
int width_of() {
    return T::width;
}
#define W_(NAME, ...) out << #NAME "=" << width_of<__VA_ARGS__>() << ' '

using namespace hwapprox;

template <bool BASE2>
struct online_exp;
template <>
struct online_exp<true> {
    template <typename C>
    static void print(std::ostream& out) {
        typedef softmax_online_base2_types<C> B;
        typedef exp2_types<online_exp2_p<C> > E;
        W_(LOG2E_W, typename B::log2e_t);
        W_(PROD_W, typename B::prod_t);
        W_(T_W, typename C::exp_arg_t);
        W_(T_W, typename E::t_t);
        W_(V_W, typename E::v_t);
        W_(EXP_W, typename E::e_t);
    }
};
template <>
struct online_exp<false> {
    template <typename C>
    static void print(std::ostream&) {}
};

template <typename C>
void print(const softmax_online_op&, std::ostream& out) {
    typedef softmax_online_types<C> T;
    typedef recip_types<online_recip_p<C> > R;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(X_W, typename T::x_t);
    W_(DELTA_W, typename T::delta_t);
    W_(EXP_W, typename C::exp_t);
    W_(EXP_W, typename T::e_t);
    W_(SUM_W, typename C::sum_t);
    W_(SUM_W, typename T::d_t);
    W_(SUM_W, typename R::d_t);
    W_(RESCALE_W, typename T::rescale_t);
    W_(RU_W, typename R::u_t);
    W_(RT_W, typename R::rt_t);
    W_(RN_W, typename R::rn_t);
    W_(RP_W, typename R::rp_t);
    W_(RS_W, typename R::rs_t);
    W_(RPRE_W, typename R::rpre_t);
    W_(R_W, typename C::recip_t);
    W_(R_W, typename T::r_t);
    W_(OUTP_W, typename T::outp_t);
    W_(CS_W, typename T::cs_t);
    W_(CRS_W, typename T::crs_t);
    W_(CZ_W, typename T::cz_t);
    W_(UOUTP_W, typename T::uoutp_t);
    W_(U_S_W, typename T::us_t);
    online_exp<C::BASE2 != 0>::template print<C>(out);
}

template <typename C>
void print(const softmax_ibert_op&, std::ostream& out) {
    typedef softmax_ibert_types<C> T;
    typedef i_exp_types<C> E;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(X_W, typename T::x_t);
    W_(DIFF_W, typename T::diff_t);
    W_(IT_W, typename E::t_t);
    W_(IQ_W, typename E::q_t);
    W_(IR_W, typename E::r_t);
    W_(IZ_W, typename E::z_t);
    W_(IE_W, typename E::e_t);
    W_(IE_W, typename T::e_t);
    W_(REQUANT_MULT_W, typename T::mult_t);
    W_(RQ_W, typename T::rq_t);
    W_(E16_W, typename T::e16_t);
    W_(SUM_W, typename T::sum_t);
    W_(FACTOR_W, typename T::factor_t);
    W_(PROD_W, typename T::prod_t);
    W_(Y_W, typename T::y_t);
}

template <typename C>
void print(const softmax_softermax_op&, std::ostream& out) {
    typedef softmax_softermax_types<C> T;
    typedef exp2_types<C> E;
    typedef recip_types<softermax_recip_p<C> > R;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(X_W, typename T::x_t);
    W_(LOG2E_W, typename C::log2e_t);
    W_(PROD_W, typename T::prod_t);
    W_(TX_W, typename C::t_t);
    W_(M_W, typename T::m_t);
    W_(SH_W, typename T::sh_t);
    W_(A_W, typename T::a_t);
    W_(T_W, typename E::t_t);
    W_(V_W, typename E::v_t);
    W_(EXP_W, typename E::e_t);
    W_(EXP_W, typename T::p_t);
    W_(SUM_W, typename T::d_t);
    W_(SUM_W, typename C::sum_t);
    W_(RU_W, typename R::u_t);
    W_(RT_W, typename R::rt_t);
    W_(RN_W, typename R::rn_t);
    W_(RP_W, typename R::rp_t);
    W_(RS_W, typename R::rs_t);
    W_(RPRE_W, typename R::rpre_t);
    W_(R_W, typename T::r_t);
    W_(R_W, typename C::recip_t);
    W_(OUTP_W, typename T::outp_t);
}

template <typename C>
void print(const softmax_shiftmax_op&, std::ostream& out) {
    typedef softmax_shiftmax_types<C> T;
    typedef shift_exp_types<C> E;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(X_W, typename T::x_t);
    W_(DIFF_W, typename T::diff_t);
    W_(ST_W, typename E::t_t);
    W_(SQ_W, typename E::q_t);
    W_(SR_W, typename E::r_t);
    W_(SEI_W, typename E::ei_t);
    W_(SE_W, typename E::e_t);
    W_(SE_W, typename T::e_t);
    W_(SUM_W, typename T::sum_t);
    W_(FACTOR_W, typename T::factor_t);
    W_(PROD_W, typename T::prod_t);
    W_(Y_W, typename T::y_t);
}

template <typename C>
void print(const softmax_hls4ml_op&, std::ostream& out) {
    typedef softmax_hls4ml_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(EXP_ADDR_W, typename C::exp_addr_t);
    W_(EXP_TABLE_W, typename C::exp_table_t);
    W_(INV_TABLE_W, typename C::inv_table_t);
    W_(INV_INP_W, typename C::inv_inp_t);
    W_(ACCUM_W, typename C::accum_t);
    W_(DIFF_W, typename T::diff_t);
    W_(PROD_W, typename T::prod_t);
}

template <typename C>
void print(const gelu_ibert_op&, std::ostream& out) {
    typedef gelu_ibert_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(IN_W, typename T::x_t);
    W_(OUT_W, typename C::out_t);
    W_(ABS_W, typename T::abs_t);
    W_(T_W, typename T::t_t);
    W_(TB_W, typename T::tb_t);
    W_(SQ_W, typename T::sq_t);
    W_(POLY_W, typename T::poly_t);
    W_(ERF_W, typename T::erf_t);
    W_(SUM_W, typename T::sum_t);
    W_(PROD_W, typename T::prod_t);
    W_(Q_W, typename T::q_t);
}

template <typename C>
void print(const gelu_shiftgelu_op&, std::ostream& out) {
    typedef gelu_shiftgelu_types<C> T;
    typedef shift_exp_types<C> E;
    W_(IN_W, typename C::in_t);
    W_(IN_W, typename T::x_t);
    W_(OUT_W, typename C::out_t);
    W_(M_W, typename T::m_t);
    W_(SX_W, typename T::sx_t);
    W_(ST_W, typename E::t_t);
    W_(SQ_W, typename E::q_t);
    W_(SR_W, typename E::r_t);
    W_(SEI_W, typename E::ei_t);
    W_(SE_W, typename E::e_t);
    W_(SE_W, typename T::se_t);
    W_(ESUM_W, typename T::esum_t);
    W_(FACTOR_W, typename T::factor_t);
    W_(SIGP_W, typename T::sigp_t);
    W_(SIG_W, typename T::sig_t);
    W_(YP_W, typename T::yp_t);
}

template <typename C>
void print(const gelu_edgemoe_op&, std::ostream& out) {
    typedef gelu_edgemoe_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(IN_W, typename T::x_t);
    W_(OUT_W, typename C::out_t);
    W_(ABS_W, typename T::abs_t);
    W_(IDX_W, typename T::idx_t);
    W_(T_W, typename T::t_t);
    W_(ENTRY_W, typename C::entry_t);
    W_(ENTRY_W, typename T::entry_t);
    W_(INTERP_W, typename T::interp_t);
    W_(DELTA_W, typename T::delta_t);
    W_(ACC_W, typename T::acc_t);
}

template <typename C>
void print(const gelu_pwl_op&, std::ostream& out) {
    typedef pwl_fn_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(IN_W, typename T::x_t);
    W_(OUT_W, typename C::out_t);
    W_(S_W, typename C::slope_t);
    W_(S_W, typename T::s_t);
    W_(C_W, typename C::intercept_t);
    W_(C_W, typename T::c_t);
    W_(PROD_W, typename T::prod_t);
    W_(ACC_W, typename T::acc_t);
}

template <typename C>
void print(const gelu_lut_op&, std::ostream& out) {
    typedef lut_fn_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(CODE_W, typename T::code_t);
    W_(INDEX_BITS, typename T::index_t);
}

template <typename C>
void print(const relu_attention_op&, std::ostream& out) {
    typedef relu_attention_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(MULT_W, typename T::mult_t);
    W_(ACC_W, typename T::acc_t);
}

template <typename C>
void print(const layernorm_rsqrt_lut_op&, std::ostream& out) {
    typedef layernorm_rsqrt_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(GAMMA_W, typename C::gamma_t);
    W_(BETA_W, typename C::beta_t);
    W_(X_W, typename T::x_t);
    W_(S1_W, typename T::s1_t);
    W_(S2_W, typename T::s2_t);
    W_(D_W, typename T::d_t);
    W_(DE_W, typename T::de_t);
    W_(M_W, typename T::m_t);
    W_(Y_W, typename T::y_t);
    W_(SQ_W, typename T::sq_t);
    W_(MSQ_W, typename T::msq_t);
    W_(U_W, typename T::u_t);
    W_(YU_W, typename T::yu_t);
    W_(A_W, typename T::a_t);
    W_(AY_W, typename T::ay_t);
    W_(AYS_W, typename T::ays_t);
    W_(Z_W, typename T::z_t);
    W_(ACC_W, typename T::acc_t);
}

template <typename C>
void print(const layernorm_hls4ml_op&, std::ostream& out) {
    typedef layernorm_hls4ml_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(GAMMA_W, typename C::gamma_t);
    W_(BETA_W, typename C::beta_t);
    W_(ACCUM_W, typename C::accum_t);
    W_(TABLE_W, typename C::table_t);
    W_(IDX_W, typename T::idx_t);
    W_(ADDR_W, typename T::addr_t);
}

template <typename C>
void print(const layernorm_ivit_op&, std::ostream& out) {
    typedef layernorm_ivit_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(GAMMA_W, typename C::gamma_t);
    W_(BETA_W, typename C::beta_t);
    W_(X_W, typename T::x_t);
    W_(S1_W, typename T::s1_t);
    W_(YC_W, typename T::yc_t);
    W_(VAR0_W, typename T::var0_t);
    W_(K_W, typename T::k_t);
    W_(Q_W, typename T::q_t);
    W_(KS_W, typename T::ks_t);
    W_(STD_W, typename T::std_t);
    W_(FACTOR_W, typename T::factor_t);
    W_(YF_W, typename T::yf_t);
    W_(YI_W, typename T::yi_t);
    W_(SQRTN_W, typename T::sqrtn_t);
    W_(YQ_W, typename T::yq_t);
    W_(Z_W, typename T::z_t);
    W_(ACC_W, typename T::acc_t);
}

template <typename C>
void print(const layernorm_ibert_op&, std::ostream& out) {
    typedef layernorm_ibert_types<C> T;
    W_(IN_W, typename C::in_t);
    W_(OUT_W, typename C::out_t);
    W_(GAMMA_W, typename C::gamma_t);
    W_(BETA_W, typename C::beta_t);
    W_(X_W, typename T::x_t);
    W_(S1_W, typename T::s1_t);
    W_(YC_W, typename T::yc_t);
    W_(VAR0_W, typename T::var0_t);
    W_(VAR_W, typename T::var_t);
    W_(YS_W, typename T::ys_t);
    W_(ROOT_W, typename T::root_t);
    W_(STD_W, typename T::std_t);
    W_(FACTOR_W, typename T::factor_t);
    W_(YF_W, typename T::yf_t);
    W_(YI_W, typename T::yi_t);
    W_(SQRTN_W, typename T::sqrtn_t);
    W_(YQ_W, typename T::yq_t);
    W_(Z_W, typename T::z_t);
    W_(ACC_W, typename T::acc_t);
}

}  // namespace widths

template <typename C>
void run_widths(std::istream&, std::ostream& out) {
    widths::print<C>(typename C::op(), out);
    out << '\n';
}

#undef W_

#endif  // HWAPPROX_TESTS_HLS_WIDTHS_H
