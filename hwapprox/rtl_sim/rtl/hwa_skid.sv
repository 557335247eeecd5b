// hwa_skid -- the output skid buffer of every unit: registered ready, two entries.
//
// A unit's stall-all pipeline ends in an output register (in_v / in_l / in_d). Without
// this module its enable would be ~m_axis_tvalid | m_axis_tready: a combinational
// function of the downstream ready that fans out to every stage and to s_axis_tready.
// Here the pipeline advances on ce = rdy_reg, a flip-flop that is high while the skid
// register is empty, so no combinational path runs from m_axis_tready to ce or to the
// unit's s_axis_tready.
//   m_axis_* = the skid register while it holds a beat, else the pipeline's output
//              register (a 2:1 mux of registers, no other logic);
//   the skid register takes the output register's beat when it is valid, not taken
//   (m_axis_tready low) and ce is high (the pipeline overwrites it in that cycle);
//   with the skid full, ce is low (the pipeline holds its output register: the second
//   entry) until the skid beat leaves.
// Entries: 2 (the skid register and the pipeline's output register). Throughput: one
// beat per cycle while m_axis_tready stays high (the skid register is never loaded);
// a stall costs no bubble (the beat after a drained skid leaves in the next cycle).
// Latency: 0 cycles (the unit's latency is unchanged; beats keep their order).
// Parameters: W data width (>= 1).
`default_nettype none
module hwa_skid #(
    parameter int W = 1
) (
    input  wire logic         clk,
    input  wire logic         rst,
    // the pipeline's output register and its enable
    input  wire logic         in_v,
    input  wire logic         in_l,
    input  wire logic [W-1:0] in_d,
    output logic              ce,
    // the unit's output stream
    output logic [W-1:0]      m_axis_tdata,
    output logic              m_axis_tvalid,
    input  wire logic         m_axis_tready,
    output logic              m_axis_tlast
);

  if (W < 1) begin : g_bad
    $error("%m: invalid W=%0d (>= 1)", W);
  end

  logic rdy_reg, sk_l;
  logic [W-1:0] sk_d;

  assign ce = rdy_reg;
  assign m_axis_tvalid = ~rdy_reg | in_v;
  assign m_axis_tdata = rdy_reg ? in_d : sk_d;
  assign m_axis_tlast = rdy_reg ? in_l : sk_l;

  always_ff @(posedge clk) begin
    if (rst) rdy_reg <= 1'b1;
    else if (rdy_reg) rdy_reg <= ~(in_v & ~m_axis_tready);
    else rdy_reg <= m_axis_tready;
    if (rdy_reg) begin
      sk_d <= in_d;
      sk_l <= in_l;
    end
  end

endmodule
`default_nettype wire
