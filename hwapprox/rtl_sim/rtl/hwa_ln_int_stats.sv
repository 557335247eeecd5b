// hwa_ln_int_stats -- the per-row statistics of the integer LayerNorms (I-BERT, I-ViT:
// hwa_layernorm_ibert, hwa_layernorm_ivit) from one pass over the row.
//
// Contract (one row at a time, valid/ready on both sides, rows leave in order): from
// S1 = sum X, S2 = sum X^2 and the row length n (1 <= n < 2^N_BITS):
//   mean  = round(S1 / n), ties to even (hwapprox.approx.layernorm._round_div_even:
//           on |S1| by hwa_udiv_iter, quotient and remainder, then the sign);
//   var0  = sum (X - mean)^2 = S2 - mean*(2*S1 - n*mean), exact (MOM_W-bit signed
//           intermediates, the result >= 0 in VAR0_W bits);
//   sqrtn = round(sqrt(n) * 2^SQRTN_F) = (isqrt(n << (2*SQRTN_F + 2)) + 1) >> 1
//           (hwa_isqrt_iter; layernorm._round_sqrt), SQRTN_W bits for n <= ROW_MAX.
// The payload p_in leaves with its row. Timing: the divider and the square root run
// side by side (one bit per cycle, hwa_udiv_rr / hwa_isqrt_rr: a row every <= II
// cycles), then the rounded mean (three stages, one before issue 22) and var0
// (ten stages, a stall-all chain: n*mean and mean*t as 18 x 18 partial products with
// operand registers, the difference, the subtraction; issue 22), with a register
// before the divider and the root and one after var0, each taking a row only when empty (in_rdy and the chain's
// enable are registers: no ready path through the module; issue 22): in -> out_v about
// RB + 16 cycles (RB = ceil(RX / 2), the root's bits: the slower of the two); one row
// every max(II, 2) cycles at most.
// Parameters: no defaults; the parent passes every one (the spec's hw_params()).
`default_nettype none
module hwa_ln_int_stats #(
    parameter int X_W,
    parameter int N_BITS,
    parameter int S1_W,
    parameter int S2_W,
    parameter int MOM_W,
    parameter int VAR0_W,
    parameter int SQRTN_F,
    parameter int SQRTN_W,
    parameter int II,
    parameter int P_W
) (
    input  logic                     clk,
    input  logic                     rst,
    input  logic                     in_v,
    output logic                     in_rdy,
    input  logic signed [S1_W-1:0]   s1,
    input  logic        [S2_W-1:0]   s2,
    input  logic        [N_BITS-1:0] n,
    input  logic        [P_W-1:0]    p_in,
    output logic                     out_v,
    input  logic                     out_rdy,
    output logic signed [X_W-1:0]    mean,
    output logic        [VAR0_W-1:0] var0,
    output logic        [SQRTN_W-1:0] sqrtn,
    output logic        [P_W-1:0]    p_out
);

  localparam int RX = N_BITS + 2 * SQRTN_F + 2;  // the radicand n << (2*SQRTN_F + 2)
  localparam int RB = (RX + 1) / 2;
  localparam int DP = 1 + S1_W + S2_W + N_BITS + P_W;  // divider payload

  if (X_W < 2 || N_BITS < 1 || S1_W < X_W || S2_W < 1 || MOM_W < S2_W + 1 || VAR0_W < 1
      || SQRTN_W < 1 || SQRTN_F < 0 || MOM_W > 64 || RX > 64) begin : g_bad
    $error("hwa_ln_int_stats %m: invalid X_W=%0d N_BITS=%0d S1_W=%0d S2_W=%0d MOM_W=%0d VAR0_W=%0d SQRTN_F=%0d SQRTN_W=%0d",
           X_W, N_BITS, S1_W, S2_W, MOM_W, VAR0_W, SQRTN_F, SQRTN_W);
  end

  // ---- |S1| / n and isqrt(n << (2F + 2)), side by side -------------------------------
  logic dv_rdy, sq_rdy, dv_v, sq_v, join_v, m_rdy;
  logic [S1_W-1:0] mag;
  logic [X_W-1:0] q;  // |S1| / n <= max |X| <= 2^(X_W-1)
  logic [N_BITS-1:0] r;
  logic [DP-1:0] dp;
  logic [RB-1:0] root;
  logic unused_sqp;
  // I: the row's sums registered first, taken only when the register is empty (in_rdy a
  // register: no ready path from the divider and root pools back into the caller's FIFO
  // of row sums; issue 22), released when both pools take the row
  logic i_v;
  logic signed [S1_W-1:0] i_s1;
  logic [S2_W-1:0] i_s2;
  logic [N_BITS-1:0] i_n;
  logic [P_W-1:0] i_p;
  assign in_rdy = !i_v;
  always_ff @(posedge clk) begin
    if (rst) i_v <= 1'b0;
    else if (!i_v) i_v <= in_v;
    else if (dv_rdy & sq_rdy) i_v <= 1'b0;
    if (!i_v) begin
      i_s1 <= s1;
      i_s2 <= s2;
      i_n <= n;
      i_p <= p_in;
    end
  end
  assign mag = i_s1[S1_W-1] ? S1_W'(-i_s1) : S1_W'(i_s1);  // -(-2^(S1_W-1)): unsigned
  assign join_v = dv_v & sq_v;
  hwa_udiv_rr #(
      .N_W(S1_W),
      .D_W(N_BITS),
      .Q_W(X_W),
      .II (II),
      .P_W(DP)
  ) u_mean (
      .clk(clk),
      .rst(rst),
      .in_v(i_v & sq_rdy),
      .in_rdy(dv_rdy),
      .n(mag),
      .d(i_n),
      .p_in({i_s1[S1_W-1], i_s1, i_s2, i_n, i_p}),
      .out_v(dv_v),
      .out_rdy(join_v & m_rdy),
      .q(q),
      .r(r),
      .p_out(dp)
  );
  hwa_isqrt_rr #(
      .X_W(RX),
      .II (II),
      .P_W(1)
  ) u_sqrtn (
      .clk(clk),
      .rst(rst),
      .in_v(i_v & dv_rdy),
      .in_rdy(sq_rdy),
      .x(RX'(i_n) << (2 * SQRTN_F + 2)),
      .p_in(1'b0),
      .out_v(sq_v),
      .out_rdy(join_v & m_rdy),
      .root(root),
      .p_out(unused_sqp)
  );

  // ---- stages M1..M3: the rounded mean, sqrtn (a stall-all chain; issue 22): M1 the
  // divider's and the root's results registered; M2 the rounding of |S1| / n, ties to
  // even, and sqrtn; M3 the sign
  localparam int ML = 3;
  logic [ML-1:0] mv;  // a row in stage M1..M3
  logic men, m_v, v_rdy;
  assign men = !mv[ML-1] || v_rdy;
  assign m_rdy = men;
  assign m_v = mv[ML-1];
  always_ff @(posedge clk) begin
    if (rst) mv <= '0;
    else if (men) mv <= {mv[ML-2:0], join_v};
  end
  logic signed [X_W-1:0] m_mean;
  logic signed [S1_W-1:0] m_s1;
  logic [S2_W-1:0] m_s2;
  logic [N_BITS-1:0] m_n;
  logic [SQRTN_W-1:0] m_sqrtn;
  logic [P_W-1:0] m_p;
  // M1
  logic [X_W-1:0] m1_q;
  logic [N_BITS-1:0] m1_r;
  logic [DP-1:0] m1_dp;
  logic [RB-1:0] m1_root;
  always_ff @(posedge clk) begin
    if (men) begin
      m1_q <= q;
      m1_r <= r;
      m1_dp <= dp;
      m1_root <= root;
    end
  end
  // M2
  logic d_neg;
  logic signed [S1_W-1:0] d_s1;
  logic [S2_W-1:0] d_s2;
  logic [N_BITS-1:0] d_n;
  logic [P_W-1:0] d_p;
  logic [N_BITS:0] r2;
  logic up;
  logic [X_W:0] qr, m2_qr;  // round(|S1| / n) <= 2^(X_W-1)
  logic m2_neg;
  logic signed [S1_W-1:0] m2_s1;
  logic [S2_W-1:0] m2_s2;
  logic [N_BITS-1:0] m2_n;
  logic [SQRTN_W-1:0] m2_sqrtn;
  logic [P_W-1:0] m2_p;
  assign {d_neg, d_s1, d_s2, d_n, d_p} = m1_dp;
  assign r2 = {m1_r, 1'b0};
  assign up = (r2 > {1'b0, d_n}) || (r2 == {1'b0, d_n} && m1_q[0]);
  assign qr = {1'b0, m1_q} + (X_W + 1)'(up);
  always_ff @(posedge clk) begin
    if (men) begin
      m2_qr <= qr;
      m2_neg <= d_neg;
      m2_s1 <= d_s1;
      m2_s2 <= d_s2;
      m2_n <= d_n;
      m2_sqrtn <= SQRTN_W'((RB + 1)'(m1_root) + 1'b1 >> 1);
      m2_p <= d_p;
    end
  end
  // M3
  always_ff @(posedge clk) begin
    if (men) begin
      m_mean <= m2_neg ? X_W'(-m2_qr) : X_W'(m2_qr);
      m_s1 <= m2_s1;
      m_s2 <= m2_s2;
      m_n <= m2_n;
      m_sqrtn <= m2_sqrtn;
      m_p <= m2_p;
    end
  end

  // ---- stages V1..V10: var0 = S2 - mean*(2*S1 - n*mean), a stall-all chain (issue 22):
  //   V1..V4 n*mean, V6..V9 mean*t (each hwa_mul_pipe with operand registers of its
  //   own, 18 x 18 partial products: on ECP5 the MULT18X18D's own registers); V5 t =
  //   2*S1 - n*mean; V10 var0 = S2 - mean*t. Every product and difference mod 2^MOM_W.
  localparam int VL = 10;
  logic [VL-1:0] vv;  // a row in stage V1..V7
  logic ven;  // the chain advances
  logic o_v;  // O: the output register (below)
  assign ven = !vv[VL-1] || !o_v;
  assign v_rdy = ven;
  always_ff @(posedge clk) begin
    if (rst) vv <= '0;
    else if (ven) vv <= {vv[VL-2:0], m_v};
  end
  logic signed [MOM_W-1:0] v1_nm, v2_t, v5_mt;
  logic signed [S1_W-1:0] v1_s1;
  logic [S2_W-1:0] v1_s2, v2_s2, v5_s2;
  logic signed [X_W-1:0] v1_mean, v2_mean, v5_mean;
  logic [SQRTN_W-1:0] v1_sqrtn, v2_sqrtn, v5_sqrtn;
  logic [P_W-1:0] v1_p, v2_p, v5_p;
  hwa_mul_pipe #(
      .A_W(X_W),
      .B_W(N_BITS),
      .B_SIGNED(1'b0),
      .P_W(MOM_W),
      .IN_REG(1'b1)
  ) u_nm (
      .clk(clk),
      .en (ven),
      .a  (m_mean),
      .b  (m_n),
      .p  (v1_nm)
  );
  hwa_delay #(
      .W(S1_W + S2_W + X_W + SQRTN_W + P_W),
      .L(4)
  ) u_v1 (
      .clk(clk),
      .rst(1'b0),
      .en (ven),
      .d  ({m_s1, m_s2, m_mean, m_sqrtn, m_p}),
      .q  ({v1_s1, v1_s2, v1_mean, v1_sqrtn, v1_p})
  );
  always_ff @(posedge clk) begin
    if (ven) begin
      v2_t <= (MOM_W'(v1_s1) <<< 1) - v1_nm;
      v2_s2 <= v1_s2;
      v2_mean <= v1_mean;
      v2_sqrtn <= v1_sqrtn;
      v2_p <= v1_p;
    end
  end
  hwa_mul_pipe #(
      .A_W(X_W),
      .B_W(MOM_W),
      .B_SIGNED(1'b1),
      .P_W(MOM_W),
      .IN_REG(1'b1)
  ) u_mt (
      .clk(clk),
      .en (ven),
      .a  (v2_mean),
      .b  (v2_t),
      .p  (v5_mt)
  );
  hwa_delay #(
      .W(S2_W + X_W + SQRTN_W + P_W),
      .L(4)
  ) u_v5 (
      .clk(clk),
      .rst(1'b0),
      .en (ven),
      .d  ({v2_s2, v2_mean, v2_sqrtn, v2_p}),
      .q  ({v5_s2, v5_mean, v5_sqrtn, v5_p})
  );
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [MOM_W-1:0] var_c;  // 0 <= var0 < 2^VAR0_W: the top bits are dropped
  /* verilator lint_on UNUSEDSIGNAL */
  assign var_c = MOM_W'($signed({1'b0, v5_s2})) - v5_mt;
  logic signed [X_W-1:0] v6_mean;
  logic [VAR0_W-1:0] v6_var0;
  logic [SQRTN_W-1:0] v6_sqrtn;
  logic [P_W-1:0] v6_p;
  always_ff @(posedge clk) begin
    if (ven) begin
      v6_mean <= v5_mean;
      v6_var0 <= VAR0_W'(var_c);
      v6_sqrtn <= v5_sqrtn;
      v6_p <= v5_p;
    end
  end
  // O: the row's statistics in a register that takes a row only when empty (the chain's
  // enable ven a function of registers, not of out_rdy; issue 22), emptied by out_rdy
  always_ff @(posedge clk) begin
    if (rst) o_v <= 1'b0;
    else if (!o_v) o_v <= vv[VL-1];
    else if (out_rdy) o_v <= 1'b0;
    if (!o_v) begin
      mean <= v6_mean;
      var0 <= v6_var0;
      sqrtn <= v6_sqrtn;
      p_out <= v6_p;
    end
  end
  assign out_v = o_v;

endmodule
`default_nettype wire
