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
// Widths (the spec's hw_params, signed): RN_W holds R (<= 2^WF + 1) and e = 2 - U·R
//   (<= 1.5·2^WF + 1) as multiply operands: WF + 3; RP_W the Newton products U·R, R·e
//   and 2^(2WF+1) (< 2^(2WF+2)): 2WF + 3, also the PWL value (T[i] << G) - (T[i] -
//   T[i+1])·w (< 2^(WF+G+1)) and every rounding's input. The final scaling's LW holds
//   R << (R_F + D_F - WF - p) exactly for any d > 0 (p >= 0; the spec's RS_W assumes
//   d >= 2^D_F, which an empty row's d = 0 does not meet).
// Latency: LAT = hwa_pkg::recip_lat(PIPE, NEWTON, STEPS) cycles; accepts one d per cycle.
//  PIPE = 0: 3 + (NEWTON ? STEPS : 0) (normalisation; seed or PWL; a stage per Newton
//    step; the final scaling).
//  PIPE = 1 (issue 22, ECP5 at 125 MHz), the same values in registered steps: the
//    leading one (1), the normalising shift by a multiple of 8 (1), by the rest (1);
//    the seed: the table read and its copy (2; a block RAM has ~6 ns clock to out),
//    or PWL: the read, its copy, lo - hi (1), (lo - hi)*w through hwa_mul_pipe (3),
//    the value (1) and its rounding through hwa_round_shift_pipe (3) (10); per
//    Newton step 13: U*R (hwa_mul_pipe, 3), 2^(2WF+1) - U*R (1), its rounding (3),
//    R*e (3), its rounding (3); the final scaling: the rounding shift (3) alongside
//    the left shift, after the shift amount's register (1), the saturation into the
//    output register (1). LAT = 10 + 13*STEPS with Newton, 18 with PWL (Softermax).
//    MUL_IN_REG = 1 puts every product's operands in registers of their
//    own (hwa_mul_pipe IN_REG; on ECP5 the MULT18X18D's input registers): +1 cycle
//    per product, LAT = 10 + 15*STEPS (40 at the default online spec) or 19.
// Parameters: no defaults (TABLE_FILE aside); the parent passes every one from the
// spec's hw_params(), and PIPE.
`default_nettype none
module hwa_recip #(
    parameter int D_W,
    parameter bit PIPE,
    parameter int D_F,
    parameter int R_W,
    parameter int R_F,
    parameter int R_OVF,
    parameter int WF,
    parameter int TB,
    parameter bit NEWTON,
    parameter int STEPS,
    parameter int RND,
    parameter int RN_W,
    parameter int RP_W,
    parameter bit MUL_IN_REG,
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
  localparam int XW = RP_W;  // products, PWL values and rounding inputs (hw_params)
  // the final scaling: R (RN_W bits) shifted left by up to R_F + D_F - WF (p >= 0)
  localparam int LW = RN_W + ((R_F + D_F > WF) ? R_F + D_F - WF : 0);
  localparam int NST = NEWTON ? STEPS : 0;
  localparam int SW = 8;
  localparam int DEPTH = NEWTON ? (1 << TB) : (1 << TB) + 1;

  if (D_W < 1 || D_W > 62 || WF < 2 || WF > 29 || TB < 1 || TB > WF || STEPS < 0 || STEPS > 4
      || R_W < 2 || R_W > 40) begin : g_bad
    $error("hwa_recip %m: invalid D_W=%0d WF=%0d TB=%0d STEPS=%0d R_W=%0d",
                   D_W, WF, TB, STEPS, R_W);
  end
  if (RN_W < WF + 3 || RP_W < 2 * WF + 3) begin : g_bad_w
    $error("hwa_recip %m: RN_W=%0d RP_W=%0d narrower than the spec's WF + 3 = %0d, 2*WF + 3 = %0d",
           RN_W, RP_W, WF + 3, 2 * WF + 3);
  end

  logic [WF:0] tab[DEPTH];
  initial begin
    if (TABLE_FILE != "") $readmemh(TABLE_FILE, tab);
  end

  // leading one of d (both variants)
  logic [PB-1:0] p_c;
  always_comb begin
    p_c = '0;
    for (int b = 0; b < D_W; b++) begin
      if (d[b]) p_c = PB'(b);
    end
  end

  if (PIPE) begin : g_pipe
    localparam int LAT = hwa_pkg::recip_lat(1'b1, NEWTON, STEPS, MUL_IN_REG);
    localparam int M = int'(MUL_IN_REG);  // a product's operand-register stage
    localparam int STL = 13 + 2 * M;  // one Newton step
    localparam int NW = D_W + WF;  // d << WF
    localparam int RW = RN_W;  // R and e as multiply operands (hw_params)
    logic [LAT-1:0] v_sr;
    always_ff @(posedge clk) begin
      if (rst) v_sr <= '0;
      else v_sr <= {v_sr[LAT-2:0], in_valid};
    end
    assign out_valid = v_sr[LAT-1];
    // n1: the leading one; n2: (d << WF) >> (p rounded down to 8); n3: >> the rest
    logic [PB-1:0] p1, p2, p3;
    logic [D_W-1:0] d1;
    logic [NW-1:0] x2;
    logic [2:0] pf2;
    logic [WF:0] u3;
    always_ff @(posedge clk) begin
      p1 <= p_c;
      d1 <= d;
      x2 <= {d1, {WF{1'b0}}} >> {p1[PB-1:3], 3'b000};
      pf2 <= p1[2:0];
      p2 <= p1;
      u3 <= (WF + 1)'(x2 >> pf2);
      p3 <= p2;
    end
    // the seed (NEWTON) or the PWL value; U and p alongside
    localparam int SL = NEWTON ? 2 : 10 + M;
    logic [TB-1:0] i3;
    assign i3 = u3[WF-1-:TB];
    logic signed [XW-1:0] r_seed;
    logic [PB+WF:0] pu_s;
    hwa_delay #(
        .W(PB + WF + 1),
        .L(SL)
    ) u_dpu (
        .clk(clk),
        .rst(1'b0),
        .en (1'b1),
        .d  ({p3, u3}),
        .q  (pu_s)
    );
    if (NEWTON) begin : g_seed
      if (G > 0) begin : g_unused
        /* verilator lint_off UNUSEDSIGNAL */
        logic [G-1:0] w_unused;
        /* verilator lint_on UNUSEDSIGNAL */
        assign w_unused = u3[G-1:0];
      end
      logic [WF:0] t4, t5;
      always_ff @(posedge clk) begin
        t4 <= tab[i3];
        t5 <= t4;
      end
      assign r_seed = XW'(t5);
    end else begin : g_pwl
      localparam int GW = (G > 0) ? G : 1;
      localparam int DLW = WF - TB + 3;  // adjacent entries of 1/x: < 2^(WF-TB) + 1 apart
      logic [WF:0] lo4, hi4, lo5, hi5;
      logic [GW-1:0] w3, w4, w5, w6;
      if (G > 0) begin : g_w
        assign w3 = u3[G-1:0];
      end else begin : g_now
        assign w3 = '0;
      end
      logic signed [DLW-1:0] dl6;
      logic signed [XW-1:0] lg6, lg9, pr9, ex10;
      always_ff @(posedge clk) begin
        lo4 <= tab[(TB+1)'(i3)];
        hi4 <= tab[(TB+1)'(i3)+1'b1];
        w4 <= w3;
        lo5 <= lo4;
        hi5 <= hi4;
        w5 <= w4;
        dl6 <= DLW'(XW'(lo5) - XW'(hi5));
        lg6 <= XW'(lo5) <<< G;
        w6 <= w5;
      end
`ifndef SYNTHESIS
      always_ff @(posedge clk) begin
        if ((XW'(lo5) - XW'(hi5)) != XW'(DLW'(XW'(lo5) - XW'(hi5)))) begin
          $error("hwa_recip %m: table step lo - hi does not fit DLW=%0d bits", DLW);
        end
      end
