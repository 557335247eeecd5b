// hwa_layernorm_rmsnorm -- RMSNorm and pRMSNorm (hwapprox.approx.layernorm.RmsNorm),
// bit-exact, one pass over the row.
//
// Per row of 1 <= n <= ROW_MAX signed input codes X (s_axis, tlast on the last):
//   ingest: S2 = sum of X^2 over the first k elements of the row, where
//     k = n (plain RMSNorm), k = min(n, PARTIAL_K) (PARTIAL_K > 0), or pRMSNorm's
//     k = ceil(PARTIAL_NUM * n / 2^PARTIAL_F) (PARTIAL_NUM < 2^PARTIAL_F; Zhang &
//     Sennrich 2019). n is unknown until tlast, so for the fraction the unit keeps
//     k(i) = ceil(p*i) for the elements so far (a 2^PARTIAL_F-step phase counter: k
//     grows by 0 or 1 per element) and adds element k(i)'s square whenever k grows;
//     the elements between k(i) and i wait in a small queue of input codes (at most
//     ROW_MAX - 1), so S2 is complete at tlast and no second pass is needed;
//   per row (pipelined, fixed latency): D = k*S2, De = (D << G) + k^2*EPS_Q,
//     kl = (bitlen(De) - 1) >> 1, m = De >> (2kl - P) (or << (P - 2kl)) in
//     [2^P, 2^(P+2)), y = 1/sqrt(m): table of 2^TB words of P fraction bits
//     (RSQRT_FILE), then NEWTON Newton steps sq = (y*y) >> P, t = (m*sq) >> P,
//     u = 3*2^P - t, y = (y*u) >> (P+1); sh = P + kl - G/2 - FZ;
//   pass 2 (on the way out): A = k*X, Z = (A*y + 2^(sh-1)) >>> sh (A*y << -sh when
//     sh <= 0), acc = Z*gamma_i + (beta_i << BETA_SHIFT), out = sat(round_shift(acc,
//     OUT_SHIFT, OUT_RND), OUT_OVF).
// (x / sqrt(mean(x[:k]^2) + eps) = A * 2^(G/2) / sqrt(De): the mean of squares is never
// divided out, so any k costs the same.) gamma_i/beta_i come from a memory written
// through cfg_* (one word per cycle; addresses >= ROW_MAX are ignored).
//
// Buffering (hwa_row_stream): a circular row buffer and a row queue, sized for the
// per-row latency: BUF_DEPTH, or the power of 2 >= ROW_MAX + ROW_LAT + 4 when larger,
// and ROWQ, or the power of 2 >= 4 + (ROW_LAT + ROW_MAX + 15) / 16 (issue 22).
// Pipelining (issue 22, ECP5 at 125 MHz): the ingest square is a registered multiply;
// per row k*S2, k^2 and k^2*EPS_Q are hwa_mul_pipe products with operand registers of
// their own (LM = 4 stages each: k^2*EPS_Q after k^2, 2 more than without them), De (1),
// the 1/sqrt is hwa_rsqrt_pipe (8 + 13*NEWTON stages); on the way out: the element, k, y
// and sh registered (1 stage), A = k*X (1), then hwa_ln_rsqrt_out (shared with
// hwa_layernorm_rsqrt): A*y and Z*gamma (4 each), Z's rounding shift (3), acc (1), the
// output rounding (1). Latency: last input -> context ROW_LAT = 21 + 13*NEWTON cycles;
// last input -> last output n + 37 + 13*NEWTON (n + 50 at NEWTON = 1; it was n + 42
// before the operand registers and the element stage, n + 47 before hwa_rsqrt_pipe's);
// back-to-back rows of n >= 16 lose no cycle (tests/test_rtl_throughput.py). Rows
// longer than ROW_MAX are dropped (consumed up to tlast, nothing output) and row_err
// pulses for one cycle.
// Preconditions: signed input codes. Parameter defaults: the default RmsNorm spec's
// hw_params() with row_stream_params(64) (its N_BITS: the spec's, sized for max_n).
`default_nettype none
module hwa_layernorm_rmsnorm #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int GAMMA_W = 16,
    parameter int BETA_W = 16,
    parameter int PARTIAL_K = 0,
    parameter int PARTIAL_NUM = 65536,
    parameter int PARTIAL_F = 16,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 11,
    parameter int S2_W = 41,
    parameter int D_W = 51,
    parameter int DE_W = 55,
    parameter logic [63:0] EPS_Q = 64'd168,
    parameter int G = 4,
    parameter int P = 20,
    parameter int TB = 8,
    parameter int NEWTON = 1,
    parameter int FZ = 18,
    parameter int BETA_SHIFT = 18,
    parameter int OUT_SHIFT = 16,
    parameter int M_W = 22,
    parameter int Y_W = 21,
    parameter int SQ_W = 41,
    parameter int MSQ_W = 42,
    parameter int U_W = 22,
    parameter int YU_W = 42,
    parameter int A_W = 27,
    parameter int AY_W = 48,
    parameter int AYS_W = 49,
    parameter int Z_W = 25,
    parameter int ACC_W = 42,
    parameter string RSQRT_FILE = ""
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

  localparam bit FRAC = (PARTIAL_K == 0) && (PARTIAL_NUM < (1 << PARTIAL_F));
  localparam int GAW = (ROW_MAX > 1) ? $clog2(ROW_MAX) : 1;
  localparam int KW = $clog2(DE_W + 1) + 1;  // kl and bit lengths of De
  localparam int SHW = KW + 8;  // sh, signed
  localparam int CTX_W = Y_W + SHW + N_BITS;  // per row: y, sh, k
  // Z = A*y << -sh needs at most FZ + G/2 - P extra bits
  localparam int LSH = (FZ + G / 2 - P > 0) ? FZ + G / 2 - P : 0;
  function automatic int bit_len(input logic [63:0] v);
    int b = 1;
    for (int i = 0; i < 64; i++) if (v[i]) b = i + 1;
    return b;
  endfunction
  localparam int EPS_W = bit_len(EPS_Q);
  // every hwa_mul_pipe behind operand registers of its own (issue 22): LM stages each
  localparam bit MUL_IN_REG = 1'b1;
  localparam int LM = 3 + int'(MUL_IN_REG);
  // the per-row pipeline: t1 (the row's S2, k) -> ctx_v (t2..tDE De: k^2 and k^2*EPS_Q
  // two products in a row, one stage more for De; then hwa_rsqrt_pipe, RS_LAT stages; one
  // more: the context); ROW_LAT: in_last -> ctx_v (two more: the square and the sum)
  localparam int TDE = 2 * LM + 2;
  localparam int RS_LAT = 8 + 13 * NEWTON;
  localparam int CTX_LAT = TDE + 1 + RS_LAT;
  localparam int ROW_LAT = CTX_LAT + 2;
  // the row buffer and row queue hold a row for its context's latency too (rows of >= 16;
  // mixed lengths: a short row may wait behind a long one)
  localparam int BUF_NEED = ROW_MAX + ROW_LAT + 4;
  localparam int BUF_U = (BUF_NEED > BUF_DEPTH) ? 1 << $clog2(BUF_NEED) : BUF_DEPTH;
  localparam int ROWQ_NEED = 4 + (ROW_LAT + ROW_MAX + 15) / 16;
  localparam int ROWQ_U = (ROWQ_NEED > ROWQ) ? 1 << $clog2(ROWQ_NEED) : ROWQ;

  // ---- parameter checks ---------------------------------------------------------------
  if (IN_W < 2 || IN_W > 32 || OUT_W < 1 || OUT_W > 32 || GAMMA_W < 1 || BETA_W < 1
      || ROW_MAX < 1 || (1 << N_BITS) <= ROW_MAX || A_W < IN_W + 1 || BUF_DEPTH < ROW_MAX
      || (1 << $clog2(BUF_DEPTH)) != BUF_DEPTH) begin : g_bad_w
    $error("hwa_layernorm_rmsnorm %m: invalid IN_W=%0d OUT_W=%0d ROW_MAX=%0d N_BITS=%0d BUF_DEPTH=%0d (power of 2 >= ROW_MAX) A_W=%0d",
           IN_W, OUT_W, ROW_MAX, N_BITS, BUF_DEPTH, A_W);
  end
  if (NEWTON < 0 || NEWTON > 2 || TB < 2 || TB - 1 > P || P > 28 || DE_W > 120 || M_W != P + 2
      || Y_W != P + 1 || AYS_W < AY_W || DE_W < M_W || DE_W < D_W || S2_W + 1 > 68
      || 2 * N_BITS + 1 > 68 || SQ_W > 2 * P + 2 || MSQ_W > 2 * P + 2 || U_W > M_W
      || YU_W > 2 * P + 2) begin : g_bad_r
    $error("hwa_layernorm_rmsnorm %m: invalid NEWTON=%0d TB=%0d P=%0d DE_W=%0d (M_W..120, >= D_W=%0d) M_W=%0d Y_W=%0d AYS_W=%0d S2_W=%0d N_BITS=%0d (hwa_mul_pipe: operands of <= 68 bits) SQ_W=%0d MSQ_W=%0d U_W=%0d YU_W=%0d (hwa_rsqrt_pipe: <= 2P + 2)",
           NEWTON, TB, P, DE_W, D_W, M_W, Y_W, AYS_W, S2_W, N_BITS, SQ_W, MSQ_W, U_W, YU_W);
  end
  if (PARTIAL_K < 0 || PARTIAL_F < 1 || PARTIAL_F > 24 || PARTIAL_NUM < 1
      || PARTIAL_NUM > (1 << PARTIAL_F) || (PARTIAL_K != 0 && PARTIAL_NUM != (1 << PARTIAL_F)))
  begin : g_bad_p
    $error("hwa_layernorm_rmsnorm %m: invalid PARTIAL_K=%0d PARTIAL_NUM=%0d PARTIAL_F=%0d (PARTIAL_NUM in 1..2^PARTIAL_F; with PARTIAL_K > 0 it must be 2^PARTIAL_F)",
           PARTIAL_K, PARTIAL_NUM, PARTIAL_F);
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
  logic unused_rows;  // rd_idx: only its low GAW bits address gamma/beta; k is in the
  // context (o1_n), and in_n is not needed when k follows the fraction
  assign unused_rows = ^{rd_issue, rd_idx, o1_n, in_n};
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- ingest: S2 over the first k elements, k ------------------------------------------
  logic signed [IN_W-1:0] x_in, sq_x;
  logic sq_en;
  logic [N_BITS-1:0] k_nxt;  // k for the elements so far (at in_last: the row's k)
  if (FRAC) begin : g_frac
    // k(i) = ceil(p*i): c = k*2^F - p*i*2^F in [0, 2^F); k grows when p*2^F > c
    localparam int CW = PARTIAL_F + 1;
    logic [CW-1:0] c_reg, c_prev;
    logic [GAW-1:0] wp_reg, rp_reg, wp_prev, rp_prev;  // queue: codes i - k(i) .. i
    logic grow;
    logic [IN_W-1:0] q_mem[ROW_MAX];
    assign c_prev = in_first ? '0 : c_reg;
    assign wp_prev = in_first ? '0 : wp_reg;
    assign rp_prev = in_first ? '0 : rp_reg;
    assign grow = CW'(PARTIAL_NUM) > c_prev;
    // element k(i) (1-based) is code rp_prev of the row: this very one when rp = wp
    assign sq_x = (rp_prev == wp_prev) ? x_in : q_mem[rp_prev];
    assign sq_en = grow;
    assign k_nxt = N_BITS'(rp_prev) + N_BITS'(grow);
    always_ff @(posedge clk) begin
      if (in_v) begin
        q_mem[wp_prev] <= in_x;
        wp_reg <= wp_prev + 1'b1;
        rp_reg <= rp_prev + GAW'(grow);
        c_reg <= grow ? c_prev + CW'((1 << PARTIAL_F) - PARTIAL_NUM) : c_prev - CW'(PARTIAL_NUM);
      end
    end
  end else begin : g_count
    // the first PARTIAL_K elements (0: all)
    assign sq_x = x_in;
    assign sq_en = (PARTIAL_K == 0) || (32'(in_n) <= PARTIAL_K);
    assign k_nxt = (PARTIAL_K != 0 && 32'(in_n) > PARTIAL_K) ? N_BITS'(PARTIAL_K) : in_n;
  end
  assign x_in = in_x;

  // i1: the element to square registered; i2: its square (a registered multiply); then S2
  logic i1_v, i1_first, i1_last, i1_en, i2_v, i2_first, i2_last;
  logic signed [IN_W-1:0] i1_sqx;
  logic [N_BITS-1:0] i1_k, i2_k;
  logic signed [2*IN_W-1:0] i2_sq;
  always_ff @(posedge clk) begin
    if (rst) begin
      i1_v <= 1'b0;
      i2_v <= 1'b0;
    end else begin
      i1_v <= in_v;
      i2_v <= i1_v;
    end
    i1_sqx <= sq_x;
    i1_en <= sq_en;
    i1_first <= in_first;
    i1_last <= in_last;
    i1_k <= k_nxt;
    i2_sq <= i1_en ? (2 * IN_W)'(i1_sqx) * (2 * IN_W)'(i1_sqx) : '0;  // both signed
    i2_first <= i1_first;
    i2_last <= i1_last;
    i2_k <= i1_k;
  end
  logic [S2_W-1:0] s2_reg, s2_nxt;
  assign s2_nxt = (i2_first ? '0 : s2_reg) + S2_W'($unsigned(i2_sq));
  always_ff @(posedge clk) begin
    if (i2_v) s2_reg <= s2_nxt;
  end

  // ---- per-row pipeline (free running: one row per cycle at most, never stalls) ----------
  // t1: the row's S2 and k; t2..t(1+LM): D = k*S2, k^2 (hwa_mul_pipe, mod 2^DE_W: De and
  // every partial result fit DE_W bits); then LM more: k^2*EPS_Q; tDE: De; then
  // hwa_rsqrt_pipe; one more: the context.
  logic [TDE-1:0] v_sr;  // t1..tDE
  always_ff @(posedge clk) begin
    if (rst) v_sr <= '0;
    else v_sr <= {v_sr[TDE-2:0], i2_v & i2_last};
  end
  logic [S2_W-1:0] s2_0;
  logic [N_BITS-1:0] k_0;
  always_ff @(posedge clk) begin
    s2_0 <= s2_nxt;
    k_0 <= i2_k;
  end
  logic signed [DE_W-1:0] d_p, eps_p;
  logic signed [2*N_BITS-1:0] kk_p;
  hwa_mul_pipe #(
      .A_W(S2_W + 1),
      .B_W(N_BITS),
      .B_SIGNED(1'b0),
      .P_W(DE_W),
      .IN_REG(MUL_IN_REG)
  ) u_d (
      .clk(clk),
      .en (1'b1),
      .a  ($signed({1'b0, s2_0})),
      .b  (k_0),
      .p  (d_p)
  );
  hwa_mul_pipe #(
      .A_W(N_BITS + 1),
      .B_W(N_BITS),
      .B_SIGNED(1'b0),
      .P_W(2 * N_BITS),
      .IN_REG(MUL_IN_REG)
  ) u_kk (
      .clk(clk),
      .en (1'b1),
      .a  ($signed({1'b0, k_0})),
      .b  (k_0),
      .p  (kk_p)
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
      .a  ($signed({1'b0, kk_p})),
      .b  (EPS_Q[EPS_W-1:0]),
      .p  (eps_p)
  );
  logic [DE_W-1:0] d_7, de_8;  // D waits for k^2*EPS_Q (LM stages more); De at tDE
  hwa_delay #(
      .W(DE_W),
      .L(LM)
  ) u_d7 (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  (d_p),
      .q  (d_7)
  );
  always_ff @(posedge clk) de_8 <= (d_7 << G) + DE_W'(eps_p);

  logic rs_v;
  logic [Y_W-1:0] rs_y;
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

  // the context: y, the shift amount, k (from t1, CTX_LAT - 1 cycles later)
  logic [Y_W-1:0] ry;
  logic signed [SHW-1:0] rsh;
  logic [N_BITS-1:0] rk;
  always_ff @(posedge clk) begin
    if (rst) ctx_v <= 1'b0;
    else ctx_v <= rs_v;
    ry <= rs_y;
    rsh <= SHW'(P) + SHW'({1'b0, rs_k}) - SHW'(G / 2) - SHW'(FZ);
  end
  hwa_delay #(
      .W(N_BITS),
      .L(CTX_LAT - 1)
  ) u_kd (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  (k_0),
      .q  (rk)
  );
  assign ctx = {ry, rsh, rk};

  // ---- output side: stall-all pipeline, enable ce -----------------------------------------
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
  logic [Y_W-1:0] o1_y;
  logic signed [SHW-1:0] o1_sh;
  logic [N_BITS-1:0] o1_k;
  logic signed [IN_W-1:0] o1_xs;
  assign {o1_y, o1_sh, o1_k} = o1_ctx;
  assign o1_xs = o1_x;
  // ob: the element and the row's k, y, sh registered (the o1 registers drive the
  // buffer read and the row context); o2: A = k*X (one registered 18 x 18 multiply)
  logic ob_v, ob_l;
  logic signed [IN_W-1:0] ob_x;
  logic [N_BITS-1:0] ob_k;
  logic signed [GAMMA_W-1:0] ob_g;
  logic signed [BETA_W-1:0] ob_b;
  logic [Y_W-1:0] ob_y;
  logic signed [SHW-1:0] ob_sh;
  always_ff @(posedge clk) begin
    if (rst) ob_v <= 1'b0;
    else if (ce) ob_v <= o1_v;
    if (ce) begin
      ob_x <= o1_xs;
      ob_k <= o1_k;
      ob_l <= o1_l;
      ob_g <= o1_g;
      ob_b <= o1_b;
      ob_y <= o1_y;
      ob_sh <= o1_sh;
    end
  end
  logic o2_v, o2_l;
  logic signed [A_W-1:0] o2_a;
  logic signed [GAMMA_W-1:0] o2_g;
  logic signed [BETA_W-1:0] o2_b;
  logic [Y_W-1:0] o2_y;
  logic signed [SHW-1:0] o2_sh;
  always_ff @(posedge clk) begin
    if (rst) o2_v <= 1'b0;
    else if (ce) o2_v <= ob_v;
    if (ce) begin
      o2_a <= A_W'($signed({1'b0, ob_k})) * A_W'(ob_x);
      o2_l <= ob_l;
      o2_g <= ob_g;
      o2_b <= ob_b;
      o2_y <= ob_y;
      o2_sh <= ob_sh;
    end
  end
  // Z = round(A*y / 2^sh), acc = Z*gamma + (beta << BETA_SHIFT), out: hwa_ln_rsqrt_out
  // (OUT_LAT stages; AYS_W: room for the left shift and the rounding carry)
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  hwa_ln_rsqrt_out #(
      .A_W(A_W),
      .Y_W(Y_W),
      .Y_SIGNED(1'b0),
      .SHW(SHW),
      .LSH(LSH),
      .AY_W(AYS_W),
      .Z_W(Z_W),
      .GAMMA_W(GAMMA_W),
      .BETA_W(BETA_W),
      .ACC_W(ACC_W),
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
