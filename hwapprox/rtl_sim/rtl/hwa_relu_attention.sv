// hwa_relu_attention -- ReLU attention p = ReLU(x) / n (hwapprox.approx.attnact.ReluAttention,
// Wortsman et al. 2023).
//
// Computes, for a raw score code x (in_fmt): acc = max(x, 0) * MULT (exact, FA fraction
// bits), then one cast into out_fmt: round_shift(acc, OUT_SHIFT, OUT_RND) and the
// overflow mode OUT_OVF. MULT = 1 when n is a power of two (the product is wiring: the
// unit is a shift), else round(2^(R+e) / n) (the spec's recip_bits R, e = ceil(log2 n)).
// Stream: one element per cycle, tlast passed through, stall-all pipeline whose enable
// is the registered ready of the output skid buffer (hwa_skid): no combinational path
// from m_axis_tready to s_axis_tready.
// Latency: 3 cycles (clamp + multiply, cast, output register).
// Parameter defaults: the default ReluAttention spec's hw_params() (tests/test_rtl_lint.py).
`default_nettype none
module hwa_relu_attention #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b0,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter longint MULT = 64'd1,
    parameter int MULT_W = 1,
    parameter int OUT_SHIFT = 2,
    parameter int ACC_W = 17
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

  if (IN_W < 2 || IN_W > 40 || OUT_W < 1 || OUT_W > 62 || MULT < 1 || MULT_W < 1
      || MULT_W > 40 || MULT >= (64'd1 << MULT_W) || ACC_W != IN_W + MULT_W
      || OUT_SHIFT < -60 || OUT_SHIFT > 100) begin : g_bad
    $error("hwa_relu_attention %m: invalid IN_W=%0d OUT_W=%0d MULT=%0d MULT_W=%0d ACC_W=%0d (IN_W + MULT_W) OUT_SHIFT=%0d",
           IN_W, OUT_W, MULT, MULT_W, ACC_W, OUT_SHIFT);
  end

  // pipeline enable: the skid buffer's registered ready (hwa_skid, at the end)
  logic ce;
  assign s_axis_tready = ce;

  // p1: ReLU (IN_W - 1 magnitude bits) times the constant 1/n mantissa
  logic signed [IN_W-1:0] x_in;
  logic [IN_W-2:0] relu_c;
  localparam logic [MULT_W-1:0] K = MULT_W'(MULT);
  assign x_in = s_axis_tdata;
  assign relu_c = x_in[IN_W-1] ? '0 : x_in[IN_W-2:0];
  logic p1_v, p1_l;
  logic signed [ACC_W-1:0] p1_acc;
  always_ff @(posedge clk) begin
    if (rst) p1_v <= 1'b0;
    else if (ce) p1_v <= s_axis_tvalid;
    if (ce) begin
      p1_l <= s_axis_tlast;
      p1_acc <= $signed(ACC_W'(relu_c) * ACC_W'(K));  // < 2^(ACC_W-1): sign bit 0
    end
  end

  // p2: cast into out_fmt
  logic [OUT_W-1:0] out_c;
  hwa_cast #(
      .IN_W      (ACC_W),
      .SHIFT     (OUT_SHIFT),
      .MODE      (OUT_RND),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_cast (
      .x(p1_acc),
      .y(out_c)
  );
  logic p2_v, p2_l;
  logic [OUT_W-1:0] p2_y;
  always_ff @(posedge clk) begin
    if (rst) p2_v <= 1'b0;
    else if (ce) p2_v <= p1_v;
    if (ce) begin
      p2_l <= p1_l;
      p2_y <= out_c;
    end
  end

  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  always_ff @(posedge clk) begin
    if (rst) begin
      o_v <= 1'b0;
      o_l <= 1'b0;
    end else if (ce) begin
      o_v <= p2_v;
      o_l <= p2_l;
    end
    if (ce) o_d <= p2_y;
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
