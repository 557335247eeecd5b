// hwa_exp_unit -- E(d) = exp(-d) of OnlineSoftmax.exp_unit_raw, pipelined.
//
// Input d >= 0: raw code with IN_F fraction bits (D_W bits, unsigned).
// Output e: raw exp_fmt code (EXP_W bits, EXP_F fraction bits). Two variants:
//  BASE2 = 1: t = sat_T(round(d * LOG2E >> PROD_SHIFT, T_RND)) (exp_arg_fmt,
//    T_W bits, T_F fraction bits; PROD_SHIFT < 0 shifts left), then
//    k = t >> T_F, f = low T_F bits, i = f >> G, u = low G bits of f,
//    v = T[i] << G  (- (T[i] - T[i+1]) * u when INTERP),
//    e = round_shift(v, k + TABLE_F + G - EXP_F, EXP_RND)   (G = T_F - A);
//    v is unsigned, V_W bits (the spec's hw_params: T[i+1]·2^G <= v <= T[i]·2^G <=
//    2^(TABLE_F + G), so V_W = TABLE_F + G + 1); its terms T[i] << G and
//    (T[i] - T[i+1])·u (>= 0, T decreasing) are at most v's bound too, so v is formed
//    mod 2^V_W exactly and the rounding takes it zero-extended (V_W + 1 bits, signed).
//    T = 2^A + 1 entries 2^(-j/2^A) with TABLE_F fraction bits (TABLE_FILE).
//  BASE2 = 0: e = 0 if d >= 2^LIM_BITS else T[min(d, 2^LIM_BITS - 1) >> LUT_SHIFT]
//    (T = 2^LUT_BITS exp_fmt codes from TABLE_FILE).
// Latency: LAT = hwa_pkg::exp_unit_lat(PIPE, BASE2, LOG2E, PROD_SHIFT) cycles, one
// result per cycle, advancing when en is high:
//  PIPE = 0 (or BASE2 = 0): 2 stages (t; table, interpolation and rounding).
//  PIPE = 1, BASE2 = 1 (issue 22, ECP5 at 125 MHz), the same values in registered steps:
//   t: d*LOG2E through hwa_mul_pipe (3), its rounding through hwa_round_shift_pipe (3,
//      PROD_SHIFT > 0 only), the saturation (1) -- or, when LOG2E = 1 and PROD_SHIFT =
//      0 (Softermax's exp2), the saturation alone (1);
//   2^-t: the table read (1; a block RAM's output register), its copy (1; ~6 ns clock
//      to out), lo - hi and lo << G (1), (lo - hi)*u through hwa_mul_pipe (3), v (1),
//      the variable rounding shift through hwa_round_shift_pipe (3): 10.
//   LAT = 17 at the default online spec (d*LOG2E rounded), 11 for Softermax.
//   MUL_IN_REG = 1: both products with operand registers of their own
//   (hwa_mul_pipe IN_REG; on ECP5 the MULT18X18D's own input registers), +1 cycle
//   each: LAT = 19 at the default online spec (its PIPE sets it).
// Parameters: no defaults (TABLE_FILE aside); the parent passes every one from the
// spec's hw_params(), the unused variant's too, and PIPE.
`default_nettype none
module hwa_exp_unit #(
    parameter int D_W,
    parameter bit PIPE,
    parameter bit BASE2,
    parameter int EXP_W,
    parameter int EXP_F,
    parameter int EXP_RND,
    // base2
    parameter longint LOG2E,
    parameter int LOG2E_W,
    parameter int PROD_SHIFT,
    parameter int T_W,
    parameter int T_F,
    parameter int T_RND,
    parameter int A,
    parameter int TABLE_F,
    parameter bit INTERP,
    parameter int V_W,
    // lut
    parameter int LUT_BITS,
    parameter int LIM_BITS,
    parameter int LUT_SHIFT,
    parameter bit MUL_IN_REG,
    parameter string TABLE_FILE = ""
) (
    input  logic             clk,
    input  logic             en,
    input  logic [D_W-1:0]   d,
    output logic [EXP_W-1:0] e
);

  if (D_W < 1 || D_W > 40 || EXP_W < 1 || EXP_W > 40 || T_W > 48 || A < 1 || A > T_F
      || LUT_BITS < 1 || LUT_BITS > 20 || LUT_SHIFT < 0 || TABLE_F > 40) begin : g_bad
    $error("hwa_exp_unit %m: invalid D_W=%0d EXP_W=%0d T_W=%0d T_F=%0d A=%0d LUT_BITS=%0d LUT_SHIFT=%0d TABLE_F=%0d",
           D_W, EXP_W, T_W, T_F, A, LUT_BITS, LUT_SHIFT, TABLE_F);
  end

  if (BASE2 && V_W < TABLE_F + T_F - A + 1) begin : g_bad_v
    $error("hwa_exp_unit %m: V_W=%0d cannot hold 2^(TABLE_F + G) = 2^%0d (the spec's V_W is TABLE_F + G + 1)",
           V_W, TABLE_F + T_F - A);
  end

  if (BASE2 && PIPE) begin : g_pipe
    localparam int PW = D_W + LOG2E_W + ((PROD_SHIFT < 0) ? -PROD_SHIFT : 0) + 2;
    localparam int G = T_F - A;
    localparam int KW = T_W - T_F + 1;
    localparam int SW = 8;
    localparam int UW = (G > 0) ? G : 1;
    // lo - hi of adjacent entries of 2^(-j/2^A) (<= 2^TABLE_F): below
    // 2^TABLE_F·ln2/2^A + 1, so TABLE_F - A + 1 bits, signed with margin
    localparam int DLW = TABLE_F - A + 3;
    localparam bit IDENT = (LOG2E == 1 && PROD_SHIFT == 0);
    localparam int CW2 = (PW > T_W ? PW : T_W) + 2;
    logic [TABLE_F:0] tab[(1 << A) + 1];
    initial begin
      if (TABLE_FILE != "") $readmemh(TABLE_FILE, tab);
    end
    // t = sat(round(d * LOG2E)): registered
    logic [T_W-1:0] t_reg;
    logic signed [CW2-1:0] trx;
    if (IDENT) begin : g_id
      assign trx = CW2'({1'b0, d});
    end else begin : g_mul
      logic signed [PW-1:0] prod, tr;
      hwa_mul_pipe #(
          .A_W(D_W + 1),
          .B_W(LOG2E_W),
          .B_SIGNED(1'b0),
          .P_W(PW),
          .IN_REG(MUL_IN_REG)
      ) u_m (
          .clk(clk),
          .en (en),
          .a  ($signed({1'b0, d})),
          .b  (LOG2E_W'(LOG2E)),
          .p  (prod)
      );
      if (PROD_SHIFT > 0) begin : g_r
        hwa_round_shift_pipe #(
            .IN_W (PW),
            .SH_W (SW),
            .OUT_W(PW),
            .MODE (T_RND)
        ) u_rt (
            .clk(clk),
            .en (en),
            .x  (prod),
            .sh (SW'(PROD_SHIFT)),
            .y  (tr)
        );
      end else begin : g_l
        assign tr = prod <<< (-PROD_SHIFT);
      end
      assign trx = CW2'(tr);
    end
    always_ff @(posedge clk) begin
      if (en) t_reg <= (trx > ((CW2'(1) <<< T_W) - CW2'(1))) ? '1 : T_W'(trx);
    end
    // b1: the table read (the ROM's output register); b1b: its copy
    logic [A-1:0] i0;
    logic [UW-1:0] u0, u1, u1b, u2;
    logic [KW-1:0] k1, k1b, k2;
    logic [TABLE_F:0] lo1, hi1, lo1b, hi1b;
    assign i0 = t_reg[T_F-1-:A];
    if (G > 0) begin : g_u
      assign u0 = t_reg[G-1:0];
    end else begin : g_nou
      assign u0 = '0;
    end
    always_ff @(posedge clk) begin
      if (en) begin
        lo1 <= tab[(A+1)'(i0)];
        hi1 <= tab[(A+1)'(i0)+1'b1];
        k1 <= KW'(t_reg >> T_F);
        u1 <= u0;
        lo1b <= lo1;
        hi1b <= hi1;
        k1b <= k1;
        u1b <= u1;
      end
    end
    // b2: lo - hi, lo << G
    logic signed [DLW-1:0] dl2;
    logic [V_W-1:0] v02, v05, pr5, v6;  // mod 2^V_W: v and its terms are < 2^V_W
    logic [KW-1:0] k5;
    always_ff @(posedge clk) begin
      if (en) begin
        dl2 <= DLW'($signed({1'b0, lo1b}) - $signed({1'b0, hi1b}));
        v02 <= V_W'(lo1b) << G;
        k2 <= k1b;
        u2 <= u1b;
      end
    end
`ifndef SYNTHESIS
    always_ff @(posedge clk) begin
      if (en && ($signed({1'b0, lo1b}) - $signed({1'b0, hi1b}))
          != (TABLE_F + 2)'(DLW'($signed({1'b0, lo1b}) - $signed({1'b0, hi1b})))) begin
        $error("hwa_exp_unit %m: table step lo - hi does not fit DLW=%0d bits", DLW);
      end
    end