`endif
      hwa_mul_pipe #(
          .A_W(DLW),
          .B_W(GW),
          .B_SIGNED(1'b0),
          .P_W(XW),
          .IN_REG(MUL_IN_REG)
      ) u_mw (
          .clk(clk),
          .en (1'b1),
          .a  (dl6),
          .b  (w6),
          .p  (pr9)
      );
      hwa_delay #(
          .W(XW),
          .L(3 + M)
      ) u_dlg (
          .clk(clk),
          .rst(1'b0),
          .en (1'b1),
          .d  (lg6),
          .q  (lg9)
      );
      always_ff @(posedge clk) ex10 <= (G > 0) ? lg9 - pr9 : lg9;
      hwa_round_shift_pipe #(
          .IN_W (XW),
          .SH_W (SW),
          .OUT_W(XW),
          .MODE (RND)
      ) u_rp (
          .clk(clk),
          .en (1'b1),
          .x  (ex10),
          .sh (SW'(G)),
          .y  (r_seed)
      );
    end
    // Newton steps, 13 stages each
    logic signed [XW-1:0] sr[NST+1];
    logic [PB+WF:0] spu[NST+1];
    assign sr[0] = r_seed;
    assign spu[0] = pu_s;
    for (genvar s = 0; s < NST; s++) begin : g_step
      logic signed [XW-1:0] pu3, ue4, e7, re10, r13;
      logic signed [RW-1:0] r7;
      logic [WF:0] u_s;
      assign u_s = spu[s][WF:0];
`ifndef SYNTHESIS
      always_ff @(posedge clk) begin
        if ((v_sr[2+SL+STL*s] && sr[s] != XW'(RW'(sr[s])))
            || (v_sr[2+SL+STL*s+7+M] && e7 != XW'(RW'(e7)))) begin
          $error("hwa_recip %m: Newton operand out of RW=%0d bits", RW);
        end
      end
