// hwa_layernorm_ivit -- I-ViT IntLayerNorm (hwapprox.approx.layernorm.IVitLayerNorm),
// bit-exact, one pass over the row.
//
// Per row of 1 <= n <= ROW_MAX signed input codes X (s_axis, tlast on the last):
//   ingest (as the row streams in): S1 = sum X, S2 = sum X^2, n;
//   per row (hwa_ln_int_stats, then the Newton chain, rows pipelined):
//     mean = round(S1 / n) ties to even; var0 = sum (X - mean)^2 = S2 - mean*(2*S1 -
//     n*mean) (exact: the model's sum of squares, from the moments);
//     sqrtn = round(sqrt(n) * 2^SQRTN_F);
//     I-ViT's square root, defect included: k = NEWTON_K0, then NEWTON_ITERS times
//     k = (k + var0 / k) >> 1 (the first divide by NEWTON_K0 = 2^16 is a shift, the
//     other NEWTON_ITERS - 1 are hwa_udiv_iter units in a chain, one row each at a time);
//     factor = FACTOR_NUM / k (hwa_udiv_iter);
//   pass 2 (on the way out, hwa_ln_int_out): y = X - mean, y_int = (y*factor) >>> 1,
//     Z = round_half_up(y_int * sqrtn / 2^ZSHIFT), acc = Z*gamma_i + (beta_i <<
//     BETA_SHIFT), out = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF).
// gamma_i/beta_i come from a memory written through cfg_* (one word per cycle; addresses
// >= ROW_MAX are ignored).
//
// Throughput: every per-row unit takes a row every II = 16 cycles or faster (its
// quotient/root bits per cycle are chosen for that), so back-to-back rows of n >= 16
// lose no cycle; shorter rows wait for the per-row chain (the input stalls, nothing is
// lost). The row buffer and row queue are sized for the per-row latency: BUF_DEPTH +
// C_MAX codes (a power of 2) and ROWQ + C_MAX / II + 1 rows (a power of 2).
// Pipelining (issue 22, ECP5 at 125 MHz): every division and root takes one bit per
// cycle (hwa_udiv_rr / hwa_isqrt_rr: copies taken in turn keep one row per II), which
// costs each Newton division Q_W + 1 cycles (12 before), the factor FACTOR_W + 1 (12
// before), the statistics' sqrt(n) 22 (12 before); hwa_ln_int_out's products have
// their own stages (16 stages, 5 before), the buffered code is registered before
// y = X - mean (1 stage); the ingest square is a registered multiply
// two stages behind the input; the statistics (hwa_ln_int_stats) take a row into a
// register and give it out of one, neither with a ready path through it (2 stages),
// its mean*t with operand registers of its own (1 stage), its n*mean too (3 stages).
// Latency (last input -> last output): n + C + 20, C the per-row chain (measured at
// the defaults, NEWTON_ITERS = 10: n + 297 at n = 64, n + 146 before issue 22's stages --
// the nine dependent divisions of I-ViT's fixed Newton iteration make n + 16 impossible
// for this method).
// Rows longer than ROW_MAX are dropped (consumed up to tlast, nothing output) and
// row_err pulses for one cycle (hwa_row_stream). Preconditions: signed input codes.
// Parameter defaults: the default IVitLayerNorm spec's hw_params(64) with
// row_stream_params(64) (tests/test_rtl_lint.py checks them).
`default_nettype none
module hwa_layernorm_ivit #(
    parameter int IN_W = 16,
    parameter int X_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int OUT_SHIFT = 16,
    parameter int GAMMA_W = 16,
    parameter int BETA_W = 16,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 8,
    parameter int SQRTN_F = 16,
    parameter int ZSHIFT = 28,
    parameter int BETA_SHIFT = 18,
    parameter int S1_W = 22,
    parameter int S2_W = 37,
    parameter int MOM_W = 39,
    parameter int YC_W = 17,
    parameter int VAR0_W = 38,
    parameter int STD_W = 22,
    parameter int FACTOR_W = 31,
    parameter int YF_W = 34,
    parameter int YI_W = 33,
    parameter int SQRTN_W = 20,
    parameter int YQ_W = 52,
    parameter int Z_W = 24,
    parameter int ACC_W = 41,
    parameter int NEWTON_ITERS = 10,
    parameter int NEWTON_K0 = 65536,
    parameter int FACTOR_NUM = 2147483647,
    parameter int K_W = 22,
    parameter int Q_W = 22,
    parameter int KS_W = 23
) (
    input  logic                                             clk,
    input  logic                                             rst,
    input  logic [IN_W-1:0]                                  s_axis_tdata,
    input  logic                                             s_axis_tvalid,
    output logic                                             s_axis_tready,
    input  logic                                             s_axis_tlast,
    output logic [OUT_W-1:0]                                 m_axis_tdata,
    output logic                                             m_axis_tvalid,
    input  logic                                             m_axis_tready,
    output logic                                             m_axis_tlast,
    input  logic                                             cfg_we,
    input  logic [((ROW_MAX > 1) ? $clog2(ROW_MAX) : 1)-1:0] cfg_addr,
    input  logic [GAMMA_W-1:0]                               cfg_gamma,
    input  logic [BETA_W-1:0]                                cfg_beta,
    output logic                                             row_err
);

  localparam int II = 16;  // cycles per row of every per-row unit (rows of >= 16)
  // per-row latency bound (issue 22: one quotient / root bit per cycle, hwa_udiv_rr and
  // hwa_isqrt_rr): the statistics (sqrt(n): RBN + 1 cycles, then 7 stages), each Newton
  // division Q_W + 1 cycles and the next k, the factor FACTOR_W + 1, and some slack
  localparam int RBN = (N_BITS + 2 * SQRTN_F + 3) / 2;
  localparam int C_MAX = RBN + 8 + (NEWTON_ITERS - 1) * (Q_W + 2) + FACTOR_W + 2 + 8;
  localparam int BUF_U = 1 << $clog2(BUF_DEPTH + C_MAX);
  localparam int ROWQ_U = 1 << $clog2(ROWQ + C_MAX / II + 1);
  localparam int K0_SH = $clog2(NEWTON_K0);
  localparam int NDIV = NEWTON_ITERS - 1;  // Newton steps that divide
  localparam int GAW = (ROW_MAX > 1) ? $clog2(ROW_MAX) : 1;
  localparam int CTX_W = X_W + FACTOR_W + SQRTN_W;
  localparam int FN_W = 32;  // FACTOR_NUM < 2^31

  // ---- parameter checks ---------------------------------------------------------------
  if (IN_W < 2 || IN_W > 32 || X_W != IN_W || OUT_W < 1 || OUT_W > 32 || ROW_MAX < 1
      || (1 << N_BITS) <= ROW_MAX || S1_W < X_W || YC_W < X_W) begin : g_bad_w
    $error("hwa_layernorm_ivit %m: invalid IN_W=%0d X_W=%0d (signed input: = IN_W) OUT_W=%0d ROW_MAX=%0d N_BITS=%0d S1_W=%0d YC_W=%0d",
           IN_W, X_W, OUT_W, ROW_MAX, N_BITS, S1_W, YC_W);
  end
  if (NEWTON_ITERS < 1 || NEWTON_ITERS > 16 || (1 << K0_SH) != NEWTON_K0 || K_W < K0_SH + 1
      || KS_W < K_W || STD_W != K_W || FACTOR_NUM < 1 || FACTOR_W > 31) begin : g_bad_n
    $error("hwa_layernorm_ivit %m: invalid NEWTON_ITERS=%0d (1..16) NEWTON_K0=%0d (a power of 2) K_W=%0d KS_W=%0d STD_W=%0d (= K_W) FACTOR_NUM=%0d FACTOR_W=%0d",
           NEWTON_ITERS, NEWTON_K0, K_W, KS_W, STD_W, FACTOR_NUM, FACTOR_W);
  end

  // ---- row buffer, row queue, output sequencer ------------------------------------------
  logic in_v, in_first, in_last, ctx_v, ce, rd_issue, o1_v, o1_l;
  logic [IN_W-1:0] in_x, o1_x;
  logic [N_BITS-1:0] in_n, rd_idx, o1_n;
  logic [CTX_W-1:0] ctx, o1_ctx;
  logic s_hold;  // the input is never held
  assign s_hold = 1'b0;
  hwa_row_stream #(
      .IN_W(IN_W),
      .CTX_W(CTX_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_U),
      .ROWQ(ROWQ_U),
      .N_BITS(N_BITS)
  ) u_rows (.*);  // every port: the signal of the same name
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_rows;  // rd_idx: only its low GAW bits address gamma/beta
  assign unused_rows = ^{rd_issue, rd_idx, o1_n};
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- ingest: S1, S2 ---------------------------------------------------------------------
  logic signed [S1_W-1:0] s1_reg, s1_nxt;
  logic [S2_W-1:0] s2_reg, s2_nxt;
  // two stages behind the input (issue 22): i1 the accepted element registered, i2 its
  // square (a registered multiply), then the sums
  logic i1_v, i1_first, i1_last, i2_v, i2_first, i2_last;
  logic signed [IN_W-1:0] i1_x, i2_x;
  logic [N_BITS-1:0] i1_n, i2_n;
  logic signed [2*IN_W-1:0] i2_sq;
  always_ff @(posedge clk) begin
    if (rst) begin
      i1_v <= 1'b0;
      i2_v <= 1'b0;
    end else begin
      i1_v <= in_v;
      i2_v <= i1_v;
    end
    i1_x <= in_x;
    i1_first <= in_first;
    i1_last <= in_last;
    i1_n <= in_n;
    i2_x <= i1_x;
    i2_first <= i1_first;
    i2_last <= i1_last;
    i2_n <= i1_n;
    i2_sq <= i1_x * i1_x;
  end
  assign s1_nxt = (i2_first ? '0 : s1_reg) + S1_W'(i2_x);
  assign s2_nxt = (i2_first ? '0 : s2_reg) + S2_W'(i2_sq);
  always_ff @(posedge clk) begin
    if (i2_v) begin
      s1_reg <= s1_nxt;
      s2_reg <= s2_nxt;
    end
  end

  // ---- per row: statistics ------------------------------------------------------------------
  // at most ROWQ_U rows are between their last input and their last output (the row
  // stream stalls the input), so the FIFO of row sums never overflows
  logic f_v, f_rdy;
  logic signed [S1_W-1:0] f_s1;
  logic [S2_W-1:0] f_s2;
  logic [N_BITS-1:0] f_n;
  hwa_fifo #(
      .W(S1_W + S2_W + N_BITS),
      .DEPTH(ROWQ_U)
  ) u_sums (
      .clk(clk),
      .rst(rst),
      .in_v(i2_v & i2_last),
      .in_d({s1_nxt, s2_nxt, i2_n}),
      .out_v(f_v),
      .out_rdy(f_rdy),
      .out_d({f_s1, f_s2, f_n})
  );
  logic st_v;
  logic signed [X_W-1:0] st_mean;
  logic [VAR0_W-1:0] st_var0;
  logic [SQRTN_W-1:0] st_sqrtn;
  logic unused_stp;
  logic nrdy[NDIV+1];
  hwa_ln_int_stats #(
      .X_W(X_W),
      .N_BITS(N_BITS),
      .S1_W(S1_W),
      .S2_W(S2_W),
      .MOM_W(MOM_W),
      .VAR0_W(VAR0_W),
      .SQRTN_F(SQRTN_F),
      .SQRTN_W(SQRTN_W),
      .II(II),
      .P_W(1)
  ) u_stats (
      .clk(clk),
      .rst(rst),
      .in_v(f_v),
      .in_rdy(f_rdy),
      .s1(f_s1),
      .s2(f_s2),
      .n(f_n),
      .p_in(1'b0),
      .out_v(st_v),
      .out_rdy(nrdy[0]),
      .mean(st_mean),
      .var0(st_var0),
      .sqrtn(st_sqrtn),
      .p_out(unused_stp)
  );

  // ---- I-ViT's Newton iteration: k_1 = (K0 + var0 >> K0_SH) >> 1, then NDIV dividers -----
  logic nv[NDIV+1];
  logic [VAR0_W-1:0] nvar[NDIV+1];
  logic [K_W-1:0] nk[NDIV+1];
  logic signed [X_W-1:0] nmean[NDIV+1];
  logic [SQRTN_W-1:0] nsq[NDIV+1];
  assign nv[0] = st_v;
  assign nvar[0] = st_var0;
  assign nk[0] = K_W'((KS_W'(NEWTON_K0) + KS_W'(st_var0 >> K0_SH)) >> 1);
  assign nmean[0] = st_mean;
  assign nsq[0] = st_sqrtn;
  for (genvar i = 0; i < NDIV; i++) begin : g_newton
    logic [Q_W-1:0] q;
    logic [K_W-1:0] k_p;
    /* verilator lint_off UNUSEDSIGNAL */
    logic [K_W-1:0] r;  // the remainder: not needed
    /* verilator lint_on UNUSEDSIGNAL */
    hwa_udiv_rr #(
        .N_W(VAR0_W),
        .D_W(K_W),
        .Q_W(Q_W),
        .II (II),
        .P_W(VAR0_W + K_W + X_W + SQRTN_W)
    ) u_div (
        .clk(clk),
        .rst(rst),
        .in_v(nv[i]),
        .in_rdy(nrdy[i]),
        .n(nvar[i]),
        .d(nk[i]),
        .p_in({nvar[i], nk[i], nmean[i], nsq[i]}),
        .out_v(nv[i+1]),
        .out_rdy(nrdy[i+1]),
        .q(q),
        .r(r),
        .p_out({nvar[i+1], k_p, nmean[i+1], nsq[i+1]})
    );
    assign nk[i+1] = K_W'((KS_W'(k_p) + KS_W'(q)) >> 1);
  end

  // ---- factor = FACTOR_NUM / std -> the row queue -----------------------------------------
  logic [FACTOR_W-1:0] factor;
  logic signed [X_W-1:0] f_mean;
  logic [SQRTN_W-1:0] f_sqrtn;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [STD_W-1:0] f_r;  // the remainder: not needed
  logic [VAR0_W-1:0] unused_var;
  /* verilator lint_on UNUSEDSIGNAL */
  assign unused_var = nvar[NDIV];
  hwa_udiv_rr #(
      .N_W(FN_W),
      .D_W(STD_W),
      .Q_W(FACTOR_W),
      .II (II),
      .P_W(X_W + SQRTN_W)
  ) u_factor (
      .clk(clk),
      .rst(rst),
      .in_v(nv[NDIV]),
      .in_rdy(nrdy[NDIV]),
      .n(FN_W'(FACTOR_NUM)),
      .d(STD_W'(nk[NDIV])),
      .p_in({nmean[NDIV], nsq[NDIV]}),
      .out_v(ctx_v),
      .out_rdy(1'b1),  // the row queue has room for every row that ended
      .q(factor),
      .r(f_r),
      .p_out({f_mean, f_sqrtn})
  );
  assign ctx = {f_mean, factor, f_sqrtn};

  // ---- output side: y = X - mean, then hwa_ln_int_out (stall-all, enable ce) -------------
  // ce: the output skid buffer's registered ready (hwa_skid, at the end)
  logic [GAMMA_W-1:0] gamma_mem[ROW_MAX];
  logic [BETA_W-1:0] beta_mem[ROW_MAX];
  always_ff @(posedge clk) begin
    if (cfg_we && 32'(cfg_addr) < ROW_MAX) begin
      gamma_mem[cfg_addr] <= cfg_gamma;
      beta_mem[cfg_addr] <= cfg_beta;
    end
  end
  logic signed [GAMMA_W-1:0] o1_g;
  logic signed [BETA_W-1:0] o1_b;
  always_ff @(posedge clk) begin
    if (ce) begin
      o1_g <= gamma_mem[GAW'(rd_idx)];
      o1_b <= beta_mem[GAW'(rd_idx)];
    end
  end
  logic signed [X_W-1:0] o1_mean, o1_xs;
  logic [FACTOR_W-1:0] o1_factor;
  logic [SQRTN_W-1:0] o1_sqrtn;
  logic signed [YC_W-1:0] o1_y;
  assign {o1_mean, o1_factor, o1_sqrtn} = o1_ctx;
  assign o1_xs = o1_x;
  // ob: the buffered code (a block RAM read at this depth: ~6 ns clock to out) and the
  // row's context registered before y = X - mean (issue 22)
  logic ob_v, ob_l;
  logic signed [X_W-1:0] ob_x, ob_mean;
  logic [FACTOR_W-1:0] ob_factor;
  logic [SQRTN_W-1:0] ob_sqrtn;
  logic signed [GAMMA_W-1:0] ob_g;
  logic signed [BETA_W-1:0] ob_b;
  always_ff @(posedge clk) begin
    if (rst) ob_v <= 1'b0;
    else if (ce) ob_v <= o1_v;
    if (ce) begin
      ob_l <= o1_l;
      ob_x <= o1_xs;
      ob_mean <= o1_mean;
      ob_factor <= o1_factor;
      ob_sqrtn <= o1_sqrtn;
      ob_g <= o1_g;
      ob_b <= o1_b;
    end
  end
  assign o1_y = YC_W'(ob_x) - YC_W'(ob_mean);
  logic o_v, o_l;
  logic [OUT_W-1:0] o_y;
  hwa_ln_int_out #(
      .YC_W(YC_W),
      .FACTOR_W(FACTOR_W),
      .SQRTN_W(SQRTN_W),
      .YF_W(YF_W),
      .YI_W(YI_W),
      .YQ_W(YQ_W),
      .Z_W(Z_W),
      .ACC_W(ACC_W),
      .GAMMA_W(GAMMA_W),
      .BETA_W(BETA_W),
      .ZSHIFT(ZSHIFT),
      .BETA_SHIFT(BETA_SHIFT),
      .OUT_SHIFT(OUT_SHIFT),
      .OUT_W(OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OUT_RND(OUT_RND),
      .OUT_OVF(OUT_OVF)
  ) u_out (
      .clk(clk),
      .rst(rst),
      .ce(ce),
      .in_v(ob_v),
      .in_l(ob_l),
      .y(o1_y),
      .factor(ob_factor),
      .sqrtn(ob_sqrtn),
      .gamma(ob_g),
      .beta(ob_b),
      .m_axis_tdata(o_y),
      .m_axis_tvalid(o_v),
      .m_axis_tlast(o_l)
  );
  // output register -> skid buffer -> m_axis (ce: its registered ready)
  hwa_skid #(
      .W(OUT_W)
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
