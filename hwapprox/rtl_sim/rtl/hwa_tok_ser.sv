// hwa_tok_ser -- one token (L lanes of W bits in one beat, lane 0 in the low bits) out as
// L element beats, lane 0 first, tlast on lane L - 1 (a row of a row-wise unit).
// Throughput: L cycles per token back to back (the next token is taken with the last
// lane). Latency: 1 cycle (the token register). s_tready depends on m_tready (an
// internal adapter of the encoder block: both ends are the block's own registers).
// The token register shifts down one lane per element sent, so m_tdata is its lowest
// lane, a register output (no L-to-1 multiplexer in front of the consumer).
`default_nettype none
module hwa_tok_ser #(
    parameter int L,
    parameter int W
) (
    input  wire logic           clk,
    input  wire logic           rst,
    input  wire logic [L*W-1:0] s_tdata,
    input  wire logic           s_tvalid,
    output logic                s_tready,
    output logic      [W-1:0]   m_tdata,
    output logic                m_tvalid,
    input  wire logic           m_tready,
    output logic                m_tlast
);

  localparam int CW = (L > 1) ? $clog2(L) : 1;
  if (L < 1 || W < 1) begin : g_bad
    $error("%m: invalid L=%0d W=%0d", L, W);
  end

  logic [L*W-1:0] tok_reg;
  logic busy_reg;
  logic [CW-1:0] cnt_reg;
  assign m_tvalid = busy_reg;
  assign m_tdata = tok_reg[W-1:0];
  assign m_tlast = cnt_reg == CW'(L - 1);
  assign s_tready = ~busy_reg | (m_tready & m_tlast);
  always_ff @(posedge clk) begin
    if (rst) begin
      busy_reg <= 1'b0;
      cnt_reg <= '0;
    end else if (s_tvalid && s_tready) begin
      busy_reg <= 1'b1;
      cnt_reg <= '0;
    end else if (busy_reg && m_tready) begin
      if (m_tlast) busy_reg <= 1'b0;
      cnt_reg <= cnt_reg + 1'b1;
    end
    if (s_tvalid && s_tready) tok_reg <= s_tdata;
    else if (busy_reg && m_tready) tok_reg <= tok_reg >> W;
  end

endmodule
`default_nettype wire
