// MULT18X18D -- TEST-ONLY behavioural model of the Lattice ECP5 sysDSP 18 x 18
// multiplier primitive, for checking how hwa_mul_pipe wires the primitive in its
// HWA_ECP5_DSP branch (tests/test_rtl_prims.py). It encodes OUR READING of the
// primitive's documented behaviour (Lattice's ECP5 sysDSP usage guide; the port and
// parameter names of yosys's share/ecp5/cells_bb.v); it is not the vendor's model
// and covers only what hwa_mul_pipe uses:
//   P = A * B, 36 bits, A (B) read as 18-bit two's complement when SIGNEDA (SIGNEDB)
//   is 1, else unsigned;
//   REG_INPUTA_CLK / REG_INPUTB_CLK = "CLK0": A / B are loaded into an input register
//   on the rising edge of CLK0 when CE0 is high (REG_INPUTx_CE = "CE0"); "NONE": not
//   registered;
//   REG_PIPELINE_CLK = "NONE" (no middle register; any other value is refused);
//   REG_OUTPUT_CLK = "CLK0": the product is loaded into the output register on CLK0
//   when CE0 is high; "NONE": P is the product of the (registered) inputs;
//   RESETMODE = "SYNC": RST0 high clears every register at the clock edge (our
//   reading: whatever CE0 is). C, SOURCEA/B (cascade and shift inputs) are ignored;
//   SIGNEDA/B are taken as they are (hwa_mul_pipe ties them to constants).
// Latency with input and output registers: 2 CE0 cycles from A/B to P.
`default_nettype none
// verilator lint_off UNUSEDSIGNAL
// verilator lint_off UNUSEDPARAM
module MULT18X18D #(
    parameter REG_INPUTA_CLK = "NONE",
    parameter REG_INPUTA_CE = "CE0",
    parameter REG_INPUTA_RST = "RST0",
    parameter REG_INPUTB_CLK = "NONE",
    parameter REG_INPUTB_CE = "CE0",
    parameter REG_INPUTB_RST = "RST0",
    parameter REG_PIPELINE_CLK = "NONE",
    parameter REG_OUTPUT_CLK = "NONE",
    parameter REG_OUTPUT_CE = "CE0",
    parameter REG_OUTPUT_RST = "RST0",
    parameter GSR = "ENABLED",
    parameter RESETMODE = "SYNC"
) (
    input wire A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4, A3, A2, A1,
    input wire A0, B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4, B3, B2,
    input wire B1, B0, C17, C16, C15, C14, C13, C12, C11, C10, C9, C8, C7, C6, C5, C4, C3,
    input wire C2, C1, C0, SIGNEDA, SIGNEDB, SOURCEA, SOURCEB, CLK0, CE0, RST0,
    output wire P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21,
    output wire P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5,
    output wire P4, P3, P2, P1, P0
);

  if ((REG_INPUTA_CLK != "CLK0" && REG_INPUTA_CLK != "NONE")
      || (REG_INPUTB_CLK != "CLK0" && REG_INPUTB_CLK != "NONE")
      || (REG_OUTPUT_CLK != "CLK0" && REG_OUTPUT_CLK != "NONE") || REG_PIPELINE_CLK != "NONE"
      || REG_INPUTA_CE != "CE0" || REG_INPUTB_CE != "CE0" || REG_OUTPUT_CE != "CE0"
      || REG_INPUTA_RST != "RST0" || REG_INPUTB_RST != "RST0" || REG_OUTPUT_RST != "RST0"
      || RESETMODE != "SYNC") begin : g_bad
    $error("MULT18X18D model %m: models CLK0/CE0/RST0 input and output registers only");
  end

  wire [17:0] a_in = {A17, A16, A15, A14, A13, A12, A11, A10, A9, A8, A7, A6, A5, A4,
                       A3, A2, A1, A0};
  wire [17:0] b_in = {B17, B16, B15, B14, B13, B12, B11, B10, B9, B8, B7, B6, B5, B4,
                       B3, B2, B1, B0};
  reg  [17:0] a_r, b_r;
  reg  [35:0] p_r;
  always @(posedge CLK0) begin
    if (RST0) begin
      a_r <= 18'd0;
      b_r <= 18'd0;
    end else if (CE0) begin
      a_r <= a_in;
      b_r <= b_in;
    end
  end
  wire [17:0] a_q = (REG_INPUTA_CLK == "CLK0") ? a_r : a_in;
  wire [17:0] b_q = (REG_INPUTB_CLK == "CLK0") ? b_r : b_in;
  // 19-bit two's complement operands: the 18 bits and a sign bit that is bit 17 when
  // signed, 0 when unsigned; their product is exact in 38 bits, P keeps the low 36
  wire signed [18:0] a_x = $signed({SIGNEDA & a_q[17], a_q});
  wire signed [18:0] b_x = $signed({SIGNEDB & b_q[17], b_q});
  wire signed [37:0] prod = 38'(a_x) * 38'(b_x);
  always @(posedge CLK0) begin
    if (RST0) p_r <= 36'd0;
    else if (CE0) p_r <= prod[35:0];
  end
  wire [35:0] p_q = (REG_OUTPUT_CLK == "CLK0") ? p_r : prod[35:0];
  assign {P35, P34, P33, P32, P31, P30, P29, P28, P27, P26, P25, P24, P23, P22, P21,
           P20, P19, P18, P17, P16, P15, P14, P13, P12, P11, P10, P9, P8, P7, P6, P5, P4,
           P3, P2, P1, P0} = p_q;

endmodule
// verilator lint_on UNUSEDPARAM
// verilator lint_on UNUSEDSIGNAL
`default_nettype wire
