// hwa_recip -- r = 1/d of OnlineSoftmax.recip_raw (intmath.reciprocal), pipelined.
//
// d > 0 is a raw sum_fmt code (D_W bits, D_F fraction bits); r a raw
// recip_fmt code (R_W bits, R_F fraction bits, overflow R_OVF). With WF =
// work fraction bits, TB table address bits, G = WF - TB:
//   p = leading_one(d); U = d << (WF - p) (or >> when p > WF); i = (U - 2^WF) >> G;
//   w = low G bits;
//   NEWTON = 0 (PWL): R = round_shift((T[i] << G) - (T[i] - T[i+1]) * w, G, RND)
//   NEWTON = 1: R = T[i]; STEPS times: e = round_shift(2^(2WF+1) - U*R, WF, RND),
//               R = round_shift(R*e, WF, RND)
//   r = sat(round_shift(R, WF - D_F - R_F + p, RND))  (negative: exact left shift)
// T: TABLE_FILE, (NEWTON ? 2^TB : 2^TB + 1) words of WF fraction bits.
// Latency: 3 + (NEWTON ? STEPS : 0) cycles; accepts one d per cycle.
// Parameters: no defaults (TABLE_FILE aside); the parent passes every one from the
// spec's hw_params().
`default_nettype none
module hwa_recip #(
    parameter int D_W,
    parameter int D_F,
    parameter int R_W,
    parameter int R_F,
    parameter int R_OVF,
    parameter int WF,
    parameter int TB,
    parameter bit NEWTON,
    parameter int STEPS,
    parameter int RND,
    parameter string TABLE_FILE = ""
) (
    input  logic           clk,
    input  logic           rst,
    input  logic           in_valid,
    input  logic [D_W-1:0] d,
    output logic           out_valid,
    output logic [R_W-1:0] r
);

  localparam int G = WF - TB;
  localparam int PB = $clog2(D_W + 1);
  localparam int XW = 2 * WF + 8;  // products of two (WF+2)-bit numbers, signed
  localparam int NST = NEWTON ? STEPS : 0;
  localparam int SW = 8;
  localparam int DEPTH = NEWTON ? (1 << TB) : (1 << TB) + 1;

  if (D_W < 1 || D_W > 62 || WF < 2 || WF > 29 || TB < 1 || TB > WF || STEPS < 0 || STEPS > 4
      || R_W < 2 || R_W > 40) begin : g_bad
    $error("hwa_recip %m: invalid D_W=%0d WF=%0d TB=%0d STEPS=%0d R_W=%0d",
                   D_W, WF, TB, STEPS, R_W);
  end

  logic [WF:0] tab[DEPTH];
  initial begin
    if (TABLE_FILE != "") $readmemh(TABLE_FILE, tab);
  end

  // stage 1: leading one and normalised mantissa U in [2^WF, 2^(WF+1))
  logic [PB-1:0] p_c;
  always_comb begin
    p_c = '0;
    for (int b = 0; b < D_W; b++) begin
      if (d[b]) p_c = PB'(b);
    end
  end
  logic v1;
  logic [PB-1:0] p1;
  logic [WF:0] u1;
  always_ff @(posedge clk) begin
    if (rst) v1 <= 1'b0;
    else v1 <= in_valid;
    p1 <= p_c;
    if (32'(p_c) <= WF) u1 <= (WF + 1)'({{(WF + 1) {1'b0}}, d} << (WF - 32'(p_c)));
    else u1 <= (WF + 1)'(d >> (32'(p_c) - WF));
  end

  // stage 2: table seed (or PWL value)
  logic [TB-1:0] i2;
  assign i2 = u1[WF-1-:TB];
  logic v2;
  logic [PB-1:0] p2;
  logic [WF:0] u2;
  logic signed [XW-1:0] r2;
  if (NEWTON) begin : g_seed
    if (G > 0) begin : g_unused
      /* verilator lint_off UNUSEDSIGNAL */
      logic [G-1:0] w_unused;
      /* verilator lint_on UNUSEDSIGNAL */
      assign w_unused = u1[G-1:0];
    end
    always_ff @(posedge clk) r2 <= XW'(tab[i2]);
  end else begin : g_pwl
    logic signed [XW-1:0] lo, hi, ex, rr;
    assign lo = XW'(tab[(TB+1)'(i2)]);
    assign hi = XW'(tab[(TB+1)'(i2)+1'b1]);
    if (G > 0) begin : g_w
      assign ex = (lo <<< G) - (lo - hi) * XW'({1'b0, u1[G-1:0]});
    end else begin : g_now
      assign ex = lo;
    end
    hwa_round_shift #(
        .IN_W (XW),
        .SH_W (SW),
        .OUT_W(XW),
        .MODE (RND)
    ) u_rp (
        .x (ex),
        .sh(SW'(G)),
        .y (rr)
    );
    always_ff @(posedge clk) r2 <= rr;
  end
  always_ff @(posedge clk) begin
    if (rst) v2 <= 1'b0;
    else v2 <= v1;
    p2 <= p1;
    u2 <= u1;
  end

  // Newton steps, one stage each
  logic sv[NST+1];
  logic [PB-1:0] sp[NST+1];
  logic [WF:0] su[NST+1];
  logic signed [XW-1:0] sr[NST+1];
  assign sv[0] = v2;
  assign sp[0] = p2;
  assign su[0] = u2;
  assign sr[0] = r2;
  for (genvar s = 0; s < NST; s++) begin : g_step
    logic signed [XW-1:0] ue, e_c, re, r_c;
    assign ue = (XW'(1) <<< (2 * WF + 1)) - XW'({1'b0, su[s]}) * sr[s];
    hwa_round_shift #(
        .IN_W (XW),
        .SH_W (SW),
        .OUT_W(XW),
        .MODE (RND)
    ) u_e (
        .x (ue),
        .sh(SW'(WF)),
        .y (e_c)
    );
    assign re = sr[s] * e_c;
    hwa_round_shift #(
        .IN_W (XW),
        .SH_W (SW),
        .OUT_W(XW),
        .MODE (RND)
    ) u_r (
        .x (re),
        .sh(SW'(WF)),
        .y (r_c)
    );
    logic v_q;
    logic [PB-1:0] p_q;
    logic [WF:0] u_q;
    logic signed [XW-1:0] r_q;
    always_ff @(posedge clk) begin
      if (rst) v_q <= 1'b0;
      else v_q <= sv[s];
      p_q <= sp[s];
      u_q <= su[s];
      r_q <= r_c;
    end
    assign sv[s+1] = v_q;
    assign sp[s+1] = p_q;
    assign su[s+1] = u_q;
    assign sr[s+1] = r_q;
  end

  // final stage: scale by 2^(D_F - p), round once, fit recip_fmt
  /* verilator lint_off UNUSEDSIGNAL */
  logic [WF:0] u_last;
  /* verilator lint_on UNUSEDSIGNAL */
  assign u_last = su[NST];
  localparam int LW = XW + D_W + 2;
  logic signed [SW+1:0] total;
  logic signed [LW-1:0] rx, rs, rl;
  logic [R_W-1:0] r_c;
  assign total = (SW + 2)'(WF - D_F - R_F) + (SW + 2)'({1'b0, sp[NST]});
  assign rx = LW'(sr[NST]);
  hwa_round_shift #(
      .IN_W (LW),
      .SH_W (SW),
      .OUT_W(LW),
      .MODE (RND)
  ) u_fin (
      .x (rx),
      .sh(SW'(total)),
      .y (rs)
  );
  assign rl = rx <<< (-total);
  hwa_sat #(
      .IN_W      (LW),
      .OUT_W     (R_W),
      .OUT_SIGNED(1'b0),
      .OVF       (R_OVF)
  ) u_sat (
      .x((total > 0) ? rs : rl),
      .y(r_c)
  );
  always_ff @(posedge clk) begin
    if (rst) out_valid <= 1'b0;
    else out_valid <= sv[NST];
    r <= r_c;
  end

endmodule
`default_nettype wire
