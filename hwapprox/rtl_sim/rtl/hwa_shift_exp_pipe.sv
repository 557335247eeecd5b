// hwa_shift_exp_pipe -- hwa_shift_exp in five registered stages (issue 22): the same
// function of v, bit for bit (I-ViT's shift-exp, hwapprox.approx.intmath.shift_exp):
//   k1  t0 = v + (v >>> 1) - (v >>> 4)                  (ST_W)
//   k2  t  = max(t0, EXP_N·X0); c_j = (t <= j·X0), j = 1..EXP_N   (a thermometer code)
//   k3  q  = #{j : c_j} = the top set bit's index (c is a thermometer code)   (SQ_W)
//   k4  r  = t - X0·q                                   (SR_W)
//   k5  TVM = 0: e = ((r - 2·X0) << (EXP_N - q)) >> 1;  TVM = 1: e = ((r >>> 1) - X0) << (EXP_N - q)
// with hwa_shift_exp's widths and expressions at every step.
// Latency: 5 cycles, one result per cycle; advances when en is high.
// Parameters: no defaults; the parent passes every one (as to hwa_shift_exp).
`default_nettype none
module hwa_shift_exp_pipe #(
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
    input  wire logic                  clk,
    input  wire logic                  en,
    input  wire logic signed [V_W-1:0] v,
    output logic             [SE_W-1:0] e
);

  if (X0 >= 0 || EXP_N < 1 || EXP_N > 30 || ST_W < V_W || ST_W > 32
      || 64'(EXP_N * X0) < -(64'sd1 <<< (ST_W - 1))) begin : g_bad
    $error("hwa_shift_exp_pipe %m: invalid X0=%0d (< 0) EXP_N=%0d (1..30, EXP_N·X0 within ST_W bits) V_W=%0d ST_W=%0d",
           X0, EXP_N, V_W, ST_W);
  end

  localparam logic signed [ST_W-1:0] CLIP = ST_W'(EXP_N * X0);

  // k1
  logic signed [ST_W-1:0] vs, k1_t0;
  assign vs = ST_W'(v);
  always_ff @(posedge clk) begin
    if (en) k1_t0 <= vs + (vs >>> 1) - (vs >>> 4);
  end

  // k2
  logic signed [ST_W-1:0] t_c, k2_t;
  logic [EXP_N:1] c_c, k2_c;
  assign t_c = (k1_t0 < CLIP) ? CLIP : k1_t0;
  // c_j on t0, in parallel with the clip: below CLIP = EXP_N·X0 <= j·X0 every c_j is
  // true for t0 as for t = CLIP (CLIP fits ST_W: checked above)
  always_comb begin
    for (int j = 1; j <= EXP_N; j++) c_c[j] = 32'(k1_t0) <= j * X0;
  end
  always_ff @(posedge clk) begin
    if (en) begin
      k2_t <= t_c;
      k2_c <= c_c;
    end
  end

  // k3
  logic [SQ_W-1:0] q_c, k3_q;
  logic signed [ST_W-1:0] k3_t;
  // X0 < 0: j·X0 falls with j, so c is a thermometer code (c_j -> c_(j-1)) and its
  // count is the index of its top set bit: one-hot h, then each bit of q an OR (no
  // adder chain)
  logic [EXP_N:1] h;
  always_comb begin
    for (int j = 1; j <= EXP_N; j++) h[j] = k2_c[j] & ((j == EXP_N) ? 1'b1 : ~k2_c[j+1]);
    q_c = '0;
    for (int j = 1; j <= EXP_N; j++) q_c = q_c | (h[j] ? SQ_W'(j) : '0);
  end
  always_ff @(posedge clk) begin
    if (en) begin
      k3_q <= q_c;
      k3_t <= k2_t;
    end
  end

  // k4
  logic [SQ_W-1:0] k4_q;
  logic signed [SR_W-1:0] k4_r;
  always_ff @(posedge clk) begin
    if (en) begin
      k4_q <= k3_q;
      k4_r <= SR_W'(k3_t - ST_W'(X0) * ST_W'($signed({1'b0, k3_q})));
    end
  end

  // k5
  logic [SEI_W-1:0] b;
  logic [SE_W-1:0] e_c;
  always_comb begin
    if (TVM) begin
      b = SEI_W'(SEI_W'(k4_r >>> 1) - SEI_W'(X0));
      e_c = SE_W'(b << (EXP_N - 32'(k4_q)));
    end else begin
      b = SEI_W'(SEI_W'(k4_r) - SEI_W'(2 * X0));
      e_c = SE_W'((b << (EXP_N - 32'(k4_q))) >> 1);
    end
  end
  always_ff @(posedge clk) begin
    if (en) e <= e_c;
  end

endmodule
`default_nettype wire
