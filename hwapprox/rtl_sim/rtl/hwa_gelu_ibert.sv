// hwa_gelu_ibert -- I-BERT i-GELU (hwapprox.approx.gelu.IBertGelu), bit-exact.
//
// For a raw input code x (in_fmt), with the spec's integer constants:
//   t    = min(|x|, -B_INT)                         (T_W bits)
//   poly = (t + B_INT)^2 + C_INT                    (the erf polynomial, POLY_W)
//   erf  = (sign(x) * poly) >>> ERF_SHIFT           (floor, ERF_W)
//   p    = x * (erf + ERF_ONE)                      (PROD_W)
//   q    = -(p * MULT)                              (the dyadic requantisation, Q_W)
//   y    = sat(round_shift(q, MULT_SHIFT, OUT_RND), OUT_OVF)   into out_fmt (OUT_W)
// Every intermediate has the width the spec's hw_params() derives.
// Stream: one element per cycle, tlast passed through, stall-all pipeline whose enable
// is the registered ready of the output skid buffer (hwa_skid): no combinational path
// from m_axis_tready to s_axis_tready.
// Latency: 9 cycles (abs/min/add, square, polynomial with the sign, floor shift + one,
// x * (erf + 1), the requantising product in three stages of 18 x 18 partial products
// (hwa_mul_pipe), round/saturate). Issue 22 added four (the polynomial, the product
// and two of the requantisation's were shared stages) to reach 125 MHz on ECP5.
// Parameter defaults: the default IBertGelu spec's hw_params() (tests/test_rtl_lint.py).
// C_INT and MULT are 64-bit (C_INT negative: a two's-complement 64'h literal).
`default_nettype none
module hwa_gelu_ibert #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int B_INT = -5124,
    parameter longint C_INT = 64'hFFFFFFFFFE44CB92,
    parameter int ERF_SHIFT = 14,
    parameter int ERF_ONE = -1773,
    parameter longint MULT = 64'd9690706,
    parameter int MULT_SHIFT = 35,
    parameter int ABS_W = 16,
    parameter int T_W = 13,
    parameter int TB_W = 14,
    parameter int SQ_W = 25,
    parameter int POLY_W = 26,
    parameter int ERF_W = 12,
    parameter int SUM_W = 13,
    parameter int PROD_W = 28,
    parameter int Q_W = 52
) (
    input  logic             clk,
    input  logic             rst,
    input  logic [IN_W-1:0]  s_axis_tdata,
    input  logic             s_axis_tvalid,
    output logic             s_axis_tready,
    input  logic             s_axis_tlast,
    output logic [OUT_W-1:0] m_axis_tdata,
    output logic             m_axis_tvalid,
    input  logic             m_axis_tready,
    output logic             m_axis_tlast
);


  if (IN_W < 2 || IN_W > 40 || OUT_W < 1 || OUT_W > 62 || B_INT >= 0 || ERF_SHIFT < 0
      || Q_W > 62 || PROD_W > 62 || POLY_W > 62 || T_W < 1 || TB_W < 2 || ABS_W < 1
      || MULT_SHIFT < -60 || MULT_SHIFT > 100 || MULT < 0 || MULT >= 64'd1 << 48) begin : g_bad
    $error("hwa_gelu_ibert %m: invalid IN_W=%0d OUT_W=%0d B_INT=%0d (< 0) ERF_SHIFT=%0d Q_W=%0d PROD_W=%0d MULT_SHIFT=%0d MULT=%0d (0..2^48-1)",
           IN_W, OUT_W, B_INT, ERF_SHIFT, Q_W, PROD_W, MULT_SHIFT, MULT);
  end

  // pipeline enable: the skid buffer's registered ready (hwa_skid, at the end)
  logic ce;
  assign s_axis_tready = ce;

  // p1: t + B_INT with t = min(|x|, -B_INT), i.e. d = |x| + B_INT when d < 0, else 0;
  // both signs' d in parallel (one adder deep)
  localparam int DW = ((IN_W > TB_W) ? IN_W : TB_W) + 2;
  logic signed [IN_W-1:0] x_in;
  logic signed [DW-1:0] dp_c, dn_c, d_c;
  assign x_in = s_axis_tdata;
  assign dp_c = DW'(x_in) + DW'(B_INT);
  assign dn_c = DW'(B_INT) - DW'(x_in);
  assign d_c = x_in[IN_W-1] ? dn_c : dp_c;
  logic p1_v, p1_l;
  logic signed [IN_W-1:0] p1_x;
  logic signed [TB_W-1:0] p1_tb;
  always_ff @(posedge clk) begin
    if (rst) p1_v <= 1'b0;
    else if (ce) p1_v <= s_axis_tvalid;
    if (ce) begin
      p1_l <= s_axis_tlast;
      p1_x <= x_in;
      p1_tb <= d_c[DW-1] ? TB_W'(d_c) : '0;
    end
  end

  // p2: the square
  logic p2_v, p2_l;
  logic signed [IN_W-1:0] p2_x;
  logic [SQ_W-1:0] p2_sq;
  always_ff @(posedge clk) begin
    if (rst) p2_v <= 1'b0;
    else if (ce) p2_v <= p1_v;
    if (ce) begin
      p2_l <= p1_l;
      p2_x <= p1_x;
      p2_sq <= SQ_W'(p1_tb * p1_tb);
    end
  end

  // p3: the polynomial with x's sign
  logic signed [POLY_W-1:0] poly_c, sp_c;
  assign poly_c = POLY_W'($signed({1'b0, p2_sq})) + POLY_W'(C_INT);
  assign sp_c = (p2_x > 0) ? poly_c : ((p2_x < 0) ? -poly_c : '0);
  logic p3_v, p3_l;
  logic signed [IN_W-1:0] p3_x;
  logic signed [POLY_W-1:0] p3_sp;
  always_ff @(posedge clk) begin
    if (rst) p3_v <= 1'b0;
    else if (ce) p3_v <= p2_v;
    if (ce) begin
      p3_l <= p2_l;
      p3_x <= p2_x;
      p3_sp <= sp_c;
    end
  end

  // p4: floor shift, + one
  logic signed [ERF_W-1:0] erf_c;
  assign erf_c = ERF_W'(p3_sp >>> ERF_SHIFT);
  logic p4_v, p4_l;
  logic signed [IN_W-1:0] p4_x;
  logic signed [SUM_W-1:0] p4_sum;
  always_ff @(posedge clk) begin
    if (rst) p4_v <= 1'b0;
    else if (ce) p4_v <= p3_v;
    if (ce) begin
      p4_l <= p3_l;
      p4_x <= p3_x;
      p4_sum <= SUM_W'(erf_c) + SUM_W'(ERF_ONE);
    end
  end

  // p5: times x
  logic p5_v, p5_l;
  logic signed [PROD_W-1:0] p5_p;
  always_ff @(posedge clk) begin
    if (rst) p5_v <= 1'b0;
    else if (ce) p5_v <= p4_v;
    if (ce) begin
      p5_l <= p4_l;
      p5_p <= PROD_W'(p4_x) * PROD_W'(p4_sum);
    end
  end

  // p6..p8: the requantising product q = p * (-MULT), in DSP-sized partial products
  localparam longint NMULT = -MULT;
  localparam int NM_W = $clog2(MULT + 1) + 1;  // -MULT as a signed constant
  logic signed [Q_W-1:0] q_c;
  hwa_mul_pipe #(
      .A_W(PROD_W),
      .B_W(NM_W),
      .B_SIGNED(1'b1),
      .P_W(Q_W)
  ) u_requant (
      .clk(clk),
      .en (ce),
      .a  (p5_p),
      .b  (NM_W'(NMULT)),
      .p  (q_c)
  );
  logic [2:0] q_v, q_l;
  always_ff @(posedge clk) begin
    if (rst) q_v <= '0;
    else if (ce) q_v <= {q_v[1:0], p5_v};
    if (ce) q_l <= {q_l[1:0], p5_l};
  end

  // p9: cast into out_fmt
  logic [OUT_W-1:0] out_c;
  hwa_cast #(
      .IN_W      (Q_W),
      .SHIFT     (MULT_SHIFT),
      .MODE      (OUT_RND),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_cast (
      .x(q_c),
      .y(out_c)
  );
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  always_ff @(posedge clk) begin
    if (rst) begin
      o_v <= 1'b0;
      o_l <= 1'b0;
    end else if (ce) begin
      o_v <= q_v[2];
      o_l <= q_l[2];
    end
    if (ce) o_d <= out_c;
  end

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
