// hwa_prim_check -- test harness (not a unit): every rounding mode of
// hwa_round_shift and every overflow mode of hwa_sat side by side, so one
// build checks them all against hwapprox.fixed (tests/test_rtl_prims.py).
//
// y[m] = round_shift(x, sh, mode m), m = 0..6 (hwa_pkg RND_*);
// s[o] = saturate(x) into a signed SAT_W-bit code, overflow mode o = 0..3;
// u[o] = the same into an unsigned SAT_W-bit code.
`default_nettype none
module hwa_prim_check #(
    parameter int IN_W = 12,
    parameter int SH_W = 4,
    parameter int SAT_W = 6
) (
    input  logic signed [IN_W-1:0] x,
    input  logic [SH_W-1:0]        sh,
    output logic [7*IN_W-1:0]      y,
    output logic [4*SAT_W-1:0]     s,
    output logic [4*SAT_W-1:0]     u
);

  for (genvar m = 0; m < 7; m++) begin : g_round
    hwa_round_shift #(
        .IN_W (IN_W),
        .SH_W (SH_W),
        .OUT_W(IN_W),
        .MODE (m)
    ) u_rs (
        .x (x),
        .sh(sh),
        .y (y[m*IN_W+:IN_W])
    );
  end

  for (genvar o = 0; o < 4; o++) begin : g_sat
    hwa_sat #(
        .IN_W      (IN_W),
        .OUT_W     (SAT_W),
        .OUT_SIGNED(1'b1),
        .OVF       (o)
    ) u_s (
        .x(x),
        .y(s[o*SAT_W+:SAT_W])
    );
    hwa_sat #(
        .IN_W      (IN_W),
        .OUT_W     (SAT_W),
        .OUT_SIGNED(1'b0),
        .OVF       (o)
    ) u_u (
        .x(x),
        .y(u[o*SAT_W+:SAT_W])
    );
  end

endmodule
`default_nettype wire
