// hwa_softmax_shiftmax -- I-ViT Shiftmax (hwapprox.approx.softmax.ShiftmaxSoftmax),
// bit-exact: three passes over each row, pipelined so rows stream back to back.
//
// Per row of n <= ROW_MAX raw in_fmt codes x (s_axis, tlast on the last one) with one
// mask bit each (s_axis_tuser, 1 = masked out: no part in max or sum, output 0; a fully
// masked row outputs zeros):
//   pass 1 (ingest into row buffer A): m = max of the unmasked x;
//   pass 2 (A re-read into row buffer B): e = shift_exp(x - m) (hwa_shift_exp; masked:
//       0), S = sum of e while it enters B;
//   per row: factor = floor((2^31 - 1) / max(min(S, 2^31 - 1), 1)) (hwa_udiv, 31
//       pipelined stages);
//   pass 3 (B re-read): y = sat((e * factor) >> OUT_SHIFT, OUT_OVF), OUT_SHIFT = 31 - F.
// Each pass runs at one element per cycle; a row's first output needs its last input,
// then its second pass and sum, then the divider. Latency: last input -> last output
// 2N + 51 cycles (pass 1: an input register; pass 2: two registers, hwa_shift_exp_pipe's
// 5 stages and B's input register; the total and its clamp 2, the divider 31; pass 3: a
// register, hwa_mul_pipe's 4 stages with operand registers, the output register), so the
// row-wise N + 16 target cannot hold for this method (its exp needs the row max, its normalisation the whole sum). Back to back,
// rows overlap across the two buffers: one element per cycle in and out.
// The passes: hwa_softmax_3pass with hwa_shift_exp_pipe as its exponent.
// Rows longer than ROW_MAX are dropped with a row_err pulse (hwa_row_stream A).
// Parameter defaults: the default ShiftmaxSoftmax spec's hw_params() with
// row_stream_params(64) (tests/test_rtl_lint.py).
`default_nettype none
module hwa_softmax_shiftmax #(
    parameter int IN_W = 16,
    parameter int OUT_W = 9,
    parameter bit OUT_SIGNED = 1'b0,
    parameter int OUT_OVF = 1,
    parameter int OUT_SHIFT = 23,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 8,
    parameter int X0 = -1024,
    parameter int EXP_N = 15,
    parameter bit TVM = 1'b0,
    parameter int DIFF_W = 17,
    parameter int ST_W = 18,
    parameter int SQ_W = 4,
    parameter int SR_W = 11,
    parameter int SEI_W = 27,
    parameter int SE_W = 26,
    parameter int SUM_W = 32,
    parameter int FACTOR_W = 31,
    parameter int PROD_W = 31,
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

  if (FACTOR_W != 31) begin : g_bad
    $error("hwa_softmax_shiftmax %m: FACTOR_W=%0d must be 31 ((2^31 - 1) / S)", FACTOR_W);
  end
  logic p2_en;
  logic signed [DIFF_W-1:0] p2_diff;
  logic [SE_W-1:0] p2_e;
  hwa_shift_exp_pipe #(
      .X0(X0),
      .EXP_N(EXP_N),
      .TVM(TVM),
      .V_W(DIFF_W),
      .ST_W(ST_W),
      .SQ_W(SQ_W),
      .SR_W(SR_W),
      .SEI_W(SEI_W),
      .SE_W(SE_W)
  ) u_sexp (
      .clk(clk),
      .en (p2_en),
      .v  (p2_diff),
      .e  (p2_e)
  );
  if (OUT_CODE != 0 && (OUT_CODE > 2 || CODE_NW != OUT_W || CODE_BITS < 2 || CODE_BITS > 8
                        || CODE_ZERO != (1 << CODE_BITS) - 1)) begin : g_bad_code
    $error("hwa_softmax_shiftmax %m: invalid OUT_CODE=%0d (0..2) CODE_NW=%0d (= OUT_W=%0d) CODE_BITS=%0d (2..8) CODE_ZERO=%0d (2^CODE_BITS - 1)",
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
      .E_W(SE_W),
      .EXP_LAT(5),  // hwa_shift_exp_pipe
      .SUM_W(SUM_W),
      .NUM_W(31),
      .NUM_ONES(1'b1),
      .CLAMP(1'b1),
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
