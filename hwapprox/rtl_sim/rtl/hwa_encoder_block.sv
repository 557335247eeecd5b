// hwa_encoder_block -- a transformer encoder block (post-LN or pre-LN, optional causal /
// local-window / key-padding mask) on raw integer codes, bit-exact with
// hwapprox.hls.block.EncoderBlock.model (and so with the HLS hwapprox::encoder_block).
//
// Maths (every arrow one explicit cast, the formats of the Python block model):
//   attention(A): Q,K,V = A·W{q,k,v} + b  (one hwa_linear of N = 3D: [Wq | Wk | Wv])
//                 per head h, query i: s_j = Q_h[i]·K_h[j] (hwa_mac, qk stage),
//                 p = softmax(s; M[i]) (the softmax unit, mask bits on tuser),
//                 C_h[i][c] = sum_j p_j·V_h[j][c] (hwa_mac, pv stage, j ascending);
//                 O = C·Wo + bo (hwa_linear)
//   post-LN (PRENORM = 0): R1 = add1(X, O); Y1 = LN1(R1); H = Y1·W1 + b1; G = GELU(H);
//                 Fo = G·W2 + b2; R2 = add2(Y1, Fo); Y = LN2(R2)
//   pre-LN (PRENORM = 1):  Y1 = LN1(cast(X)); A = Y1; R1 = add1(X, O) (res_fmt);
//                 Y2 = LN2(cast(R1)); Fo = FFN(Y2); Y = add2(R1, Fo) (out_fmt)
//   M[i][j] = (CAUSAL && j > i) || (WINDOW && i - j >= WINDOW) || (MASKED && pad_j).
// Ports: s_axis one token per beat (D lanes of IN_W bits, lane 0 low), S beats per
// sequence (tlast on the last; the count S is what delimits the sequence), s_axis_tuser =
// the token's padding bit pad_j (1 = a padding key: masked out of every row; read when
// MASKED); m_axis one token per beat (D lanes of OUT_W bits), tlast on token S - 1.
//
// Schedule (sequence level; attention needs every key, so the sequence is buffered in
// RAM [S][.] per stage): phases one after the other, each streaming its S tokens through
// its units back to back. Cycles of each phase, no idle input, no backpressure, with
// G(N, P) = ceil(N / P), DH = D / H:
//   IN   S beats into X                                    S
//   LNA  (pre-LN) X -> cast -> LN1 -> A                    T_LN(ln1)
//   QKV  A (or X) -> hwa_linear(D -> 3D, P_QKV) -> QKV      S·D·G(3D, P_QKV) + 7
//   ATT  per head h, query i:                              H·S·2·(S·DH + 3) + sum T_SM
//          SC: S·DH terms -> scores (S·DH + 3); SM: scores -> softmax -> p (T_SM of
//          the row); PV: DH·S terms -> C (S·DH + 3; one cycle each for the registered
//          buffer read, two for the MAC)
//   O    C -> hwa_linear(D -> D, P_O) -> add1 -> R1        S·D·G(D, P_O) + 7
//   LNM  R1 -> (cast) -> LN1 (post) / LN2 (pre) -> Y       T_LN(ln1 post / ln2 pre)
//   FFN  Y -> hwa_linear(D -> F, P_F1) -> GELU -> hwa_linear(F -> D, P_F2) -> add2
//        (-> LN2 post-LN):  r1 + r2 + F + L_GELU + (S - 1)·max(r1, r2) + 14
//        (+ 2D + 34 + 10·NEWTON2 post-LN), r1 = D·G(F, P_F1), r2 = F·G(D, P_F2)
//   OUT  S beats from the output RAM                       S
// The linear phases' constants: hwa_linear's latency K·G + 6 (its weight ROM word
// registered once more after the RAM's read register) plus one cycle to start;
// the FFN's first token crosses two of them (2·6 + 2).
// with T_LN = S·D + D + 35 + 10·NEWTON (the unit's last-in -> last-out D + 33 + 10·NEWTON
// plus the serialiser and deserialiser), T_SM = 2S - 1 + FIRST + G + W per row (the
// pipelined online softmax: FIRST its last-in -> first-out, 5 + 2·ELAT + RLAT + OLAT + 1,
// +1 with log-coded outputs, 92 at the default spec; G the cycles it holds its input
// before the row's last score, 4 per new running max; W the last score's extra latency,
// 0, 4 or 8: hwapprox.rtl_sim.block.softmax_row_cycles, units.online_schedule),
// L_GELU = 6 (pwl) / 10 (edgemoe). Cycles per
// sequence = the sum (hwapprox.rtl_sim.block.block_cycles): the interval between the
// first beats of back-to-back sequences; the last output beat leaves sum - 1 cycles after
// the first input beat. Exact for D >= 16 (the LayerNorm unit's full-rate rows; shorter
// rows stall it a few cycles each); tests/test_rtl_block.py checks every phase. The block
// takes the next sequence after the last output beat (one sequence in flight); the
// multipliers: P_QKV + P_O + P_F1 + P_F2 (hwa_linear), 2 (hwa_mac) and the units' own.
// Handshakes: s_axis_tready and m_axis_tvalid are registers' functions (the phase), so no
// combinational path runs from m_axis_tready to s_axis_tready.
// LayerNorm gamma/beta: ROMs ($readmemh G1_FILE ...) written into the units' memories in
// D cycles after reset (INIT phase; s_axis_tready is low meanwhile).
// Units: softmax online (SM_*), GELU pwl (GE_*) or edgemoe (GM_*; GE_METHOD), LayerNorm
// rsqrt_lut (L1_*, L2_*), their parameters the specs' hw_params as hwapprox.rtl_sim.units
// passes them; linear stages QKV_*, O_*, F1_*, F2_* (hwapprox.rtl_sim.linear.linear_params),
// the dot products QK_*,
// PV_* (mac_params), the adds AD1_*, AD2_* and the casts CX_* (X -> ln1.in, pre-LN), CR_*
// (R1 -> ln2.in, pre-LN) (add_params). Block parameters have no defaults:
// hwapprox.rtl_sim.block.block_config passes every one.
`default_nettype none
module hwa_encoder_block #(
    parameter int S,
    parameter int D,
    parameter int H,
    parameter int F,
    parameter bit PRENORM,
    parameter bit CAUSAL,
    parameter int WINDOW,
    parameter bit MASKED,
    parameter int IN_W,
    parameter int OUT_W,
    parameter int P_QKV,
    parameter int P_O,
    parameter int P_F1,
    parameter int P_F2,
    // the FFN's GELU unit: 0 pwl (GE_*), 1 edgemoe (GM_*)
    parameter int GE_METHOD,
    parameter int QKV_A_W,
    parameter bit QKV_A_SIGNED,
    parameter int QKV_W_W,
    parameter int QKV_B_W,
    parameter bit QKV_HAS_BIAS,
    parameter int QKV_BIAS_SHIFT,
    parameter int QKV_ACC_W,
    parameter int QKV_ACC_RND,
    parameter int QKV_ACC_OVF,
    parameter int QKV_A_SHL,
    parameter int QKV_P_SHL,
    parameter int QKV_SUM_W,
    parameter int QKV_Y_W,
    parameter bit QKV_Y_SIGNED,
    parameter int QKV_Y_SHIFT,
    parameter int QKV_Y_RND,
    parameter int QKV_Y_OVF,
    parameter string QKV_W_FILE = "",
    parameter string QKV_B_FILE = "",
    parameter int O_A_W,
    parameter bit O_A_SIGNED,
    parameter int O_W_W,
    parameter int O_B_W,
    parameter bit O_HAS_BIAS,
    parameter int O_BIAS_SHIFT,
    parameter int O_ACC_W,
    parameter int O_ACC_RND,
    parameter int O_ACC_OVF,
    parameter int O_A_SHL,
    parameter int O_P_SHL,
    parameter int O_SUM_W,
    parameter int O_Y_W,
    parameter bit O_Y_SIGNED,
    parameter int O_Y_SHIFT,
    parameter int O_Y_RND,
    parameter int O_Y_OVF,
    parameter string O_W_FILE = "",
    parameter string O_B_FILE = "",
    parameter int F1_A_W,
    parameter bit F1_A_SIGNED,
    parameter int F1_W_W,
    parameter int F1_B_W,
    parameter bit F1_HAS_BIAS,
    parameter int F1_BIAS_SHIFT,
    parameter int F1_ACC_W,
    parameter int F1_ACC_RND,
    parameter int F1_ACC_OVF,
    parameter int F1_A_SHL,
    parameter int F1_P_SHL,
    parameter int F1_SUM_W,
    parameter int F1_Y_W,
    parameter bit F1_Y_SIGNED,
    parameter int F1_Y_SHIFT,
    parameter int F1_Y_RND,
    parameter int F1_Y_OVF,
    parameter string F1_W_FILE = "",
    parameter string F1_B_FILE = "",
    parameter int F2_A_W,
    parameter bit F2_A_SIGNED,
    parameter int F2_W_W,
    parameter int F2_B_W,
    parameter bit F2_HAS_BIAS,
    parameter int F2_BIAS_SHIFT,
    parameter int F2_ACC_W,
    parameter int F2_ACC_RND,
    parameter int F2_ACC_OVF,
    parameter int F2_A_SHL,
    parameter int F2_P_SHL,
    parameter int F2_SUM_W,
    parameter int F2_Y_W,
    parameter bit F2_Y_SIGNED,
    parameter int F2_Y_SHIFT,
    parameter int F2_Y_RND,
    parameter int F2_Y_OVF,
    parameter string F2_W_FILE = "",
    parameter string F2_B_FILE = "",
    parameter int QK_A_W,
    parameter bit QK_A_SIGNED,
    parameter int QK_B_W,
    parameter int QK_ACC_W,
    parameter int QK_ACC_RND,
    parameter int QK_ACC_OVF,
    parameter int QK_A_SHL,
    parameter int QK_P_SHL,
    parameter int QK_SUM_W,
    parameter int QK_Y_W,
    parameter bit QK_Y_SIGNED,
    parameter int QK_Y_SHIFT,
    parameter int QK_Y_RND,
    parameter int QK_Y_OVF,
    parameter int PV_A_W,
    parameter bit PV_A_SIGNED,
    parameter int PV_B_W,
    parameter int PV_ACC_W,
    parameter int PV_ACC_RND,
    parameter int PV_ACC_OVF,
    parameter int PV_A_SHL,
    parameter int PV_P_SHL,
    parameter int PV_SUM_W,
    parameter int PV_Y_W,
    parameter bit PV_Y_SIGNED,
    parameter int PV_Y_SHIFT,
    parameter int PV_Y_RND,
    parameter int PV_Y_OVF,
    parameter int AD1_A_W,
    parameter bit AD1_A_SIGNED,
    parameter int AD1_B_W,
    parameter bit AD1_B_SIGNED,
    parameter int AD1_A_SHL,
    parameter int AD1_B_SHL,
    parameter int AD1_SUM_W,
    parameter int AD1_SHIFT,
    parameter int AD1_MODE,
    parameter int AD1_Y_W,
    parameter bit AD1_Y_SIGNED,
    parameter int AD1_OVF,
    parameter int AD2_A_W,
    parameter bit AD2_A_SIGNED,
    parameter int AD2_B_W,
    parameter bit AD2_B_SIGNED,
    parameter int AD2_A_SHL,
    parameter int AD2_B_SHL,
    parameter int AD2_SUM_W,
    parameter int AD2_SHIFT,
    parameter int AD2_MODE,
    parameter int AD2_Y_W,
    parameter bit AD2_Y_SIGNED,
    parameter int AD2_OVF,
    parameter int CX_A_W,
    parameter bit CX_A_SIGNED,
    parameter int CX_B_W,
    parameter bit CX_B_SIGNED,
    parameter int CX_A_SHL,
    parameter int CX_B_SHL,
    parameter int CX_SUM_W,
    parameter int CX_SHIFT,
    parameter int CX_MODE,
    parameter int CX_Y_W,
    parameter bit CX_Y_SIGNED,
    parameter int CX_OVF,
    parameter int CR_A_W,
    parameter bit CR_A_SIGNED,
    parameter int CR_B_W,
    parameter bit CR_B_SIGNED,
    parameter int CR_A_SHL,
    parameter int CR_B_SHL,
    parameter int CR_SUM_W,
    parameter int CR_SHIFT,
    parameter int CR_MODE,
    parameter int CR_Y_W,
    parameter bit CR_Y_SIGNED,
    parameter int CR_OVF,
    parameter string G1_FILE = "",
    parameter string BE1_FILE = "",
    parameter string G2_FILE = "",
    parameter string BE2_FILE = "",
    parameter int SM_IN_W = 16,
    parameter int SM_OUT_W = 16,
    parameter bit SM_OUT_SIGNED = 1'b0,
    parameter int SM_OUT_RND = 2,
    parameter int SM_OUT_OVF = 1,
    parameter int SM_OUT_SHIFT = 32,
    parameter int SM_ROW_MAX = 64,
    parameter int SM_BUF_DEPTH = 128,
    parameter int SM_ROWQ = 4,
    parameter int SM_N_BITS = 8,
    parameter bit SM_OFF_BY_ONE = 1'b0,
    parameter bit SM_CLIP = 1'b0,
    parameter int SM_CLIP_F = 16,
    parameter int SM_CLIP_S = 65536,
    parameter int SM_CLIP_G = 0,
    parameter int SM_CLIP_ONE = 65535,
    parameter int SM_CS_W = 21,
    parameter int SM_CRS_W = 42,
    parameter int SM_CZ_W = 56,
    parameter bit SM_BASE2 = 1'b1,
    parameter int SM_EXP_W = 29,
    parameter int SM_EXP_F = 28,
    parameter int SM_EXP_RND = 2,
    parameter longint SM_LOG2E = 64'd48408813,
    parameter int SM_LOG2E_W = 26,
    parameter int SM_PROD_SHIFT = 13,
    parameter int SM_T_W = 27,
    parameter int SM_T_F = 22,
    parameter int SM_T_RND = 2,
    parameter int SM_A = 8,
    parameter int SM_TABLE_F = 30,
    parameter bit SM_INTERP = 1'b1,
    parameter int SM_V_W = 45,
    parameter int SM_LUT_BITS = 12,
    parameter int SM_LIM_BITS = 14,
    parameter int SM_LUT_SHIFT = 2,
    parameter int SM_SUM_W = 40,
    parameter int SM_SUM_F = 29,
    parameter int SM_SUM_RND = 2,
    parameter int SM_RESCALE_W = 69,
    parameter int SM_R_W = 21,
    parameter int SM_R_F = 20,
    parameter int SM_R_OVF = 0,
    parameter int SM_WF = 22,
    parameter int SM_TB = 8,
    parameter bit SM_NEWTON = 1'b1,
    parameter int SM_STEPS = 2,
    parameter int SM_R_RND = 2,
    parameter int SM_RN_W = 25,
    parameter int SM_RP_W = 47,
    parameter int SM_OUTP_W = 50,
    parameter bit SM_SKIP = 1'b0,
    parameter longint SM_SKIP_TAU = 64'd0,
    parameter bit SM_UNIFIED = 1'b0,
    parameter int SM_PHI = 0,
    parameter int SM_U_LOW = 4,
    parameter longint SM_U_FLOOR = 64'd33554432,
    parameter int SM_U_S_W = 3,
    parameter int SM_UOUTP_W = 54,
    parameter int SM_OUT_CODE = 0,
    parameter int SM_CODE_BITS = 4,
    parameter int SM_CODE_ZERO = 15,
    parameter int SM_CODE_NW = 16,
    parameter int SM_CODE_F = 16,
    parameter longint SM_CODE_C12 = 64'd46340,
    parameter longint SM_CODE_C14 = 64'd38967,
    parameter longint SM_CODE_C34 = 64'd55108,
    parameter string SM_EXP_FILE = "",
    parameter string SM_RECIP_FILE = "",
    parameter int GE_IN_W = 16,
    parameter int GE_OUT_W = 16,
    parameter bit GE_OUT_SIGNED = 1'b1,
    parameter int GE_OUT_RND = 2,
    parameter int GE_OUT_OVF = 1,
    parameter int GE_NSEG = 8,
    parameter int GE_S_W = 18,
    parameter int GE_C_W = 18,
    parameter int GE_SH_XS = 0,
    parameter int GE_SH_C = 11,
    parameter int GE_SH_X = 16,
    parameter int GE_FA = 27,
    parameter bit GE_TOP_ONE = 1'b0,
    parameter int GE_OUT_SHIFT = 16,
    parameter int GE_ACC_W = 35,
    parameter int GE_PROD_W = 34,
    parameter string GE_BP_FILE = "",
    parameter string GE_SLOPE_FILE = "",
    parameter string GE_ICPT_FILE = "",
    parameter int GM_IN_W = 16,
    parameter int GM_IN_F = 11,
    parameter int GM_OUT_W = 16,
    parameter int GM_OUT_F = 11,
    parameter bit GM_OUT_SIGNED = 1'b1,
    parameter int GM_OUT_RND = 2,
    parameter int GM_OUT_OVF = 1,
    parameter int GM_TABLE_SIZE = 177,
    parameter int GM_K = 5,
    parameter int GM_ENTRY_F = 22,
    parameter int GM_ENTRY_RND = 0,
    parameter int GM_FT = 6,
    parameter int GM_FA = 22,
    parameter int GM_ABS_W = 16,
    parameter int GM_IDX_W = 10,
    parameter int GM_T_W = 6,
    parameter int GM_ENTRY_W = 22,
    parameter int GM_INTERP_W = 29,
    parameter int GM_DELTA_W = 22,
    parameter int GM_ACC_W = 27,
    parameter string GM_DELTA_FILE = "",
    parameter int L1_IN_W = 16,
    parameter int L1_OUT_W = 16,
    parameter bit L1_OUT_SIGNED = 1'b1,
    parameter int L1_OUT_RND = 2,
    parameter int L1_OUT_OVF = 1,
    parameter int L1_GAMMA_W = 16,
    parameter int L1_BETA_W = 16,
    parameter bit L1_CENTER = 1'b1,
    parameter int L1_PARTIAL_K = 0,
    parameter int L1_ROW_MAX = 64,
    parameter int L1_BUF_DEPTH = 128,
    parameter int L1_ROWQ = 4,
    parameter int L1_N_BITS = 11,
    parameter int L1_S1_W = 27,
    parameter int L1_S2_W = 41,
    parameter int L1_D_W = 51,
    parameter int L1_DE_W = 55,
    parameter int L1_A_W = 28,
    parameter int L1_AY_W = 49,
    parameter int L1_M_W = 22,
    parameter int L1_Y_W = 21,
    parameter int L1_SQ_W = 41,
    parameter int L1_MSQ_W = 42,
    parameter int L1_U_W = 22,
    parameter int L1_YU_W = 42,
    parameter int L1_AYS_W = 50,
    parameter int L1_Z_W = 25,
    parameter int L1_ACC_W = 42,
    parameter logic [63:0] L1_EPS_Q = 64'd168,
    parameter int L1_G = 4,
    parameter int L1_P = 20,
    parameter int L1_TB = 8,
    parameter int L1_NEWTON = 1,
    parameter int L1_FZ = 18,
    parameter int L1_BETA_SHIFT = 18,
    parameter int L1_OUT_SHIFT = 16,
    parameter string L1_RSQRT_FILE = "",
    parameter int L2_IN_W = 16,
    parameter int L2_OUT_W = 16,
    parameter bit L2_OUT_SIGNED = 1'b1,
    parameter int L2_OUT_RND = 2,
    parameter int L2_OUT_OVF = 1,
    parameter int L2_GAMMA_W = 16,
    parameter int L2_BETA_W = 16,
    parameter bit L2_CENTER = 1'b1,
    parameter int L2_PARTIAL_K = 0,
    parameter int L2_ROW_MAX = 64,
    parameter int L2_BUF_DEPTH = 128,
    parameter int L2_ROWQ = 4,
    parameter int L2_N_BITS = 11,
    parameter int L2_S1_W = 27,
    parameter int L2_S2_W = 41,
    parameter int L2_D_W = 51,
    parameter int L2_DE_W = 55,
    parameter int L2_A_W = 28,
    parameter int L2_AY_W = 49,
    parameter int L2_M_W = 22,
    parameter int L2_Y_W = 21,
    parameter int L2_SQ_W = 41,
    parameter int L2_MSQ_W = 42,
    parameter int L2_U_W = 22,
    parameter int L2_YU_W = 42,
    parameter int L2_AYS_W = 50,
    parameter int L2_Z_W = 25,
    parameter int L2_ACC_W = 42,
    parameter logic [63:0] L2_EPS_Q = 64'd168,
    parameter int L2_G = 4,
    parameter int L2_P = 20,
    parameter int L2_TB = 8,
    parameter int L2_NEWTON = 1,
    parameter int L2_FZ = 18,
    parameter int L2_BETA_SHIFT = 18,
    parameter int L2_OUT_SHIFT = 16,
    parameter string L2_RSQRT_FILE = ""
) (
    input  wire logic              clk,
    input  wire logic              rst,
    input  wire logic [D*IN_W-1:0] s_axis_tdata,
    input  wire logic              s_axis_tvalid,
    output logic                   s_axis_tready,
    input  wire logic              s_axis_tlast,
    input  wire logic              s_axis_tuser,
    output logic [D*OUT_W-1:0]     m_axis_tdata,
    output logic                   m_axis_tvalid,
    input  wire logic              m_axis_tready,
    output logic                   m_axis_tlast
);

  localparam int DH = D / H;
  localparam int GI_W = (GE_METHOD == 0) ? GE_IN_W : GM_IN_W;  // the GELU unit's codes
  localparam int GO_W = (GE_METHOD == 0) ? GE_OUT_W : GM_OUT_W;
  localparam int IW = $clog2(S + 1);  // token counters 0..S
  localparam int LW = $clog2(D + 1);  // lane counters 0..D
  localparam int HW = (H > 1) ? $clog2(H) : 1;
  localparam int CW = $clog2(DH + 1);
  localparam int LA_W = (D > 1) ? $clog2(D) : 1;  // LayerNorm cfg address (ROW_MAX = D)
  localparam int Y_W = F1_A_W;  // the FFN input (ln1.out post-LN, ln2.out pre-LN)
  localparam int A_W = QKV_A_W;  // the attention input (X post-LN, ln1.out pre-LN)

  if (S < 1 || D < 1 || H < 1 || D % H != 0 || F < 1 || SM_ROW_MAX < S || L1_ROW_MAX != D
      || L2_ROW_MAX != D || (PRENORM ? OUT_W != AD2_Y_W : OUT_W != L2_OUT_W)
      || (!PRENORM && (A_W != IN_W || L1_IN_W != AD1_Y_W || L2_IN_W != AD2_Y_W
                       || Y_W != L1_OUT_W || AD2_A_W != L1_OUT_W))
      || (PRENORM && (A_W != L1_OUT_W || Y_W != L2_OUT_W || AD2_A_W != AD1_Y_W))
      || QK_Y_W != SM_IN_W || PV_A_W != SM_OUT_W || GI_W != F1_Y_W
      || F2_A_W != GO_W || GE_METHOD < 0 || GE_METHOD > 1 || AD2_B_W != F2_Y_W
      || AD1_B_W != O_Y_W || AD1_A_W != IN_W
      || O_A_W != PV_Y_W) begin : g_bad
    $error("%m: inconsistent S=%0d D=%0d H=%0d F=%0d PRENORM=%0d OUT_W=%0d (block_config derives every width)",
           S, D, H, F, PRENORM, OUT_W);
  end

  typedef enum logic [3:0] {
    PH_INIT, PH_IN, PH_LNA, PH_QKV, PH_SC, PH_SM, PH_PV, PH_O, PH_LNM, PH_FFN, PH_OUT
  } phase_t;
  phase_t ph_reg;

  // -- sequence RAMs ---------------------------------------------------------------------
  logic [IN_W-1:0] x_ram[S][D];
  logic pad_ram[S];
  logic [QKV_Y_W-1:0] qkv_ram[S][3*D];
  logic [PV_Y_W-1:0] ctx_ram[S][D];
  logic [AD1_Y_W-1:0] r1_ram[S][D];
  logic [Y_W-1:0] y_ram[S][D];
  logic [OUT_W-1:0] out_ram[S][D];
  /* verilator lint_off UNUSEDSIGNAL */
  /* verilator lint_off UNDRIVEN */
  logic [A_W-1:0] a_ram[S][D];  // pre-LN only: LN1's output, the attention input
  /* verilator lint_on UNDRIVEN */
  /* verilator lint_on UNUSEDSIGNAL */
  logic [QK_Y_W-1:0] sc_buf[S];
  logic [SM_OUT_W-1:0] p_buf[S];

  // token counters of the streaming phases: fi feeds, ci collects, c2 (FFN) counts the
  // second linear layer's outputs
  logic [IW-1:0] fi_reg, ci_reg, c2_reg;
  logic feed_rdy, col_v;
  logic feed_v;
  assign feed_v = fi_reg < IW'(S);
  // RAM indices (a counter at S, past the last token, reads word 0 unused)
  localparam int SI = (S > 1) ? $clog2(S) : 1;
  logic [SI-1:0] fi_ix, ci_ix, c2_ix, i_ix, j_ix, wi_ix;
  logic [IW-1:0] i_reg, j_reg, wi_reg;
  assign fi_ix = SI'(fi_reg);
  assign ci_ix = SI'(ci_reg);
  assign c2_ix = SI'(c2_reg);
  assign i_ix = SI'(i_reg);
  assign j_ix = SI'(j_reg);
  assign wi_ix = SI'(wi_reg);

  // -- INIT: gamma/beta into the LayerNorm units ------------------------------------------
  logic [L1_GAMMA_W-1:0] g1_mem[D];
  logic [L1_BETA_W-1:0] be1_mem[D];
  logic [L2_GAMMA_W-1:0] g2_mem[D];
  logic [L2_BETA_W-1:0] be2_mem[D];
  initial begin
    if (G1_FILE != "") $readmemh(G1_FILE, g1_mem);
    if (BE1_FILE != "") $readmemh(BE1_FILE, be1_mem);
    if (G2_FILE != "") $readmemh(G2_FILE, g2_mem);
    if (BE2_FILE != "") $readmemh(BE2_FILE, be2_mem);
  end
  logic [LW-1:0] init_reg;
  logic cfg_we;
  logic [LA_W-1:0] cfg_addr;
  assign cfg_we = ph_reg == PH_INIT && init_reg < LW'(D);
  assign cfg_addr = LA_W'(init_reg);

  // -- IN / OUT ------------------------------------------------------------------------------
  assign s_axis_tready = ph_reg == PH_IN;
  assign m_axis_tvalid = ph_reg == PH_OUT;
  assign m_axis_tlast = fi_reg == IW'(S - 1);
  for (genvar l = 0; l < D; l++) begin : g_outlane
    assign m_axis_tdata[l*OUT_W+:OUT_W] = out_ram[fi_ix][l];
  end
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_tlast;
  /* verilator lint_on UNUSEDSIGNAL */
  assign unused_tlast = s_axis_tlast;  // the sequence is S beats long

  // -- linear stages -------------------------------------------------------------------------
  logic [D*A_W-1:0] qkv_in;
  logic [3*D*QKV_Y_W-1:0] qkv_out;
  logic [D*PV_Y_W-1:0] o_in;
  logic [D*O_Y_W-1:0] o_out;
  logic [D*Y_W-1:0] f1_in;
  logic [F*F1_Y_W-1:0] f1_out;
  logic [F*F2_A_W-1:0] f2_in;
  logic [D*F2_Y_W-1:0] f2_out;
  logic qkv_rdy, qkv_ov, o_rdy, o_ov, f1_rdy, f1_ov, f1_ordy, f2_iv, f2_rdy, f2_ov, f2_ordy;
  /* verilator lint_off UNUSEDSIGNAL */
  logic qkv_ol, o_ol, f1_ol, f2_ol;
  /* verilator lint_on UNUSEDSIGNAL */
  for (genvar l = 0; l < D; l++) begin : g_tok
    if (PRENORM) begin : g_pre
      assign qkv_in[l*A_W+:A_W] = a_ram[fi_ix][l];
    end else begin : g_post
      assign qkv_in[l*A_W+:A_W] = A_W'(x_ram[fi_ix][l]);
    end
    assign o_in[l*PV_Y_W+:PV_Y_W] = ctx_ram[fi_ix][l];
    assign f1_in[l*Y_W+:Y_W] = y_ram[fi_ix][l];
  end

  hwa_linear #(
      .K(D), .N(3 * D), .P(P_QKV),
      .A_W(QKV_A_W),
      .A_SIGNED(QKV_A_SIGNED),
      .W_W(QKV_W_W),
      .B_W(QKV_B_W),
      .HAS_BIAS(QKV_HAS_BIAS),
      .BIAS_SHIFT(QKV_BIAS_SHIFT),
      .ACC_W(QKV_ACC_W),
      .ACC_RND(QKV_ACC_RND),
      .ACC_OVF(QKV_ACC_OVF),
      .A_SHL(QKV_A_SHL),
      .P_SHL(QKV_P_SHL),
      .SUM_W(QKV_SUM_W),
      .Y_W(QKV_Y_W),
      .Y_SIGNED(QKV_Y_SIGNED),
      .Y_SHIFT(QKV_Y_SHIFT),
      .Y_RND(QKV_Y_RND),
      .Y_OVF(QKV_Y_OVF),
      .W_FILE(QKV_W_FILE),
      .B_FILE(QKV_B_FILE)
  ) u_qkv (
      .clk(clk), .rst(rst),
      .s_axis_tdata(qkv_in), .s_axis_tvalid(ph_reg == PH_QKV && feed_v),
      .s_axis_tready(qkv_rdy), .s_axis_tlast(1'b0),
      .m_axis_tdata(qkv_out), .m_axis_tvalid(qkv_ov), .m_axis_tready(1'b1),
      .m_axis_tlast(qkv_ol)
  );
  hwa_linear #(
      .K(D), .N(D), .P(P_O),
      .A_W(O_A_W),
      .A_SIGNED(O_A_SIGNED),
      .W_W(O_W_W),
      .B_W(O_B_W),
      .HAS_BIAS(O_HAS_BIAS),
      .BIAS_SHIFT(O_BIAS_SHIFT),
      .ACC_W(O_ACC_W),
      .ACC_RND(O_ACC_RND),
      .ACC_OVF(O_ACC_OVF),
      .A_SHL(O_A_SHL),
      .P_SHL(O_P_SHL),
      .SUM_W(O_SUM_W),
      .Y_W(O_Y_W),
      .Y_SIGNED(O_Y_SIGNED),
      .Y_SHIFT(O_Y_SHIFT),
      .Y_RND(O_Y_RND),
      .Y_OVF(O_Y_OVF),
      .W_FILE(O_W_FILE),
      .B_FILE(O_B_FILE)
  ) u_o (
      .clk(clk), .rst(rst),
      .s_axis_tdata(o_in), .s_axis_tvalid(ph_reg == PH_O && feed_v),
      .s_axis_tready(o_rdy), .s_axis_tlast(1'b0),
      .m_axis_tdata(o_out), .m_axis_tvalid(o_ov), .m_axis_tready(1'b1),
      .m_axis_tlast(o_ol)
  );
  hwa_linear #(
      .K(D), .N(F), .P(P_F1),
      .A_W(F1_A_W),
      .A_SIGNED(F1_A_SIGNED),
      .W_W(F1_W_W),
      .B_W(F1_B_W),
      .HAS_BIAS(F1_HAS_BIAS),
      .BIAS_SHIFT(F1_BIAS_SHIFT),
      .ACC_W(F1_ACC_W),
      .ACC_RND(F1_ACC_RND),
      .ACC_OVF(F1_ACC_OVF),
      .A_SHL(F1_A_SHL),
      .P_SHL(F1_P_SHL),
      .SUM_W(F1_SUM_W),
      .Y_W(F1_Y_W),
      .Y_SIGNED(F1_Y_SIGNED),
      .Y_SHIFT(F1_Y_SHIFT),
      .Y_RND(F1_Y_RND),
      .Y_OVF(F1_Y_OVF),
      .W_FILE(F1_W_FILE),
      .B_FILE(F1_B_FILE)
  ) u_f1 (
      .clk(clk), .rst(rst),
      .s_axis_tdata(f1_in), .s_axis_tvalid(ph_reg == PH_FFN && feed_v),
      .s_axis_tready(f1_rdy), .s_axis_tlast(1'b0),
      .m_axis_tdata(f1_out), .m_axis_tvalid(f1_ov), .m_axis_tready(f1_ordy),
      .m_axis_tlast(f1_ol)
  );
  hwa_linear #(
      .K(F), .N(D), .P(P_F2),
      .A_W(F2_A_W),
      .A_SIGNED(F2_A_SIGNED),
      .W_W(F2_W_W),
      .B_W(F2_B_W),
      .HAS_BIAS(F2_HAS_BIAS),
      .BIAS_SHIFT(F2_BIAS_SHIFT),
      .ACC_W(F2_ACC_W),
      .ACC_RND(F2_ACC_RND),
      .ACC_OVF(F2_ACC_OVF),
      .A_SHL(F2_A_SHL),
      .P_SHL(F2_P_SHL),
      .SUM_W(F2_SUM_W),
      .Y_W(F2_Y_W),
      .Y_SIGNED(F2_Y_SIGNED),
      .Y_SHIFT(F2_Y_SHIFT),
      .Y_RND(F2_Y_RND),
      .Y_OVF(F2_Y_OVF),
      .W_FILE(F2_W_FILE),
      .B_FILE(F2_B_FILE)
  ) u_f2 (
      .clk(clk), .rst(rst),
      .s_axis_tdata(f2_in), .s_axis_tvalid(f2_iv),
      .s_axis_tready(f2_rdy), .s_axis_tlast(1'b0),
      .m_axis_tdata(f2_out), .m_axis_tvalid(f2_ov), .m_axis_tready(f2_ordy),
      .m_axis_tlast(f2_ol)
  );

  // -- GELU between the FFN's linear layers --------------------------------------------------
  logic [GI_W-1:0] ge_in_d;
  logic [GO_W-1:0] ge_out_d;
  logic ge_in_v, ge_in_rdy, ge_in_l, ge_out_v, ge_out_rdy;
  /* verilator lint_off UNUSEDSIGNAL */
  logic ge_out_l;
  /* verilator lint_on UNUSEDSIGNAL */
  hwa_tok_ser #(.L(F), .W(GI_W)) u_ge_ser (
      .clk(clk), .rst(rst),
      .s_tdata(f1_out), .s_tvalid(f1_ov), .s_tready(f1_ordy),
      .m_tdata(ge_in_d), .m_tvalid(ge_in_v), .m_tready(ge_in_rdy), .m_tlast(ge_in_l)
  );
  if (GE_METHOD == 0) begin : g_pwl
    hwa_pwl #(
        .IN_W(GE_IN_W),
        .OUT_W(GE_OUT_W),
        .OUT_SIGNED(GE_OUT_SIGNED),
        .OUT_RND(GE_OUT_RND),
        .OUT_OVF(GE_OUT_OVF),
        .NSEG(GE_NSEG),
        .S_W(GE_S_W),
        .C_W(GE_C_W),
        .SH_XS(GE_SH_XS),
        .SH_C(GE_SH_C),
        .SH_X(GE_SH_X),
        .FA(GE_FA),
        .TOP_ONE(GE_TOP_ONE),
        .OUT_SHIFT(GE_OUT_SHIFT),
        .ACC_W(GE_ACC_W),
        .PROD_W(GE_PROD_W),
        .BP_FILE(GE_BP_FILE),
        .SLOPE_FILE(GE_SLOPE_FILE),
        .ICPT_FILE(GE_ICPT_FILE)
    ) u_gelu (
        .clk(clk), .rst(rst),
        .s_axis_tdata(ge_in_d), .s_axis_tvalid(ge_in_v), .s_axis_tready(ge_in_rdy),
        .s_axis_tlast(ge_in_l),
        .m_axis_tdata(ge_out_d), .m_axis_tvalid(ge_out_v), .m_axis_tready(ge_out_rdy),
        .m_axis_tlast(ge_out_l)
    );
  end else begin : g_edgemoe
    hwa_gelu_edgemoe #(
        .IN_W(GM_IN_W),
        .IN_F(GM_IN_F),
        .OUT_W(GM_OUT_W),
        .OUT_F(GM_OUT_F),
        .OUT_SIGNED(GM_OUT_SIGNED),
        .OUT_RND(GM_OUT_RND),
        .OUT_OVF(GM_OUT_OVF),
        .TABLE_SIZE(GM_TABLE_SIZE),
        .K(GM_K),
        .ENTRY_F(GM_ENTRY_F),
        .ENTRY_RND(GM_ENTRY_RND),
        .FT(GM_FT),
        .FA(GM_FA),
        .ABS_W(GM_ABS_W),
        .IDX_W(GM_IDX_W),
        .T_W(GM_T_W),
        .ENTRY_W(GM_ENTRY_W),
        .INTERP_W(GM_INTERP_W),
        .DELTA_W(GM_DELTA_W),
        .ACC_W(GM_ACC_W),
        .DELTA_FILE(GM_DELTA_FILE)
    ) u_gelu (
        .clk(clk), .rst(rst),
        .s_axis_tdata(ge_in_d), .s_axis_tvalid(ge_in_v), .s_axis_tready(ge_in_rdy),
        .s_axis_tlast(ge_in_l),
        .m_axis_tdata(ge_out_d), .m_axis_tvalid(ge_out_v), .m_axis_tready(ge_out_rdy),
        .m_axis_tlast(ge_out_l)
    );
  end
  hwa_tok_deser #(.L(F), .W(GO_W)) u_ge_deser (
      .clk(clk), .rst(rst),
      .s_tdata(ge_out_d), .s_tvalid(ge_out_v), .s_tready(ge_out_rdy),
      .m_tdata(f2_in), .m_tvalid(f2_iv), .m_tready(f2_rdy)
  );

  // -- residual adds ---------------------------------------------------------------------------
  logic [D*AD1_Y_W-1:0] r1_tok;
  logic [D*AD2_Y_W-1:0] r2_tok;
  for (genvar l = 0; l < D; l++) begin : g_add
    logic [AD2_A_W-1:0] resid;
    if (PRENORM) begin : g_pre
      assign resid = AD2_A_W'(r1_ram[c2_ix][l]);
    end else begin : g_post
      assign resid = AD2_A_W'(y_ram[c2_ix][l]);
    end
    hwa_add_cast #(
        .A_W(AD1_A_W),
        .A_SIGNED(AD1_A_SIGNED),
        .B_W(AD1_B_W),
        .B_SIGNED(AD1_B_SIGNED),
        .A_SHL(AD1_A_SHL),
        .B_SHL(AD1_B_SHL),
        .SUM_W(AD1_SUM_W),
        .SHIFT(AD1_SHIFT),
        .MODE(AD1_MODE),
        .Y_W(AD1_Y_W),
        .Y_SIGNED(AD1_Y_SIGNED),
        .OVF(AD1_OVF)
    ) u_add1 (
        .a(x_ram[ci_ix][l]), .b(o_out[l*O_Y_W+:O_Y_W]), .y(r1_tok[l*AD1_Y_W+:AD1_Y_W])
    );
    hwa_add_cast #(
        .A_W(AD2_A_W),
        .A_SIGNED(AD2_A_SIGNED),
        .B_W(AD2_B_W),
        .B_SIGNED(AD2_B_SIGNED),
        .A_SHL(AD2_A_SHL),
        .B_SHL(AD2_B_SHL),
        .SUM_W(AD2_SUM_W),
        .SHIFT(AD2_SHIFT),
        .MODE(AD2_MODE),
        .Y_W(AD2_Y_W),
        .Y_SIGNED(AD2_Y_SIGNED),
        .OVF(AD2_OVF)
    ) u_add2 (
        .a(resid), .b(f2_out[l*F2_Y_W+:F2_Y_W]), .y(r2_tok[l*AD2_Y_W+:AD2_Y_W])
    );
  end

  // -- the two LayerNorm units, each between a serialiser and a deserialiser ----------------
  logic [D*L1_IN_W-1:0] ln1_in;
  logic [D*L1_OUT_W-1:0] ln1_out;
  logic [D*L2_IN_W-1:0] ln2_in;
  logic [D*L2_OUT_W-1:0] ln2_out;
  logic ln1_iv, ln1_rdy, ln1_ov, ln2_iv, ln2_rdy, ln2_ov;
  if (PRENORM) begin : g_ln_pre
    // LN1 on cast(X) (phase LNA), LN2 on cast(R1) (phase LNM); the FFN output is Y
    for (genvar l = 0; l < D; l++) begin : g_cast
      hwa_add_cast #(
          .A_W(CX_A_W),
          .A_SIGNED(CX_A_SIGNED),
          .B_W(CX_B_W),
          .B_SIGNED(CX_B_SIGNED),
          .A_SHL(CX_A_SHL),
          .B_SHL(CX_B_SHL),
          .SUM_W(CX_SUM_W),
          .SHIFT(CX_SHIFT),
          .MODE(CX_MODE),
          .Y_W(CX_Y_W),
          .Y_SIGNED(CX_Y_SIGNED),
          .OVF(CX_OVF)
      ) u_cx (
          .a(x_ram[fi_ix][l]), .b(1'b0), .y(ln1_in[l*L1_IN_W+:L1_IN_W])
      );
      hwa_add_cast #(
          .A_W(CR_A_W),
          .A_SIGNED(CR_A_SIGNED),
          .B_W(CR_B_W),
          .B_SIGNED(CR_B_SIGNED),
          .A_SHL(CR_A_SHL),
          .B_SHL(CR_B_SHL),
          .SUM_W(CR_SUM_W),
          .SHIFT(CR_SHIFT),
          .MODE(CR_MODE),
          .Y_W(CR_Y_W),
          .Y_SIGNED(CR_Y_SIGNED),
          .OVF(CR_OVF)
      ) u_cr (
          .a(r1_ram[fi_ix][l]), .b(1'b0), .y(ln2_in[l*L2_IN_W+:L2_IN_W])
      );
    end
    assign ln1_iv = ph_reg == PH_LNA && feed_v;
    assign ln2_iv = ph_reg == PH_LNM && feed_v;
    assign f2_ordy = 1'b1;
  end else begin : g_ln_post
    // LN1 on R1 (phase LNM); LN2 on R2 = add2(Y1, FFN) as the FFN streams (phase FFN)
    for (genvar l = 0; l < D; l++) begin : g_tok
      assign ln1_in[l*L1_IN_W+:L1_IN_W] = L1_IN_W'(r1_ram[fi_ix][l]);
    end
    assign ln2_in = r2_tok;  // L2_IN_W = AD2_Y_W post-LN
    assign ln1_iv = ph_reg == PH_LNM && feed_v;
    assign ln2_iv = f2_ov;
    assign f2_ordy = ln2_rdy;
  end

  logic [L1_IN_W-1:0] l1_sd;
  logic [L1_OUT_W-1:0] l1_md;
  logic l1_sv, l1_srdy, l1_sl, l1_mv, l1_mrdy;
  logic [L2_IN_W-1:0] l2_sd;
  logic [L2_OUT_W-1:0] l2_md;
  logic l2_sv, l2_srdy, l2_sl, l2_mv, l2_mrdy;
  /* verilator lint_off UNUSEDSIGNAL */
  logic l1_ml, l2_ml, l1_err, l2_err;
  /* verilator lint_on UNUSEDSIGNAL */
  hwa_tok_ser #(.L(D), .W(L1_IN_W)) u_l1_ser (
      .clk(clk), .rst(rst),
      .s_tdata(ln1_in), .s_tvalid(ln1_iv), .s_tready(ln1_rdy),
      .m_tdata(l1_sd), .m_tvalid(l1_sv), .m_tready(l1_srdy), .m_tlast(l1_sl)
  );
  hwa_layernorm_rsqrt #(
      .IN_W(L1_IN_W),
      .OUT_W(L1_OUT_W),
      .OUT_SIGNED(L1_OUT_SIGNED),
      .OUT_RND(L1_OUT_RND),
      .OUT_OVF(L1_OUT_OVF),
      .GAMMA_W(L1_GAMMA_W),
      .BETA_W(L1_BETA_W),
      .CENTER(L1_CENTER),
      .PARTIAL_K(L1_PARTIAL_K),
      .ROW_MAX(L1_ROW_MAX),
      .BUF_DEPTH(L1_BUF_DEPTH),
      .ROWQ(L1_ROWQ),
      .N_BITS(L1_N_BITS),
      .S1_W(L1_S1_W),
      .S2_W(L1_S2_W),
      .D_W(L1_D_W),
      .DE_W(L1_DE_W),
      .A_W(L1_A_W),
      .AY_W(L1_AY_W),
      .M_W(L1_M_W),
      .Y_W(L1_Y_W),
      .SQ_W(L1_SQ_W),
      .MSQ_W(L1_MSQ_W),
      .U_W(L1_U_W),
      .YU_W(L1_YU_W),
      .AYS_W(L1_AYS_W),
      .Z_W(L1_Z_W),
      .ACC_W(L1_ACC_W),
      .EPS_Q(L1_EPS_Q),
      .G(L1_G),
      .P(L1_P),
      .TB(L1_TB),
      .NEWTON(L1_NEWTON),
      .FZ(L1_FZ),
      .BETA_SHIFT(L1_BETA_SHIFT),
      .OUT_SHIFT(L1_OUT_SHIFT),
      .RSQRT_FILE(L1_RSQRT_FILE)
  ) u_ln1 (
      .clk(clk), .rst(rst),
      .s_axis_tdata(l1_sd), .s_axis_tvalid(l1_sv), .s_axis_tready(l1_srdy),
      .s_axis_tlast(l1_sl),
      .m_axis_tdata(l1_md), .m_axis_tvalid(l1_mv), .m_axis_tready(l1_mrdy),
      .m_axis_tlast(l1_ml),
      .cfg_we(cfg_we), .cfg_addr(cfg_addr), .cfg_gamma(g1_mem[cfg_addr]),
      .cfg_beta(be1_mem[cfg_addr]), .row_err(l1_err)
  );
  hwa_tok_deser #(.L(D), .W(L1_OUT_W)) u_l1_deser (
      .clk(clk), .rst(rst),
      .s_tdata(l1_md), .s_tvalid(l1_mv), .s_tready(l1_mrdy),
      .m_tdata(ln1_out), .m_tvalid(ln1_ov), .m_tready(1'b1)
  );
  hwa_tok_ser #(.L(D), .W(L2_IN_W)) u_l2_ser (
      .clk(clk), .rst(rst),
      .s_tdata(ln2_in), .s_tvalid(ln2_iv), .s_tready(ln2_rdy),
      .m_tdata(l2_sd), .m_tvalid(l2_sv), .m_tready(l2_srdy), .m_tlast(l2_sl)
  );
  hwa_layernorm_rsqrt #(
      .IN_W(L2_IN_W),
      .OUT_W(L2_OUT_W),
      .OUT_SIGNED(L2_OUT_SIGNED),
      .OUT_RND(L2_OUT_RND),
      .OUT_OVF(L2_OUT_OVF),
      .GAMMA_W(L2_GAMMA_W),
      .BETA_W(L2_BETA_W),
      .CENTER(L2_CENTER),
      .PARTIAL_K(L2_PARTIAL_K),
      .ROW_MAX(L2_ROW_MAX),
      .BUF_DEPTH(L2_BUF_DEPTH),
      .ROWQ(L2_ROWQ),
      .N_BITS(L2_N_BITS),
      .S1_W(L2_S1_W),
      .S2_W(L2_S2_W),
      .D_W(L2_D_W),
      .DE_W(L2_DE_W),
      .A_W(L2_A_W),
      .AY_W(L2_AY_W),
      .M_W(L2_M_W),
      .Y_W(L2_Y_W),
      .SQ_W(L2_SQ_W),
      .MSQ_W(L2_MSQ_W),
      .U_W(L2_U_W),
      .YU_W(L2_YU_W),
      .AYS_W(L2_AYS_W),
      .Z_W(L2_Z_W),
      .ACC_W(L2_ACC_W),
      .EPS_Q(L2_EPS_Q),
      .G(L2_G),
      .P(L2_P),
      .TB(L2_TB),
      .NEWTON(L2_NEWTON),
      .FZ(L2_FZ),
      .BETA_SHIFT(L2_BETA_SHIFT),
      .OUT_SHIFT(L2_OUT_SHIFT),
      .RSQRT_FILE(L2_RSQRT_FILE)
  ) u_ln2 (
      .clk(clk), .rst(rst),
      .s_axis_tdata(l2_sd), .s_axis_tvalid(l2_sv), .s_axis_tready(l2_srdy),
      .s_axis_tlast(l2_sl),
      .m_axis_tdata(l2_md), .m_axis_tvalid(l2_mv), .m_axis_tready(l2_mrdy),
      .m_axis_tlast(l2_ml),
      .cfg_we(cfg_we), .cfg_addr(cfg_addr), .cfg_gamma(g2_mem[cfg_addr]),
      .cfg_beta(be2_mem[cfg_addr]), .row_err(l2_err)
  );
  hwa_tok_deser #(.L(D), .W(L2_OUT_W)) u_l2_deser (
      .clk(clk), .rst(rst),
      .s_tdata(l2_md), .s_tvalid(l2_mv), .s_tready(l2_mrdy),
      .m_tdata(ln2_out), .m_tvalid(ln2_ov), .m_tready(1'b1)
  );

  // -- attention: scores (hwa_mac), the softmax unit, P·V (hwa_mac) --------------------------
  logic [HW-1:0] h_reg;
  logic [CW-1:0] c_reg;
  logic iss_reg;  // issuing terms (SC, PV)
  logic [QKV_Y_W-1:0] qk_a, qk_b, pv_b;
  logic qk_v, qk_first, qk_last, qk_ov, pv_v, pv_first, pv_last, pv_ov;
  logic [QK_Y_W-1:0] qk_y;
  logic [PV_Y_W-1:0] pv_y;
  localparam int QW = $clog2(3 * D);
  logic [QW-1:0] q_lane, k_lane, v_lane;
  assign q_lane = QW'(32'(h_reg) * DH + 32'(c_reg));
  assign k_lane = QW'(D + 32'(h_reg) * DH + 32'(c_reg));
  assign v_lane = QW'(2 * D + 32'(h_reg) * DH + 32'(c_reg));
  // the buffer reads and the term flags registered ahead of both MACs (one cycle per dot
  // product; the Q/K/V buffer is read combinationally at [j][lane])
  logic [SM_OUT_W-1:0] pv_a;
  always_ff @(posedge clk) begin
    if (rst) begin
      qk_v <= 1'b0;
      pv_v <= 1'b0;
    end else begin
      qk_v <= ph_reg == PH_SC && iss_reg;
      pv_v <= ph_reg == PH_PV && iss_reg;
    end
    qk_a <= qkv_ram[i_ix][q_lane];
    qk_b <= qkv_ram[j_ix][k_lane];
    qk_first <= c_reg == '0;
    qk_last <= c_reg == CW'(DH - 1);
    pv_a <= p_buf[j_ix];
    pv_b <= qkv_ram[j_ix][v_lane];
    pv_first <= j_reg == '0;
    pv_last <= j_reg == IW'(S - 1);
  end
  hwa_mac #(
      .A_W(QK_A_W),
      .A_SIGNED(QK_A_SIGNED),
      .B_W(QK_B_W),
      .ACC_W(QK_ACC_W),
      .ACC_RND(QK_ACC_RND),
      .ACC_OVF(QK_ACC_OVF),
      .A_SHL(QK_A_SHL),
      .P_SHL(QK_P_SHL),
      .SUM_W(QK_SUM_W),
      .Y_W(QK_Y_W),
      .Y_SIGNED(QK_Y_SIGNED),
      .Y_SHIFT(QK_Y_SHIFT),
      .Y_RND(QK_Y_RND),
      .Y_OVF(QK_Y_OVF)
  ) u_qk (
      .clk(clk), .rst(rst), .in_v(qk_v), .in_first(qk_first), .in_last(qk_last),
      .a(qk_a), .b(qk_b), .out_v(qk_ov), .y(qk_y)
  );
  hwa_mac #(
      .A_W(PV_A_W),
      .A_SIGNED(PV_A_SIGNED),
      .B_W(PV_B_W),
      .ACC_W(PV_ACC_W),
      .ACC_RND(PV_ACC_RND),
      .ACC_OVF(PV_ACC_OVF),
      .A_SHL(PV_A_SHL),
      .P_SHL(PV_P_SHL),
      .SUM_W(PV_SUM_W),
      .Y_W(PV_Y_W),
      .Y_SIGNED(PV_Y_SIGNED),
      .Y_SHIFT(PV_Y_SHIFT),
      .Y_RND(PV_Y_RND),
      .Y_OVF(PV_Y_OVF)
  ) u_pv (
      .clk(clk), .rst(rst), .in_v(pv_v), .in_first(pv_first), .in_last(pv_last),
      .a(pv_a), .b(pv_b), .out_v(pv_ov), .y(pv_y)
  );

  logic sm_iv, sm_rdy, sm_mask, sm_ov;
  logic [SM_OUT_W-1:0] sm_y;
  /* verilator lint_off UNUSEDSIGNAL */
  logic sm_ol, sm_err;
  /* verilator lint_on UNUSEDSIGNAL */
  assign sm_iv = ph_reg == PH_SM && feed_v;
  assign sm_mask = (CAUSAL && fi_reg > i_reg)
      || (WINDOW != 0 && 32'(i_reg) >= 32'(fi_reg) + WINDOW)
      || (MASKED && pad_ram[fi_ix]);
  // the pipelined softmax (PIPE = 1, issue 22): it holds s_axis_tready 4 cycles per new
  // running max, so SM depends on the row's scores (the contract header's T_SM)
  hwa_softmax_online #(
      .PIPE(1'b1),
      .IN_W(SM_IN_W),
      .OUT_W(SM_OUT_W),
      .OUT_SIGNED(SM_OUT_SIGNED),
      .OUT_RND(SM_OUT_RND),
      .OUT_OVF(SM_OUT_OVF),
      .OUT_SHIFT(SM_OUT_SHIFT),
      .ROW_MAX(SM_ROW_MAX),
      .BUF_DEPTH(SM_BUF_DEPTH),
      .ROWQ(SM_ROWQ),
      .N_BITS(SM_N_BITS),
      .OFF_BY_ONE(SM_OFF_BY_ONE),
      .CLIP(SM_CLIP),
      .CLIP_F(SM_CLIP_F),
      .CLIP_S(SM_CLIP_S),
      .CLIP_G(SM_CLIP_G),
      .CLIP_ONE(SM_CLIP_ONE),
      .CS_W(SM_CS_W),
      .CRS_W(SM_CRS_W),
      .CZ_W(SM_CZ_W),
      .BASE2(SM_BASE2),
      .EXP_W(SM_EXP_W),
      .EXP_F(SM_EXP_F),
      .EXP_RND(SM_EXP_RND),
      .LOG2E(SM_LOG2E),
      .LOG2E_W(SM_LOG2E_W),
      .PROD_SHIFT(SM_PROD_SHIFT),
      .T_W(SM_T_W),
      .T_F(SM_T_F),
      .T_RND(SM_T_RND),
      .A(SM_A),
      .TABLE_F(SM_TABLE_F),
      .INTERP(SM_INTERP),
      .V_W(SM_V_W),
      .LUT_BITS(SM_LUT_BITS),
      .LIM_BITS(SM_LIM_BITS),
      .LUT_SHIFT(SM_LUT_SHIFT),
      .SUM_W(SM_SUM_W),
      .SUM_F(SM_SUM_F),
      .SUM_RND(SM_SUM_RND),
      .RESCALE_W(SM_RESCALE_W),
      .R_W(SM_R_W),
      .R_F(SM_R_F),
      .R_OVF(SM_R_OVF),
      .WF(SM_WF),
      .TB(SM_TB),
      .NEWTON(SM_NEWTON),
      .STEPS(SM_STEPS),
      .R_RND(SM_R_RND),
      .RN_W(SM_RN_W),
      .RP_W(SM_RP_W),
      .OUTP_W(SM_OUTP_W),
      .SKIP(SM_SKIP),
      .SKIP_TAU(SM_SKIP_TAU),
      .UNIFIED(SM_UNIFIED),
      .PHI(SM_PHI),
      .U_LOW(SM_U_LOW),
      .U_FLOOR(SM_U_FLOOR),
      .U_S_W(SM_U_S_W),
      .UOUTP_W(SM_UOUTP_W),
      .OUT_CODE(SM_OUT_CODE),
      .CODE_BITS(SM_CODE_BITS),
      .CODE_ZERO(SM_CODE_ZERO),
      .CODE_NW(SM_CODE_NW),
      .CODE_F(SM_CODE_F),
      .CODE_C12(SM_CODE_C12),
      .CODE_C14(SM_CODE_C14),
      .CODE_C34(SM_CODE_C34),
      .EXP_FILE(SM_EXP_FILE),
      .RECIP_FILE(SM_RECIP_FILE)
  ) u_sm (
      .clk(clk), .rst(rst),
      .s_axis_tdata(sc_buf[fi_ix]), .s_axis_tvalid(sm_iv), .s_axis_tready(sm_rdy),
      .s_axis_tlast(fi_reg == IW'(S - 1)), .s_axis_tuser(sm_mask),
      .m_axis_tdata(sm_y), .m_axis_tvalid(sm_ov), .m_axis_tready(1'b1),
      .m_axis_tlast(sm_ol), .row_err(sm_err)
  );

  // -- the phase sequencer -----------------------------------------------------------------------
  always_comb begin
    unique case (ph_reg)
      PH_LNA:  begin feed_rdy = ln1_rdy; col_v = ln1_ov; end
      PH_QKV:  begin feed_rdy = qkv_rdy; col_v = qkv_ov; end
      PH_SM:   begin feed_rdy = sm_rdy; col_v = sm_ov; end
      PH_O:    begin feed_rdy = o_rdy; col_v = o_ov; end
      PH_LNM:  begin feed_rdy = PRENORM ? ln2_rdy : ln1_rdy; col_v = PRENORM ? ln2_ov : ln1_ov; end
      PH_FFN:  begin feed_rdy = f1_rdy; col_v = PRENORM ? f2_ov : ln2_ov; end
      default: begin feed_rdy = 1'b0; col_v = 1'b0; end
    endcase
  end
  logic col_last;
  assign col_last = col_v && ci_reg == IW'(S - 1);

  always_ff @(posedge clk) begin
    if (rst) begin
      ph_reg <= PH_INIT;
      init_reg <= '0;
      fi_reg <= '0;
      ci_reg <= '0;
      c2_reg <= '0;
      h_reg <= '0;
      i_reg <= '0;
      j_reg <= '0;
      c_reg <= '0;
      wi_reg <= '0;
      iss_reg <= 1'b0;
    end else begin
      unique case (ph_reg)
        PH_INIT: begin
          init_reg <= init_reg + 1'b1;
          if (init_reg == LW'(D)) ph_reg <= PH_IN;
        end
        PH_IN: begin
          if (s_axis_tvalid) begin
            fi_reg <= fi_reg + 1'b1;
            if (fi_reg == IW'(S - 1)) begin
              fi_reg <= '0;
              ph_reg <= PRENORM ? PH_LNA : PH_QKV;
            end
          end
        end
        PH_LNA, PH_QKV, PH_SM, PH_O, PH_LNM, PH_FFN: begin
          if (feed_v && feed_rdy) fi_reg <= fi_reg + 1'b1;
          if (col_v) ci_reg <= ci_reg + 1'b1;
          if (ph_reg == PH_FFN && f2_ov && f2_ordy) c2_reg <= c2_reg + 1'b1;
          if (col_last) begin
            fi_reg <= '0;
            ci_reg <= '0;
            c2_reg <= '0;
            unique case (ph_reg)
              PH_LNA: ph_reg <= PH_QKV;
              PH_QKV: begin
                ph_reg <= PH_SC;
                iss_reg <= 1'b1;
              end
              PH_SM: begin
                ph_reg <= PH_PV;
                iss_reg <= 1'b1;
              end
              PH_O: ph_reg <= PH_LNM;
              PH_LNM: ph_reg <= PH_FFN;
              default: ph_reg <= PH_OUT;  // PH_FFN
            endcase
          end
        end
        PH_SC: begin
          // issue (j, c), c minor; the scores land in sc_buf[wi]
          if (iss_reg) begin
            if (c_reg == CW'(DH - 1)) begin
              c_reg <= '0;
              if (j_reg == IW'(S - 1)) begin
                j_reg <= '0;
                iss_reg <= 1'b0;
              end else j_reg <= j_reg + 1'b1;
            end else c_reg <= c_reg + 1'b1;
          end
          if (qk_ov) begin
            wi_reg <= wi_reg + 1'b1;
            if (wi_reg == IW'(S - 1)) begin
              wi_reg <= '0;
              ph_reg <= PH_SM;
            end
          end
        end
        PH_PV: begin
          // issue (c, j), j minor; C[i][h·DH + wi]
          if (iss_reg) begin
            if (j_reg == IW'(S - 1)) begin
              j_reg <= '0;
              if (c_reg == CW'(DH - 1)) begin
                c_reg <= '0;
                iss_reg <= 1'b0;
              end else c_reg <= c_reg + 1'b1;
            end else j_reg <= j_reg + 1'b1;
          end
          if (pv_ov) begin
            wi_reg <= wi_reg + 1'b1;
            if (wi_reg == IW'(DH - 1)) begin
              wi_reg <= '0;
              if (i_reg == IW'(S - 1)) begin
                i_reg <= '0;
                if (h_reg == HW'(H - 1)) begin
                  h_reg <= '0;
                  ph_reg <= PH_O;
                end else begin
                  h_reg <= h_reg + 1'b1;
                  ph_reg <= PH_SC;
                  iss_reg <= 1'b1;
                end
              end else begin
                i_reg <= i_reg + 1'b1;
                ph_reg <= PH_SC;
                iss_reg <= 1'b1;
              end
            end
          end
        end
        default: begin  // PH_OUT
          if (m_axis_tready) begin
            fi_reg <= fi_reg + 1'b1;
            if (fi_reg == IW'(S - 1)) begin
              fi_reg <= '0;
              ph_reg <= PH_IN;
            end
          end
        end
      endcase
    end
  end

  // -- RAM writes ---------------------------------------------------------------------------------
  always_ff @(posedge clk) begin
    if (ph_reg == PH_IN && s_axis_tvalid) begin
      for (int l = 0; l < D; l++) x_ram[fi_ix][l] <= s_axis_tdata[l*IN_W+:IN_W];
      pad_ram[fi_ix] <= s_axis_tuser;
    end
    if (ph_reg == PH_QKV && qkv_ov) begin
      for (int l = 0; l < 3 * D; l++) qkv_ram[ci_ix][l] <= qkv_out[l*QKV_Y_W+:QKV_Y_W];
    end
    if (qk_ov) sc_buf[wi_ix] <= qk_y;
    if (ph_reg == PH_SM && sm_ov) p_buf[ci_ix] <= sm_y;
    if (pv_ov) ctx_ram[i_ix][LA_W'(32'(h_reg) * DH + 32'(wi_reg))] <= pv_y;
    if (ph_reg == PH_O && o_ov) begin
      for (int l = 0; l < D; l++) r1_ram[ci_ix][l] <= r1_tok[l*AD1_Y_W+:AD1_Y_W];
    end
    if (ph_reg == PH_LNM && (PRENORM ? ln2_ov : ln1_ov)) begin
      for (int l = 0; l < D; l++) begin
        y_ram[ci_ix][l] <= PRENORM ? Y_W'(ln2_out[l*L2_OUT_W+:L2_OUT_W])
                                    : Y_W'(ln1_out[l*L1_OUT_W+:L1_OUT_W]);
      end
    end
    if (ph_reg == PH_FFN && col_v) begin
      for (int l = 0; l < D; l++) begin
        out_ram[ci_ix][l] <= PRENORM ? OUT_W'(r2_tok[l*AD2_Y_W+:AD2_Y_W])
                                      : OUT_W'(ln2_out[l*L2_OUT_W+:L2_OUT_W]);
      end
    end
  end
  always_ff @(posedge clk) begin
    if (PRENORM && ph_reg == PH_LNA && ln1_ov) begin
      for (int l = 0; l < D; l++) a_ram[ci_ix][l] <= A_W'(ln1_out[l*L1_OUT_W+:L1_OUT_W]);
    end
  end

endmodule
`default_nettype wire
