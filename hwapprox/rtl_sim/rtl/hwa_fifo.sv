// hwa_fifo -- small synchronous FIFO of DEPTH words of W bits (first word fall-through).
//
// Contract: in_v writes in_d (never refused: the caller bounds the occupancy by
// DEPTH, e.g. by the rows a row stream lets in; simulation reports an overflow with
// $error); out_v is high while a word is held, out_d is the oldest, and out_rdy
// with out_v pops it. A word written in cycle t is visible from cycle t + 1.
// Parameters: no defaults; the parent passes every one. DEPTH a power of 2 >= 2.
`default_nettype none
module hwa_fifo #(
    parameter int W,
    parameter int DEPTH
) (
    input  logic         clk,
    input  logic         rst,
    input  logic         in_v,
    input  logic [W-1:0] in_d,
    output logic         out_v,
    input  logic         out_rdy,
    output logic [W-1:0] out_d
);

  localparam int AW = $clog2(DEPTH);
  if (W < 1 || DEPTH < 2 || (1 << AW) != DEPTH) begin : g_bad
    $error("hwa_fifo %m: invalid W=%0d DEPTH=%0d (power of 2 >= 2)", W, DEPTH);
  end

  logic [W-1:0] mem[DEPTH];
  logic [AW-1:0] wp_reg, rp_reg;
  logic [AW:0] cnt_reg;
  logic pop;
  assign out_v = cnt_reg != '0;
  assign out_d = mem[rp_reg];
  assign pop = out_v & out_rdy;
  always_ff @(posedge clk) begin
    if (in_v) mem[wp_reg] <= in_d;
    if (rst) begin
      wp_reg <= '0;
      rp_reg <= '0;
      cnt_reg <= '0;
    end else begin
      if (in_v) wp_reg <= wp_reg + 1'b1;
      if (pop) rp_reg <= rp_reg + 1'b1;
      cnt_reg <= cnt_reg + (AW + 1)'(in_v) - (AW + 1)'(pop);
    end
  end
`ifndef SYNTHESIS
  always_ff @(posedge clk) begin
    if (!rst && in_v && !pop && cnt_reg == (AW + 1)'(DEPTH)) begin
      $error("hwa_fifo %m: write into a full FIFO (DEPTH=%0d)", DEPTH);
    end
  end
`endif

endmodule
`default_nettype wire
