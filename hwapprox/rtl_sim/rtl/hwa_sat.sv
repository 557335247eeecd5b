// hwa_sat -- fit a signed integer into an OUT_W-bit code with an ap_fixed
// overflow mode (hwa_pkg OVF_*), exactly FixedFormat.saturate.
//
// Contract (combinational): x is a signed IN_W-bit integer already on the
// output grid; y is x wrapped (OVF_WRAP), clamped to [min, max] (OVF_SAT),
// zeroed when outside (OVF_SAT_ZERO) or clamped to [-max, max] (OVF_SAT_SYM)
// for the OUT_W-bit format, signed when OUT_SIGNED = 1.
`default_nettype none
module hwa_sat #(
    parameter int IN_W = 20,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OVF = 1
) (
    input  logic signed [IN_W-1:0] x,
    output logic [OUT_W-1:0]       y
);

  localparam int XW = (IN_W > OUT_W + 1 ? IN_W : OUT_W + 1) + 1;

  if (IN_W < 1 || OUT_W < 1 || OVF < 0 || OVF > 3 || OUT_W > 62) begin : g_bad
    $error("hwa_sat %m: invalid IN_W=%0d OUT_W=%0d OVF=%0d", IN_W, OUT_W, OVF);
  end

  localparam logic signed [XW-1:0] MAXV = OUT_SIGNED ? ((XW'(1) <<< (OUT_W - 1)) - XW'(1))
                                                     : ((XW'(1) <<< OUT_W) - XW'(1));
  localparam logic signed [XW-1:0] MINV = OUT_SIGNED ? -(XW'(1) <<< (OUT_W - 1)) : '0;

  logic signed [XW-1:0] xe;
  logic signed [XW-1:0] lo;
  always_comb begin
    xe = XW'(x);
    lo = (OVF == hwa_pkg::OVF_SAT_SYM && OUT_SIGNED) ? -MAXV : MINV;
    if (OVF == hwa_pkg::OVF_WRAP) y = OUT_W'(xe);
    else if (xe > MAXV) y = (OVF == hwa_pkg::OVF_SAT_ZERO) ? '0 : OUT_W'(MAXV);
    else if (xe < lo) begin
      if (OVF == hwa_pkg::OVF_SAT_ZERO && xe < MINV) y = '0;
      else y = OUT_W'(lo);
    end else y = OUT_W'(xe);
  end

endmodule
`default_nettype wire
