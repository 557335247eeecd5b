// hwa_layernorm_ibert -- I-BERT IntLayerNorm (hwapprox.approx.layernorm.IBertLayerNorm),
// bit-exact, two passes over the row through two row buffers.
//
// Per row of 1 <= n <= ROW_MAX signed input codes X (s_axis, tlast on the last):
//   pass 1 (ingest into row buffer A): S1 = sum X, S2 = sum X^2, n; per row
//     (hwa_ln_int_stats): mean = round(S1 / n) ties to even, var0 = sum (X - mean)^2
//     (exact, from the moments), sqrtn = round(sqrt(n) * 2^SQRTN_F); then I-BERT's
//     shift s = max(SHIFT, ceil(log2(sqrt(var0 / 2^VAR_LIMIT_BITS))));
//   pass 2 (A re-read into row buffer B): y = X - mean, var_a = sum floor(y / 2^s)^2
//     and var_b = the same at s + 1 (I-BERT raises s once more when the floors push
//     var_a to 2^VAR_LIMIT_BITS or above; never twice: see the spec's hw_params);
//     per row: var = var_a (or var_b, s + 1), std = isqrt(var) << s (hwa_isqrt_iter:
//     the exact root, which I-BERT's Newton iteration with its stop test equals),
//     factor = 2^FACTOR_NUM_BITS / std (hwa_udiv_iter; 0 when std = 0);
//   pass 3 (B re-read, hwa_ln_int_out): y_int = (y*factor) >>> 1, Z =
//     round_half_up(y_int * sqrtn / 2^ZSHIFT), acc = Z*gamma_i + (beta_i << BETA_SHIFT),
//     out = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF).
// Why two passes: the shifted variance sum floor(y / 2^s)^2 depends on each y's low
// bits, and s on the whole row's variance, so it cannot be gathered while the row
// first streams in; var0 can (from S1, S2), which fixes s before the second pass.
// gamma_i/beta_i come from a memory written through cfg_* (one word per cycle; addresses
// >= ROW_MAX are ignored).
//
// Throughput: one element per cycle in and out back to back (rows of n >= 16: every
// per-row unit takes a row every II = 16 cycles or faster). Buffers: A holds BUF_DEPTH +
// 2*II codes, B BUF_DEPTH + 3*II (powers of 2), each 2 more rows than ROWQ (for the
// per-row latencies). Pipelining (issue 22, ECP5 at 125 MHz): the divisions and roots
// take one bit per cycle (hwa_udiv_rr / hwa_isqrt_rr: copies taken in turn keep one row
// per II; the factor 33 cycles and a register before it, 12 before; the isqrt 17, 9
// before; the statistics' mean and sqrt(n) 17 and 22, 10 and 12 before, the rounded
// mean 3 stages, 1 before); the ingest square is a registered
// multiply two stages behind the input; the shift s from var0 takes 3 stages (1
// before); the second pass is a chain y = X - mean, the shifts, the squares (2 stages
// more); hwa_ln_int_out's products have their own stages (16 stages, 5 before); the
// statistics (hwa_ln_int_stats) take a row into a register and give it out of one,
// neither with a ready path through it (2 stages), and its mean*t has operand
// registers of its own (1 stage), and so has its n*mean (3 stages).
// Latency (last input -> last output): 2n + C (measured at the defaults: 2n + 116 at
// n = 64, 2n + 51 before issue 22's stages; n + 16 is out of
// reach: the second pass needs the mean, the third the variance of the whole row).
// Rows longer than ROW_MAX are dropped (consumed up to tlast, nothing output) and
// row_err pulses for one cycle (hwa_row_stream). Preconditions: signed input codes.
// Parameter defaults: the default IBertLayerNorm spec's hw_params(64) with
// row_stream_params(64) (tests/test_rtl_lint.py checks them).
`default_nettype none
module hwa_layernorm_ibert #(
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
    parameter int STD_W = 20,
    parameter int FACTOR_W = 32,
    parameter int YF_W = 34,
    parameter int YI_W = 33,
    parameter int SQRTN_W = 20,
    parameter int YQ_W = 52,
    parameter int Z_W = 24,
    parameter int ACC_W = 41,
    parameter int SHIFT = 0,
    parameter int VAR_LIMIT_BITS = 32,
    parameter int FACTOR_NUM_BITS = 31,
    parameter int VAR_W = 33,
    parameter int YS_W = 17,
    parameter int ROOT_W = 16
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
  localparam int BUF_A = 1 << $clog2(BUF_DEPTH + 2 * II);
  localparam int BUF_B = 1 << $clog2(BUF_DEPTH + 3 * II);
  localparam int ROWQ_AB = 1 << $clog2(ROWQ + 2);
  localparam int SW = 6;  // s <= max(SHIFT, need) + 1 <= 32
  localparam int GAW = (ROW_MAX > 1) ? $clog2(ROW_MAX) : 1;
  localparam int CTXA_W = X_W + SW + SQRTN_W;
  localparam int CTXB_W = FACTOR_W + SQRTN_W;
  localparam int VB_W = $clog2(VAR0_W + 1);  // bit length of var0

  // ---- parameter checks ---------------------------------------------------------------
  if (IN_W < 2 || IN_W > 32 || X_W != IN_W || OUT_W < 1 || OUT_W > 32 || ROW_MAX < 1
      || (1 << N_BITS) <= ROW_MAX || S1_W < X_W || YC_W < X_W) begin : g_bad_w
    $error("hwa_layernorm_ibert %m: invalid IN_W=%0d X_W=%0d (signed input: = IN_W) OUT_W=%0d ROW_MAX=%0d N_BITS=%0d S1_W=%0d YC_W=%0d",
           IN_W, X_W, OUT_W, ROW_MAX, N_BITS, S1_W, YC_W);
  end
  if (SHIFT < 0 || SHIFT > 31 || VAR_LIMIT_BITS < 2 || VAR_LIMIT_BITS > 62 || VAR_W < 1
      || ROOT_W != (VAR_LIMIT_BITS + 1) / 2 || YS_W > YC_W || FACTOR_NUM_BITS > 62
      || FACTOR_W < FACTOR_NUM_BITS + 1 || STD_W < ROOT_W || VAR0_W > 64) begin : g_bad_v
    $error("hwa_layernorm_ibert %m: invalid SHIFT=%0d (0..31) VAR_LIMIT_BITS=%0d VAR_W=%0d ROOT_W=%0d YS_W=%0d FACTOR_NUM_BITS=%0d FACTOR_W=%0d STD_W=%0d",
           SHIFT, VAR_LIMIT_BITS, VAR_W, ROOT_W, YS_W, FACTOR_NUM_BITS, FACTOR_W, STD_W);
  end

  // ---- pass 1: row buffer A, S1 and S2 --------------------------------------------------
  logic a_in_v, a_in_first, a_in_last, a_ctx_v, a_ce, a_rd, a_o1_v, a_o1_l;
  logic [IN_W-1:0] a_in_x, a_o1_x;
  logic [N_BITS-1:0] a_in_n, a_rd_idx, a_o1_n;
  logic [CTXA_W-1:0] a_ctx, a_o1_ctx;
  hwa_row_stream #(
      .IN_W(IN_W),
      .CTX_W(CTXA_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_A),
      .ROWQ(ROWQ_AB),
      .N_BITS(N_BITS)
  ) u_rows_a (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata(s_axis_tdata),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tready(s_axis_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_hold(1'b0),
      .in_v(a_in_v),
      .in_x(a_in_x),
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
      .o1_x(a_o1_x),
      .o1_ctx(a_o1_ctx),
      .o1_n(a_o1_n),
      .row_err(row_err)
  );
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_a;  // A's read position and row length: not needed here
  assign unused_a = ^{a_rd, a_rd_idx, a_o1_n};
  /* verilator lint_on UNUSEDSIGNAL */

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
      i1_v <= a_in_v;
      i2_v <= i1_v;
    end
    i1_x <= a_in_x;
    i1_first <= a_in_first;
    i1_last <= a_in_last;
    i1_n <= a_in_n;
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

  // per row: mean, var0, sqrtn (rows between their last input and last output <= ROWQ_AB)
  logic fa_v, fa_rdy, st_v;
  logic signed [S1_W-1:0] fa_s1;
  logic [S2_W-1:0] fa_s2;
  logic [N_BITS-1:0] fa_n;
  hwa_fifo #(
      .W(S1_W + S2_W + N_BITS),
      .DEPTH(ROWQ_AB)
  ) u_sums (
      .clk(clk),
      .rst(rst),
      .in_v(i2_v & i2_last),
      .in_d({s1_nxt, s2_nxt, i2_n}),
      .out_v(fa_v),
      .out_rdy(fa_rdy),
      .out_d({fa_s1, fa_s2, fa_n})
  );
  logic signed [X_W-1:0] st_mean;
  logic [VAR0_W-1:0] st_var0;
  logic [SQRTN_W-1:0] st_sqrtn;
  logic unused_stp;
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
      .in_v(fa_v),
      .in_rdy(fa_rdy),
      .s1(fa_s1),
      .s2(fa_s2),
      .n(fa_n),
      .p_in(1'b0),
      .out_v(st_v),
      .out_rdy(1'b1),  // A's row queue has room for every row that ended
      .mean(st_mean),
      .var0(st_var0),
      .sqrtn(st_sqrtn),
      .p_out(unused_stp)
  );
  // s = max(SHIFT, need), need = max(0, (bitlen(var0 - 1) - VAR_LIMIT_BITS + 1) >> 1),
  // in three free-running stages (issue 22): c1 var0 - 1; c2 its bit length; then s
  logic c1_v, c2_v;
  logic [VAR0_W-1:0] c1_vm1;
  logic signed [X_W-1:0] c1_mean, c2_mean;
  logic [SQRTN_W-1:0] c1_sqrtn, c2_sqrtn;
  logic [VB_W-1:0] bl, c2_bl;
  logic [SW-1:0] s_c;
  always_comb begin
    bl = '0;
    for (int i = 0; i < VAR0_W; i++) begin
      if (c1_vm1[i]) bl = VB_W'(i + 1);
    end
  end
  always_comb begin
    int need;
    need = (int'(c2_bl) - VAR_LIMIT_BITS + 1) >>> 1;  // floor, as Python's >>
    s_c = (need > SHIFT) ? SW'(need) : SW'(SHIFT);
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      c1_v <= 1'b0;
      c2_v <= 1'b0;
      a_ctx_v <= 1'b0;
    end else begin
      c1_v <= st_v;
      c2_v <= c1_v;
      a_ctx_v <= c2_v;
    end
    c1_vm1 <= (st_var0 == '0) ? '0 : st_var0 - 1'b1;
    c1_mean <= st_mean;
    c1_sqrtn <= st_sqrtn;
    c2_bl <= bl;
    c2_mean <= c1_mean;
    c2_sqrtn <= c1_sqrtn;
    if (c2_v) a_ctx <= {c2_mean, s_c, c2_sqrtn};
  end

  // ---- pass 2: y = X - mean into row buffer B; var at s and s + 1 ------------------------
  // a stall-all chain q1 -> q2 -> p advancing with a_ce (issue 22): q1 y = X - mean (after
  // the buffer read); q2 floor(y / 2^s), floor(y / 2^(s+1)) (barrel shifts); p their
  // squares (registered multiplies), y into B; then the sums
  logic signed [X_W-1:0] a_mean, a_xs;
  logic [SW-1:0] a_s;
  logic [SQRTN_W-1:0] a_sqrtn;
  assign {a_mean, a_s, a_sqrtn} = a_o1_ctx;
  assign a_xs = a_o1_x;

  logic p_v, p_l, p_first, first_reg, b_rdy;
  logic q1_v, q1_l, q1_first, q2_v, q2_l, q2_first;
  logic signed [YC_W-1:0] q1_y, q2_y, p_y;
  logic [SW-1:0] q1_s, q2_s, p_s;
  logic [SQRTN_W-1:0] q1_sqrtn, q2_sqrtn, p_sqrtn;
  logic signed [YS_W-1:0] q2_ysa, q2_ysb;
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [2*YS_W-1:0] a_ta, a_tb;  // a square: its sign bit is 0
  /* verilator lint_on UNUSEDSIGNAL */
  logic [VAR_W-1:0] p_ta, p_tb, va_reg, vb_reg, va_nxt, vb_nxt;
  assign a_ta = q2_ysa * q2_ysa;
  assign a_tb = q2_ysb * q2_ysb;
  assign a_ce = ~p_v | b_rdy;
  always_ff @(posedge clk) begin
    if (rst) begin
      q1_v <= 1'b0;
      q2_v <= 1'b0;
      p_v <= 1'b0;
      first_reg <= 1'b1;
    end else if (a_ce) begin
      q1_v <= a_o1_v;
      q2_v <= q1_v;
      p_v <= q2_v;
      if (a_o1_v) first_reg <= a_o1_l;
    end
    if (a_ce) begin
      q1_y <= YC_W'(a_xs) - YC_W'(a_mean);
      q1_l <= a_o1_l;
      q1_first <= first_reg;
      q1_s <= a_s;
      q1_sqrtn <= a_sqrtn;
      q2_y <= q1_y;
      q2_l <= q1_l;
      q2_first <= q1_first;
      q2_s <= q1_s;
      q2_sqrtn <= q1_sqrtn;
      q2_ysa <= YS_W'(q1_y >>> q1_s);  // floor(y / 2^s) fits YS_W (hw_params)
      q2_ysb <= YS_W'(q1_y >>> (q1_s + 1'b1));
      p_y <= q2_y;
      p_l <= q2_l;
      p_first <= q2_first;
      p_ta <= VAR_W'(a_ta);
      p_tb <= VAR_W'(a_tb);
      p_s <= q2_s;
      p_sqrtn <= q2_sqrtn;
    end
  end
  assign va_nxt = (p_first ? '0 : va_reg) + p_ta;
  assign vb_nxt = (p_first ? '0 : vb_reg) + p_tb;
  always_ff @(posedge clk) begin
    if (p_v && b_rdy) begin
      va_reg <= va_nxt;
      vb_reg <= vb_nxt;
    end
  end

  logic b_in_v, b_in_first, b_in_last, b_ctx_v, b_ce, b_rd, b_o1_v, b_o1_l;
  logic [YC_W-1:0] b_in_x, b_o1_x;
  logic [N_BITS-1:0] b_in_n, b_rd_idx, b_o1_n;
  logic [CTXB_W-1:0] b_ctx, b_o1_ctx;
  logic b_err;
  hwa_row_stream #(
      .IN_W(YC_W),
      .CTX_W(CTXB_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_B),
      .ROWQ(ROWQ_AB),
      .N_BITS(N_BITS)
  ) u_rows_b (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata(p_y),
      .s_axis_tvalid(p_v),
      .s_axis_tready(b_rdy),
      .s_axis_tlast(p_l),
      .s_hold(1'b0),
      .in_v(b_in_v),
      .in_x(b_in_x),
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
      .o1_x(b_o1_x),
      .o1_ctx(b_o1_ctx),
      .o1_n(b_o1_n),
      .row_err(b_err)
  );
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_b;  // B's ingest view (the sums are taken on its input), length, error;
  // b_rd_idx: only its low GAW bits address gamma/beta
  assign unused_b = ^{b_in_v, b_in_x, b_in_first, b_in_last, b_in_n, b_rd, b_o1_n, b_err, b_rd_idx};
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- per row: var -> isqrt -> std -> factor -> row queue B ---------------------------
  logic fb_v, fb_rdy;
  logic [VAR_W-1:0] fb_va;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [VAR_W-1:0] fb_vb;  // taken only when var_a >= 2^VAR_LIMIT_BITS: then var_b is less
  /* verilator lint_on UNUSEDSIGNAL */
  logic [SW-1:0] fb_s;
  logic [SQRTN_W-1:0] fb_sqrtn;
  hwa_fifo #(
      .W(2 * VAR_W + SW + SQRTN_W),
      .DEPTH(ROWQ_AB)
  ) u_vars (
      .clk(clk),
      .rst(rst),
      .in_v(p_v & b_rdy & p_l),  // with the row's last y into B: its context comes after
      .in_d({va_nxt, vb_nxt, p_s, p_sqrtn}),
      .out_v(fb_v),
      .out_rdy(fb_rdy),
      .out_d({fb_va, fb_vb, fb_s, fb_sqrtn})
  );
  // var_a >= 2^VAR_LIMIT_BITS: take var_b at s + 1
  logic over;
  logic [VAR_LIMIT_BITS-1:0] var_c;
  assign over = (VAR_W > VAR_LIMIT_BITS) && (64'(fb_va) >> VAR_LIMIT_BITS) != 64'd0;
  assign var_c = over ? VAR_LIMIT_BITS'(fb_vb) : VAR_LIMIT_BITS'(fb_va);
  logic sq_v, sq_rdy;
  logic [ROOT_W-1:0] root;
  logic [SW-1:0] sq_s;
  logic [SQRTN_W-1:0] sq_sqrtn;
  hwa_isqrt_rr #(
      .X_W(VAR_LIMIT_BITS),
      .II (II),
      .P_W(SW + SQRTN_W)
  ) u_isqrt (
      .clk(clk),
      .rst(rst),
      .in_v(fb_v),
      .in_rdy(fb_rdy),
      .x(var_c),
      .p_in({fb_s + SW'(over), fb_sqrtn}),
      .out_v(sq_v),
      .out_rdy(sq_rdy),
      .root(root),
      .p_out({sq_s, sq_sqrtn})
  );
  // std = isqrt(var) << s; factor = 2^FACTOR_NUM_BITS / std (0 when std = 0)
  logic [STD_W-1:0] std_c;
  logic sd_dz;
  logic [FACTOR_W-1:0] factor;
  logic dz;
  logic [SQRTN_W-1:0] d_sqrtn;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [STD_W-1:0] d_r;  // the remainder: not needed
  /* verilator lint_on UNUSEDSIGNAL */
  // one register stage between the root and the divider (issue 22): the root and its
  // shift registered (the root pool's output mux, the shift and std == 0 in separate
  // cycles), std = root << s computed from them into the divider; it
  // takes a root only when empty (sq_rdy a register: no ready path from the divider pool
  // through the root pool into the FIFO of row variances; a row per II >= 2 cycles at most)
  logic sd_v, u_rdy;
  logic [ROOT_W-1:0] sd_root;
  logic [SW-1:0] sd_s;
  assign std_c = STD_W'(sd_root) << sd_s;
  assign sd_dz = std_c == '0;
  logic [SQRTN_W-1:0] sd_sqrtn;
  assign sq_rdy = !sd_v;
  always_ff @(posedge clk) begin
    if (rst) sd_v <= 1'b0;
    else if (sq_rdy) sd_v <= sq_v;
    else if (u_rdy) sd_v <= 1'b0;  // the divider took it
    if (sq_rdy && sq_v) begin
      sd_root <= root;
      sd_s <= sq_s;
      sd_sqrtn <= sq_sqrtn;
    end
  end
  hwa_udiv_rr #(
      .N_W(FACTOR_NUM_BITS + 1),
      .D_W(STD_W),
      .Q_W(FACTOR_W),
      .II (II),
      .P_W(1 + SQRTN_W)
  ) u_factor (
      .clk(clk),
      .rst(rst),
      .in_v(sd_v),
      .in_rdy(u_rdy),
      .n((FACTOR_NUM_BITS + 1)'(1) << FACTOR_NUM_BITS),
      .d(std_c),
      .p_in({sd_dz, sd_sqrtn}),
      .out_v(b_ctx_v),
      .out_rdy(1'b1),  // B's row queue has room for every row that entered B
      .q(factor),
      .r(d_r),
      .p_out({dz, d_sqrtn})
  );
  assign b_ctx = {dz ? '0 : factor, d_sqrtn};

  // ---- pass 3: hwa_ln_int_out (stall-all, enable ce) --------------------------------------
  // b_ce: the output skid buffer's registered ready (hwa_skid, at the end)
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
    if (b_ce) begin
      o1_g <= gamma_mem[GAW'(b_rd_idx)];
      o1_b <= beta_mem[GAW'(b_rd_idx)];
    end
  end
  logic [FACTOR_W-1:0] o1_factor;
  logic [SQRTN_W-1:0] o1_sqrtn;
  assign {o1_factor, o1_sqrtn} = b_o1_ctx;
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
      .ce(b_ce),
      .in_v(b_o1_v),
      .in_l(b_o1_l),
      .y(b_o1_x),
      .factor(o1_factor),
      .sqrtn(o1_sqrtn),
      .gamma(o1_g),
      .beta(o1_b),
      .m_axis_tdata(o_y),
      .m_axis_tvalid(o_v),
      .m_axis_tlast(o_l)
  );
  // output register -> skid buffer -> m_axis (b_ce: its registered ready)
  hwa_skid #(
      .W(OUT_W)
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
