// Test fixture (tests/test_rtl_handshake.py): hwa_lut as it was before issue 22, its
// pipeline enable ce = ~m_axis_tvalid | m_axis_tready driving s_axis_tready (a
// combinational path from m_axis_tready to s_axis_tready). The ready probe must flag it.
// hwa_lut -- GELU by a direct table (one entry per input code or per bin).
//
// Computes (hwapprox.approx.gelu.LutGelu): y = T[(x - x_min) >> (IN_W - INDEX_BITS)],
// where T is the spec's table (loaded with $readmemh from LUT_FILE,
// 2^INDEX_BITS entries of OUT_W bits, written from spec.tables()["lut"]).
// Output rounding/saturation is inside T: the logic is the index only.
// Stream: s_axis -> m_axis, one element per cycle, tlast passed through.
// Latency: 2 cycles (registered ROM read, output register). No buffering
// beyond the pipeline; backpressure stalls the whole pipeline.
module hwa_lut #(
    parameter int IN_W = 10,
    parameter bit IN_SIGNED = 1'b1,
    parameter int OUT_W = 10,
    parameter int INDEX_BITS = IN_W,
    parameter string LUT_FILE = ""
) (
    input  logic             clk,
    input  logic             rst,
    input  logic [IN_W-1:0]  s_axis_tdata,
    input  logic             s_axis_tvalid,
    output logic             s_axis_tready,
    input  logic             s_axis_tlast,
    output logic [OUT_W-1:0] m_axis_tdata,
    output logic             m_axis_tvalid,
    input  logic             m_axis_tready,
    output logic             m_axis_tlast
);

  if (IN_W < 1 || IN_W > 24 || OUT_W < 1 || OUT_W > 62 || INDEX_BITS < 1
      || INDEX_BITS > IN_W || INDEX_BITS > 16) begin : g_bad
    $error("hwa_lut: invalid IN_W=%0d (1..24) OUT_W=%0d (1..62) INDEX_BITS=%0d",
                   IN_W, OUT_W, INDEX_BITS);
  end

  logic ce;
  logic [1:0] vld_reg, lst_reg;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [IN_W-1:0] code;  // low IN_W - INDEX_BITS bits select within a bin: unused
  /* verilator lint_on UNUSEDSIGNAL */
  logic [INDEX_BITS-1:0] addr;
  logic [OUT_W-1:0] rom_q;

  // stall the pipeline only when its output is held by backpressure
  assign ce = ~m_axis_tvalid | m_axis_tready;
  assign s_axis_tready = ce;
  // table index: the code minus the smallest code (flip the sign bit)
  assign code = IN_SIGNED ? (s_axis_tdata ^ (IN_W'(1) << (IN_W - 1))) : s_axis_tdata;
  assign addr = code[IN_W-1-:INDEX_BITS];

  hwa_rom #(
      .W(OUT_W),
      .DEPTH(1 << INDEX_BITS),
      .AW(INDEX_BITS),
      .FILE(LUT_FILE)
  ) u_rom (
      .clk (clk),
      .en  (ce),
      .addr(addr),
      .q   (rom_q)
  );

  always_ff @(posedge clk) begin
    if (rst) begin
      vld_reg <= '0;
      lst_reg <= '0;
    end else if (ce) begin
      vld_reg <= {vld_reg[0], s_axis_tvalid};
      lst_reg <= {lst_reg[0], s_axis_tlast};
    end
  end

  always_ff @(posedge clk) begin
    if (ce) m_axis_tdata <= rom_q;
  end

  assign m_axis_tvalid = vld_reg[1];
  assign m_axis_tlast = lst_reg[1];

endmodule
