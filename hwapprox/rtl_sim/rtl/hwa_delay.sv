// hwa_delay -- a signal delayed by L registered stages (a shift register).
//
// q is d of L enabled cycles ago: each stage advances when en is high (en = 1'b1 for
// a free-running per-row pipeline, the pipeline enable for a stall-all one). L = 0 is
// a wire. rst (synchronous, over en) clears every stage: tie it to the parent's reset
// for valid bits, to 1'b0 for data (no reset logic then).
// Latency: L cycles. Parameters: no defaults; W (>= 1), L (>= 0).
`default_nettype none
module hwa_delay #(
    parameter int W,
    parameter int L
) (
    input  wire logic         clk,
    input  wire logic         rst,
    input  wire logic         en,
    input  wire logic [W-1:0] d,
    output logic      [W-1:0] q
);

  if (W < 1 || L < 0) begin : g_bad
    $error("hwa_delay %m: invalid W=%0d L=%0d", W, L);
  end

  if (L == 0) begin : g_wire
    assign q = d;
    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_ctl;  // a wire: no clock, reset or enable
    assign unused_ctl = ^{clk, rst, en};
    /* verilator lint_on UNUSEDSIGNAL */
  end else begin : g_reg
    logic [W-1:0] sr[L];
    always_ff @(posedge clk) begin
      if (rst) begin
        for (int i = 0; i < L; i++) sr[i] <= '0;
      end else if (en) begin
        sr[0] <= d;
        for (int i = 1; i < L; i++) sr[i] <= sr[i-1];
      end
    end
    assign q = sr[L-1];
  end

endmodule
`default_nettype wire
