// hwa_pwl -- piecewise-linear GELU (hwapprox.approx.gelu.PwlGelu).
//
// Computes, for a raw input code x (in_fmt, F_in fraction bits), with the
// spec's tables B (NSEG+1 breakpoints, in_fmt codes), S (NSEG slopes,
// slope_fmt) and C (NSEG intercepts, intercept_fmt), loaded by $readmemh:
//   x <  B_0 : acc = 0
//   x >= B_N : acc = x << SH_X          (TOP_ONE = 0: GELU(x) ~ x)
//              acc = 1 << FA            (TOP_ONE = 1: sigmoid ~ 1)
//   else     : i = #{j in 1..NSEG-1 : x >= B_j};
//              acc = (x*S_i << SH_XS) + (C_i << SH_C)      (exact, FA fraction bits)
//   y = cast to out_fmt: round_shift(acc, OUT_SHIFT, OUT_RND) then the
//       overflow mode OUT_OVF (OUT_SHIFT < 0: exact left shift then overflow).
// Stream: one element per cycle, tlast passed through, stall-all pipeline whose enable
// is the registered ready of the output skid buffer (hwa_skid): no combinational path
// from m_axis_tready to s_axis_tready.
// Latency: 6 cycles (compare, count, coefficient ROM, multiply, align/add,
// round/saturate); issue 22 added the product register and the count's own stage
// (+2) for 125 MHz on ECP5. Output: skid buffer (hwa_skid), registered ready.
// Parameter defaults: the default PwlGelu spec's hw_params() (tests/test_rtl_lint.py).
`default_nettype none
module hwa_pwl #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int NSEG = 8,
    parameter int S_W = 18,
    parameter int C_W = 18,
    parameter int SH_XS = 0,
    parameter int SH_C = 11,
    parameter int SH_X = 16,
    parameter int FA = 27,
    parameter bit TOP_ONE = 1'b0,
    parameter int OUT_SHIFT = 16,
    parameter int ACC_W = 35,
    parameter int PROD_W = 34,  // x*S_i exactly, signed: IN_W + S_W (hw_params)
    parameter string BP_FILE = "",
    parameter string SLOPE_FILE = "",
    parameter string ICPT_FILE = ""
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

  localparam int SEGW = (NSEG > 1) ? $clog2(NSEG) : 1;

  if (IN_W < 2 || IN_W > 40 || OUT_W < 1 || OUT_W > 62 || NSEG < 1 || NSEG > 256
      || SH_XS < 0 || SH_C < 0 || SH_X < 0 || ACC_W > 120 || OUT_SHIFT < -60
      || OUT_SHIFT > 100 || PROD_W < IN_W + S_W) begin : g_bad
    $error("hwa_pwl %m: invalid IN_W=%0d OUT_W=%0d NSEG=%0d (1..256) SH_XS=%0d SH_C=%0d SH_X=%0d OUT_SHIFT=%0d ACC_W=%0d PROD_W=%0d (>= IN_W + S_W)",
           IN_W, OUT_W, NSEG, SH_XS, SH_C, SH_X, OUT_SHIFT, ACC_W, PROD_W);
  end

  // breakpoints: constants compared in parallel
  logic [IN_W-1:0] bp_mem[NSEG+1];
  initial begin
    if (BP_FILE != "") $readmemh(BP_FILE, bp_mem);
  end

  // pipeline enable: the skid buffer's registered ready (hwa_skid, at the end)
  logic ce;
  assign s_axis_tready = ce;

  // p0: the breakpoint compares (registered)
  logic signed [IN_W-1:0] x_in;
  logic [NSEG-1:0] ge_c;  // ge_c[j] = x >= B_j (j = 1..NSEG-1; bit 0 unused, 0)
  assign x_in = s_axis_tdata;
  always_comb begin
    ge_c = '0;
    for (int j = 1; j < NSEG; j++) ge_c[j] = x_in >= $signed(bp_mem[j]);
  end
  logic p0_v, p0_l, p0_lo, p0_hi;
  logic signed [IN_W-1:0] p0_x;
  logic [NSEG-1:0] p0_ge;
  always_ff @(posedge clk) begin
    if (rst) p0_v <= 1'b0;
    else if (ce) p0_v <= s_axis_tvalid;
    if (ce) begin
      p0_l <= s_axis_tlast;
      p0_x <= x_in;
      p0_ge <= ge_c;
      p0_lo <= x_in < $signed(bp_mem[0]);
      p0_hi <= x_in >= $signed(bp_mem[NSEG]);
    end
  end

  // p1: segment index = the number of breakpoints B_1..B_(NSEG-1) at or below x
  logic [SEGW:0] seg_c;
  always_comb begin
    seg_c = '0;
    for (int j = 1; j < NSEG; j++) seg_c = seg_c + (SEGW + 1)'(p0_ge[j]);
  end
  logic p1_v, p1_l, p1_lo, p1_hi;
  logic signed [IN_W-1:0] p1_x;
  logic [SEGW-1:0] p1_seg;
  always_ff @(posedge clk) begin
    if (rst) p1_v <= 1'b0;
    else if (ce) p1_v <= p0_v;
    if (ce) begin
      p1_l <= p0_l;
      p1_x <= p0_x;
      p1_seg <= SEGW'(seg_c);
      p1_lo <= p0_lo;
      p1_hi <= p0_hi;
    end
  end

  // p2: coefficient ROMs (registered read)
  logic [S_W-1:0] slope_q;
  logic [C_W-1:0] icpt_q;
  hwa_rom #(
      .W(S_W),
      .DEPTH(NSEG),
      .AW(SEGW),
      .FILE(SLOPE_FILE)
  ) u_slope (
      .clk (clk),
      .en  (ce),
      .addr(p1_seg),
      .q   (slope_q)
  );
  hwa_rom #(
      .W(C_W),
      .DEPTH(NSEG),
      .AW(SEGW),
      .FILE(ICPT_FILE)
  ) u_icpt (
      .clk (clk),
      .en  (ce),
      .addr(p1_seg),
      .q   (icpt_q)
  );
  logic p2_v, p2_l, p2_lo, p2_hi;
  logic signed [IN_W-1:0] p2_x;
  always_ff @(posedge clk) begin
    if (rst) p2_v <= 1'b0;
    else if (ce) p2_v <= p1_v;
    if (ce) begin
      p2_l <= p1_l;
      p2_x <= p1_x;
      p2_lo <= p1_lo;
      p2_hi <= p1_hi;
    end
  end

  // p3: the product x*S_i alone (one DSP-sized multiply: IN_W x S_W, registered)
  logic p3_v, p3_l, p3_lo, p3_hi;
  logic signed [IN_W-1:0] p3_x;
  logic signed [PROD_W-1:0] p3_prod;
  logic signed [C_W-1:0] p3_icpt;
  always_ff @(posedge clk) begin
    if (rst) p3_v <= 1'b0;
    else if (ce) p3_v <= p2_v;
    if (ce) begin
      p3_l <= p2_l;
      p3_lo <= p2_lo;
      p3_hi <= p2_hi;
      p3_x <= p2_x;
      p3_prod <= PROD_W'(p2_x) * PROD_W'($signed(slope_q));
      p3_icpt <= $signed(icpt_q);
    end
  end

  // p4: align, add the intercept, select (mod 2^ACC_W, as before the product register)
  logic p4_v, p4_l;
  logic signed [ACC_W-1:0] p4_acc, acc_c;
  always_comb begin
    if (p3_lo) acc_c = '0;
    else if (p3_hi) acc_c = TOP_ONE ? (ACC_W'(1) <<< FA) : (ACC_W'(p3_x) <<< SH_X);
    else acc_c = (ACC_W'(p3_prod) <<< SH_XS) + (ACC_W'(p3_icpt) <<< SH_C);
  end
  always_ff @(posedge clk) begin
    if (rst) p4_v <= 1'b0;
    else if (ce) p4_v <= p3_v;
    if (ce) begin
      p4_l <= p3_l;
      p4_acc <= acc_c;
    end
  end

  // p5: cast into out_fmt (one rounding, then the overflow mode)
  logic [OUT_W-1:0] out_c;
  hwa_cast #(
      .IN_W      (ACC_W),
      .SHIFT     (OUT_SHIFT),
      .MODE      (OUT_RND),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_cast (
      .x(p4_acc),
      .y(out_c)
  );
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  always_ff @(posedge clk) begin
    if (rst) begin
      o_v <= 1'b0;
      o_l <= 1'b0;
    end else if (ce) begin
      o_v <= p4_v;
      o_l <= p4_l;
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
