// hwa_mul_pipe -- a wide product split into DSP-sized partial products, pipelined.
//
// Computes p = a * b mod 2^P_W (a signed A_W bits; b signed or unsigned B_W bits),
// exactly as P_W'(a) * P_W'(b) would in one cycle, but in three registered stages so
// that no stage holds more than one 18 x 18 multiply or one two-input adder:
//   limbs  a = sum_i a_i·2^(17 i), b = sum_j b_j·2^(17 j): every limb 17 bits unsigned
//          but the top one, which keeps the sign (up to 18 bits signed);
//   s1     pp_ij = a_i · b_j                  (NA·NB products, each one MULT18X18D)
//   s2     r_i   = sum_j pp_ij · 2^(17 j)     (a row per a-limb; NB - 1 adders)
//   s3     p     = sum_i r_i · 2^(17 i)       (NA - 1 adders), mod 2^P_W
// NB = 1 or NA = 1 leaves s2 or s3 a plain register (the latency stays 3).
// IN_REG = 1 (issue 22) adds a stage s0 in front: every product's two limbs in registers
// of its own (fan-out 1, placed at its MULT18X18D), so that no operand register drives
// several multipliers across the die; the path s0 -> s1 is then one register -> DSP ->
// register. For ECP5 place and route (`HWA_ECP5_DSP, defined by hwapprox.rtl_sim.pnr)
// each IN_REG product is a MULT18X18D instance whose own input and output registers
// hold s0 and s1 (same latency, same values); simulation uses the behavioural code.
// Latency: 3 + IN_REG cycles, one result per cycle; advances when en is high (the
// parent's pipeline enable). Parameters: A_W, B_W (1..68), B_SIGNED, P_W (1..128), no
// defaults; IN_REG (0 or 1, default 0).
`default_nettype none
module hwa_mul_pipe #(
    parameter int A_W,
    parameter int B_W,
    parameter bit B_SIGNED,
    parameter int P_W,
    parameter bit IN_REG = 1'b0
) (
    input  wire logic                  clk,
    input  wire logic                  en,
    input  wire logic signed [A_W-1:0] a,
    input  wire logic        [B_W-1:0] b,
    output logic signed      [P_W-1:0] p
);

  localparam int L = 17;
  localparam int NA = (A_W <= L + 1) ? 1 : (A_W - 1 + L - 1) / L;  // top limb <= 18 bits
  localparam int NB_S = (B_W <= L + 1) ? 1 : (B_W - 1 + L - 1) / L;
  localparam int NB_U = (B_W + L - 1) / L;
  localparam int NB = B_SIGNED ? NB_S : NB_U;
  localparam int PPW = 36;  // an 18 x 18 signed product

  if (A_W < 1 || A_W > 68 || B_W < 1 || B_W > 68 || P_W < 1 || P_W > 128) begin : g_bad
    $error("hwa_mul_pipe %m: invalid A_W=%0d B_W=%0d (1..68) P_W=%0d (1..128)", A_W, B_W, P_W);
  end

  // sign-extended operands, wide enough for every limb
  localparam int BXW = B_SIGNED ? NB * L + 1 : NB * L;  // the top limb's sign bit
  logic signed [NA*L:0] ax;
  logic signed [BXW-1:0] bx;
  assign ax = (NA * L + 1)'(a);
  if (B_SIGNED) begin : g_bs
    assign bx = BXW'($signed(b));
  end else begin : g_bu
    assign bx = BXW'($signed({1'b0, b}));
  end

  // s1: the limb products
  logic signed [PPW-1:0] pp[NA][NB];
  for (genvar i = 0; i < NA; i++) begin : g_a
    logic signed [17:0] al;
    if (i == NA - 1) begin : g_top
      assign al = 18'(ax[i*L+:L+1]);  // the top limb: its bits and the sign
    end else begin : g_low
      assign al = $signed({1'b0, ax[i*L+:L]});
    end
    for (genvar j = 0; j < NB; j++) begin : g_b
      logic signed [17:0] bl;
      if (j == NB - 1 && B_SIGNED) begin : g_top
        assign bl = 18'(bx[j*L+:L+1]);
      end else begin : g_low
        assign bl = $signed({1'b0, bx[j*L+:L]});
      end
      if (IN_REG) begin : g_in_reg
`ifdef HWA_ECP5_DSP
        // ECP5 place and route (hwapprox.rtl_sim.pnr defines HWA_ECP5_DSP): the operand
        // registers and the product register are the MULT18X18D's own input registers
        // (A, B on CLK0, enabled by CE0 = en) and output register, the same two stages
        // as the behavioural branch below, so the multiplier's own delay sits between
        // two DSP-internal registers (synth_ecp5 does not pack fabric registers into
        // the ECP5 DSP). Limbs are 18-bit signed (SIGNEDA = SIGNEDB = 1; the low limbs
        // carry a zero sign bit), the 36-bit product is exact. No reset (RST0 = 0, GSR
        // off: the data registers have none in the behavioural branch either).
        // Simulation keeps the behavioural branch; tests/test_rtl_prims.py checks this
        // wiring against a test-only model of the primitive.
        logic [PPW-1:0] pq;
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
            .A17(al[17]), .A16(al[16]), .A15(al[15]), .A14(al[14]), .A13(al[13]),
            .A12(al[12]), .A11(al[11]), .A10(al[10]), .A9(al[9]), .A8(al[8]), .A7(al[7]),
            .A6(al[6]), .A5(al[5]), .A4(al[4]), .A3(al[3]), .A2(al[2]), .A1(al[1]),
            .A0(al[0]),
            .B17(bl[17]), .B16(bl[16]), .B15(bl[15]), .B14(bl[14]), .B13(bl[13]),
            .B12(bl[12]), .B11(bl[11]), .B10(bl[10]), .B9(bl[9]), .B8(bl[8]), .B7(bl[7]),
            .B6(bl[6]), .B5(bl[5]), .B4(bl[4]), .B3(bl[3]), .B2(bl[2]), .B1(bl[1]),
            .B0(bl[0]),
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
            .CLK0(clk), .CE0(en), .RST0(1'b0)
        );
        assign pp[i][j] = $signed(pq);
`else
        (* keep *) logic signed [17:0] al_r, bl_r;  // this product's own copies
        always_ff @(posedge clk) begin
          if (en) begin
            al_r <= al;
            bl_r <= bl;
          end
        end
        always_ff @(posedge clk) begin
          if (en) pp[i][j] <= PPW'(al_r) * PPW'(bl_r);
        end
`endif
      end else begin : g_no_in_reg
        always_ff @(posedge clk) begin
          if (en) pp[i][j] <= PPW'(al) * PPW'(bl);
        end
      end
    end
  end

  // s2: one row per a-limb (mod 2^P_W)
  logic signed [P_W-1:0] row[NA];
  for (genvar i = 0; i < NA; i++) begin : g_row
    logic signed [P_W-1:0] sum_c;
    always_comb begin
      sum_c = '0;
      for (int j = 0; j < NB; j++) sum_c = sum_c + (P_W'(pp[i][j]) <<< (L * j));
    end
    always_ff @(posedge clk) begin
      if (en) row[i] <= sum_c;
    end
  end

  // s3: the rows
  logic signed [P_W-1:0] tot_c;
  always_comb begin
    tot_c = '0;
    for (int i = 0; i < NA; i++) tot_c = tot_c + (row[i] <<< (L * i));
  end
  always_ff @(posedge clk) begin
    if (en) p <= tot_c;
  end

endmodule
`default_nettype wire
