// hwa_gelu_edgemoe -- Edge-MoE GELU, ReLU(x) - delta(|x|) (hwapprox.approx.gelu.EdgeMoeGelu).
//
// For a raw input code x (in_fmt, IN_F fraction bits), table T of TABLE_SIZE entries
// delta(i·2^-K) (entry_fmt: ENTRY_W bits, ENTRY_F fraction bits, from DELTA_FILE):
//   a = |x|;  IN_F >= K: idx = a >> (IN_F - K), t = the FT bits below it (the top FT
//             of the IN_F - K dropped bits);  IN_F < K: idx = a << (K - IN_F), t = 0
//   inside = idx < TABLE_SIZE - 1;  i = inside ? idx : 0
//   delta  = inside ? round_shift((T[i] << FT) + t·(T[i+1] - T[i]), FT, ENTRY_RND) : 0
//   acc    = (max(x, 0) << (FA - IN_F)) - (delta << (FA - ENTRY_F))   (FA fraction bits)
//   y      = sat(round_shift(acc, FA - OUT_F, OUT_RND), OUT_OVF)     into out_fmt
// T[i] and T[i+1] are read in the same cycle (two read ports of one table).
// Stream: one element per cycle, tlast passed through, stall-all pipeline whose enable
// is the registered ready of the output skid buffer (hwa_skid): no combinational path
// from m_axis_tready to s_axis_tready.
// Latency: 10 cycles (index, table read, table words registered, step, interpolation
// product in three stages of 18 x 18 partial products (hwa_mul_pipe), interpolate +
// round, subtract, round/saturate); issue 22 split the one interpolate-and-subtract
// stage into seven (+6) to reach 125 MHz on ECP5.
// Parameter defaults: the default EdgeMoeGelu spec's hw_params() (tests/test_rtl_lint.py).
`default_nettype none
module hwa_gelu_edgemoe #(
    parameter int IN_W = 16,
    parameter int IN_F = 11,
    parameter int OUT_W = 16,
    parameter int OUT_F = 11,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int TABLE_SIZE = 177,
    parameter int K = 5,
    parameter int ENTRY_F = 22,
    parameter int ENTRY_RND = 0,
    parameter int FT = 6,
    parameter int FA = 22,
    parameter int ABS_W = 16,
    parameter int IDX_W = 10,
    parameter int T_W = 6,
    parameter int ENTRY_W = 22,
    parameter int INTERP_W = 29,
    parameter int DELTA_W = 22,
    parameter int ACC_W = 27,
    parameter string DELTA_FILE = ""
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

  localparam int SHW = 8;
  localparam int AW = (TABLE_SIZE > 1) ? $clog2(TABLE_SIZE) : 1;
  localparam int OSH = FA - OUT_F;
  localparam int G = (IN_F >= K) ? IN_F - K : 0;  // input bits below the index

  if (IN_W < 2 || IN_W > 40 || OUT_W < 1 || OUT_W > 62 || TABLE_SIZE < 2 || FT < 0
      || FT > G || FA < IN_F || FA < ENTRY_F || ENTRY_W > 32 || ACC_W > 62 || T_W < 1
      || DELTA_W != ENTRY_W) begin : g_bad
    $error("hwa_gelu_edgemoe %m: invalid IN_W=%0d IN_F=%0d K=%0d FT=%0d FA=%0d ENTRY_W=%0d TABLE_SIZE=%0d ACC_W=%0d",
           IN_W, IN_F, K, FT, FA, ENTRY_W, TABLE_SIZE, ACC_W);
  end

  // pipeline enable: the skid buffer's registered ready (hwa_skid, at the end)
  logic ce;
  assign s_axis_tready = ce;

  // p1: |x|, table position, interpolation bits
  logic signed [IN_W-1:0] x_in;
  logic [ABS_W-1:0] a_c;
  logic [IDX_W-1:0] idx_c;
  logic [T_W-1:0] t_c;
  logic inside_c;
  assign x_in = s_axis_tdata;
  assign a_c = x_in[IN_W-1] ? ABS_W'(-(ABS_W + 1)'(x_in)) : ABS_W'(x_in);
  if (IN_F >= K) begin : g_down
    logic [ABS_W-1:0] below;
    assign idx_c = IDX_W'(a_c >> G);
    assign below = a_c & ((ABS_W'(1) << G) - ABS_W'(1));
    assign t_c = T_W'(below >> (G - FT));
  end else begin : g_up
    assign idx_c = IDX_W'(a_c) << (K - IN_F);
    assign t_c = '0;
  end
  assign inside_c = (32'(idx_c) < TABLE_SIZE - 1);
  logic p1_v, p1_l, p1_in;
  logic signed [IN_W-1:0] p1_x;
  logic [T_W-1:0] p1_t;
  logic [AW-1:0] p1_i;
  always_ff @(posedge clk) begin
    if (rst) p1_v <= 1'b0;
    else if (ce) p1_v <= s_axis_tvalid;
    if (ce) begin
      p1_l <= s_axis_tlast;
      p1_x <= x_in;
      p1_t <= t_c;
      p1_in <= inside_c;
      p1_i <= inside_c ? AW'(idx_c) : '0;
    end
  end

  // p2: T[i] and T[i+1]
  logic [ENTRY_W-1:0] lo_q, hi_q;
  hwa_rom #(
      .W(ENTRY_W),
      .DEPTH(TABLE_SIZE),
      .AW(AW),
      .FILE(DELTA_FILE)
  ) u_lo (
      .clk (clk),
      .en  (ce),
      .addr(p1_i),
      .q   (lo_q)
  );
  hwa_rom #(
      .W(ENTRY_W),
      .DEPTH(TABLE_SIZE),
      .AW(AW),
      .FILE(DELTA_FILE)
  ) u_hi (
      .clk (clk),
      .en  (ce),
      .addr(p1_i + 1'b1),
      .q   (hi_q)
  );
  logic p2_v, p2_l, p2_in;
  logic signed [IN_W-1:0] p2_x;
  logic [T_W-1:0] p2_t;
  always_ff @(posedge clk) begin
    if (rst) p2_v <= 1'b0;
    else if (ce) p2_v <= p1_v;
    if (ce) begin
      p2_l <= p1_l;
      p2_x <= p1_x;
      p2_t <= p1_t;
      p2_in <= p1_in;
    end
  end

  // p3: the table words registered (a block RAM's clock-to-out is most of a cycle)
  logic p3_v, p3_l, p3_in;
  logic signed [IN_W-1:0] p3_x;
  logic [T_W-1:0] p3_t;
  logic [ENTRY_W-1:0] p3_lo, p3_hi;
  always_ff @(posedge clk) begin
    if (rst) p3_v <= 1'b0;
    else if (ce) p3_v <= p2_v;
    if (ce) begin
      p3_l <= p2_l;
      p3_x <= p2_x;
      p3_t <= p2_t;
      p3_in <= p2_in;
      p3_lo <= lo_q;
      p3_hi <= hi_q;
    end
  end

  // p3b: the table step T[i+1] - T[i] (T[i] kept)
  logic p3b_v, p3b_l, p3b_in;
  logic signed [IN_W-1:0] p3b_x;
  logic [T_W-1:0] p3b_t;
  logic [ENTRY_W-1:0] p3b_lo;
  logic signed [INTERP_W-1:0] p3b_dif;
  always_ff @(posedge clk) begin
    if (rst) p3b_v <= 1'b0;
    else if (ce) p3b_v <= p3_v;
    if (ce) begin
      p3b_l <= p3_l;
      p3b_x <= p3_x;
      p3b_t <= p3_t;
      p3b_in <= p3_in;
      p3b_lo <= p3_lo;
      p3b_dif <= INTERP_W'($signed({1'b0, p3_hi})) - INTERP_W'($signed({1'b0, p3_lo}));
    end
  end

  // p4 (three stages): t·(T[i+1] - T[i]) as 18 x 18 partial products (hwa_mul_pipe)
  logic signed [INTERP_W-1:0] p4_tp;
  hwa_mul_pipe #(
      .A_W(INTERP_W),
      .B_W(T_W),
      .B_SIGNED(1'b0),
      .P_W(INTERP_W)
  ) u_interp (
      .clk(clk),
      .en (ce),
      .a  (p3b_dif),
      .b  (p3b_t),
      .p  (p4_tp)
  );
  logic [2:0] d_v, d_l, d_in;
  logic signed [IN_W-1:0] d_x[3];
  logic [ENTRY_W-1:0] d_lo[3];
  always_ff @(posedge clk) begin
    if (rst) d_v <= '0;
    else if (ce) d_v <= {d_v[1:0], p3b_v};
    if (ce) begin
      d_l <= {d_l[1:0], p3b_l};
      d_in <= {d_in[1:0], p3b_in};
      d_x <= '{p3b_x, d_x[0], d_x[1]};
      d_lo <= '{p3b_lo, d_lo[0], d_lo[1]};
    end
  end
  logic p4_v, p4_l, p4_in;
  logic signed [IN_W-1:0] p4_x;
  logic [ENTRY_W-1:0] p4_lo;
  assign {p4_v, p4_l, p4_in} = {d_v[2], d_l[2], d_in[2]};
  assign p4_x = d_x[2];
  assign p4_lo = d_lo[2];

  // p5: interpolate, round to entry_fmt
  logic signed [INTERP_W-1:0] exact_c;
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [INTERP_W-1:0] delta_r;  // between T[i+1] and T[i]: fits DELTA_W bits
  /* verilator lint_on UNUSEDSIGNAL */
  assign exact_c = (INTERP_W'($signed({1'b0, p4_lo})) <<< FT) + p4_tp;
  if (FT > 0) begin : g_interp
    hwa_round_shift #(
        .IN_W (INTERP_W),
        .SH_W (SHW),
        .OUT_W(INTERP_W),
        .MODE (ENTRY_RND)
    ) u_delta (
        .x (exact_c),
        .sh(SHW'(FT)),
        .y (delta_r)
    );
  end else begin : g_nointerp
    assign delta_r = exact_c;
  end
  logic p5_v, p5_l;
  logic signed [IN_W-1:0] p5_x;
  logic [DELTA_W-1:0] p5_delta;
  always_ff @(posedge clk) begin
    if (rst) p5_v <= 1'b0;
    else if (ce) p5_v <= p4_v;
    if (ce) begin
      p5_l <= p4_l;
      p5_x <= p4_x;
      p5_delta <= p4_in ? DELTA_W'(delta_r) : '0;
    end
  end

  // p6: subtract from ReLU(x)
  logic signed [ACC_W-1:0] relu_c, acc_c;
  assign relu_c = (p5_x > 0) ? (ACC_W'(p5_x) <<< (FA - IN_F)) : '0;
  assign acc_c = relu_c - (ACC_W'($signed({1'b0, p5_delta})) <<< (FA - ENTRY_F));
  logic p6_v, p6_l;
  logic signed [ACC_W-1:0] p6_acc;
  always_ff @(posedge clk) begin
    if (rst) p6_v <= 1'b0;
    else if (ce) p6_v <= p5_v;
    if (ce) begin
      p6_l <= p5_l;
      p6_acc <= acc_c;
    end
  end

  // p7: cast into out_fmt
  logic [OUT_W-1:0] out_c;
  hwa_cast #(
      .IN_W      (ACC_W),
      .SHIFT     (OSH),
      .MODE      (OUT_RND),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_cast (
      .x(p6_acc),
      .y(out_c)
  );
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  always_ff @(posedge clk) begin
    if (rst) begin
      o_v <= 1'b0;
      o_l <= 1'b0;
    end else if (ce) begin
      o_v <= p6_v;
      o_l <= p6_l;
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
