// hwa_log_code -- the log-coded output post-stage of the softmax units
// (hwapprox.approx.softmax._common.log_encode; RepQ-ViT, Li et al. 2023), combinational.
//
// In: p, a probability code of W bits (out_fmt raw; SIGNED: two's complement), F its
// fraction bits. Out: the BITS-bit code c, Z = 2^BITS - 1 meaning exactly 0:
//   p <= 0                        -> Z
//   e = floor(log2 p)             (the leading one's position: a priority encoder)
//   n = p << (W - 1 - e)          (the mantissa normalised to W bits, in [2^(W-1), 2^W))
//   FORM 1 (log2):      c = F - e - [n > C12]
//   FORM 2 (log-sqrt2): c = 2 (F - e) - [n > C14] - [n > C34]
//   c < 0 -> 0;  c >= Z -> Z.
// C12/C14/C34 = floor(2^(1/2 | 1/4 | 3/4) * 2^(W-1)) (log_code_constants): the compares
// against constants round -log2 p in the log domain. Everything else is a constant
// offset, so the stage is the priority encoder, a shifter and one or two constant
// compares.
// Parameters: no defaults; the parent passes them from the spec's hw_params().
`default_nettype none
module hwa_log_code #(
    parameter int W,
    parameter bit SIGNED,
    parameter int F,
    parameter int FORM,
    parameter int BITS,
    parameter longint C12,
    parameter longint C14,
    parameter longint C34
) (
    input  logic [W-1:0]    p,
    output logic [BITS-1:0] c
);

  if (W < 2 || W > 32 || BITS < 2 || BITS > 8 || (FORM != 1 && FORM != 2)
      || F < -64 || F > 64) begin : g_bad
    $error("hwa_log_code %m: invalid W=%0d (2..32) BITS=%0d (2..8) FORM=%0d (1, 2) F=%0d",
           W, BITS, FORM, F);
  end

  localparam int EW = $clog2(W) + 1;  // e in [0, W - 1]
  localparam int CW = 10;  // c in [2 (F - W + 1) - 2, 2 F]: |c| < 2^9 for |F| <= 64, W <= 32
  localparam logic signed [CW-1:0] Z = CW'((1 << BITS) - 1);

  logic pos;
  logic [EW-1:0] e;
  logic [W-1:0] n;
  logic signed [CW-1:0] k, ck;
  assign pos = (p != '0) && !(SIGNED && p[W-1]);
  always_comb begin
    e = '0;
    for (int b = 0; b < W; b++) begin
      if (p[b]) e = EW'(b);
    end
  end
  assign n = p << (EW'(W - 1) - e);
  assign k = CW'(F) - CW'(e);  // F - e
  if (FORM == 1) begin : g_log2
    localparam logic [W-1:0] K12 = W'(C12);
    assign ck = k - CW'(n > K12);
  end else begin : g_logsqrt2
    localparam logic [W-1:0] K14 = W'(C14);
    localparam logic [W-1:0] K34 = W'(C34);
    assign ck = (k <<< 1) - CW'(n > K14) - CW'(n > K34);
  end
  always_comb begin
    if (!pos || ck >= Z) c = BITS'(Z);
    else if (ck < 0) c = '0;
    else c = BITS'(ck);
  end

endmodule
`default_nettype wire
