// hwa_exp_unit -- E(d) = exp(-d) of OnlineSoftmax.exp_unit_raw, pipelined.
//
// Input d >= 0: raw code with IN_F fraction bits (D_W bits, unsigned).
// Output e: raw exp_fmt code (EXP_W bits, EXP_F fraction bits). Two variants:
//  BASE2 = 1: t = sat_T(round(d * LOG2E >> PROD_SHIFT, T_RND)) (exp_arg_fmt,
//    T_W bits, T_F fraction bits; PROD_SHIFT < 0 shifts left), then
//    k = t >> T_F, f = low T_F bits, i = f >> G, u = low G bits of f,
//    v = T[i] << G  (- (T[i] - T[i+1]) * u when INTERP),
//    e = round_shift(v, k + TABLE_F + G - EXP_F, EXP_RND)   (G = T_F - A);
//    T = 2^A + 1 entries 2^(-j/2^A) with TABLE_F fraction bits (TABLE_FILE).
//  BASE2 = 0: e = 0 if d >= 2^LIM_BITS else T[min(d, 2^LIM_BITS - 1) >> LUT_SHIFT]
//    (T = 2^LUT_BITS exp_fmt codes from TABLE_FILE).
// Latency: 2 cycles, advancing when en is high.
// Parameters: no defaults (TABLE_FILE aside); the parent passes every one from the
// spec's hw_params(), the unused variant's too.
`default_nettype none
module hwa_exp_unit #(
    parameter int D_W,
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
    // lut
    parameter int LUT_BITS,
    parameter int LIM_BITS,
    parameter int LUT_SHIFT,
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

  if (BASE2) begin : g_base2
    localparam int PW = D_W + LOG2E_W + ((PROD_SHIFT < 0) ? -PROD_SHIFT : 0) + 2;
    localparam int G = T_F - A;
    localparam int KW = T_W - T_F + 1;
    localparam int VW = TABLE_F + G + 3;
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
    logic signed [VW-1:0] lo, hi, v;
    logic [SW-1:0] total;
    /* verilator lint_off UNUSEDSIGNAL */
    logic signed [VW-1:0] e_c;  // e <= 1.0 fits EXP_W bits
    /* verilator lint_on UNUSEDSIGNAL */
    assign k = KW'(t_reg >> T_F);
    assign i = t_reg[T_F-1-:A];
    assign lo = VW'(tab[(A+1)'(i)]);
    assign hi = VW'(tab[(A+1)'(i)+1'b1]);
    if (INTERP && G > 0) begin : g_interp
      logic [G-1:0] u;
      assign u = t_reg[G-1:0];
      assign v = (lo <<< G) - (lo - hi) * VW'({1'b0, u});
    end else begin : g_step
      if (G > 0) begin : g_unused
        /* verilator lint_off UNUSEDSIGNAL */
        logic [G-1:0] u_unused;
        /* verilator lint_on UNUSEDSIGNAL */
        assign u_unused = t_reg[G-1:0];
      end
      assign v = lo <<< G;
    end
    assign total = SW'(k) + SW'(TABLE_F + G - EXP_F);
    hwa_round_shift #(
        .IN_W (VW),
        .SH_W (SW),
        .OUT_W(VW),
        .MODE (EXP_RND)
    ) u_re (
        .x (v),
        .sh(total),
        .y (e_c)
    );
    always_ff @(posedge clk) begin
      if (en) e <= EXP_W'(e_c);
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
