// hwa_mac -- one accumulating lane of hwapprox.approx.linear.MatMulSpec (no bias): the
// dot products of the attention (Q·K^T scores, P·V) in the encoder block.
//
// A dot product is a run of terms in_v with in_first on its first and in_last on its
// last term (k = 0, 1, ... in the model's order):
//   acc = accum((in_first ? 0 : acc) + a·b): the product exact (A_W + 1 + B_W bits; a
//         signed or unsigned, b signed), the sum exact on the finer grid (acc << A_SHL,
//         product << P_SHL, SUM_W bits), one cast back by A_SHL with ACC_RND / ACC_OVF;
//   y   = out(acc): hwa_cast by Y_SHIFT with Y_RND / Y_OVF into Y_W bits, out_v high for
//         one cycle.
// Latency: the last term in cycle t -> out_v and y in cycle t + 2 (product register,
// accumulator register). One term per cycle, no stall (the parent paces the terms).
// Parameters: no defaults; hwapprox.rtl_sim.linear.mac_params derives them.
`default_nettype none
module hwa_mac #(
    parameter int A_W,
    parameter bit A_SIGNED,
    parameter int B_W,
    parameter int ACC_W,
    parameter int ACC_RND,
    parameter int ACC_OVF,
    parameter int A_SHL,
    parameter int P_SHL,
    parameter int SUM_W,
    parameter int Y_W,
    parameter bit Y_SIGNED,
    parameter int Y_SHIFT,
    parameter int Y_RND,
    parameter int Y_OVF
) (
    input  wire logic           clk,
    input  wire logic           rst,
    input  wire logic           in_v,
    input  wire logic           in_first,
    input  wire logic           in_last,
    input  wire logic [A_W-1:0] a,
    input  wire logic [B_W-1:0] b,
    output logic                out_v,
    output logic      [Y_W-1:0] y
);

  localparam int PROD_W = A_W + 1 + B_W;
  if (A_W < 1 || B_W < 2 || ACC_W < 2 || ACC_W > 62 || A_SHL < 0 || P_SHL < 0
      || SUM_W < ((ACC_W + A_SHL > PROD_W + P_SHL) ? ACC_W + A_SHL : PROD_W + P_SHL) + 1)
      begin : g_bad
    $error("%m: invalid A_W=%0d B_W=%0d ACC_W=%0d A_SHL=%0d P_SHL=%0d SUM_W=%0d", A_W, B_W,
           ACC_W, A_SHL, P_SHL, SUM_W);
  end

  logic signed [A_W:0] a_ext;
  assign a_ext = A_SIGNED ? (A_W + 1)'($signed(a)) : $signed({1'b0, a});
  logic signed [PROD_W-1:0] p_reg;
  logic v1, first1, last1;
  always_ff @(posedge clk) begin
    p_reg <= PROD_W'(a_ext) * PROD_W'($signed(b));
    first1 <= in_first;
    last1 <= in_last;
    if (rst) v1 <= 1'b0;
    else v1 <= in_v;
  end

  logic signed [ACC_W-1:0] acc_reg, acc_c, base;
  logic signed [SUM_W-1:0] sum;
  assign base = first1 ? '0 : acc_reg;
  assign sum = (SUM_W'(base) <<< A_SHL) + (SUM_W'(p_reg) <<< P_SHL);
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
    if (v1) acc_reg <= acc_c;
    if (rst) out_v <= 1'b0;
    else out_v <= v1 & last1;
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
      .y(y)
  );

endmodule
`default_nettype wire
