// hwa_shift_exp -- I-ViT's shift-exp of v <= 0 (hwapprox.approx.intmath.shift_exp),
// combinational.
//
// t = v + (v >>> 1) - (v >>> 4) (v·log2 e by shifts);  t = max(t, EXP_N·X0);
// q = floor(t / X0) in [0, EXP_N] (a compare per value of q: t / X0 >= j  <=>  t <= j·X0);
// r = t - X0·q in (X0, 0];
// TVM = 0 (PyTorch): e = ((r - 2·X0) << (EXP_N - q)) >> 1;  TVM = 1: e = ((r >>> 1) - X0) << (EXP_N - q).
// Widths (the spec's hw_params): V_W the argument, ST_W t and the clip, SQ_W q, SR_W r,
// SEI_W the shifted value before the halving, SE_W the result.
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_shift_exp #(
    parameter int X0,
    parameter int EXP_N,
    parameter bit TVM,
    parameter int V_W,
    parameter int ST_W,
    parameter int SQ_W,
    parameter int SR_W,
    parameter int SEI_W,
    parameter int SE_W
) (
    input  logic signed [V_W-1:0] v,
    output logic        [SE_W-1:0] e
);

  if (X0 >= 0 || EXP_N < 1 || EXP_N > 30 || ST_W < V_W || ST_W > 32) begin : g_bad
    $error("hwa_shift_exp %m: invalid X0=%0d (< 0) EXP_N=%0d (1..30) V_W=%0d ST_W=%0d",
           X0, EXP_N, V_W, ST_W);
  end

  localparam logic signed [ST_W-1:0] CLIP = ST_W'(EXP_N * X0);
  logic signed [ST_W-1:0] vs, t0, t;
  logic [SQ_W-1:0] q;
  logic signed [SR_W-1:0] r;
  logic [SEI_W-1:0] b;
  always_comb begin
    vs = ST_W'(v);
    t0 = vs + (vs >>> 1) - (vs >>> 4);
    t = (t0 < CLIP) ? CLIP : t0;
    q = '0;
    for (int j = 1; j <= EXP_N; j++) begin
      if (32'(t) <= j * X0) q = q + 1'b1;
    end
    r = SR_W'(t - ST_W'(X0) * ST_W'($signed({1'b0, q})));
    if (TVM) begin
      b = SEI_W'(SEI_W'(r >>> 1) - SEI_W'(X0));
      e = SE_W'(b << (EXP_N - 32'(q)));
    end else begin
      b = SEI_W'(SEI_W'(r) - SEI_W'(2 * X0));
      e = SE_W'((b << (EXP_N - 32'(q))) >> 1);
    end
  end

endmodule
`default_nettype wire
