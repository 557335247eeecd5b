// hwa_softmax_ibert -- I-BERT IntSoftmax (hwapprox.approx.softmax.IBertSoftmax), bit-exact.
//
// Per row of n <= ROW_MAX raw in_fmt codes x with one mask bit each (s_axis_tuser, 1 =
// masked out: no part in max or sum, output 0; a fully masked row outputs zeros):
//   m = max of the unmasked x;  e16 = hwa_ibert_exp(x - m) (i-exp, then QuantAct's
//   requantisation to EXP_BITS bits: CALIBRATED multiplier and round-half-even, or a
//   plain shift);  factor = floor(2^FACTOR_BITS / max(sum e16, 1));
//   y = sat((e16 * factor) >> OUT_SHIFT, OUT_OVF),  OUT_SHIFT = FACTOR_BITS - F.
// The passes: hwa_softmax_3pass (max on ingest; exp (hwa_ibert_exp_pipe, 12 stages) and
// sum into a second row buffer; a FACTOR_BITS + 1 stage pipelined divider per row;
// e16·factor as 18 x 18 partial products), one element per cycle in and out back to
// back. Latency: last input -> last output 2N + 60 cycles at the defaults (2N + 27 +
// FACTOR_BITS; the method needs the row max before its exps and the whole sum before
// its outputs).
// Parameter defaults: the default IBertSoftmax spec's hw_params(64) with
// row_stream_params(64) (tests/test_rtl_lint.py).
`default_nettype none
module hwa_softmax_ibert #(
    parameter int IN_W = 16,
    parameter int OUT_W = 9,
    parameter bit OUT_SIGNED = 1'b0,
    parameter int OUT_OVF = 1,
    parameter int OUT_SHIFT = 24,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 8,
    parameter int X0 = -710,
    parameter int B_INT = 2772,
    parameter longint C_INT = 64'd2927744,
    parameter int EXP_N = 30,
    parameter bit CALIBRATED = 1'b1,
    parameter longint REQUANT_MULT = 64'd1538202175,
    parameter int REQUANT_MULT_W = 31,
    parameter int REQUANT_SHIFT = 67,
    parameter int EXP_SHIFT = 37,
    parameter int E16_MAX = 32767,
    parameter int FACTOR_BITS = 32,
    parameter int DIFF_W = 17,
    parameter int IT_W = 17,
    parameter int IQ_W = 5,
    parameter int IR_W = 11,
    parameter int IZ_W = 23,
    parameter int IE_W = 52,
    parameter int RQ_W = 82,
    parameter int E16_W = 15,
    parameter int SUM_W = 21,
    parameter int FACTOR_W = 33,
    parameter int PROD_W = 33,
    parameter int OUT_CODE = 0,
    parameter int CODE_BITS = 4,
    parameter int CODE_ZERO = 15,
    parameter int CODE_NW = 9,
    parameter int CODE_F = 8,
    parameter longint CODE_C12 = 64'd362,
    parameter longint CODE_C14 = 64'd304,
    parameter longint CODE_C34 = 64'd430
) (
    input  logic             clk,
    input  logic             rst,
    input  logic [IN_W-1:0]  s_axis_tdata,
    input  logic             s_axis_tvalid,
    output logic             s_axis_tready,
    input  logic             s_axis_tlast,
    input  logic             s_axis_tuser,  // mask bit: 1 = masked out
    // out_fmt codes, or (OUT_CODE) CODE_BITS-bit log codes
    output logic [(OUT_CODE != 0 ? CODE_BITS : OUT_W)-1:0] m_axis_tdata,
    output logic             m_axis_tvalid,
    input  logic             m_axis_tready,
    output logic             m_axis_tlast,
    output logic             row_err
);

  if (FACTOR_W != FACTOR_BITS + 1) begin : g_bad
    $error("hwa_softmax_ibert %m: FACTOR_W=%0d must be FACTOR_BITS + 1 = %0d", FACTOR_W,
           FACTOR_BITS + 1);
  end
  logic p2_en;
  logic signed [DIFF_W-1:0] p2_diff;
  logic [E16_W-1:0] p2_e;
  hwa_ibert_exp_pipe #(
      .X0(X0),
      .B_INT(B_INT),
      .C_INT(C_INT),
      .EXP_N(EXP_N),
      .CALIBRATED(CALIBRATED),
      .REQUANT_MULT(REQUANT_MULT),
      .REQUANT_MULT_W(REQUANT_MULT_W),
      .REQUANT_SHIFT(REQUANT_SHIFT),
      .EXP_SHIFT(EXP_SHIFT),
      .E16_MAX(E16_MAX),
      .V_W(DIFF_W),
      .IT_W(IT_W),
      .IQ_W(IQ_W),
      .IR_W(IR_W),
      .IZ_W(IZ_W),
      .IE_W(IE_W),
      .RQ_W(RQ_W),
      .E16_W(E16_W)
  ) u_exp (
      .clk(clk),
      .en (p2_en),
      .v  (p2_diff),
      .e16(p2_e)
  );
  if (OUT_CODE != 0 && (OUT_CODE > 2 || CODE_NW != OUT_W || CODE_BITS < 2 || CODE_BITS > 8
                        || CODE_ZERO != (1 << CODE_BITS) - 1)) begin : g_bad_code
    $error("hwa_softmax_ibert %m: invalid OUT_CODE=%0d (0..2) CODE_NW=%0d (= OUT_W=%0d) CODE_BITS=%0d (2..8) CODE_ZERO=%0d (2^CODE_BITS - 1)",
           OUT_CODE, CODE_NW, OUT_W, CODE_BITS, CODE_ZERO);
  end
  hwa_softmax_3pass #(
      .IN_W(IN_W),
      .OUT_W(OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OUT_OVF(OUT_OVF),
      .OUT_SHIFT(OUT_SHIFT),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_DEPTH),
      .ROWQ(ROWQ),
      .N_BITS(N_BITS),
      .DIFF_W(DIFF_W),
      .E_W(E16_W),
      .EXP_LAT(12),  // hwa_ibert_exp_pipe
      .SUM_W(SUM_W),
      .NUM_W(FACTOR_BITS + 1),
      .NUM_ONES(1'b0),
      .CLAMP(1'b0),
      .FACTOR_W(FACTOR_W),
      .PROD_W(PROD_W),
      .OUT_CODE(OUT_CODE),
      .CODE_BITS(CODE_BITS),
      .CODE_F(CODE_F),
      .CODE_C12(CODE_C12),
      .CODE_C14(CODE_C14),
      .CODE_C34(CODE_C34)
  ) u_core (
      .*
  );

endmodule
`default_nettype wire