`endif
      hwa_mul_pipe #(
          .A_W(RW),
          .B_W(WF + 1),
          .B_SIGNED(1'b0),
          .P_W(XW),
          .IN_REG(MUL_IN_REG)
      ) u_mu (
          .clk(clk),
          .en (1'b1),
          .a  (RW'(sr[s])),
          .b  (u_s),
          .p  (pu3)
      );
      always_ff @(posedge clk) ue4 <= (XW'(1) <<< (2 * WF + 1)) - pu3;
      hwa_round_shift_pipe #(
          .IN_W (XW),
          .SH_W (SW),
          .OUT_W(XW),
          .MODE (RND)
      ) u_e (
          .clk(clk),
          .en (1'b1),
          .x  (ue4),
          .sh (SW'(WF)),
          .y  (e7)
      );
      hwa_delay #(
          .W(RW),
          .L(7 + M)
      ) u_dr (
          .clk(clk),
          .rst(1'b0),
          .en (1'b1),
          .d  (RW'(sr[s])),
          .q  (r7)
      );
      hwa_mul_pipe #(
          .A_W(RW),
          .B_W(RW),
          .B_SIGNED(1'b1),
          .P_W(XW),
          .IN_REG(MUL_IN_REG)
      ) u_mr (
          .clk(clk),
          .en (1'b1),
          .a  (r7),
          .b  (RW'(e7)),
          .p  (re10)
      );
      hwa_round_shift_pipe #(
          .IN_W (XW),
          .SH_W (SW),
          .OUT_W(XW),
          .MODE (RND)
      ) u_r (
          .clk(clk),
          .en (1'b1),
          .x  (re10),
          .sh (SW'(WF)),
          .y  (r13)
      );
      hwa_delay #(
          .W(PB + WF + 1),
          .L(STL)
      ) u_dpu (
          .clk(clk),
          .rst(1'b0),
          .en (1'b1),
          .d  (spu[s]),
          .q  (spu[s+1])
      );
      assign sr[s+1] = r13;
    end
    // final: scale by 2^(D_F - p), round once, fit recip_fmt
    /* verilator lint_off UNUSEDSIGNAL */
    logic [WF:0] u_last;
    /* verilator lint_on UNUSEDSIGNAL */
    logic [PB-1:0] p_last;
    assign {p_last, u_last} = spu[NST];
    logic signed [SW+1:0] total_c;
    logic [SW-1:0] sh_r;  // the right shift, max(total, 0)
    logic [SW+1:0] shl_r;  // the left shift, -total when total <= 0
    logic signed [LW-1:0] rx, rs3, rl1, rl3;
    logic pos0, pos1, pos3;
    assign total_c = (SW + 2)'(WF - D_F - R_F) + (SW + 2)'({1'b0, p_last});
    // f0: the shift amounts (right or left, and which) and R registered, so that no
    // comparison or negation sits in front of the shifters
    always_ff @(posedge clk) begin
      pos0 <= total_c > 0;
      sh_r <= (total_c > 0) ? SW'(total_c) : '0;
      shl_r <= (total_c > 0) ? '0 : (SW + 2)'(-total_c);
      rx <= LW'(sr[NST]);
    end
    hwa_round_shift_pipe #(
        .IN_W (LW),
        .SH_W (SW),
        .OUT_W(LW),
        .MODE (RND)
    ) u_fin (
        .clk(clk),
        .en (1'b1),
        .x  (rx),
        .sh (sh_r),
        .y  (rs3)
    );
    always_ff @(posedge clk) begin
      rl1 <= rx <<< shl_r;
      pos1 <= pos0;
    end
    hwa_delay #(
        .W(LW + 1),
        .L(2)
    ) u_dl (
        .clk(clk),
        .rst(1'b0),
        .en (1'b1),
        .d  ({pos1, rl1}),
        .q  ({pos3, rl3})
    );
    logic [R_W-1:0] r_c;
    hwa_sat #(
        .IN_W      (LW),
        .OUT_W     (R_W),
        .OUT_SIGNED(1'b0),
        .OVF       (R_OVF)
    ) u_sat (
        .x(pos3 ? rs3 : rl3),
        .y(r_c)
    );
    always_ff @(posedge clk) r <= r_c;
  end else begin : g_comb
  // stage 1: leading one and normalised mantissa U in [2^WF, 2^(WF+1))
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

  end

endmodule
`default_nettype wire
