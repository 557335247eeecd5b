// hwa_round_shift_pipe -- hwa_round_shift in two registered stages (issue 22): the same
// y = round(x / 2^sh) with an ap_fixed quantisation mode (hwa_pkg RND_*), bit for bit.
//   stage 1: q = x >>> s (s = min(sh, IN_W + 1)), and from the dropped bits alone: the
//            half bit x[s-1], whether any bit below it is set, the sign, q's parity
//            (no subtractor, no wide compare: rem = the low s bits of x);
//   stage 2: y = q + round_up(MODE, ...).
// Latency: 2 cycles, one result per cycle; advances when en is high.
// Parameters: no defaults; IN_W, SH_W, OUT_W (>= 1), MODE (0..6).
`default_nettype none
module hwa_round_shift_pipe #(
    parameter int IN_W,
    parameter int SH_W,
    parameter int OUT_W,
    parameter int MODE
) (
    input  wire logic                    clk,
    input  wire logic                    en,
    input  wire logic signed [IN_W-1:0]  x,
    input  wire logic        [SH_W-1:0]  sh,
    output logic signed      [OUT_W-1:0] y
);

  localparam int XW = IN_W + 2;
  localparam int CW = $clog2(XW + 1);

  if (IN_W < 1 || SH_W < 1 || OUT_W < 1 || MODE < 0 || MODE > 6) begin : g_bad
    $error("hwa_round_shift_pipe %m: invalid IN_W=%0d SH_W=%0d OUT_W=%0d MODE=%0d", IN_W,
           SH_W, OUT_W, MODE);
  end

  // stage 1
  logic signed [XW-1:0] xe, q_c, q1;
  logic [CW-1:0] s;
  logic [XW-1:0] m_below;  // the dropped bits below the half bit
  logic half_c, below_c, inc_c, inc1;
  always_comb begin
    xe = XW'(x);
    if (32'(sh) > IN_W + 1) s = CW'(IN_W + 1);
    else s = CW'(sh);
    q_c = xe >>> s;
    m_below = (s == 0) ? '0 : ~(XW'('1) << (s - CW'(1)));
    half_c = (s == 0) ? 1'b0 : xe[s-CW'(1)];
    below_c = |(xe & m_below);
    inc_c = (s == 0) ? 1'b0 :
        hwa_pkg::round_up(MODE, half_c & below_c, half_c & ~below_c, half_c | below_c,
                          x[IN_W-1], q_c[0]);
  end
  always_ff @(posedge clk) begin
    if (en) begin
      q1 <= q_c;
      inc1 <= inc_c;
    end
  end

  // stage 2
  always_ff @(posedge clk) begin
    if (en) y <= OUT_W'(q1 + XW'(inc1));
  end

endmodule
`default_nettype wire