`endif
    // b3..b5: (lo - hi) * u
    hwa_mul_pipe #(
        .A_W(DLW),
        .B_W(UW),
        .B_SIGNED(1'b0),
        .P_W(V_W),
        .IN_REG(MUL_IN_REG)
    ) u_mi (
        .clk(clk),
        .en (en),
        .a  (dl2),
        .b  (u2),
        .p  (pr5)
    );
    hwa_delay #(
        .W(V_W + KW),
        .L(3 + int'(MUL_IN_REG))
    ) u_dv (
        .clk(clk),
        .rst(1'b0),
        .en (en),
        .d  ({v02, k2}),
        .q  ({v05, k5})
    );
    // b6: v = (lo << G) - (lo - hi) * u; the shift k + TABLE_F + G - EXP_F
    logic [SW-1:0] tot6;
    always_ff @(posedge clk) begin
      if (en) begin
        v6 <= (INTERP && G > 0) ? v05 - pr5 : v05;
        tot6 <= SW'(k5) + SW'(TABLE_F + G - EXP_F);
      end
    end
    // b7..b9: one rounding (e <= 1.0 fits EXP_W bits: the low EXP_W bits of the quotient)
    hwa_round_shift_pipe #(
        .IN_W (V_W + 1),
        .SH_W (SW),
        .OUT_W(EXP_W),
        .MODE (EXP_RND)
    ) u_re (
        .clk(clk),
        .en (en),
        .x  ($signed({1'b0, v6})),
        .sh (tot6),
        .y  (e)
    );
  end else if (BASE2) begin : g_base2
    localparam int PW = D_W + LOG2E_W + ((PROD_SHIFT < 0) ? -PROD_SHIFT : 0) + 2;
    localparam int G = T_F - A;
    localparam int KW = T_W - T_F + 1;
    localparam int SW = 8;
    logic [TABLE_F:0] tab[(1 << A) + 1];
    initial begin
      if (TABLE_FILE != "") $readmemh(TABLE_FILE, tab);
    end
    // stage 1: t = sat(round(d * LOG2E))
    logic signed [PW-1:0] prod, tr;
    logic [T_W-1:0] t_reg;
    assign prod = PW'(d) * PW'(LOG2E);
    if (PROD_SHIFT > 0) begin : g_r
      hwa_round_shift #(
          .IN_W (PW),
          .SH_W (SW),
          .OUT_W(PW),
          .MODE (T_RND)
      ) u_rt (
          .x (prod),
          .sh(SW'(PROD_SHIFT)),
          .y (tr)
      );
    end else begin : g_l
      assign tr = prod <<< (-PROD_SHIFT);
    end
    // saturate to the unsigned T_W-bit exp_arg_fmt (tr >= 0)
    localparam int CW2 = (PW > T_W ? PW : T_W) + 2;
    logic signed [CW2-1:0] trx;
    assign trx = CW2'(tr);
    always_ff @(posedge clk) begin
      if (en) t_reg <= (trx > ((CW2'(1) <<< T_W) - CW2'(1))) ? '1 : T_W'(trx);
    end
    // stage 2: 2^-t from the table (+ interpolation), one rounding
    logic [KW-1:0] k;
    logic [A-1:0] i;
    logic [V_W-1:0] lo, hi, v;  // mod 2^V_W: v and its terms are < 2^V_W
    logic [SW-1:0] total;
    logic [EXP_W-1:0] e_c;  // e <= 1.0 fits EXP_W bits
    assign k = KW'(t_reg >> T_F);
    assign i = t_reg[T_F-1-:A];
    assign lo = V_W'(tab[(A+1)'(i)]);
    assign hi = V_W'(tab[(A+1)'(i)+1'b1]);
    if (INTERP && G > 0) begin : g_interp
      logic [G-1:0] u;
      assign u = t_reg[G-1:0];
      assign v = (lo << G) - (lo - hi) * V_W'(u);
    end else begin : g_step
      if (G > 0) begin : g_unused
        /* verilator lint_off UNUSEDSIGNAL */
        logic [G-1:0] u_unused;
        /* verilator lint_on UNUSEDSIGNAL */
        assign u_unused = t_reg[G-1:0];
      end
      assign v = lo << G;
    end
    assign total = SW'(k) + SW'(TABLE_F + G - EXP_F);
    hwa_round_shift #(
        .IN_W (V_W + 1),
        .SH_W (SW),
        .OUT_W(EXP_W),
        .MODE (EXP_RND)
    ) u_re (
        .x ($signed({1'b0, v})),
        .sh(total),
        .y (e_c)
    );
    always_ff @(posedge clk) begin
      if (en) e <= e_c;
    end
  end else begin : g_lut
    localparam int CW = (D_W > LIM_BITS ? D_W : LIM_BITS) + 1;
    logic [EXP_W-1:0] tab[1 << LUT_BITS];
    initial begin
      if (TABLE_FILE != "") $readmemh(TABLE_FILE, tab);
    end
    logic [CW-1:0] dc, dc_cl;
    logic big_reg;
    logic [LUT_BITS-1:0] idx_reg;
    assign dc = CW'(d);
    assign dc_cl = (dc >= (CW'(1) << LIM_BITS)) ? ((CW'(1) << LIM_BITS) - CW'(1)) : dc;
    always_ff @(posedge clk) begin
      if (en) begin
        big_reg <= dc >= (CW'(1) << LIM_BITS);
        idx_reg <= LUT_BITS'(dc_cl >> LUT_SHIFT);
      end
    end
    always_ff @(posedge clk) begin
      if (en) e <= big_reg ? '0 : tab[idx_reg];
    end
  end

endmodule
`default_nettype wire
