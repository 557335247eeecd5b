// hwa_ln_rsqrt_out -- the output pipeline shared by the rsqrt LayerNorms (hwa_layernorm_rsqrt,
// hwa_layernorm_rmsnorm; issue 22), per element, a stall-all pipeline advancing when ce
// is high. From the element's A (the centred or scaled input), the row's y = 1/sqrt and
// shift sh, and the element's gamma/beta:
//   Z   = round_half_up(A*y / 2^sh)          (sh > 0; A*y << -sh when sh <= 0, by at
//                                            most LSH; AY_W bits hold A*y and the shift)
//   acc = Z*gamma + (beta <<< BETA_SHIFT)     (ACC_W bits)
//   out = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF)   (OUT_W)
// Stages (LM = 3 + IN_REG, the hwa_mul_pipe latency):
//   LM  A*y (hwa_mul_pipe; the shift split into a right shift clamped to AY_W + 1 and a
//       left shift, registered beside it);
//   3   Z's rounding shift (hwa_round_shift_pipe);
//   LM  Z*gamma (hwa_mul_pipe);
//   1   acc;  1  the rounding into out_fmt and saturation, the output register.
// Latency: in -> out_v 2*LM + 5 ce cycles (13 at IN_REG = 1); the parent puts its
// hwa_skid after the output register and takes ce from the skid's registered ready.
// Parameters: no defaults but IN_REG (0 or 1, default 1: every multiplier behind
// operand registers of its own, hwa_mul_pipe).
`default_nettype none
module hwa_ln_rsqrt_out #(
    parameter int A_W,
    parameter int Y_W,
    parameter bit Y_SIGNED,
    parameter int SHW,
    parameter int LSH,
    parameter int AY_W,
    parameter int Z_W,
    parameter int GAMMA_W,
    parameter int BETA_W,
    parameter int ACC_W,
    parameter int BETA_SHIFT,
    parameter int OUT_SHIFT,
    parameter int OUT_W,
    parameter bit OUT_SIGNED,
    parameter int OUT_RND,
    parameter int OUT_OVF,
    parameter bit IN_REG = 1'b1
) (
    input  wire logic                      clk,
    input  wire logic                      rst,
    input  wire logic                      ce,
    input  wire logic                      in_v,
    input  wire logic                      in_l,
    input  wire logic signed [A_W-1:0]     a,
    input  wire logic        [Y_W-1:0]     y,
    input  wire logic signed [SHW-1:0]     sh,
    input  wire logic signed [GAMMA_W-1:0] gamma,
    input  wire logic signed [BETA_W-1:0]  beta,
    output logic                           out_v,
    output logic                           out_l,
    output logic             [OUT_W-1:0]   out_d
);

  localparam int LM = 3 + int'(IN_REG);
  localparam int RSW = $clog2(AY_W + 2);
  localparam int LSW = $clog2(LSH + 1) + 1;

  if (A_W < 2 || Y_W < 1 || SHW < 2 || LSH < 0 || AY_W < A_W || Z_W < 2 || ACC_W < Z_W
      || ACC_W > 64 || OUT_SHIFT < 0 || OUT_SHIFT > 255 || OUT_W < 1) begin : g_bad
    $error("hwa_ln_rsqrt_out %m: invalid A_W=%0d Y_W=%0d SHW=%0d LSH=%0d AY_W=%0d Z_W=%0d ACC_W=%0d OUT_SHIFT=%0d OUT_W=%0d",
           A_W, Y_W, SHW, LSH, AY_W, Z_W, ACC_W, OUT_SHIFT, OUT_W);
  end

  // LM stages: A*y; the row's shift as a right shift (sh > 0, clamped: every bit dropped
  // beyond AY_W + 1) and a left shift (sh < 0), carried beside it
  logic signed [AY_W-1:0] m_ay;
  hwa_mul_pipe #(
      .A_W(A_W),
      .B_W(Y_W),
      .B_SIGNED(Y_SIGNED),
      .P_W(AY_W),
      .IN_REG(IN_REG)
  ) u_ay (
      .clk(clk),
      .en (ce),
      .a  (a),
      .b  (y),
      .p  (m_ay)
  );
  logic [RSW-1:0] rsh_c, m_rsh;
  logic [LSW-1:0] lsh_c, m_lsh;
  assign rsh_c = (sh <= 0) ? '0 : (sh > SHW'(AY_W + 1)) ? RSW'(AY_W + 1) : RSW'(sh);
  assign lsh_c = (sh >= 0) ? '0 : LSW'(-sh);
  logic m_v, m_l;
  logic signed [GAMMA_W-1:0] m_g;
  logic signed [BETA_W-1:0] m_b;
  hwa_delay #(
      .W(2 + GAMMA_W + BETA_W + RSW + LSW),
      .L(LM)
  ) u_dm (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({in_v, in_l, gamma, beta, rsh_c, lsh_c}),
      .q  ({m_v, m_l, m_g, m_b, m_rsh, m_lsh})
  );

  // 3 stages: Z = round half up (A*y / 2^sh) (hwa_round_shift_pipe, RND), or A*y << -sh
  logic signed [AY_W-1:0] m_ays;
  if (LSH > 0) begin : g_lsh
    assign m_ays = m_ay <<< m_lsh;
  end else begin : g_no_lsh
    assign m_ays = m_ay;
    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_lsh;  // sh >= 0 always
    /* verilator lint_on UNUSEDSIGNAL */
    assign unused_lsh = ^m_lsh;
  end
  logic signed [Z_W-1:0] r_z;
  hwa_round_shift_pipe #(
      .IN_W (AY_W),
      .SH_W (RSW),
      .OUT_W(Z_W),
      .MODE (hwa_pkg::RND_RND)
  ) u_zr (
      .clk(clk),
      .en (ce),
      .x  (m_ays),
      .sh (m_rsh),
      .y  (r_z)
  );
  logic r_v, r_l;
  logic signed [GAMMA_W-1:0] r_g;
  logic signed [BETA_W-1:0] r_b;
  hwa_delay #(
      .W(2 + GAMMA_W + BETA_W),
      .L(3)
  ) u_dr (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({m_v, m_l, m_g, m_b}),
      .q  ({r_v, r_l, r_g, r_b})
  );

  // LM stages: Z*gamma (hwa_mul_pipe); one more: acc = Z*gamma + (beta << BETA_SHIFT)
  logic signed [ACC_W-1:0] g_zg;
  hwa_mul_pipe #(
      .A_W(Z_W),
      .B_W(GAMMA_W),
      .B_SIGNED(1'b1),
      .P_W(ACC_W),
      .IN_REG(IN_REG)
  ) u_zg (
      .clk(clk),
      .en (ce),
      .a  (r_z),
      .b  (r_g),
      .p  (g_zg)
  );
  logic g_v, g_l;
  logic signed [BETA_W-1:0] g_b;
  hwa_delay #(
      .W(2 + BETA_W),
      .L(LM)
  ) u_dg (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({r_v, r_l, r_b}),
      .q  ({g_v, g_l, g_b})
  );
  logic c_v, c_l;
  logic signed [ACC_W-1:0] c_acc;
  always_ff @(posedge clk) begin
    if (rst) c_v <= 1'b0;
    else if (ce) c_v <= g_v;
    if (ce) begin
      c_acc <= g_zg + (ACC_W'(g_b) <<< BETA_SHIFT);
      c_l <= g_l;
    end
  end

  // one rounding into out_fmt, overflow mode, output register
  logic signed [ACC_W-1:0] rnd_c;
  logic [OUT_W-1:0] out_c;
  hwa_round_shift #(
      .IN_W (ACC_W),
      .SH_W (8),
      .OUT_W(ACC_W),
      .MODE (OUT_RND)
  ) u_round (
      .x (c_acc),
      .sh(8'(OUT_SHIFT)),
      .y (rnd_c)
  );
  hwa_sat #(
      .IN_W      (ACC_W),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_sat (
      .x(rnd_c),
      .y(out_c)
  );
  always_ff @(posedge clk) begin
    if (rst) begin
      out_v <= 1'b0;
      out_l <= 1'b0;
    end else if (ce) begin
      out_v <= c_v;
      out_l <= c_l;
    end
    if (ce) out_d <= out_c;
  end

endmodule
`default_nettype wire
