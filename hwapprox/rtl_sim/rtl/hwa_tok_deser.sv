// hwa_tok_deser -- L element beats (W bits each, the first into lane 0) gathered into one
// token beat (lane 0 in the low bits); element tlast is not read (L counts the token).
// Throughput: one element per cycle; the token leaves from an output register while the
// next one gathers. Latency: last element -> token valid 1 cycle. s_tready depends on
// m_tready (an internal adapter of the encoder block).
`default_nettype none
module hwa_tok_deser #(
    parameter int L,
    parameter int W
) (
    input  wire logic           clk,
    input  wire logic           rst,
    input  wire logic [W-1:0]   s_tdata,
    input  wire logic           s_tvalid,
    output logic                s_tready,
    output logic      [L*W-1:0] m_tdata,
    output logic                m_tvalid,
    input  wire logic           m_tready
);

  localparam int CW = (L > 1) ? $clog2(L) : 1;
  if (L < 1 || W < 1) begin : g_bad
    $error("%m: invalid L=%0d W=%0d", L, W);
  end

  logic [L*W-1:0] acc_reg;
  logic [CW-1:0] cnt_reg;
  logic out_v_reg, last_in;
  logic [L*W-1:0] full;
  assign last_in = cnt_reg == CW'(L - 1);
  // the last element may enter when the output register is free or leaves now
  assign s_tready = ~last_in | ~out_v_reg | m_tready;
  assign m_tvalid = out_v_reg;
  for (genvar i = 0; i < L; i++) begin : g_lane
    assign full[i*W+:W] = (i == L - 1) ? s_tdata : acc_reg[i*W+:W];
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      cnt_reg <= '0;
      out_v_reg <= 1'b0;
    end else begin
      if (out_v_reg && m_tready) out_v_reg <= 1'b0;
      if (s_tvalid && s_tready) begin
        cnt_reg <= last_in ? '0 : cnt_reg + 1'b1;
        if (last_in) out_v_reg <= 1'b1;
      end
    end
    if (s_tvalid && s_tready) begin
      acc_reg[32'(cnt_reg)*W+:W] <= s_tdata;
      if (last_in) m_tdata <= full;
    end
  end

endmodule
`default_nettype wire
