// hwa_round_shift -- y = round(x / 2^sh) with an ap_fixed quantisation mode.
//
// Contract (combinational): x is a signed IN_W-bit integer, sh an unsigned
// shift amount; y is the floor quotient plus the rounding increment of MODE
// (hwa_pkg RND_*), exactly hwapprox.fixed.round_shift. Shifts beyond IN_W+1
// give the same result as IN_W+1 (every bit dropped). y is the low OUT_W bits
// of the exact quotient (the caller sizes OUT_W so that it fits).
`default_nettype none
module hwa_round_shift #(
    parameter int IN_W = 16,
    parameter int SH_W = 5,
    parameter int OUT_W = 16,
    parameter int MODE = 0
) (
    input  logic signed [IN_W-1:0]  x,
    input  logic        [SH_W-1:0]  sh,
    output logic signed [OUT_W-1:0] y
);

  localparam int XW = IN_W + 2;
  localparam int CW = $clog2(XW + 1);

  if (IN_W < 1 || SH_W < 1 || OUT_W < 1 || MODE < 0 || MODE > 6) begin : g_bad
    $error("hwa_round_shift %m: invalid IN_W=%0d SH_W=%0d OUT_W=%0d MODE=%0d",
                   IN_W, SH_W, OUT_W, MODE);
  end

  logic signed [XW-1:0] xe, q, rem, half;
  logic        [CW-1:0] s;
  logic                 inc;

  always_comb begin
    xe = XW'(x);
    // clamp the shift: beyond IN_W+1 every bit is gone and the result is fixed
    if (32'(sh) > IN_W + 1) s = CW'(IN_W + 1);
    else s = CW'(sh);
    q = xe >>> s;
    rem = xe - (q <<< s);
    half = (s == 0) ? '0 : (XW'(1) <<< (s - CW'(1)));
    inc = (s == 0) ? 1'b0 :
        hwa_pkg::round_up(MODE, rem > half, rem == half, rem != 0, x[IN_W-1], q[0]);
    y = OUT_W'(q + XW'(inc));
  end

endmodule
`default_nettype wire
