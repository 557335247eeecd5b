// hwa_softmax_softermax -- Softermax (hwapprox.approx.softmax.SoftermaxSoftmax), bit-exact:
// base 2, an integer running max, shift rescaling, PWL 2^x and PWL reciprocal.
//
// Per row of n <= ROW_MAX raw in_fmt codes x (s_axis, tlast on the last one) with one
// mask bit each (s_axis_tuser, 1 = masked out: no part in max or sum, output 0; a
// fully masked row outputs zeros):
//   t = sat(round_shift(x * LOG2E, PROD_SHIFT, T_RND))           (t_fmt, TX_W bits;
//       computed on the way in and again on the way out: the row buffer holds {mask, x})
//   pass 1 (ingest), unmasked elements only:
//       M' = max(M, t >>> T_F);  d = (d >> (M' - M)) + (P(t - M'·2^T_F) << SUM_UP)
//       (the first unmasked element: M' = t >>> T_F, d = P)
//   P(a) = 2^a, a < 1: exp2 of 2^T_F - max(a, A_MIN) by the table + interpolation of
//       hwa_exp_unit (2^A + 1 entries of 2^-j/2^A, TABLE_F fraction bits; EXP_RND),
//       P_F + 1 fraction bits read as P_F (2^a = 2·2^-(1-a));
//   per row: r = 1/d (hwa_recip, PWL of 2^TB segments, no Newton; R_RND, R_OVF);
//   output (row re-read): y = sat(round_shift(P(t - M·2^T_F) * r, OUT_SHIFT, OUT_RND))
// The running max and shift are resolved ahead of the sum. Only an element that raises
// the integer running max (unmasked, M' > M, not the row's first unmasked element: a
// "step") shifts d, and the sum gives its shift a cycle of its own (issue 22: the
// 34-bit shift and add in one cycle stopped at 113-119 MHz): d_sh = d >> sh, then
// d = d_sh + P in the next cycle, so the one-cycle loop is d -> a 2:1 select -> the
// adder. The empty cycle behind a step is the hold: when a step enters the running-max
// stage, the ingest stages before it (t, TLAT) and the input stand still for one cycle
// (a registered enable, and s_axis_tready low through hwa_row_stream's s_hold, both
// from the same decision: nothing is accepted while the stages stand still).
// Pipelining (issue 22, ECP5 at 125 MHz): t = x·LOG2E is hwa_mul_pipe (3), its
// rounding hwa_round_shift_pipe (3) and the saturation (1): TLAT = 7 stages (4 when
// PROD_SHIFT <= 0), on both sides; the running max and shift (1), t - M·2^T_F (1),
// its clamp and 2^T_F - . (1); P is hwa_exp_unit with PIPE = 1 (ELAT = 11); the
// reciprocal hwa_recip with PIPE = 1 (RLAT = 18); the output product P·r is
// hwa_mul_pipe (3) and its rounding hwa_round_shift_pipe (3, OUT_SHIFT > 0 only):
// OLAT = 6.
// Buffering (hwa_row_stream): circular buffer of {mask, x} words, BUF_DEPTH or the
// power of 2 >= ROW_MAX + ROW_LAT + 5 when that is larger; a queue of ROWQ rows, or
// the power of 2 >= 4 + (ROW_LAT + ROW_MAX + 16) / 16 (ROW_LAT: last input -> its
// row's context = TLAT + ELAT + RLAT + 5 = 41 at the defaults, one more when the last
// element is a step; the held cycles, when the row's last element waits behind them,
// hold the input too).
// Latency: last input -> first output ROW_LAT + 4 + TLAT + ELAT + OLAT = 69 cycles at
// the defaults when the output is free (11 before issue 22), then one element per
// cycle: last input -> last output N + 68 (one more with OUT_CODE), plus one cycle per
// step among the TLAT elements before the row's last (the ingest stood still while it
// was in the TLAT stages) and one when the last is a step itself: at most N + 68 +
// TLAT + 1 = N + 76.
// Throughput: input one element per cycle except one held cycle per step, TLAT
// accepted elements after it when the input is offered every cycle (a row's last
// steps hold the next row's input): rows of n elements with k steps take n + k input
// cycles. Rows of 64 at the default spec, N(0, s) for s = 1, 2, 4: 2.3, 2.9, 3.3 steps
// on average, sorted ascending 6.6, 12.3, 21.3 (one per integer t crosses); at worst
// every element but the first (x rising by 1/log2(e) or more each): 1/2 rate.
// Output one element per cycle; rows back to back lose no other cycle
// (tests/test_rtl_throughput.py; hwapprox.rtl_sim.units.softermax_schedule).
// Rows longer than ROW_MAX are dropped with a row_err pulse (hwa_row_stream).
// Parameter defaults: the default SoftermaxSoftmax spec's hw_params() with
// row_stream_params(64) (tests/test_rtl_lint.py).
`default_nettype none
module hwa_softmax_softermax #(
    parameter int IN_W = 16,
    parameter int OUT_W = 8,
    parameter bit OUT_SIGNED = 1'b0,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int OUT_SHIFT = 24,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 8,
    parameter longint LOG2E = 64'd94548,
    parameter int LOG2E_W = 17,
    parameter int PROD_W = 33,
    parameter int PROD_SHIFT = 15,
    parameter int T_RND = 2,
    parameter int TX_W = 19,
    parameter int T_F = 11,
    parameter int M_W = 9,
    parameter int SH_W = 9,
    parameter int A_W = 20,
    parameter int A_MIN = -45056,
    parameter int T_W = 16,
    parameter int A = 5,
    parameter int TABLE_F = 22,
    parameter int V_W = 29,
    parameter int EXP_W = 22,
    parameter int EXP_F = 21,
    parameter int EXP_RND = 2,
    parameter int SUM_W = 34,
    parameter int SUM_F = 22,
    parameter int SUM_UP = 2,
    parameter int R_W = 13,
    parameter int R_F = 12,
    parameter int R_OVF = 0,
    parameter int R_RND = 2,
    parameter int WF = 14,
    parameter int TB = 6,
    parameter int RN_W = 17,
    parameter int RP_W = 31,
    parameter int OUTP_W = 35,  // the output product P*r, unsigned (hw_params: EXP_W + R_W)
    parameter string POW2_FILE = "",
    parameter int OUT_CODE = 0,
    parameter int CODE_BITS = 4,
    parameter int CODE_ZERO = 15,
    parameter int CODE_NW = 8,
    parameter int CODE_F = 8,
    parameter longint CODE_C12 = 64'd181,
    parameter longint CODE_C14 = 64'd152,
    parameter longint CODE_C34 = 64'd215,
    parameter string RECIP_FILE = ""
) (
    input  logic             clk,
    input  logic             rst,
    input  logic [IN_W-1:0]  s_axis_tdata,
    input  logic             s_axis_tvalid,
    output logic             s_axis_tready,
    input  logic             s_axis_tlast,
    input  logic             s_axis_tuser,  // mask bit: 1 = masked out
    // out_fmt codes, or (OUT_CODE) CODE_BITS-bit log codes
    output logic [(OUT_CODE != 0 ? CODE_BITS : OUT_W)-1:0] m_axis_tdata,
    output logic             m_axis_tvalid,
    input  logic             m_axis_tready,
    output logic             m_axis_tlast,
    output logic             row_err
);

  localparam int SW = 8;
  localparam int PRW = PROD_W + ((PROD_SHIFT < 0) ? -PROD_SHIFT : 0) + 1;
  localparam int CTX_W = M_W + R_W;  // per row: the integer max M and r = 1/d
  localparam logic [SUM_W-1:0] ONE = SUM_W'(1) << SUM_F;

  if (IN_W < 2 || IN_W > 32 || OUT_W < 1 || OUT_W > 40 || TX_W > 40 || T_F < 1
      || SUM_UP < 0 || SUM_W > 62 || A_MIN >= 0 || EXP_F + 1 != EXP_W
      || OUTP_W < EXP_W + R_W) begin : g_bad
    $error("hwa_softmax_softermax %m: invalid IN_W=%0d OUT_W=%0d TX_W=%0d T_F=%0d SUM_W=%0d SUM_UP=%0d A_MIN=%0d EXP_W=%0d EXP_F=%0d OUTP_W=%0d (>= EXP_W + R_W)",
           IN_W, OUT_W, TX_W, T_F, SUM_W, SUM_UP, A_MIN, EXP_W, EXP_F, OUTP_W);
  end

  // ---- per-spec latencies and the buffer geometry they need --------------------------
  localparam int TLAT = 3 + ((PROD_SHIFT > 0) ? 3 : 0) + 1;
  localparam int ELAT = hwa_pkg::exp_unit_lat(1'b1, 1'b1, 64'd1, 0, 1'b0);
  localparam int RLAT = hwa_pkg::recip_lat(1'b1, 1'b0, 0, 1'b0);
  localparam int OLAT = 3 + ((OUT_SHIFT > 0) ? 3 : 0);
  // in_last -> ctx_v; one more when the last element is a step (its shift cycle), and
  // one per held cycle while it is in the TLAT stages (the input is held then too)
  localparam int ROW_LAT = TLAT + ELAT + RLAT + 5;
  localparam int BUF_NEED = ROW_MAX + ROW_LAT + 5;
  localparam int BUF_U = (BUF_NEED > BUF_DEPTH) ? 1 << $clog2(BUF_NEED) : BUF_DEPTH;
  localparam int ROWQ_NEED = 4 + (ROW_LAT + ROW_MAX + 16) / 16;
  localparam int ROWQ_U = (ROWQ_NEED > ROWQ) ? 1 << $clog2(ROWQ_NEED) : ROWQ;


  logic in_v, in_first, in_last, ctx_v, ce, rd_issue, o1_v, o1_l;
  // the ingest hold (see stage A): stall_nxt = a step (an element raising the integer
  // running max) enters stage A this cycle, so in the next cycle s_axis_tready is low
  // (hwa_row_stream's s_hold) and the ingest stages stand still (ie low)
  logic stall_nxt, ie;
  logic [IN_W:0] in_w, o1_w;
  logic in_mask, o1_mask;
  logic signed [IN_W-1:0] in_x, o1_x;
  assign {in_mask, in_x} = in_w;
  assign {o1_mask, o1_x} = o1_w;
  logic [N_BITS-1:0] in_n, o1_n, rd_idx;
  logic [CTX_W-1:0] ctx, o1_ctx;
  hwa_row_stream #(
      .IN_W(IN_W + 1),
      .CTX_W(CTX_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_U),
      .ROWQ(ROWQ_U),
      .N_BITS(N_BITS)
  ) u_rows (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata({s_axis_tuser, s_axis_tdata}),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tready(s_axis_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_hold(stall_nxt),
      .in_v(in_v),
      .in_x(in_w),
      .in_first(in_first),
      .in_last(in_last),
      .in_n(in_n),
      .ctx_v(ctx_v),
      .ctx(ctx),
      .ce(ce),
      .rd_issue(rd_issue),
      .rd_idx(rd_idx),
      .o1_v(o1_v),
      .o1_l(o1_l),
      .o1_x(o1_w),
      .o1_ctx(o1_ctx),
      .o1_n(o1_n),
      .row_err(row_err)
  );
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_rows;  // the sequencer's length and position outputs: not needed here
  assign unused_rows = ^{in_n, o1_n, rd_idx, rd_issue};
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- ingest: t of in_x (TLAT stages, advancing while ie) ---------------------------
  logic signed [TX_W-1:0] i_t;
  if (1) begin : g_i_t
    logic signed [PROD_W-1:0] prod;
    logic signed [PRW-1:0] t_sh;
    hwa_mul_pipe #(
        .A_W(IN_W),
        .B_W(LOG2E_W + 1),
        .B_SIGNED(1'b0),
        .P_W(PROD_W)
    ) u_m (
        .clk(clk),
        .en (ie),
        .a  (in_x),
        .b  ({1'b0, LOG2E_W'(LOG2E)}),
        .p  (prod)
    );
    if (PROD_SHIFT > 0) begin : g_rs
      hwa_round_shift_pipe #(
          .IN_W (PROD_W),
          .SH_W (SW),
          .OUT_W(PRW),
          .MODE (T_RND)
      ) u_t (
          .clk(clk),
          .en (ie),
          .x  (prod),
          .sh (SW'(PROD_SHIFT)),
          .y  (t_sh)
      );
    end else begin : g_ls
      assign t_sh = PRW'(prod) <<< (-PROD_SHIFT);
    end
    logic [TX_W-1:0] t_c;
    hwa_sat #(
        .IN_W      (PRW),
        .OUT_W     (TX_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_t_sat (
        .x(t_sh),
        .y(t_c)
    );
    always_ff @(posedge clk) begin
      if (ie) i_t <= t_c;
    end
  end
  logic i_v, i_first, i_last, i_mask;
  hwa_delay #(
      .W(1),
      .L(TLAT)
  ) u_iv (
      .clk(clk),
      .rst(rst),
      .en (ie),
      .d  (in_v),
      .q  (i_v)
  );
  hwa_delay #(
      .W(3),
      .L(TLAT)
  ) u_if (
      .clk(clk),
      .rst(1'b0),
      .en (ie),
      .d  ({in_first, in_last, in_mask}),
      .q  ({i_first, i_last, i_mask})
  );

  // the exp2 argument of P(t - M·2^T_F): 2^T_F - max(a, A_MIN), a = t - M·2^T_F
  function automatic logic signed [A_W-1:0] p_a(input logic signed [TX_W-1:0] t,
                                                input logic signed [M_W-1:0] m);
    return A_W'(t) - (A_W'(m) <<< T_F);
  endfunction
  // (the compare and the subtraction side by side, then a 2:1 select)
  function automatic logic [T_W-1:0] p_arg(input logic signed [A_W-1:0] a_in);
    localparam logic signed [A_W-1:0] ONE_T = A_W'(1) <<< T_F;
    localparam logic signed [A_W-1:0] CL = ONE_T - A_W'(A_MIN);
    logic signed [A_W-1:0] v;
    v = ONE_T - a_in;
    return T_W'((a_in < A_W'(A_MIN)) ? CL : v);
  endfunction

  // ---- stage A: integer running max over the unmasked elements, shift; stage A2: the
  // P argument's t - M·2^T_F (its clamp and 2^T_F - . feed the exp unit's first stage)
  // The hold: an element that raises the integer running max (unmasked, above M, not
  // the row's first unmasked one: is_step) is followed by one empty cycle into the sum
  // stage, where its shift d >> sh takes a cycle of its own (stage D). So when one
  // enters A, the ingest stands still for the next cycle: ie (a register) low stops the
  // TLAT stages and A, and s_axis_tready (registered, hwa_row_stream's s_hold) is low in
  // that same cycle, so no element is accepted while the stages before A stand still.
  logic signed [M_W-1:0] m_reg, mj, m_new;
  logic seen_reg, seen_prev, live, is_new, is_step, i_go;
  logic a_v, a_last, a_live, a_first_live, a_any, a_step;
  logic [SH_W-1:0] a_sh;
  logic signed [TX_W-1:0] a_t;
  logic signed [M_W-1:0] a_m;
  assign i_go = i_v && ie;  // the element in front of A enters it this cycle
  assign live = !i_mask;
  assign seen_prev = !i_first && seen_reg;
  assign mj = M_W'(i_t >>> T_F);
  assign is_new = live && (!seen_prev || mj > m_reg);
  assign is_step = is_new && seen_prev;
  assign m_new = is_new ? mj : m_reg;
  assign stall_nxt = i_go && is_step;
  always_ff @(posedge clk) begin
    if (rst) begin
      a_v <= 1'b0;
      ie <= 1'b1;
    end else begin
      a_v <= i_go;
      ie <= !stall_nxt;
    end
    if (i_go) begin
      a_last <= i_last;
      a_live <= live;
      a_first_live <= live && !seen_prev;
      a_any <= seen_prev || live;  // an unmasked element so far in the row
      a_step <= is_step;
      a_sh <= is_step ? SH_W'(mj - m_reg) : '0;
      a_t <= i_t;
      a_m <= m_new;
      m_reg <= m_new;
      seen_reg <= seen_prev || live;
    end
  end

  // the sum's shift, decided here: zero the sum (a row's first unmasked element, or a
  // shift of SUM_W or more) or shift it by sh < SUM_W
  localparam int SHC_W = $clog2(SUM_W);
  logic a2_v, a2_last, a2_live, a2_zero, a2_any, a2_step;
  logic [SHC_W-1:0] a2_shc;
  logic signed [M_W-1:0] a2_m;
  logic signed [A_W-1:0] a2_a;
  always_ff @(posedge clk) begin
    if (rst) a2_v <= 1'b0;
    else a2_v <= a_v;
    {a2_last, a2_live, a2_any, a2_step, a2_m} <= {a_last, a_live, a_any, a_step, a_m};
    a2_zero <= a_first_live || (32'(a_sh) >= SUM_W);
    a2_shc <= SHC_W'(a_sh);
    a2_a <= p_a(a_t, a_m);
  end

  // stage A3: the argument's clamp and 2^T_F - . registered
  logic [T_W-1:0] a3_arg;
  always_ff @(posedge clk) a3_arg <= p_arg(a2_a);

  // ---- stages B, C: P (ELAT stages) ------------------------------------------------------
  logic [EXP_W-1:0] p_in;
  hwa_exp_unit #(
      .D_W(T_W),
      .PIPE(1'b1),
      .MUL_IN_REG(1'b0),
      .BASE2(1'b1),
      .EXP_W(EXP_W),
      .EXP_F(EXP_F),
      .EXP_RND(EXP_RND),
      .LOG2E(64'd1),
      .LOG2E_W(2),
      .PROD_SHIFT(0),
      .T_W(T_W),
      .T_F(T_F),
      .T_RND(0),
      .A(A),
      .TABLE_F(TABLE_F),
      .INTERP(1'b1),
      .V_W(V_W),
      .LUT_BITS(1),
      .LIM_BITS(1),
      .LUT_SHIFT(0),
      .TABLE_FILE(POW2_FILE)
  ) u_p_in (
      .clk(clk),
      .en (1'b1),
      .d  (a3_arg),
      .e  (p_in)
  );
  logic c_v, c_last, c_live, c_zero, c_any, c_step;
  logic [SHC_W-1:0] c_shc;
  logic signed [M_W-1:0] c_m;
  hwa_delay #(
      .W(1),
      .L(ELAT + 1)
  ) u_cv (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  (a2_v),
      .q  (c_v)
  );
  hwa_delay #(
      .W(5 + SHC_W + M_W),
      .L(ELAT + 1)
  ) u_cf (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  ({a2_last, a2_live, a2_zero, a2_any, a2_step, a2_shc, a2_m}),
      .q  ({c_last, c_live, c_zero, c_any, c_step, c_shc, c_m})
  );

  // ---- stage D: d = (d >> sh) + P ---------------------------------------------------------
  // An element that raised the integer max (c_step) takes two cycles: the first shifts
  // the sum, d_sh = d >> sh (0: a shift of SUM_W or more), and keeps its P; the second
  // (sh_v, the empty cycle the hold left behind it) adds, d = d_sh + P. Every other
  // unmasked element adds in one cycle, d = d + P (0 + P: the row's first unmasked one).
  // The one-cycle loop is d_reg -> a 2:1 select -> the adder; the shifter is a stage.
  logic [SUM_W-1:0] d_reg, d_sh, d_base, p_up, p_hold, d_nxt;
  logic sh_v, sh_last;
  assign p_up = SUM_W'(p_in) << SUM_UP;
  assign d_base = sh_v ? d_sh : (c_zero ? '0 : d_reg);
  assign d_nxt = d_base + (sh_v ? p_hold : p_up);
  logic row_v, row_any;
  logic signed [M_W-1:0] row_m;
  always_ff @(posedge clk) begin
    d_sh <= c_zero ? '0 : (d_reg >> c_shc);
    p_hold <= p_up;
    sh_last <= c_last;
    if (sh_v || (c_v && c_live && !c_step)) d_reg <= d_nxt;
    if (rst) begin
      sh_v <= 1'b0;
      row_v <= 1'b0;
    end else begin
      sh_v <= c_v && c_step;
      row_v <= (c_v && c_last && !c_step) || (sh_v && sh_last);
    end
    if (c_v & c_last) begin
      row_m <= c_m;
      row_any <= c_any;
    end
  end
`ifndef SYNTHESIS
  always_ff @(posedge clk) begin
    if (!rst && c_v && sh_v) begin
      $error("hwa_softmax_softermax %m: an element reached the sum in a shift's second cycle");
    end
  end
