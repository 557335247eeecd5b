// hwa_linear -- a weight-stationary linear layer y = x·W + b on raw integer codes
// (hwapprox.approx.linear.MatMulSpec.model with a constant W, bit-exact; the HLS
// hwapprox::matmul_bias of linear.h).
//
// Per token (one s_axis beat: the K input codes x_0..x_{K-1}, lane k at bits
// [k*A_W +: A_W], A_SIGNED two's complement or unsigned; tlast passed through with the
// token) one m_axis beat of the N outputs (lane j at [j*Y_W +: Y_W]):
//   acc_0     = accum(b_j)                (HAS_BIAS; else 0): hwa_cast by BIAS_SHIFT with
//                                          ACC_RND / ACC_OVF (the bias format -> accum)
//   acc_{k+1} = accum(acc_k + x_k·W[k][j]), k = 0, 1, ..., K-1 in this order:
//                the product exact (A_W + 1 + W_W bits), the sum exact on the grid of
//                the finer of the two (acc << A_SHL, product << P_SHL, SUM_W bits),
//                then one cast back to the accumulator: round_shift by A_SHL with
//                ACC_RND, then ACC_OVF into ACC_W bits (hwapprox.fixed.cast)
//   y_j       = out(acc_K): hwa_cast by Y_SHIFT with Y_RND / Y_OVF into Y_W bits.
// Weights and biases are ROMs loaded with $readmemh (hwapprox.rtl_sim.linear writes them
// from the very integers the model uses): W_FILE holds G·K words of P lanes of W_W bits,
// word g·K + k = W[k][g·P + l] in lane l (0 past column N); B_FILE holds G words of P
// lanes of B_W bits, word g = b[g·P + l]. G = ceil(N / P).
//
// Schedule: P multipliers, one per lane of a column group. Column group g (outputs
// g·P .. g·P + P - 1) takes K cycles, one input code per cycle for all its P columns
// (the order of k is the model's); the groups follow one another. So
//   cycles per token (throughput) = K·G = K·ceil(N / P),
// with back-to-back tokens at that rate (an input register holds the next token while
// one is issued; s_axis_tready is a function of registers only).
//   latency (token transferred into an idle unit -> its output beat transferred, no
//   backpressure) = K·G + 6 cycles: input register, load, ROM read, ROM output
//   register, product, accumulate, output cast into the output register.
// The weight (and bias) ROM's read is registered once more before the multipliers (the
// role of a block RAM's output register: the RAM's clock-to-out is off the multiplier's
// cycle; yosys 0.70 maps ECP5 ROMs to DP16KD with REGMODE = NOREG, so this register is
// fabric flip-flops, or the MULT18X18D's input register in the HWA_ECP5_DSP branch);
// that stage costs one cycle of latency, not throughput.
// Output: the output register and a skid register (hwa_skid): the whole datapath stalls
// on the skid's registered ready, so no combinational path runs from m_axis_tready to
// s_axis_tready or to the enable.
// Preconditions: 1 <= P <= N; W_W, B_W signed; every width parameter as
// hwapprox.rtl_sim.linear.linear_params derives it from the spec (defaults: the default
// BlockFormats qkv stage, K = N = P = 8).
`default_nettype none
module hwa_linear #(
    parameter int K = 8,
    parameter int N = 8,
    parameter int P = 8,
    parameter int A_W = 16,
    parameter bit A_SIGNED = 1'b1,
    parameter int W_W = 10,
    parameter int B_W = 12,
    parameter bit HAS_BIAS = 1'b1,
    // bias -> accumulator: hwa_cast SHIFT (fraction bits of the bias minus the accum's)
    parameter int BIAS_SHIFT = -11,
    // accumulator ap_fixed<ACC_W, .>, its rounding and overflow (hwa_pkg codes)
    parameter int ACC_W = 32,
    parameter int ACC_RND = 0,
    parameter int ACC_OVF = 1,
    // the exact sum acc + x·w: acc << A_SHL, product << P_SHL, SUM_W bits
    parameter int A_SHL = 0,
    parameter int P_SHL = 2,
    parameter int SUM_W = 33,
    // output cast: hwa_cast SHIFT (accum fraction bits minus the output's)
    parameter int Y_W = 16,
    parameter bit Y_SIGNED = 1'b1,
    parameter int Y_SHIFT = 10,
    parameter int Y_RND = 2,
    parameter int Y_OVF = 1,
    parameter string W_FILE = "",
    parameter string B_FILE = ""
) (
    input  wire logic             clk,
    input  wire logic             rst,
    input  wire logic [K*A_W-1:0] s_axis_tdata,
    input  wire logic             s_axis_tvalid,
    output logic                  s_axis_tready,
    input  wire logic             s_axis_tlast,
    output logic      [N*Y_W-1:0] m_axis_tdata,
    output logic                  m_axis_tvalid,
    input  wire logic             m_axis_tready,
    output logic                  m_axis_tlast
);

  localparam int G = (N + P - 1) / P;
  localparam int KW = (K > 1) ? $clog2(K) : 1;
  localparam int GW = (G > 1) ? $clog2(G) : 1;
  localparam int DW = (G * K > 1) ? $clog2(G * K) : 1;
  localparam int PROD_W = A_W + 1 + W_W;

  if (K < 1 || N < 1 || P < 1 || P > N || A_W < 1 || W_W < 2 || B_W < 2 || ACC_W < 2
      || ACC_W > 62 || Y_W < 1 || Y_W > 62 || A_SHL < 0 || P_SHL < 0
      || SUM_W < ((ACC_W + A_SHL > PROD_W + P_SHL) ? ACC_W + A_SHL : PROD_W + P_SHL) + 1)
      begin : g_bad
    $error("%m: invalid K=%0d N=%0d P=%0d (1 <= P <= N) A_W=%0d W_W=%0d B_W=%0d ACC_W=%0d Y_W=%0d A_SHL=%0d P_SHL=%0d SUM_W=%0d",
           K, N, P, A_W, W_W, B_W, ACC_W, Y_W, A_SHL, P_SHL, SUM_W);
  end

  logic ce;  // the stall-all enable: the output skid buffer's registered ready

  // -- input register: the next token, taken while the current one is issued ----------
  logic nxt_v_reg, nxt_l_reg;
  logic [K*A_W-1:0] nxt_d_reg;
  logic busy_reg, tok_l_reg, load, last_issue;
  logic [K*A_W-1:0] tok_reg;
  logic [KW-1:0] k_reg;
  logic [GW-1:0] g_reg;
  logic [DW-1:0] addr_reg;

  assign last_issue = busy_reg && k_reg == KW'(K - 1) && g_reg == GW'(G - 1);
  assign load = ce && nxt_v_reg && (!busy_reg || last_issue);
  assign s_axis_tready = ~nxt_v_reg | load;

  always_ff @(posedge clk) begin
    if (rst) nxt_v_reg <= 1'b0;
    else if (s_axis_tvalid && s_axis_tready) nxt_v_reg <= 1'b1;
    else if (load) nxt_v_reg <= 1'b0;
    if (s_axis_tvalid && s_axis_tready) begin
      nxt_d_reg <= s_axis_tdata;
      nxt_l_reg <= s_axis_tlast;
    end
  end

  // -- issue: one (g, k) per cycle, g major, k minor ------------------------------------
  always_ff @(posedge clk) begin
    if (rst) begin
      busy_reg <= 1'b0;
      k_reg <= '0;
      g_reg <= '0;
      addr_reg <= '0;
    end else if (ce) begin
      if (load) begin
        busy_reg <= 1'b1;
        k_reg <= '0;
        g_reg <= '0;
        addr_reg <= '0;
      end else if (busy_reg) begin
        if (last_issue) busy_reg <= 1'b0;
        addr_reg <= addr_reg + 1'b1;
        if (k_reg == KW'(K - 1)) begin
          k_reg <= '0;
          g_reg <= g_reg + 1'b1;
        end else k_reg <= k_reg + 1'b1;
      end
    end
    if (ce && load) begin
      tok_reg <= nxt_d_reg;
      tok_l_reg <= nxt_l_reg;
    end
  end

  // -- stage 1: the input code x_k, the weight word (ROM), the bias word (ROM) ---------
  logic s1_v, s1_first, s1_lastk, s1_lasttok, s1_l;
  logic [GW-1:0] s1_g;
  logic [A_W-1:0] s1_a;
  logic [P*W_W-1:0] w_q;
  logic [P*B_W-1:0] b_q;
  always_ff @(posedge clk) begin
    if (rst) s1_v <= 1'b0;
    else if (ce) s1_v <= busy_reg;
    if (ce) begin
      s1_first <= k_reg == '0;
      s1_lastk <= k_reg == KW'(K - 1);
      s1_lasttok <= last_issue;
      s1_l <= tok_l_reg;
      s1_g <= g_reg;
      s1_a <= tok_reg[32'(k_reg)*A_W+:A_W];
    end
  end
  hwa_rom #(
      .W(P * W_W),
      .DEPTH(G * K),
      .AW(DW),
      .FILE(W_FILE)
  ) u_w (
      .clk (clk),
      .en  (ce),
      .addr(addr_reg),
      .q   (w_q)
  );
  if (HAS_BIAS) begin : g_brom
    hwa_rom #(
        .W(P * B_W),
        .DEPTH(G),
        .AW(GW),
        .FILE(B_FILE)
    ) u_b (
        .clk (clk),
        .en  (ce),
        .addr(g_reg),
        .q   (b_q)
    );
  end else begin : g_nob
    assign b_q = '0;
  end

  // -- stage 1r: the ROM words registered once more (off the block RAM's read) -------
  logic r1_v, r1_first, r1_lastk, r1_lasttok, r1_l;
  logic [GW-1:0] r1_g;
  logic [A_W-1:0] r1_a;
  logic [P*W_W-1:0] w_r;
  logic [P*B_W-1:0] b_r;
  always_ff @(posedge clk) begin
    if (rst) r1_v <= 1'b0;
    else if (ce) r1_v <= s1_v;
    if (ce) begin
      r1_first <= s1_first;
      r1_lastk <= s1_lastk;
      r1_lasttok <= s1_lasttok;
      r1_l <= s1_l;
      r1_g <= s1_g;
      r1_a <= s1_a;
      w_r <= w_q;
      b_r <= b_q;
    end
  end

  // -- stage 2: P exact products, the bias cast to the accumulator ----------------------
  logic s2_v, s2_first, s2_lastk, s2_lasttok, s2_l;
  logic [GW-1:0] s2_g;
  logic signed [A_W:0] a_ext;
  assign a_ext = A_SIGNED ? (A_W + 1)'($signed(r1_a)) : $signed({1'b0, r1_a});
  always_ff @(posedge clk) begin
    if (rst) s2_v <= 1'b0;
    else if (ce) s2_v <= r1_v;
    if (ce) begin
      s2_first <= r1_first;
      s2_lastk <= r1_lastk;
      s2_lasttok <= r1_lasttok;
      s2_l <= r1_l;
      s2_g <= r1_g;
    end
  end

  // -- stage 3: the accumulators; stage 4: the output cast ------------------------------
  logic s3_v, s3_lastk, s3_lasttok, s3_l;
  logic [GW-1:0] s3_g;
  logic [P*Y_W-1:0] y_c;
  for (genvar l = 0; l < P; l++) begin : g_lane
    logic signed [PROD_W-1:0] prod_reg;
    logic signed [ACC_W-1:0] bias_c, bias_reg, acc_reg, acc_c, base;
    logic signed [SUM_W-1:0] sum;
    always_ff @(posedge clk) begin
      if (ce) bias_reg <= bias_c;
    end
`ifdef HWA_ECP5_DSP
    if (A_W + 1 <= 18 && W_W <= 18) begin : g_dsp
      // ECP5 place and route (hwapprox.rtl_sim.pnr defines HWA_ECP5_DSP): stage 1r's
      // operand registers (r1_a, w_r) and the product register are the MULT18X18D's own
      // input registers (CLK0, CE0 = ce) and output register, the same two stages and
      // values as the behavioural branch (synth_ecp5 packs no fabric register into the
      // DSP): the block RAM's output goes straight into the DSP's B register. 18-bit
      // signed operands (SIGNEDA = SIGNEDB = 1), the exact product fits PROD_W <= 36
      // bits. No reset (the data registers have none). Simulation keeps the behavioural
      // branch; tests/test_rtl_linear.py runs this one with the primitive's test model.
      logic signed [17:0] dsp_a, dsp_b;
      logic [35:0] pq;
      assign dsp_a = 18'(A_SIGNED ? (A_W + 1)'($signed(s1_a)) : $signed({1'b0, s1_a}));
      assign dsp_b = 18'($signed(w_q[l*W_W+:W_W]));
      MULT18X18D #(
          .REG_INPUTA_CLK("CLK0"),
          .REG_INPUTA_CE("CE0"),
          .REG_INPUTA_RST("RST0"),
          .REG_INPUTB_CLK("CLK0"),
          .REG_INPUTB_CE("CE0"),
          .REG_INPUTB_RST("RST0"),
          .REG_PIPELINE_CLK("NONE"),
          .REG_OUTPUT_CLK("CLK0"),
          .REG_OUTPUT_CE("CE0"),
          .REG_OUTPUT_RST("RST0"),
          .GSR("DISABLED"),
          .RESETMODE("SYNC")
      ) u_dsp (
          .A17(dsp_a[17]), .A16(dsp_a[16]), .A15(dsp_a[15]), .A14(dsp_a[14]),
          .A13(dsp_a[13]), .A12(dsp_a[12]), .A11(dsp_a[11]), .A10(dsp_a[10]), .A9(dsp_a[9]),
          .A8(dsp_a[8]), .A7(dsp_a[7]), .A6(dsp_a[6]), .A5(dsp_a[5]), .A4(dsp_a[4]),
          .A3(dsp_a[3]), .A2(dsp_a[2]), .A1(dsp_a[1]), .A0(dsp_a[0]),
          .B17(dsp_b[17]), .B16(dsp_b[16]), .B15(dsp_b[15]), .B14(dsp_b[14]),
          .B13(dsp_b[13]), .B12(dsp_b[12]), .B11(dsp_b[11]), .B10(dsp_b[10]), .B9(dsp_b[9]),
          .B8(dsp_b[8]), .B7(dsp_b[7]), .B6(dsp_b[6]), .B5(dsp_b[5]), .B4(dsp_b[4]),
          .B3(dsp_b[3]), .B2(dsp_b[2]), .B1(dsp_b[1]), .B0(dsp_b[0]),
          .P35(pq[35]), .P34(pq[34]), .P33(pq[33]), .P32(pq[32]), .P31(pq[31]),
          .P30(pq[30]), .P29(pq[29]), .P28(pq[28]), .P27(pq[27]), .P26(pq[26]),
          .P25(pq[25]), .P24(pq[24]), .P23(pq[23]), .P22(pq[22]), .P21(pq[21]),
          .P20(pq[20]), .P19(pq[19]), .P18(pq[18]), .P17(pq[17]), .P16(pq[16]),
          .P15(pq[15]), .P14(pq[14]), .P13(pq[13]), .P12(pq[12]), .P11(pq[11]),
          .P10(pq[10]), .P9(pq[9]), .P8(pq[8]), .P7(pq[7]), .P6(pq[6]), .P5(pq[5]),
          .P4(pq[4]), .P3(pq[3]), .P2(pq[2]), .P1(pq[1]), .P0(pq[0]),
          .C17(1'b0), .C16(1'b0), .C15(1'b0), .C14(1'b0), .C13(1'b0), .C12(1'b0),
          .C11(1'b0), .C10(1'b0), .C9(1'b0), .C8(1'b0), .C7(1'b0), .C6(1'b0), .C5(1'b0),
          .C4(1'b0), .C3(1'b0), .C2(1'b0), .C1(1'b0), .C0(1'b0),
          .SIGNEDA(1'b1), .SIGNEDB(1'b1), .SOURCEA(1'b0), .SOURCEB(1'b0),
          .CLK0(clk), .CE0(ce), .RST0(1'b0)
      );
      assign prod_reg = PROD_W'($signed(pq));
    end else begin : g_fabric
      always_ff @(posedge clk) begin
        if (ce) prod_reg <= PROD_W'(a_ext) * PROD_W'($signed(w_r[l*W_W+:W_W]));
      end
    end
`else
    always_ff @(posedge clk) begin
      if (ce) prod_reg <= PROD_W'(a_ext) * PROD_W'($signed(w_r[l*W_W+:W_W]));
    end
`endif
    if (HAS_BIAS) begin : g_bias
      hwa_cast #(
          .IN_W      (B_W),
          .SHIFT     (BIAS_SHIFT),
          .MODE      (ACC_RND),
          .OUT_W     (ACC_W),
          .OUT_SIGNED(1'b1),
          .OVF       (ACC_OVF)
      ) u_bias (
          .x(b_r[l*B_W+:B_W]),
          .y(bias_c)
      );
    end else begin : g_nobias
      /* verilator lint_off UNUSEDSIGNAL */
      logic [B_W-1:0] unused_b;
      /* verilator lint_on UNUSEDSIGNAL */
      assign unused_b = b_r[l*B_W+:B_W];
      assign bias_c = '0;
    end
    assign base = s2_first ? bias_reg : acc_reg;
    assign sum = (SUM_W'(base) <<< A_SHL) + (SUM_W'(prod_reg) <<< P_SHL);
    hwa_cast #(
        .IN_W      (SUM_W),
        .SHIFT     (A_SHL),
        .MODE      (ACC_RND),
        .OUT_W     (ACC_W),
        .OUT_SIGNED(1'b1),
        .OVF       (ACC_OVF)
    ) u_acc (
        .x(sum),
        .y(acc_c)
    );
    always_ff @(posedge clk) begin
      if (ce && s2_v) acc_reg <= acc_c;
    end
    hwa_cast #(
        .IN_W      (ACC_W),
        .SHIFT     (Y_SHIFT),
        .MODE      (Y_RND),
        .OUT_W     (Y_W),
        .OUT_SIGNED(Y_SIGNED),
        .OVF       (Y_OVF)
    ) u_out (
        .x(acc_reg),
        .y(y_c[l*Y_W+:Y_W])
    );
  end
  always_ff @(posedge clk) begin
    if (rst) s3_v <= 1'b0;
    else if (ce) s3_v <= s2_v;
    if (ce) begin
      s3_lastk <= s2_lastk;
      s3_lasttok <= s2_lasttok;
      s3_l <= s2_l;
      s3_g <= s2_g;
    end
  end

  // the output lanes: group s3_g's from the casts, the others held from earlier groups
  logic [N*Y_W-1:0] y_stage_reg, y_next;
  for (genvar j = 0; j < N; j++) begin : g_out
    assign y_next[j*Y_W+:Y_W] = (32'(s3_g) == j / P) ? y_c[(j%P)*Y_W+:Y_W]
                                                      : y_stage_reg[j*Y_W+:Y_W];
  end
  logic out_v_reg, out_l_reg;
  logic [N*Y_W-1:0] out_d_reg;
  always_ff @(posedge clk) begin
    if (rst) out_v_reg <= 1'b0;
    else if (ce) out_v_reg <= s3_v && s3_lasttok;
    if (ce && s3_v && s3_lastk) y_stage_reg <= y_next;
    if (ce && s3_v && s3_lasttok) begin
      out_d_reg <= y_next;
      out_l_reg <= s3_l;
    end
  end

  hwa_skid #(
      .W(N * Y_W)
  ) u_skid (
      .clk          (clk),
      .rst          (rst),
      .in_v         (out_v_reg),
      .in_l         (out_l_reg),
      .in_d         (out_d_reg),
      .ce           (ce),
      .m_axis_tdata (m_axis_tdata),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast (m_axis_tlast)
  );

endmodule
`default_nettype wire
