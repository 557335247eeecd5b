// hwa_round_shift_pipe -- hwa_round_shift in three registered stages (issue 22): the same
// y = round(x / 2^sh) with an ap_fixed quantisation mode (hwa_pkg RND_*), bit for bit,
// for wide x and a variable sh (the rsqrt LayerNorms' Z = round(A*y / 2^sh)).
// With s = min(sh, IN_W + 1) split as s = sc + sf (sc a multiple of 8, sf < 8):
//   stage 1: x1 = x >>> sc; of the bits it drops: the top one x[sc-1] and whether any
//            below it is set (8:1 selections and ORs of byte groups, no adder);
//   stage 2: q = x1 >>> sf; the half bit x[s-1] and whether any bit below it is set
//            (from x1's dropped bits and stage 1's), the rounding increment of MODE;
//   stage 3: y = q + increment (low OUT_W bits).
// Latency: 3 cycles, one result per cycle; advances when en is high.
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
  localparam int CW = $clog2(XW + 1) + 1;  // s <= IN_W + 1, and room for sc - 1

  if (IN_W < 1 || SH_W < 1 || OUT_W < 1 || MODE < 0 || MODE > 6) begin : g_bad
    $error("hwa_round_shift_pipe %m: invalid IN_W=%0d SH_W=%0d OUT_W=%0d MODE=%0d", IN_W,
           SH_W, OUT_W, MODE);
  end

  // stage 1: the coarse shift by sc
  logic signed [XW-1:0] xe, x1_c, x1;
  logic [CW-1:0] s, sc;
  logic [2:0] sf1;
  logic h1_c, b1_c, h1, b1, neg1;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [XW-1:0] top1;  // xe >> (sc - 1): bit 0 is the top dropped bit
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    xe = XW'(x);
    if (32'(sh) > IN_W + 1) s = CW'(IN_W + 1);
    else s = CW'(sh);
    sc = {s[CW-1:3], 3'b000};
    x1_c = xe >>> sc;
    top1 = xe >> (sc - CW'(1));
    h1_c = (sc == 0) ? 1'b0 : top1[0];
    b1_c = (sc <= 1) ? 1'b0 : |(xe & ~(XW'('1) << (sc - CW'(1))));
  end
  always_ff @(posedge clk) begin
    if (en) begin
      x1 <= x1_c;
      h1 <= h1_c;
      b1 <= b1_c;
      sf1 <= s[2:0];
      neg1 <= x[IN_W-1];
    end
  end

  // stage 2: the fine shift by sf, the rounding increment
  logic signed [XW-1:0] q_c, q2;
  logic half_c, below_c, inc_c, inc2;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [XW-1:0] top2;  // x1 >> (sf - 1): bit 0 is the half bit
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    top2 = x1 >> (sf1 - 3'd1);
    q_c = x1 >>> sf1;
    if (sf1 == 0) begin
      half_c = h1;
      below_c = b1;
    end else begin
      half_c = top2[0];
      below_c = |(x1 & ~(XW'('1) << (sf1 - 3'd1))) | h1 | b1;
    end
    inc_c = hwa_pkg::round_up(MODE, half_c & below_c, half_c & ~below_c, half_c | below_c,
                              neg1, q_c[0]);
  end
  always_ff @(posedge clk) begin
    if (en) begin
      q2 <= q_c;
      inc2 <= inc_c;
    end
  end

  // stage 3
  always_ff @(posedge clk) begin
    if (en) y <= OUT_W'(q2 + XW'(inc2));
  end

endmodule
`default_nettype wire
