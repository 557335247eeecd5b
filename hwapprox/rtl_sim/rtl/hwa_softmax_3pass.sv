// hwa_softmax_3pass -- the three-pass row pipeline of the integer softmaxes whose
// exponent needs the row max and whose normalisation needs the whole sum (I-ViT
// Shiftmax: hwa_softmax_shiftmax; I-BERT IntSoftmax: hwa_softmax_ibert):
//   pass 1 (ingest into row buffer A): the element registered, m = max of the unmasked x;
//   pass 2 (A re-read into row buffer B): the read registered, then p2_diff = x - m
//       registered (masked: 0), e = EXP(p2_diff) by the parent's pipeline (p2_e comes
//       EXP_LAT p2_en cycles after p2_diff; masked: 0), S = sum of e as it enters B;
//   per row: total = max(S, 1) (CLAMP: S clamped at 2^NUM_W - 1 first) registered, then
//       factor = floor(NUMERATOR / total) (hwa_udiv, NUM_W pipelined stages);
//   pass 3 (B re-read): the read registered, e * factor as DSP-sized partial products
//       (hwa_mul_pipe with operand registers, 4 stages; on ECP5 the MULT18X18D's own
//       input and output registers), y = sat((e * factor) >> OUT_SHIFT, OUT_OVF); masked: 0.
// Pass 2 is a stall-all pipeline (enable: B accepts or its input register is empty),
// pass 3 one on the output skid buffer's registered ready (issue 22: no stage holds
// more than one narrow operation after a block-RAM read).
// One element per cycle in and out back to back; a row passes both buffers, so its
// last output comes 2N + a constant after its last input (the parent states it).
// Buffer A: BUF_DEPTH {mask, x} words; buffer B: the power of two >= BUF_DEPTH + 64
// {mask, e} words and 2·ROWQ rows (it also covers the divider's latency). Rows longer
// than ROW_MAX are dropped with a row_err pulse.
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_softmax_3pass #(
    parameter int IN_W,
    parameter int OUT_W,
    parameter bit OUT_SIGNED,
    parameter int OUT_OVF,
    parameter int OUT_SHIFT,
    parameter int ROW_MAX,
    parameter int BUF_DEPTH,
    parameter int ROWQ,
    parameter int N_BITS,
    parameter int DIFF_W,
    parameter int E_W,
    parameter int EXP_LAT,
    parameter int SUM_W,
    parameter int NUM_W,
    parameter bit NUM_ONES,
    parameter bit CLAMP,
    parameter int FACTOR_W,
    parameter int PROD_W,
    parameter int OUT_CODE,
    parameter int CODE_BITS,
    parameter int CODE_F,
    parameter longint CODE_C12,
    parameter longint CODE_C14,
    parameter longint CODE_C34
) (
    input  logic                     clk,
    input  logic                     rst,
    input  logic [IN_W-1:0]          s_axis_tdata,
    input  logic                     s_axis_tvalid,
    output logic                     s_axis_tready,
    input  logic                     s_axis_tlast,
    input  logic                     s_axis_tuser,
    output logic [(OUT_CODE != 0 ? CODE_BITS : OUT_W)-1:0] m_axis_tdata,
    output logic                     m_axis_tvalid,
    input  logic                     m_axis_tready,
    output logic                     m_axis_tlast,
    output logic                     row_err,
    // pass 2: the exponent of x - m by the parent's pipeline (EXP_LAT stages, enable p2_en)
    output logic                     p2_en,
    output logic signed [DIFF_W-1:0] p2_diff,
    input  logic        [E_W-1:0]    p2_e
);

  localparam int BUF_B = 1 << $clog2(BUF_DEPTH + 64);
  localparam int PW = E_W + FACTOR_W;

  if (IN_W < 2 || IN_W > 31 || OUT_W < 1 || OUT_W > 40 || FACTOR_W > NUM_W || NUM_W > 62
      || SUM_W > 62 || DIFF_W != IN_W + 1 || OUT_SHIFT < 0 || PROD_W > PW || EXP_LAT < 1)
  begin : g_bad
    $error("hwa_softmax_3pass %m: invalid IN_W=%0d OUT_W=%0d NUM_W=%0d FACTOR_W=%0d SUM_W=%0d DIFF_W=%0d OUT_SHIFT=%0d PROD_W=%0d",
           IN_W, OUT_W, NUM_W, FACTOR_W, SUM_W, DIFF_W, OUT_SHIFT, PROD_W);
  end

  // ---- pass 1: row buffer A, the max of the unmasked elements ---------------------------
  logic a_in_v, a_in_first, a_in_last, a_ctx_v, a_ce, a_rd, a_o1_v, a_o1_l;
  logic [IN_W:0] a_in_w, a_o1_w;
  logic [N_BITS-1:0] a_in_n, a_o1_n, a_rd_idx;
  logic [IN_W:0] a_ctx, a_o1_ctx;  // {any unmasked, max}
  hwa_row_stream #(
      .IN_W(IN_W + 1),
      .CTX_W(IN_W + 1),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_DEPTH),
      .ROWQ(ROWQ),
      .N_BITS(N_BITS)
  ) u_rows_a (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata({s_axis_tuser, s_axis_tdata}),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tready(s_axis_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_hold(1'b0),
      .in_v(a_in_v),
      .in_x(a_in_w),
      .in_first(a_in_first),
      .in_last(a_in_last),
      .in_n(a_in_n),
      .ctx_v(a_ctx_v),
      .ctx(a_ctx),
      .ce(a_ce),
      .rd_issue(a_rd),
      .rd_idx(a_rd_idx),
      .o1_v(a_o1_v),
      .o1_l(a_o1_l),
      .o1_x(a_o1_w),
      .o1_ctx(a_o1_ctx),
      .o1_n(a_o1_n),
      .row_err(row_err)
  );
  // the accepted element registered first (the max loop starts at a local register)
  logic i1_v, i1_first, i1_last;
  logic [IN_W:0] i1_w;
  always_ff @(posedge clk) begin
    if (rst) i1_v <= 1'b0;
    else i1_v <= a_in_v;
    if (a_in_v) begin
      i1_w <= a_in_w;
      i1_first <= a_in_first;
      i1_last <= a_in_last;
    end
  end
  logic signed [IN_W-1:0] x_in, m_reg, m_nxt;
  logic live, seen_reg, seen_prev, any_nxt;
  assign x_in = i1_w[IN_W-1:0];
  assign live = !i1_w[IN_W];
  assign seen_prev = !i1_first && seen_reg;
  assign m_nxt = (live && (!seen_prev || x_in > m_reg)) ? x_in : m_reg;
  assign any_nxt = seen_prev || live;
  always_ff @(posedge clk) begin
    if (i1_v) begin
      m_reg <= m_nxt;
      seen_reg <= any_nxt;
    end
    if (rst) a_ctx_v <= 1'b0;
    else a_ctx_v <= i1_v && i1_last;
    if (i1_v && i1_last) a_ctx <= {any_nxt, m_nxt};
  end

  // ---- pass 2: A's read registered, x - m registered, EXP by the parent, into B -------
  // a stall-all pipeline: it advances while B takes its input or that register is empty
  logic b_s_valid, b_s_ready, b_s_last, b_s_mask;
  logic [E_W-1:0] b_s_e;
  logic p_en;
  assign p_en = ~b_s_valid | b_s_ready;
  assign a_ce = p_en;
  assign p2_en = p_en;
  logic r0_v, r0_l, r0_mask, r1_v, r1_l, r1_mask;
  logic signed [IN_W-1:0] r0_x, r0_m;
  always_ff @(posedge clk) begin
    if (rst) begin
      r0_v <= 1'b0;
      r1_v <= 1'b0;
    end else if (p_en) begin
      r0_v <= a_o1_v;
      r1_v <= r0_v;
    end
    if (p_en) begin
      r0_l <= a_o1_l;
      {r0_mask, r0_x} <= a_o1_w;
      r0_m <= a_o1_ctx[IN_W-1:0];
      r1_l <= r0_l;
      r1_mask <= r0_mask;
      p2_diff <= r0_mask ? '0 : DIFF_W'(r0_x) - DIFF_W'(r0_m);  // <= 0 for unmasked
    end
  end
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_a;  // A's length/position outputs and the any flag: not needed here
  assign unused_a = ^{a_in_n, a_o1_n, a_rd_idx, a_rd, a_o1_ctx[IN_W]};
  /* verilator lint_on UNUSEDSIGNAL */
  // valid, last and mask beside the parent's EXP_LAT stages
  logic [EXP_LAT-1:0] d_v, d_l, d_mask;
  always_ff @(posedge clk) begin
    if (rst) d_v <= '0;
    else if (p_en) d_v <= EXP_LAT'({d_v, r1_v});
    if (p_en) begin
      d_l <= EXP_LAT'({d_l, r1_l});
      d_mask <= EXP_LAT'({d_mask, r1_mask});
    end
  end
  always_ff @(posedge clk) begin
    if (rst) b_s_valid <= 1'b0;
    else if (p_en) b_s_valid <= d_v[EXP_LAT-1];
    if (p_en) begin
      b_s_last <= d_l[EXP_LAT-1];
      b_s_mask <= d_mask[EXP_LAT-1];
      b_s_e <= d_mask[EXP_LAT-1] ? '0 : p2_e;
    end
  end

  // ---- row buffer B: the sum while e enters, then the per-row factor -----------------------
  logic b_in_v, b_in_first, b_in_last, b_ctx_v, b_ce, b_rd, b_o1_v, b_o1_l;
  logic [E_W:0] b_in_w, b_o1_w;
  logic [N_BITS-1:0] b_in_n, b_o1_n, b_rd_idx;
  logic [FACTOR_W-1:0] b_ctx, b_o1_ctx;
  /* verilator lint_off UNUSEDSIGNAL */
  logic b_err;  // B never sees a row longer than ROW_MAX (A dropped those)
  /* verilator lint_on UNUSEDSIGNAL */
  hwa_row_stream #(
      .IN_W(E_W + 1),
      .CTX_W(FACTOR_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_B),
      .ROWQ(2 * ROWQ),  // rows wait here through the divider too
      .N_BITS(N_BITS)
  ) u_rows_b (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata({b_s_mask, b_s_e}),
      .s_axis_tvalid(b_s_valid),
      .s_axis_tready(b_s_ready),
      .s_axis_tlast(b_s_last),
      .s_hold(1'b0),
      .in_v(b_in_v),
      .in_x(b_in_w),
      .in_first(b_in_first),
      .in_last(b_in_last),
      .in_n(b_in_n),
      .ctx_v(b_ctx_v),
      .ctx(b_ctx),
      .ce(b_ce),
      .rd_issue(b_rd),
      .rd_idx(b_rd_idx),
      .o1_v(b_o1_v),
      .o1_l(b_o1_l),
      .o1_x(b_o1_w),
      .o1_ctx(b_o1_ctx),
      .o1_n(b_o1_n),
      .row_err(b_err)
  );
  logic [SUM_W-1:0] sum_reg, sum_nxt;
  assign sum_nxt = (b_in_first ? '0 : sum_reg) + SUM_W'(b_in_w[E_W-1:0]);  // masked e = 0
  always_ff @(posedge clk) begin
    if (b_in_v) sum_reg <= sum_nxt;
  end
  // total = max(S, 1) (CLAMP: max(min(S, 2^(NUM_W) - 1), 1)), then NUMERATOR / total;
  // NUMERATOR = NUM_ONES ? 2^NUM_W - 1 : 2^(NUM_W - 1)
  localparam logic [NUM_W-1:0] NUMERATOR = NUM_ONES ? {NUM_W{1'b1}} : (NUM_W'(1) << (NUM_W - 1));
  localparam logic [NUM_W-1:0] SUM_CAP = {NUM_W{1'b1}};
  // the row's sum registered at its last element, then total registered: the divider's
  // input comes from a register
  logic s_p, t_p;
  logic [SUM_W-1:0] s_reg;
  logic [NUM_W-1:0] total, t_reg;
  always_comb begin
    if (CLAMP && 64'(s_reg) >= 64'(SUM_CAP)) total = SUM_CAP;
    else if (s_reg == '0) total = NUM_W'(1);
    else total = NUM_W'(s_reg);
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      s_p <= 1'b0;
      t_p <= 1'b0;
    end else begin
      s_p <= b_in_v && b_in_last;
      t_p <= s_p;
    end
    if (b_in_v && b_in_last) s_reg <= sum_nxt;
    if (s_p) t_reg <= total;
  end
  logic [FACTOR_W-1:0] factor;
  logic dv_p, dv_v;
  logic [NUM_W-1:0] dv_ok;  // divider stages filled since reset
  hwa_udiv #(
      .N_W(NUM_W),
      .D_W(NUM_W),
      .Q_W(FACTOR_W),
      .P_W(1)
  ) u_div (
      .clk  (clk),
      .en   (1'b1),
      .n    (NUMERATOR),
      .d    (t_reg),
      .p_in (t_p),
      .q    (factor),
      .p_out(dv_p)
  );
  always_ff @(posedge clk) begin
    if (rst) dv_ok <= '0;
    else dv_ok <= {dv_ok[NUM_W-2:0], 1'b1};
  end
  assign dv_v = dv_p && dv_ok[NUM_W-1];
  assign b_ctx_v = dv_v;
  assign b_ctx = factor;
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_b;
  assign unused_b = ^{b_in_n, b_o1_n, b_rd_idx, b_rd, b_in_last, b_in_w[E_W]};
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- pass 3: B's read registered, e * factor (3 stages), y = sat(... >> OUT_SHIFT) --
  // a stall-all pipeline on b_ce (the output skid buffer's registered ready)
  localparam int MUL_LAT = 4;  // hwa_mul_pipe, IN_REG
  logic q0_v, q0_l, q0_mask;
  logic [E_W-1:0] q0_e;
  logic [FACTOR_W-1:0] q0_f;
  always_ff @(posedge clk) begin
    if (rst) q0_v <= 1'b0;
    else if (b_ce) q0_v <= b_o1_v;
    if (b_ce) begin
      q0_l <= b_o1_l;
      {q0_mask, q0_e} <= b_o1_w;
      q0_f <= b_o1_ctx;
    end
  end
  logic signed [PROD_W-1:0] prod;  // e * factor <= NUMERATOR (e <= S): PROD_W bits
  hwa_mul_pipe #(
      .A_W(E_W + 1),
      .B_W(FACTOR_W),
      .B_SIGNED(1'b0),
      .P_W(PROD_W),
      .IN_REG(1'b1)
  ) u_mul (
      .clk(clk),
      .en (b_ce),
      .a  ($signed({1'b0, q0_e})),
      .b  (q0_f),
      .p  (prod)
  );
  logic [MUL_LAT-1:0] m_v, m_l, m_mask;
  always_ff @(posedge clk) begin
    if (rst) m_v <= '0;
    else if (b_ce) m_v <= MUL_LAT'({m_v, q0_v});
    if (b_ce) begin
      m_l <= MUL_LAT'({m_l, q0_l});
      m_mask <= MUL_LAT'({m_mask, q0_mask});
    end
  end
  logic [PROD_W-1:0] ysh;
  logic [OUT_W-1:0] y_c;
  assign ysh = PROD_W'(prod) >> OUT_SHIFT;
  hwa_sat #(
      .IN_W      (PROD_W + 1),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_sat (
      .x($signed({1'b0, ysh})),
      .y(y_c)
  );
  // b_ce: the output skid buffer's registered ready (hwa_skid, at the end)
  logic [OUT_W-1:0] y_z;
  assign y_z = m_mask[MUL_LAT-1] ? '0 : y_c;  // a masked element outputs 0
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
      .ce   (b_ce),
      .in_v (m_v[MUL_LAT-1]),
      .in_l (m_l[MUL_LAT-1]),
      .in_y (y_z),
      .out_v(o_v),
      .out_l(o_l),
      .out_y(o_y)
  );
  // output register -> skid buffer -> m_axis (b_ce: its registered ready)
  hwa_skid #(
      .W(OW)
  ) u_skid (
      .clk(clk),
      .rst(rst),
      .in_v(o_v),
      .in_l(o_l),
      .in_d(o_y),
      .ce(b_ce),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast)
  );

endmodule
`default_nettype wire