`endif

  // ---- per row: r = 1/d (PWL, no Newton); M travels alongside -----------------------------
  logic r_v;
  logic [R_W-1:0] r_val;
  hwa_recip #(
      .D_W(SUM_W),
      .PIPE(1'b1),
      .MUL_IN_REG(1'b0),
      .D_F(SUM_F),
      .R_W(R_W),
      .R_F(R_F),
      .R_OVF(R_OVF),
      .WF(WF),
      .TB(TB),
      .NEWTON(1'b0),
      .STEPS(0),
      .RND(R_RND),
      .RN_W(RN_W),
      .RP_W(RP_W),
      .TABLE_FILE(RECIP_FILE)
  ) u_recip (
      .clk(clk),
      .rst(rst),
      .in_valid(row_v),
      .d(row_any ? d_reg : ONE),
      .out_valid(r_v),
      .r(r_val)
  );
  logic signed [M_W-1:0] row_m_q;
  hwa_delay #(
      .W(M_W),
      .L(RLAT)
  ) u_mq (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  (row_m),
      .q  (row_m_q)
  );
  assign ctx_v = r_v;
  assign ctx = {row_m_q, r_val};

  // ---- output: P(t - M·2^T_F) * r, stall-all pipeline -----------------------------------
  logic signed [M_W-1:0] o1_m;
  logic [R_W-1:0] o1_r;
  // ce: the output skid buffer's registered ready (hwa_skid, at the end)
  assign {o1_m, o1_r} = o1_ctx;
  // ---- output: t of o1_x (TLAT stages, advancing on ce) -------------------------------------
  logic signed [TX_W-1:0] o_t;
  if (1) begin : g_o_t
    logic signed [PROD_W-1:0] prod;
    logic signed [PRW-1:0] t_sh;
    hwa_mul_pipe #(
        .A_W(IN_W),
        .B_W(LOG2E_W + 1),
        .B_SIGNED(1'b0),
        .P_W(PROD_W)
    ) u_m (
        .clk(clk),
        .en (ce),
        .a  (o1_x),
        .b  ({1'b0, LOG2E_W'(LOG2E)}),
        .p  (prod)
    );
    if (PROD_SHIFT > 0) begin : g_rs
      hwa_round_shift_pipe #(
          .IN_W (PROD_W),
          .SH_W (SW),
          .OUT_W(PRW),
          .MODE (T_RND)
      ) u_t (
          .clk(clk),
          .en (ce),
          .x  (prod),
          .sh (SW'(PROD_SHIFT)),
          .y  (t_sh)
      );
    end else begin : g_ls
      assign t_sh = PRW'(prod) <<< (-PROD_SHIFT);
    end
    logic [TX_W-1:0] t_c;
    hwa_sat #(
        .IN_W      (PRW),
        .OUT_W     (TX_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_t_sat (
        .x(t_sh),
        .y(t_c)
    );
    always_ff @(posedge clk) begin
      if (ce) o_t <= t_c;
    end
  end
  logic signed [A_W-1:0] o2_a;
  logic signed [M_W-1:0] o2_m;
  logic [T_W-1:0] o3_arg;
  always_ff @(posedge clk) begin
    if (ce) begin
      o2_a <= p_a(o_t, o2_m);
      o3_arg <= p_arg(o2_a);
    end
  end
  logic [EXP_W-1:0] p_out;
  hwa_exp_unit #(
      .D_W(T_W),
      .PIPE(1'b1),
      .MUL_IN_REG(1'b0),
      .BASE2(1'b1),
      .EXP_W(EXP_W),
      .EXP_F(EXP_F),
      .EXP_RND(EXP_RND),
      .LOG2E(64'd1),
      .LOG2E_W(2),
      .PROD_SHIFT(0),
      .T_W(T_W),
      .T_F(T_F),
      .T_RND(0),
      .A(A),
      .TABLE_F(TABLE_F),
      .INTERP(1'b1),
      .V_W(V_W),
      .LUT_BITS(1),
      .LIM_BITS(1),
      .LUT_SHIFT(0),
      .TABLE_FILE(POW2_FILE)
  ) u_p_out (
      .clk(clk),
      .en (ce),
      .d  (o3_arg),
      .e  (p_out)
  );
  // the row's M alongside t (TLAT), r and the flags to P (TLAT + 1 + ELAT)
  hwa_delay #(
      .W(M_W),
      .L(TLAT)
  ) u_om (
      .clk(clk),
      .rst(1'b0),
      .en (ce),
      .d  (o1_m),
      .q  (o2_m)
  );
  localparam int PLAT = TLAT + 2 + ELAT;
  logic o3_v, o3_l, o3_mask, o4_v, o4_l, o4_mask;
  logic [R_W-1:0] o3_r;
  hwa_delay #(
      .W(1),
      .L(PLAT)
  ) u_ov (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  (o1_v),
      .q  (o3_v)
  );
  hwa_delay #(
      .W(2 + R_W),
      .L(PLAT)
  ) u_of (
      .clk(clk),
      .rst(1'b0),
      .en (ce),
      .d  ({o1_l, o1_mask, o1_r}),
      .q  ({o3_l, o3_mask, o3_r})
  );
  // P·r (hwa_mul_pipe) and its rounding (hwa_round_shift_pipe): OLAT stages
  localparam int YW = OUTP_W + ((OUT_SHIFT < 0) ? -OUT_SHIFT : 0) + 2;
  logic signed [YW-1:0] pr, pr_r;
  logic [OUT_W-1:0] y_c;
  hwa_mul_pipe #(
      .A_W(EXP_W + 1),
      .B_W(R_W),
      .B_SIGNED(1'b0),
      .P_W(YW)
  ) u_pr (
      .clk(clk),
      .en (ce),
      .a  ($signed({1'b0, p_out})),
      .b  (o3_r),
      .p  (pr)
  );
  if (OUT_SHIFT > 0) begin : g_rs
    hwa_round_shift_pipe #(
        .IN_W (YW),
        .SH_W (SW),
        .OUT_W(YW),
        .MODE (OUT_RND)
    ) u_out (
        .clk(clk),
        .en (ce),
        .x  (pr),
        .sh (SW'(OUT_SHIFT)),
        .y  (pr_r)
    );
  end else begin : g_ls
    assign pr_r = pr <<< (-OUT_SHIFT);
  end
  hwa_delay #(
      .W(1),
      .L(OLAT)
  ) u_o4v (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  (o3_v),
      .q  (o4_v)
  );
  hwa_delay #(
      .W(2),
      .L(OLAT)
  ) u_o4f (
      .clk(clk),
      .rst(1'b0),
      .en (ce),
      .d  ({o3_l, o3_mask}),
      .q  ({o4_l, o4_mask})
  );
  hwa_sat #(
      .IN_W      (YW),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_sat (
      .x(pr_r),
      .y(y_c)
  );
  if (OUT_CODE != 0 && (OUT_CODE > 2 || CODE_NW != OUT_W || CODE_BITS < 2 || CODE_BITS > 8
                        || CODE_ZERO != (1 << CODE_BITS) - 1)) begin : g_bad_code
    $error("hwa_softmax_softermax %m: invalid OUT_CODE=%0d (0..2) CODE_NW=%0d (= OUT_W=%0d) CODE_BITS=%0d (2..8) CODE_ZERO=%0d (2^CODE_BITS - 1)",
           OUT_CODE, CODE_NW, OUT_W, CODE_BITS, CODE_ZERO);
  end
  logic [OUT_W-1:0] y_z;
  assign y_z = o4_mask ? '0 : y_c;  // a masked element outputs 0
  // the output register, or (OUT_CODE) one more and the log code: one cycle more
  localparam int OW = OUT_CODE != 0 ? CODE_BITS : OUT_W;
  logic o_v, o_l;
  logic [OW-1:0] o_y;
  hwa_out_code #(
      .W(OUT_W),
      .SIGNED(OUT_SIGNED),
      .F(CODE_F),
      .FORM(OUT_CODE),
      .BITS(CODE_BITS),
      .C12(CODE_C12),
      .C14(CODE_C14),
      .C34(CODE_C34)
  ) u_out (
      .clk  (clk),
      .rst  (rst),
      .ce   (ce),
      .in_v (o4_v),
      .in_l (o4_l),
      .in_y (y_z),
      .out_v(o_v),
      .out_l(o_l),
      .out_y(o_y)
  );
  // output register -> skid buffer -> m_axis (ce: its registered ready)
  hwa_skid #(
      .W(OW)
  ) u_skid (
      .clk(clk),
      .rst(rst),
      .in_v(o_v),
      .in_l(o_l),
      .in_d(o_y),
      .ce(ce),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast)
  );

endmodule
`default_nettype wire
