// hwa_ibert_exp -- I-BERT's i-exp of v <= 0 and the requantisation to e16
// (hwapprox.approx.softmax.IBertSoftmax._exp16, intmath.i_exp), combinational.
//
// t = max(v, EXP_N·X0);  q = floor(t / X0) in [0, EXP_N] (a compare per value of q);
// r = t - X0·q in (X0, 0];  z = r·(r + B_INT) + C_INT;  e = max(z << (EXP_N - q), 0);
// CALIBRATED = 1 (QuantAct): e16 = min(round_half_even(e·REQUANT_MULT / 2^REQUANT_SHIFT),
//   E16_MAX) -- the RQ_W-bit exact product, one rounding (hwa_round_shift, AP_RND_CONV);
// CALIBRATED = 0: e16 = e >> EXP_SHIFT.
// Widths (the spec's hw_params): IT_W, IQ_W, IR_W, IZ_W, IE_W, RQ_W, E16_W.
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_ibert_exp #(
    parameter int X0,
    parameter int B_INT,
    parameter longint C_INT,
    parameter int EXP_N,
    parameter bit CALIBRATED,
    parameter longint REQUANT_MULT,
    parameter int REQUANT_MULT_W,
    parameter int REQUANT_SHIFT,
    parameter int EXP_SHIFT,
    parameter int E16_MAX,
    parameter int V_W,
    parameter int IT_W,
    parameter int IQ_W,
    parameter int IR_W,
    parameter int IZ_W,
    parameter int IE_W,
    parameter int RQ_W,
    parameter int E16_W
) (
    input  logic signed [V_W-1:0] v,
    output logic        [E16_W-1:0] e16
);

  localparam int SW = 8;
  if (X0 >= 0 || EXP_N < 1 || EXP_N > 62 || IT_W > 32 || IE_W > 62 || RQ_W > 124
      || REQUANT_MULT_W > 32) begin : g_bad
    $error("hwa_ibert_exp %m: invalid X0=%0d EXP_N=%0d IT_W=%0d IE_W=%0d RQ_W=%0d", X0, EXP_N,
           IT_W, IE_W, RQ_W);
  end

  localparam logic signed [IT_W-1:0] CLIP = IT_W'(EXP_N * X0);
  logic signed [IT_W-1:0] t;
  logic [IQ_W-1:0] q;
  logic signed [IR_W-1:0] r;
  logic signed [IZ_W-1:0] z;
  logic [IE_W-1:0] e;
  always_comb begin
    t = (IT_W'(v) < CLIP) ? CLIP : IT_W'(v);
    q = '0;
    for (int j = 1; j <= EXP_N; j++) begin
      if (32'(t) <= j * X0) q = q + 1'b1;  // t / X0 >= j
    end
    r = IR_W'(t - IT_W'(X0) * IT_W'($signed({1'b0, q})));
    z = IZ_W'(r) * (IZ_W'(r) + IZ_W'(B_INT)) + IZ_W'(C_INT);
    e = (z > 0) ? IE_W'(IE_W'(z) << (EXP_N - 32'(q))) : '0;
  end

  if (CALIBRATED) begin : g_cal
    logic signed [RQ_W:0] rq, rq_r;  // e·m >= 0 in RQ_W bits, one sign bit
    assign rq = $signed({1'b0, RQ_W'(e)}) * $signed({1'b0, RQ_W'(REQUANT_MULT)});
    hwa_round_shift #(
        .IN_W (RQ_W + 1),
        .SH_W (SW),
        .OUT_W(RQ_W + 1),
        .MODE (hwa_pkg::RND_RND_CONV)
    ) u_rq (
        .x (rq),
        .sh(SW'(REQUANT_SHIFT)),
        .y (rq_r)
    );
    assign e16 = (rq_r > (RQ_W + 1)'(E16_MAX)) ? E16_W'(E16_MAX) : E16_W'(rq_r);
  end else begin : g_shift
    assign e16 = E16_W'(e >> EXP_SHIFT);
  end

endmodule
`default_nettype wire
