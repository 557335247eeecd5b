// hwa_rom -- synchronous-read ROM initialised from a $readmemh file.
//
// Contract: q <= mem[addr] on a rising clock edge when en is high (one cycle
// latency, maps to block or distributed RAM). The file holds DEPTH words of
// W bits in hex, one per line, written by hwapprox.rtl_sim.emit from the
// spec's tables() -- the very integers the Python model uses.
`default_nettype none
module hwa_rom #(
    parameter int W = 8,
    parameter int DEPTH = 256,
    parameter int AW = (DEPTH > 1) ? $clog2(DEPTH) : 1,
    parameter string FILE = ""
) (
    input  logic          clk,
    input  logic          en,
    input  logic [AW-1:0] addr,
    output logic [W-1:0]  q
);

  logic [W-1:0] mem[DEPTH];

  if (W < 1 || DEPTH < 1 || (1 << AW) < DEPTH) begin : g_bad
    $error("hwa_rom %m: invalid W=%0d DEPTH=%0d AW=%0d", W, DEPTH, AW);
  end

  initial begin
    if (FILE != "") $readmemh(FILE, mem);
  end

  always_ff @(posedge clk) begin
    if (en) q <= mem[addr];
  end

endmodule
`default_nettype wire
