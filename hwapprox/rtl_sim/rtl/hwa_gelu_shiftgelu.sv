// hwa_gelu_shiftgelu -- I-ViT ShiftGELU, x·sigmoid(1.702x) with the shift-exp
// (hwapprox.approx.gelu.ShiftGelu), bit-exact.
//
// For a raw input code x (in_fmt), with X0 < 0 and EXP_N from the spec:
//   m = max(x, 0);  e1 = shift_exp(x - m);  e2 = shift_exp(-m)       (arguments <= 0)
//   shift_exp = hwa_shift_exp_pipe (I-ViT's shift-exp: log2 e by shifts, a compare chain
//                 for q = floor(t / X0), r = t - X0·q, a shift by EXP_N - q)
//   factor = floor((2^31 - 1) / (e1 + e2))     (hwa_udiv: 31 pipelined stages)
//   sig    = (e1·factor) >> SIGMOID_SHIFT;  y = x·sig   (PROD_F fraction bits)
//   out    = sat(round_shift(y, PROD_F - OUT_F, OUT_RND), OUT_OVF)
// Every intermediate has the width the spec's hw_params() derives.
// Stream: one element per cycle, tlast passed through, stall-all pipeline whose enable
// is the registered ready of the output skid buffer (hwa_skid): no combinational path
// from m_axis_tready to s_axis_tready.
// Latency: 44 cycles (arguments 1, shift-exps 5 (hwa_shift_exp_pipe), sum 1, divider 31,
// e1·factor 3 (hwa_mul_pipe), sigmoid 1, product 1, cast 1); issue 22 added seven (the
// shift-exps had one combinational stage, e1·factor shared the sigmoid's).
// Parameter defaults: the default ShiftGelu spec's hw_params() (tests/test_rtl_lint.py).
`default_nettype none
module hwa_gelu_shiftgelu #(
    parameter int IN_W = 8,
    parameter int OUT_W = 16,
    parameter int OUT_F = 11,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int X0 = -10,
    parameter int EXP_N = 23,
    parameter bit TVM = 1'b0,
    parameter int SIGMOID_SHIFT = 24,
    parameter int PROD_F = 11,
    parameter int M_W = 7,
    parameter int SX_W = 8,
    parameter int ST_W = 9,
    parameter int SQ_W = 5,
    parameter int SR_W = 5,
    parameter int SEI_W = 28,
    parameter int SE_W = 27,
    parameter int ESUM_W = 28,
    parameter int FACTOR_W = 31,
    parameter int SIGP_W = 31,
    parameter int SIG_W = 7,
    parameter int YP_W = 15
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

  localparam int OSH = PROD_F - OUT_F;
  localparam int DIV_N = 31;  // the numerator 2^31 - 1
  localparam int PW = SE_W + IN_W + 2;  // payload through the divider: e1, x, valid, last
  localparam int PRW = SE_W + FACTOR_W;  // e1·factor before the shift

  if (IN_W < 2 || IN_W > 32 || X0 >= 0 || EXP_N < 1 || EXP_N > 30 || ESUM_W > 31
      || FACTOR_W != 31 || SIGMOID_SHIFT < 1 || YP_W > 62) begin : g_bad
    $error("hwa_gelu_shiftgelu %m: invalid IN_W=%0d X0=%0d (< 0) EXP_N=%0d (1..30) ESUM_W=%0d (<= 31) FACTOR_W=%0d (31) SIGMOID_SHIFT=%0d",
           IN_W, X0, EXP_N, ESUM_W, FACTOR_W, SIGMOID_SHIFT);
  end

  // pipeline enable: the skid buffer's registered ready (hwa_skid, at the end)
  logic ce;
  assign s_axis_tready = ce;

  // ---- stage 1: both shift-exp arguments ---------------------------------------------
  logic signed [IN_W-1:0] x_in;
  logic [M_W-1:0] m_c;
  assign x_in = s_axis_tdata;
  assign m_c = (x_in > 0) ? M_W'(x_in) : '0;
  logic s1_v, s1_l;
  logic signed [IN_W-1:0] s1_x;
  logic signed [SX_W-1:0] s1_v1, s1_v2;
  always_ff @(posedge clk) begin
    if (rst) s1_v <= 1'b0;
    else if (ce) s1_v <= s_axis_tvalid;
    if (ce) begin
      s1_l <= s_axis_tlast;
      s1_x <= x_in;
      s1_v1 <= SX_W'(x_in) - SX_W'($signed({1'b0, m_c}));  // x - m
      s1_v2 <= -SX_W'($signed({1'b0, m_c}));  // -m
    end
  end

  // ---- stages 2..6: the two shift-exps (hwa_shift_exp_pipe, five stages) ---------------
  logic [SE_W-1:0] s2_e1, s2_e2;
  hwa_shift_exp_pipe #(
      .X0(X0),
      .EXP_N(EXP_N),
      .TVM(TVM),
      .V_W(SX_W),
      .ST_W(ST_W),
      .SQ_W(SQ_W),
      .SR_W(SR_W),
      .SEI_W(SEI_W),
      .SE_W(SE_W)
  ) u_e1 (
      .clk(clk),
      .en (ce),
      .v  (s1_v1),
      .e  (s2_e1)
  );
  hwa_shift_exp_pipe #(
      .X0(X0),
      .EXP_N(EXP_N),
      .TVM(TVM),
      .V_W(SX_W),
      .ST_W(ST_W),
      .SQ_W(SQ_W),
      .SR_W(SR_W),
      .SEI_W(SEI_W),
      .SE_W(SE_W)
  ) u_e2 (
      .clk(clk),
      .en (ce),
      .v  (s1_v2),
      .e  (s2_e2)
  );
  localparam int EL = 5;  // hwa_shift_exp_pipe's latency
  logic [EL-1:0] e_v, e_l;
  logic signed [IN_W-1:0] e_x[EL];
  always_ff @(posedge clk) begin
    if (rst) e_v <= '0;
    else if (ce) e_v <= {e_v[EL-2:0], s1_v};
    if (ce) begin
      e_l <= {e_l[EL-2:0], s1_l};
      e_x[0] <= s1_x;
      for (int i = 1; i < EL; i++) e_x[i] <= e_x[i-1];
    end
  end
  logic s2_v, s2_l;
  logic signed [IN_W-1:0] s2_x;
  assign s2_v = e_v[EL-1];
  assign s2_l = e_l[EL-1];
  assign s2_x = e_x[EL-1];

  // ---- stage 3: the sum; then (2^31 - 1) / sum, 31 stages --------------------------------
  logic [ESUM_W-1:0] s3_sum;
  logic [PW-1:0] s3_p;
  always_ff @(posedge clk) begin
    if (rst) s3_p[0] <= 1'b0;
    else if (ce) s3_p[0] <= s2_v;
    if (ce) begin
      s3_sum <= ESUM_W'(s2_e1) + ESUM_W'(s2_e2);
      s3_p[PW-1:1] <= {s2_e1, s2_x, s2_l};
    end
  end
  logic [FACTOR_W-1:0] factor;
  logic [PW-1:0] dv_p;
  hwa_udiv #(
      .N_W(DIV_N),
      .D_W(ESUM_W),
      .Q_W(FACTOR_W),
      .P_W(PW)
  ) u_div (
      .clk  (clk),
      .en   (ce),
      .n    ({DIV_N{1'b1}}),
      .d    (s3_sum),
      .p_in (s3_p),
      .q    (factor),
      .p_out(dv_p)
  );
  // the divider's valid bit follows reset through its payload: clear it on reset
  logic dv_v, dv_l;
  logic [SE_W-1:0] dv_e1;
  logic signed [IN_W-1:0] dv_x;
  logic [DIV_N-1:0] dv_ok;  // stages filled since reset
  always_ff @(posedge clk) begin
    if (rst) dv_ok <= '0;
    else if (ce) dv_ok <= {dv_ok[DIV_N-2:0], 1'b1};
  end
  assign {dv_e1, dv_x, dv_l} = dv_p[PW-1:1];
  assign dv_v = dv_p[0] & dv_ok[DIV_N-1];

  // ---- sigmoid (e1·factor as 18 x 18 partial products, three stages), product, cast -------
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [PRW-1:0] sigp_c;
  /* verilator lint_on UNUSEDSIGNAL */
  hwa_mul_pipe #(
      .A_W(SE_W + 1),
      .B_W(FACTOR_W),
      .B_SIGNED(1'b0),
      .P_W(PRW)
  ) u_sigp (
      .clk(clk),
      .en (ce),
      .a  ($signed({1'b0, dv_e1})),
      .b  (factor),
      .p  (sigp_c)  // <= 2^31 - 1 (e1 <= e1 + e2): SIGP_W bits
  );
  logic [2:0] m_v, m_l;
  logic signed [IN_W-1:0] m_x[3];
  always_ff @(posedge clk) begin
    if (rst) m_v <= '0;
    else if (ce) m_v <= {m_v[1:0], dv_v};
    if (ce) begin
      m_l <= {m_l[1:0], dv_l};
      m_x <= '{dv_x, m_x[0], m_x[1]};
    end
  end
  logic s4_v, s4_l;
  logic signed [IN_W-1:0] s4_x;
  logic [SIG_W-1:0] s4_sig;
  always_ff @(posedge clk) begin
    if (rst) s4_v <= 1'b0;
    else if (ce) s4_v <= m_v[2];
    if (ce) begin
      s4_l <= m_l[2];
      s4_x <= m_x[2];
      s4_sig <= SIG_W'(SIGP_W'(sigp_c) >> SIGMOID_SHIFT);
    end
  end
  logic s5_v, s5_l;
  logic signed [YP_W-1:0] s5_y;
  always_ff @(posedge clk) begin
    if (rst) s5_v <= 1'b0;
    else if (ce) s5_v <= s4_v;
    if (ce) begin
      s5_l <= s4_l;
      s5_y <= YP_W'(s4_x) * YP_W'($signed({1'b0, s4_sig}));
    end
  end
  logic [OUT_W-1:0] out_c;
  hwa_cast #(
      .IN_W      (YP_W),
      .SHIFT     (OSH),
      .MODE      (OUT_RND),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_cast (
      .x(s5_y),
      .y(out_c)
  );
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  always_ff @(posedge clk) begin
    if (rst) begin
      o_v <= 1'b0;
      o_l <= 1'b0;
    end else if (ce) begin
      o_v <= s5_v;
      o_l <= s5_l;
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
