// hwa_layernorm_rsqrt -- single-pass LayerNorm (hwapprox.approx.layernorm.RsqrtLutLayerNorm).
//
// Computes, per row of n <= ROW_MAX raw input codes X (s_axis, tlast on the
// final element), exactly the integer model of RsqrtLutLayerNorm:
//   pass 1 (as the row streams in): S1 = sum X, S2 = sum X^2, n;
//   per row (pipelined, ROW_LAT cycles): D = n*S2 - S1^2,
//     De = (D << G) + n^2*EPS_Q, k = (bitlen(De)-1) >> 1,
//     m = De >> (2k-P) (or << (P-2k)), y = rsqrt_norm(m) (table of 2^TB words
//     of P fraction bits, then NEWTON Newton steps), sh = P + k - G/2 - FZ;
//   pass 2 (on the way out): A = n*X - S1 (CENTER=0: A = n*X),
//     Z = (A*y + 2^(sh-1)) >>> sh (A*y << -sh when sh <= 0),
//     acc = Z*gamma_i + (beta_i << BETA_SHIFT),
//     out = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF).
// gamma_i/beta_i come from a memory written through cfg_* (one word per cycle).
//
// Buffering (hwa_row_stream): the row is held in a circular buffer (input stalls when
// full); rows wait for output in a row queue. Both are sized for the per-row latency:
// BUF_DEPTH, or the power of 2 >= ROW_MAX + ROW_LAT + 4 when that is larger, and ROWQ,
// or the power of 2 >= 4 + (ROW_LAT + ROW_MAX + 15) / 16 (issue 22).
// Pipelining (issue 22, ECP5 at 125 MHz): the ingest square is a registered multiply;
// per row, n*S2, S1^2, n^2 and n^2*EPS_Q are hwa_mul_pipe products (18 x 18 partial
// products, operand registers of their own: 4 stages each), the 1/sqrt is hwa_rsqrt_pipe (8 + 13*NEWTON stages); on the way out n*X
// (hwa_mul_pipe with operand registers of its own, 4 stages), A = n*X - S1 (1), then
// hwa_ln_rsqrt_out (shared with hwa_layernorm_rmsnorm): A*y and Z*gamma (hwa_mul_pipe
// with operand registers, 4 stages each), Z's rounding shift (hwa_round_shift_pipe, 3),
// acc (1), the output rounding (1). Every output-side product is thus register ->
// multiplier -> register, on ECP5 inside the MULT18X18D (hwa_mul_pipe's HWA_ECP5_DSP).
// Latency: last input -> context ROW_LAT = 21 + 13*NEWTON cycles; last input -> last
// output N + 40 + 13*NEWTON (N + 53 at the defaults, NEWTON = 1; N + 43 before the
// operand registers), one element per cycle.
// Throughput: back-to-back rows of N >= 16 never stall the input and lose no output
// cycle (tests/test_rtl_throughput.py).
// Rows of 1..ROW_MAX elements. A longer row is dropped (consumed up to its
// tlast, nothing output for it) and row_err pulses for one cycle; the next row
// is processed normally (see hwa_row_stream).
// Parameter defaults: the default RsqrtLutLayerNorm spec's
// hw_params() with row_stream_params(64) (tests/test_rtl_lint.py checks them).
`default_nettype none
module hwa_layernorm_rsqrt #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int GAMMA_W = 16,
    parameter int BETA_W = 16,
    parameter bit CENTER = 1'b1,
    // pRMSNorm (CENTER = 0): the statistics use the first PARTIAL_K elements (0: all)
    parameter int PARTIAL_K = 0,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 11,
    parameter int S1_W = 27,
    parameter int S2_W = 41,
    parameter int D_W = 51,
    parameter int DE_W = 55,
    parameter int A_W = 28,
    parameter int AY_W = 49,
    // the 1/sqrt's widths (hwa_rsqrt_pipe) and A*y with room for its left shift (hw_params)
    parameter int M_W = 22,
    parameter int Y_W = 21,
    parameter int SQ_W = 41,
    parameter int MSQ_W = 42,
    parameter int U_W = 22,
    parameter int YU_W = 42,
    parameter int AYS_W = 50,
    parameter int Z_W = 25,
    parameter int ACC_W = 42,
    parameter logic [63:0] EPS_Q = 64'd168,
    parameter int G = 4,
    parameter int P = 20,
    parameter int TB = 8,
    parameter int NEWTON = 1,
    parameter int FZ = 18,
    parameter int BETA_SHIFT = 18,
    parameter int OUT_SHIFT = 16,
    parameter string RSQRT_FILE = ""
) (
    input  logic                           clk,
    input  logic                           rst,
    input  logic [IN_W-1:0]                s_axis_tdata,
    input  logic                           s_axis_tvalid,
    output logic                           s_axis_tready,
    input  logic                           s_axis_tlast,
    output logic [OUT_W-1:0]               m_axis_tdata,
    output logic                           m_axis_tvalid,
    input  logic                           m_axis_tready,
    output logic                           m_axis_tlast,
    input  logic                           cfg_we,
    input  logic [((ROW_MAX > 1) ? $clog2(ROW_MAX) : 1)-1:0] cfg_addr,
    input  logic [GAMMA_W-1:0]             cfg_gamma,
    input  logic [BETA_W-1:0]              cfg_beta,
    output logic                           row_err
);

  function automatic int bit_len(input logic [63:0] v);
    int b = 1;
    for (int i = 0; i < 64; i++) if (v[i]) b = i + 1;
    return b;
  endfunction
  localparam int KW = $clog2(DE_W + 1) + 1;
  localparam int SHW = KW + 8;
  localparam int YW = P + 3;  // y and u, signed
  localparam int GAW = (ROW_MAX > 1) ? $clog2(ROW_MAX) : 1;
  // Z = A*y << -sh needs at most FZ + G/2 - P extra bits
  localparam int LSH = (FZ + G / 2 - P > 0) ? FZ + G / 2 - P : 0;
  localparam int EPS_W = bit_len(EPS_Q);
  // every output-side multiplier (n*X, A*y, Z*gamma) behind operand registers of its own
  // (hwa_mul_pipe IN_REG; on ECP5 the MULT18X18D's own input and output registers, issue
  // 22): LM stages each
  localparam bit MUL_IN_REG = 1'b1;
  localparam int LM = 3 + int'(MUL_IN_REG);
  // the per-row pipeline: t1 (the row's sums) -> ctx_v (t2..t8 De, hwa_rsqrt_pipe, the
  // context); ROW_LAT: in_last -> ctx_v (two more: the square and the sums)
  localparam int TDE = 2 * LM + 2;  // t1 -> De (the per-row products, below)
  localparam int CTX_LAT = TDE + 1 + 8 + 13 * NEWTON;  // hwa_rsqrt_pipe: 8 + 13*NEWTON
  localparam int ROW_LAT = CTX_LAT + 2;
  // the row buffer and row queue hold a row for its context's latency too (rows of >= 16;
  // mixed lengths: a short row may wait behind a long one)
  localparam int BUF_NEED = ROW_MAX + ROW_LAT + 4;
  localparam int BUF_U = (BUF_NEED > BUF_DEPTH) ? 1 << $clog2(BUF_NEED) : BUF_DEPTH;
  localparam int ROWQ_NEED = 4 + (ROW_LAT + ROW_MAX + 15) / 16;
  localparam int ROWQ_U = (ROWQ_NEED > ROWQ) ? 1 << $clog2(ROWQ_NEED) : ROWQ;

  // ---- parameter checks ---------------------------------------------------
  if (IN_W < 2 || IN_W > 32 || OUT_W < 1 || OUT_W > 32 || GAMMA_W < 1 || BETA_W < 1
      || ROW_MAX < 1 || (1 << N_BITS) <= ROW_MAX || BUF_DEPTH < ROW_MAX
      || (1 << $clog2(BUF_DEPTH)) != BUF_DEPTH) begin : g_bad_w
    $error("hwa_layernorm_rsqrt %m: invalid IN_W=%0d OUT_W=%0d ROW_MAX=%0d N_BITS=%0d BUF_DEPTH=%0d (power of 2 >= ROW_MAX)",
                   IN_W, OUT_W, ROW_MAX, N_BITS, BUF_DEPTH);
  end
  if (NEWTON < 0 || NEWTON > 2 || TB < 2 || TB - 1 > P || P > 28 || DE_W > 120
      || DE_W < P + 2 || DE_W < D_W || S2_W + 1 > 68 || S1_W > 68 || 2 * N_BITS + 1 > 68
      || AYS_W < AY_W + LSH + 1) begin : g_bad_r
    $error("hwa_layernorm_rsqrt %m: invalid NEWTON=%0d TB=%0d P=%0d DE_W=%0d (P + 2..120, >= D_W=%0d) S1_W=%0d S2_W=%0d N_BITS=%0d (hwa_mul_pipe: operands of <= 68 bits) AYS_W=%0d (>= AY_W + LSH + 1)",
                   NEWTON, TB, P, DE_W, D_W, S1_W, S2_W, N_BITS, AYS_W);
  end

  // ---- input side: row buffer, queue, output sequencer (hwa_row_stream); sums ---
  localparam int CTX_W = YW + SHW + S1_W;  // per row: y, sh, S1 (n: the row length)
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
  assign unused_rows = ^{rd_issue, rd_idx};
  /* verilator lint_on UNUSEDSIGNAL */

  // the N of the statistics: the row length, or pRMSNorm's PARTIAL_K when the row is longer
  function automatic logic [N_BITS-1:0] n_eff(input logic [N_BITS-1:0] n);
    return (PARTIAL_K != 0 && 32'(n) > PARTIAL_K) ? N_BITS'(PARTIAL_K) : n;
  endfunction

  // S1 = sum X, S2 = sum X^2 of the row so far (restarting at each row's first element),
  // two cycles behind the input: i1 the accepted element registered, i2 its square (a
  // registered multiply), then the sums
  logic i1_v, i1_first, i1_last, i1_stat, i2_v, i2_first, i2_last;
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
    // the element counts in the statistics (pRMSNorm: the first PARTIAL_K)
    i1_stat <= (PARTIAL_K == 0) || (32'(in_n) <= PARTIAL_K);
    i2_x <= i1_x;
    i2_first <= i1_first;
    i2_last <= i1_last;
    i2_n <= i1_n;
    i2_sq <= i1_stat ? (2 * IN_W)'(i1_x) * (2 * IN_W)'(i1_x) : '0;  // both signed
  end
  logic signed [S1_W-1:0] s1_reg, s1_nxt;
  logic signed [S2_W:0] s2_reg, s2_nxt;
  assign s1_nxt = (i2_first ? '0 : s1_reg) + S1_W'(i2_x);
  assign s2_nxt = (i2_first ? '0 : s2_reg) + (S2_W + 1)'($unsigned(i2_sq));
  always_ff @(posedge clk) begin
    if (rst) begin
      s1_reg <= '0;
      s2_reg <= '0;
    end else if (i2_v) begin
      s1_reg <= s1_nxt;
      s2_reg <= s2_nxt;
    end
  end

  // ---- per-row pipeline (free running: one row per cycle at most, never stalls) --------
  // t1: the row's final sums; t2..t(LM+1): n*S2, S1^2, n^2 (hwa_mul_pipe with operand
  // registers of its own, mod 2^DE_W: De and every partial result fit DE_W bits, D =
  // n*S2 - S1^2 >= 0); t(LM+2): D; t(LM+2)..t(2LM+1): n^2*EPS_Q; t(2LM+2) = TDE: De;
  // then hwa_rsqrt_pipe (RS_LAT); one more: the context.
  logic [TDE-1:0] v_sr;  // t1..tDE
  always_ff @(posedge clk) begin
    if (rst) v_sr <= '0;
    else v_sr <= {v_sr[TDE-2:0], i2_v & i2_last};
  end
  logic signed [S1_W-1:0] s1_0;
  logic signed [S2_W:0] s2_0;
  logic [N_BITS-1:0] n_0;
  always_ff @(posedge clk) begin
    s1_0 <= CENTER ? s1_nxt : '0;
    s2_0 <= s2_nxt;
    n_0 <= n_eff(i2_n);
  end
  logic signed [DE_W-1:0] ns2_p, s1sq_p, eps_p;
  logic signed [2*N_BITS-1:0] nn_p;
  hwa_mul_pipe #(
      .A_W(S2_W + 1),
      .B_W(N_BITS),
      .B_SIGNED(1'b0),
      .P_W(DE_W),
      .IN_REG(MUL_IN_REG)
  ) u_ns2 (
      .clk(clk),
      .en (1'b1),
      .a  (s2_0),
      .b  (n_0),
      .p  (ns2_p)
  );
  hwa_mul_pipe #(
      .A_W(S1_W),
      .B_W(S1_W),
      .B_SIGNED(1'b1),
      .P_W(DE_W),
      .IN_REG(MUL_IN_REG)
  ) u_s1sq (
      .clk(clk),
      .en (1'b1),
      .a  (s1_0),
      .b  (s1_0),
      .p  (s1sq_p)
  );
  hwa_mul_pipe #(
      .A_W(N_BITS + 1),
      .B_W(N_BITS),
      .B_SIGNED(1'b0),
      .P_W(2 * N_BITS),
      .IN_REG(MUL_IN_REG)
  ) u_nn (
      .clk(clk),
      .en (1'b1),
      .a  ($signed({1'b0, n_0})),
      .b  (n_0),
      .p  (nn_p)
  );
  hwa_mul_pipe #(
      .A_W(2 * N_BITS + 1),
      .B_W(EPS_W),
      .B_SIGNED(1'b0),
      .P_W(DE_W),
      .IN_REG(MUL_IN_REG)
  ) u_eps (
      .clk(clk),
      .en (1'b1),
      .a  ($signed({1'b0, nn_p})),
      .b  (EPS_Q[EPS_W-1:0]),
      .p  (eps_p)
  );
  logic [DE_W-1:0] d_5, d_7, de_8;
  always_ff @(posedge clk) d_5 <= DE_W'(ns2_p - s1sq_p);
  hwa_delay #(
      .W(DE_W),
      .L(LM - 1)
  ) u_d7 (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  (d_5),
      .q  (d_7)
  );
  always_ff @(posedge clk) de_8 <= (d_7 << G) + DE_W'(eps_p);

  logic rs_v;
  logic [P:0] rs_y;
  logic [KW-1:0] rs_k;
  hwa_rsqrt_pipe #(
      .DE_W(DE_W),
      .P(P),
      .TB(TB),
      .NEWTON(NEWTON),
      .KW(KW),
      .M_W(M_W),
      .Y_W(Y_W),
      .SQ_W(SQ_W),
      .MSQ_W(MSQ_W),
      .U_W(U_W),
      .YU_W(YU_W),
      .FILE(RSQRT_FILE)
  ) u_rsqrt (
      .clk(clk),
      .rst(rst),
      .in_v(v_sr[TDE-1]),
      .de(de_8),
      .out_v(rs_v),
      .y(rs_y),
      .k(rs_k)
  );

  // the context: y, the shift amount, S1 (from t1, ROW_LAT - 1 cycles later)
  logic signed [YW-1:0] ry;
  logic signed [SHW-1:0] rsh;
  logic signed [S1_W-1:0] rs1;
  always_ff @(posedge clk) begin
    if (rst) ctx_v <= 1'b0;
    else ctx_v <= rs_v;
    ry <= YW'({1'b0, rs_y});
    rsh <= SHW'(P) + SHW'({1'b0, rs_k}) - SHW'(G / 2) - SHW'(FZ);
  end
  hwa_delay #(
      .W(S1_W),
      .L(CTX_LAT - 1)
  ) u_s1d (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  (s1_0),
      .q  (rs1)
  );
  assign ctx = {ry, rsh, rs1};

  // ---- output side: stall-all pipeline, enable ce ----------------------------------
  // ce: the output skid buffer's registered ready (hwa_skid, at the end)

  // gamma / beta memory
  logic [GAMMA_W-1:0] gamma_mem[ROW_MAX];
  logic [BETA_W-1:0] beta_mem[ROW_MAX];
  always_ff @(posedge clk) begin
    if (cfg_we && 32'(cfg_addr) < ROW_MAX) begin  // addresses >= ROW_MAX are ignored
      gamma_mem[cfg_addr] <= cfg_gamma;
      beta_mem[cfg_addr] <= cfg_beta;
    end
  end

  // o1: the buffered x, the row context and length (hwa_row_stream), gamma/beta
  logic signed [GAMMA_W-1:0] o1_g;
  logic signed [BETA_W-1:0] o1_b;
  logic signed [YW-1:0] o1_y;
  logic signed [SHW-1:0] o1_sh;
  logic signed [S1_W-1:0] o1_s1;
  assign {o1_y, o1_sh, o1_s1} = o1_ctx;
  always_ff @(posedge clk) begin
    if (ce) begin
      o1_g <= gamma_mem[GAW'(rd_idx)];
      o1_b <= beta_mem[GAW'(rd_idx)];
    end
  end
  // ob: n*X (hwa_mul_pipe, LM stages, the row's context and gamma/beta delayed beside it);
  // o2: A = n*X - S1
  logic ob_v, ob_l;
  logic signed [A_W-1:0] ob_nx;
  logic signed [S1_W-1:0] ob_s1;
  logic signed [GAMMA_W-1:0] ob_g;
  logic signed [BETA_W-1:0] ob_b;
  logic signed [YW-1:0] ob_y;
  logic signed [SHW-1:0] ob_sh;
  hwa_mul_pipe #(
      .A_W(IN_W),
      .B_W(N_BITS),
      .B_SIGNED(1'b0),
      .P_W(A_W),
      .IN_REG(MUL_IN_REG)
  ) u_nx (
      .clk(clk),
      .en (ce),
      .a  ($signed(o1_x)),
      .b  (n_eff(o1_n)),
      .p  (ob_nx)
  );
  hwa_delay #(
      .W(2 + S1_W + GAMMA_W + BETA_W + YW + SHW),
      .L(LM)
  ) u_dnx (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({o1_v, o1_l, o1_s1, o1_g, o1_b, o1_y, o1_sh}),
      .q  ({ob_v, ob_l, ob_s1, ob_g, ob_b, ob_y, ob_sh})
  );
  logic o2_v, o2_l;
  logic signed [A_W-1:0] o2_a;
  logic signed [GAMMA_W-1:0] o2_g;
  logic signed [BETA_W-1:0] o2_b;
  logic signed [YW-1:0] o2_y;
  logic signed [SHW-1:0] o2_sh;
  always_ff @(posedge clk) begin
    if (rst) o2_v <= 1'b0;
    else if (ce) o2_v <= ob_v;
    if (ce) begin
      o2_a <= ob_nx - (CENTER ? A_W'(ob_s1) : '0);
      o2_l <= ob_l;
      o2_g <= ob_g;
      o2_b <= ob_b;
      o2_y <= ob_y;
      o2_sh <= ob_sh;
    end
  end
  // Z = round(A*y / 2^sh), acc = Z*gamma + (beta << BETA_SHIFT), out: hwa_ln_rsqrt_out
  // (shared with hwa_layernorm_rmsnorm; AYS_W: room for a left shift by -sh, at most LSH)
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  hwa_ln_rsqrt_out #(
      .A_W(A_W),
      .Y_W(YW),
      .Y_SIGNED(1'b1),
      .SHW(SHW),
      .LSH(LSH),
      .AY_W(AYS_W),
      .Z_W(Z_W),
      .GAMMA_W(GAMMA_W),
      .BETA_W(BETA_W),
      .ACC_W(ACC_W + 2),
      .BETA_SHIFT(BETA_SHIFT),
      .OUT_SHIFT(OUT_SHIFT),
      .OUT_W(OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OUT_RND(OUT_RND),
      .OUT_OVF(OUT_OVF),
      .IN_REG(MUL_IN_REG)
  ) u_out (
      .clk(clk),
      .rst(rst),
      .ce(ce),
      .in_v(o2_v),
      .in_l(o2_l),
      .a(o2_a),
      .y(o2_y),
      .sh(o2_sh),
      .gamma(o2_g),
      .beta(o2_b),
      .out_v(o_v),
      .out_l(o_l),
      .out_d(o_d)
  );

  // output register -> skid buffer -> m_axis (ce: its registered ready)
  hwa_skid #(
      .W(OUT_W)
  ) u_skid (
      .clk(clk),
      .rst(rst),
      .in_v(o_v),
      .in_l(o_l),
      .in_d(o_d),
      .ce(ce),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast)
  );

endmodule
`default_nettype wire
