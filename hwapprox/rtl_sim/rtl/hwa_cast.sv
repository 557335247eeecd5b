// hwa_cast -- one ap_fixed cast of an integer to an output code (combinational):
// y = sat(round_shift(x, SHIFT, MODE), OVF) for SHIFT > 0, sat(x << -SHIFT, OVF) otherwise,
// exactly hwapprox.fixed.cast from SHIFT more fraction bits into the OUT_W-bit format
// (hwa_round_shift, then hwa_sat; MODE/OVF are hwa_pkg codes).
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_cast #(
    parameter int IN_W,
    parameter int SHIFT,
    parameter int MODE,
    parameter int OUT_W,
    parameter bit OUT_SIGNED,
    parameter int OVF
) (
    input  logic signed [IN_W-1:0] x,
    output logic        [OUT_W-1:0] y
);

  localparam int RW = IN_W + ((SHIFT < 0) ? -SHIFT : 0) + 1;
  localparam int SW = 8;
  if (IN_W < 1 || OUT_W < 1 || SHIFT < -60 || SHIFT > 120) begin : g_bad
    $error("hwa_cast %m: invalid IN_W=%0d SHIFT=%0d OUT_W=%0d", IN_W, SHIFT, OUT_W);
  end
  logic signed [RW-1:0] r;
  if (SHIFT > 0) begin : g_rshift
    hwa_round_shift #(
        .IN_W (IN_W),
        .SH_W (SW),
        .OUT_W(RW),
        .MODE (MODE)
    ) u_round (
        .x (x),
        .sh(SW'(SHIFT)),
        .y (r)
    );
  end else begin : g_lshift
    assign r = RW'(x) <<< (-SHIFT);
  end
  hwa_sat #(
      .IN_W      (RW),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OVF)
  ) u_sat (
      .x(r),
      .y(y)
  );

endmodule
`default_nettype wire
