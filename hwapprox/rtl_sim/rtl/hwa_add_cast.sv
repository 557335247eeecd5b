// hwa_add_cast -- one lane of hwapprox.approx.linear.AddSpec (combinational): the exact
// sum of a (A_W bits, A_SIGNED) and b (B_W bits, B_SIGNED) on the finer of their grids
// (a << A_SHL, b << B_SHL, SUM_W bits), then one cast to the output format: hwa_cast by
// SHIFT with MODE / OVF into Y_W bits (Y_SIGNED). A plain cast of a (a format change) is
// this module with b tied to 0 (B_W = 1, B_SHL = 0): the sum is then a itself.
// Parameters: no defaults; hwapprox.rtl_sim.block derives them from the AddSpec.
`default_nettype none
module hwa_add_cast #(
    parameter int A_W,
    parameter bit A_SIGNED,
    parameter int B_W,
    parameter bit B_SIGNED,
    parameter int A_SHL,
    parameter int B_SHL,
    parameter int SUM_W,
    parameter int SHIFT,
    parameter int MODE,
    parameter int Y_W,
    parameter bit Y_SIGNED,
    parameter int OVF
) (
    input  wire logic [A_W-1:0] a,
    input  wire logic [B_W-1:0] b,
    output logic      [Y_W-1:0] y
);

  if (A_W < 1 || B_W < 1 || A_SHL < 0 || B_SHL < 0
      || SUM_W < ((A_W + A_SHL > B_W + B_SHL) ? A_W + A_SHL : B_W + B_SHL) + 2) begin : g_bad
    $error("%m: invalid A_W=%0d B_W=%0d A_SHL=%0d B_SHL=%0d SUM_W=%0d", A_W, B_W, A_SHL,
           B_SHL, SUM_W);
  end

  logic signed [A_W:0] a_ext;
  logic signed [B_W:0] b_ext;
  logic signed [SUM_W-1:0] sum;
  assign a_ext = A_SIGNED ? (A_W + 1)'($signed(a)) : $signed({1'b0, a});
  assign b_ext = B_SIGNED ? (B_W + 1)'($signed(b)) : $signed({1'b0, b});
  assign sum = (SUM_W'(a_ext) <<< A_SHL) + (SUM_W'(b_ext) <<< B_SHL);
  hwa_cast #(
      .IN_W      (SUM_W),
      .SHIFT     (SHIFT),
      .MODE      (MODE),
      .OUT_W     (Y_W),
      .OUT_SIGNED(Y_SIGNED),
      .OVF       (OVF)
  ) u_cast (
      .x(sum),
      .y(y)
  );

endmodule
`default_nettype wire
