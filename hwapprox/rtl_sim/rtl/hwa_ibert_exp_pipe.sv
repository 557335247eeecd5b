// hwa_ibert_exp_pipe -- hwa_ibert_exp in LAT = 12 registered stages (issue 22): the same
// function of v, bit for bit (I-BERT's i-exp of v <= 0 and QuantAct's requantisation):
//   k1  t = max(v, EXP_N·X0) (IT_W); c_j = (t <= j·X0), j = 1..EXP_N (a thermometer code,
//       taken on v in parallel with the clip)
//   k2  q = #{j : c_j} (the top set bit's index: an OR per bit of q), X0·q alike (IQ_W)
//   k3  r = t - X0·q (IR_W);  sh = EXP_N - q
//   k4  rb = r + B_INT (exact, RB_W bits)
//   k5  rr = r·rb (exact, or its low IZ_W bits: one 18 x 18 multiply at the defaults)
//   k6  z = rr + C_INT mod 2^IZ_W (= hwa_ibert_exp's IZ_W-bit z)
//   k7  e = max(z << sh, 0) (IE_W)
//   k8..k10  rq = e·REQUANT_MULT mod 2^(RQ_W + 1) (hwa_mul_pipe: 18 x 18 partial products)
//   k11 floor(rq / 2^REQUANT_SHIFT) and the dropped bits' half / sticky flags
//   k12 e16 = min(that + round-half-even increment, E16_MAX)
// CALIBRATED = 0: e16 = e >> EXP_SHIFT, delayed to the same 12 cycles.
// Latency: 12 cycles, one result per cycle; advances when en is high.
// Parameters: no defaults; the parent passes every one (as to hwa_ibert_exp).
`default_nettype none
module hwa_ibert_exp_pipe #(
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
    input  wire logic                   clk,
    input  wire logic                   en,
    input  wire logic signed [V_W-1:0]  v,
    output logic             [E16_W-1:0] e16
);

  if (X0 >= 0 || EXP_N < 1 || EXP_N > 62 || IT_W > 32 || IE_W > 62 || RQ_W > 124
      || REQUANT_MULT_W > 32 || REQUANT_MULT_W < 1 || IE_W > RQ_W || REQUANT_SHIFT < 0
      || 64'(EXP_N * X0) < -(64'sd1 <<< (IT_W - 1)))
  begin : g_bad
    $error("hwa_ibert_exp_pipe %m: invalid X0=%0d EXP_N=%0d IT_W=%0d IE_W=%0d RQ_W=%0d REQUANT_MULT_W=%0d REQUANT_SHIFT=%0d",
           X0, EXP_N, IT_W, IE_W, RQ_W, REQUANT_MULT_W, REQUANT_SHIFT);
  end

  // B_INT's signed width, and r + B_INT exactly
  localparam int B_AW = (B_INT < 0) ? -B_INT : B_INT;
  localparam int B_W = $clog2(B_AW + 1) + 1;
  localparam int RB_W = ((IR_W > B_W) ? IR_W : B_W) + 1;
  localparam int RR_W = IR_W + RB_W;  // r·rb exactly
  localparam int RK_W = (RR_W < IZ_W) ? RR_W : IZ_W;  // what z needs of it
  localparam int SH_W = $clog2(EXP_N + 1);
  localparam logic signed [IT_W-1:0] CLIP = IT_W'(EXP_N * X0);

  // k1: the clip and, in parallel, the thermometer code on the unclipped value: below
  // CLIP every c_j is true for v as for t = CLIP (CLIP = EXP_N·X0 <= j·X0, and CLIP fits
  // IT_W: checked above), so c is t's code
  logic signed [IT_W-1:0] tv, t_c, k1_t;
  logic [EXP_N:1] c_c, k1_c;
  assign tv = IT_W'(v);
  assign t_c = (tv < CLIP) ? CLIP : tv;
  always_comb begin
    for (int j = 1; j <= EXP_N; j++) c_c[j] = 32'(tv) <= j * X0;
  end
  always_ff @(posedge clk) begin
    if (en) begin
      k1_t <= t_c;
      k1_c <= c_c;
    end
  end

  // k2: q = the thermometer code's count (X0 < 0: c_j implies c_(j-1))
  logic [EXP_N:1] h;
  // and X0·q the same way (an OR of constants selected by the one-hot h: no multiplier)
  logic [IQ_W-1:0] q_c, k2_q;
  logic signed [IT_W-1:0] k2_t, xq_c, k2_xq;
  always_comb begin
    for (int j = 1; j <= EXP_N; j++) h[j] = k1_c[j] & ((j == EXP_N) ? 1'b1 : ~k1_c[j+1]);
    q_c = '0;
    xq_c = '0;
    for (int j = 1; j <= EXP_N; j++) begin
      q_c = q_c | (h[j] ? IQ_W'(j) : '0);
      xq_c = xq_c | (h[j] ? IT_W'(IT_W'(X0) * IT_W'(j)) : '0);
    end
  end
  always_ff @(posedge clk) begin
    if (en) begin
      k2_q <= q_c;
      k2_t <= k1_t;
      k2_xq <= xq_c;
    end
  end

  // k3: r = t - X0·q, the shift EXP_N - q
  logic signed [IR_W-1:0] k3_r, k4_r;
  logic [SH_W-1:0] k3_sh, k4_sh, k5_sh, k6_sh;
  always_ff @(posedge clk) begin
    if (en) begin
      k3_r <= IR_W'(k2_t - k2_xq);  // t - X0·q, mod 2^IT_W as in hwa_ibert_exp
      k3_sh <= SH_W'(EXP_N - 32'(k2_q));
    end
  end

  // k4: rb = r + B_INT;  k5: rr = r·rb;  k6: z = rr + C_INT (mod 2^IZ_W)
  logic signed [RB_W-1:0] k4_rb;
  logic signed [RK_W-1:0] k5_rr;
  logic signed [IZ_W-1:0] k6_z;
  always_ff @(posedge clk) begin
    if (en) begin
      k4_r <= k3_r;
      k4_rb <= RB_W'(k3_r) + RB_W'(B_INT);
      k4_sh <= k3_sh;
      k5_rr <= RK_W'(RR_W'(k4_r) * RR_W'(k4_rb));
      k5_sh <= k4_sh;
      k6_z <= IZ_W'(k5_rr) + IZ_W'(C_INT);
      k6_sh <= k5_sh;
    end
  end

  // k7: e = max(z << sh, 0)
  logic [IE_W-1:0] k7_e;
  always_ff @(posedge clk) begin
    if (en) k7_e <= (k6_z > 0) ? IE_W'(IE_W'(k6_z) << k6_sh) : '0;
  end

  if (CALIBRATED) begin : g_cal
    // k8..k10: rq = e·m, (RQ_W + 1)-bit, >= 0
    localparam int S = REQUANT_SHIFT;
    localparam int RW = RQ_W + 1;
    logic signed [RW-1:0] rq;
    hwa_mul_pipe #(
        .A_W(IE_W + 1),
        .B_W(REQUANT_MULT_W),
        .B_SIGNED(1'b0),
        .P_W(RW)
    ) u_rq (
        .clk(clk),
        .en (en),
        .a  ($signed({1'b0, k7_e})),
        .b  (REQUANT_MULT_W'(REQUANT_MULT)),
        .p  (rq)
    );
    // k11: the floor quotient and the rounding flags (rq >= 0: the shift is logical)
    logic [RW-1:0] k11_q;
    logic k11_inc;
    if (S == 0) begin : g_s0
      always_ff @(posedge clk) begin
        if (en) begin
          k11_q <= rq;
          k11_inc <= 1'b0;
        end
      end
    end else if (S >= RW) begin : g_sbig  // every bit dropped, below one half: 0
      always_ff @(posedge clk) begin
        if (en) begin
          k11_q <= '0;
          k11_inc <= 1'b0;
        end
      end
    end else begin : g_sn
      logic half, below;
      assign half = rq[S-1];
      if (S == 1) begin : g_s1
        assign below = 1'b0;
      end else begin : g_sx
        assign below = |rq[S-2:0];
      end
      always_ff @(posedge clk) begin
        if (en) begin
          k11_q <= RW'(rq[RW-1:S]);
          k11_inc <= hwa_pkg::round_up(hwa_pkg::RND_RND_CONV, half & below, half & ~below,
                                       half | below, 1'b0, rq[S]);
        end
      end
    end
    // k12: the increment and the E16_MAX clamp
    logic [RW-1:0] rq_r;
    assign rq_r = k11_q + RW'(k11_inc);
    always_ff @(posedge clk) begin
      if (en) e16 <= (rq_r > RW'(E16_MAX)) ? E16_W'(E16_MAX) : E16_W'(rq_r);
    end
  end else begin : g_shift
    // e >> EXP_SHIFT, then the same 12 cycles as the calibrated path
    logic [E16_W-1:0] d[5];
    always_ff @(posedge clk) begin
      if (en) begin
        d[0] <= E16_W'(k7_e >> EXP_SHIFT);
        for (int i = 1; i < 5; i++) d[i] <= d[i-1];
      end
    end
    assign e16 = d[4];
  end

endmodule
`default_nettype wire
