// hwa_attention_row -- a single-pass attention row: the online softmax fused with P.V
// (hwapprox.approx.attention.AttentionRowSpec.model, bit-exact).
//
// Per row (one query): q (DIM lanes) on s_q, one beat; then its keys, one per cycle:
// K (DIM lanes) on s_k with the mask bit on s_k_tuser (1 = masked out) and tlast on
// the row's last key, and V (DIM_V lanes) on s_v in step with K. Nothing is stored
// per key: the state is the running max m, the running sum d and DIM_V accumulators o.
//   s_j = cast_score(q.k_j [* SCALE_RAW])       exact DOT_W-bit dot product, one cast
//                                               (S_SHIFT/S_RND, then S_W bits, S_OVF)
//   key j not masked, s_j > m (or the row's first live key): E = E(s_j - m)
//       d = R_s(d*E) + ONE,  o = sat(R_a(o*E) + (v_j << V_SHIFT))
//   otherwise:                                  E = E(m - s_j)
//       d = d + (E << SUM_F - EXP_F),  o = sat(o + R_a((v_j << V_SHIFT)*E))
//   masked key: no change (no exp, no rescale)
//   per row: r = 1/d (hwa_recip), y_i = cast_out(o_i * r) (Y_SHIFT/Y_RND, Y_W bits, Y_OVF),
//   OUT_LANES lanes per cycle over BEATS = DIM_V / OUT_LANES cycles (OUT_LANES = DIM_V:
//   all lanes at once; fewer: the o*r multipliers are time-shared over the lanes);
//   a fully masked row outputs zeros. OFF_BY_ONE (Softmax_1): each row starts at
//   (m, d, o) = (0, ONE, 0), a zero logit with V = 0.
//   E = hwa_exp_unit, R_s = round_shift(., EXP_F, SUM_RND), R_a = sat(round_shift(.,
//   EXP_F, ACC_RND)): o*E and v*E share one ACC_W x EXP_W multiplier per lane (the
//   same real value is rounded either way, so this equals the model's two casts).
// Output: m_axis, one beat per row with DIM_V lanes of Y_W bits (lane i at bits
//   [i*Y_W +: Y_W]), tlast = 1 on every beat.
// Pipeline: key in -> products -> dot -> score -> running max -> E (2 stages) ->
//   (d, o) update, the one-cycle loop (per lane: a multiply, a rounding shift, two
//   saturations and an add) -> per row 1/d (RLAT = 3 + Newton steps, o travels
//   alongside, lane group g delayed g cycles more) -> y, OUT_LANES lanes per cycle ->
//   output queue of OUTQ rows.
// Throughput: one key per cycle while q, K and V are valid; the last key of a row is
//   held back only while OUTQ rows are in flight or waiting at the output, or while
//   fewer than BEATS cycles have passed since the previous row's last key (the output
//   multipliers are then still busy): full rate for rows of at least BEATS keys and
//   more than LAT / OUTQ keys, LAT the latency below (a row holds its queue slot from
//   its last key until its output is taken). Measured over 8 rows, OUTQ = 4, dim_v = 4:
//   OUT_LANES = 4: 1.00 keys/cycle from 4 keys per row, 0.92 at 3, 0.44 at 1;
//   OUT_LANES = 1: 1.00 from 5 keys, 0.97 at 4, 0.75 at 3, 0.27 at 1. q for the next
//   row is taken in the cycle of the last key, so rows follow back to back.
// Handshake (issue 22): K and V are joined: s_k_tready needs s_v_tvalid and s_v_tready
//   needs s_k_tvalid (a key and its value are taken together; legal AXI-Stream, as a
//   source may not wait for ready before raising valid). No ready depends on
//   m_axis_tready: the output side is a queue whose occupancy (a register) gates the
//   last key of a row, so the input readies are registered-credit functions.
// Latency: last key in -> output valid 7 + RLAT + BEATS cycles (13 at the defaults).
// Preconditions: rows of 1..KEY_MAX keys (acc_fmt / sum_fmt headroom; simulation
//   reports a longer row with $error, hardware saturates).
// Parameter defaults: AttentionRowSpec() with dim = 8, dim_v = 4 (tests/test_rtl_attention.py
//   checks they equal its hw_params()). OUTQ and OUT_LANES are micro-architecture
//   choices, not widths (hwapprox.rtl_sim.attention.attention_config's outq, out_lanes).
`default_nettype none
module hwa_attention_row #(
    parameter int DIM = 8,
    parameter int DIM_V = 4,
    parameter int Q_W = 16,
    parameter int K_W = 16,
    parameter int V_W = 16,
    parameter int DOT_W = 35,
    parameter bit HAS_SCALE = 1'b0,
    parameter int SCALE_W = 16,
    parameter longint SCALE_RAW = 64'd0,
    parameter int SC_W = 35,
    parameter int S_SHIFT = 10,
    parameter int S_RND = 0,
    parameter int S_OVF = 0,
    parameter int ACC_W = 32,
    parameter int ACC_RND = 2,
    parameter int V_SHIFT = 6,
    parameter int Y_SHIFT = 26,
    parameter int Y_W = 16,
    parameter int Y_RND = 2,
    parameter int Y_OVF = 1,
    parameter int KEY_MAX = 1024,
    parameter int OUTQ = 4,
    parameter int OUT_LANES = 4,
    // the online softmax's units (OnlineSoftmax.hw_params)
    parameter bit OFF_BY_ONE = 1'b0,
    parameter int IN_W = 16,
    parameter bit BASE2 = 1'b1,
    parameter int EXP_W = 29,
    parameter int EXP_F = 28,
    parameter int EXP_RND = 2,
    parameter longint LOG2E = 64'd48408813,
    parameter int LOG2E_W = 26,
    parameter int PROD_SHIFT = 13,
    parameter int T_W = 27,
    parameter int T_F = 22,
    parameter int T_RND = 2,
    parameter int A = 8,
    parameter int TABLE_F = 30,
    parameter bit INTERP = 1'b1,
    parameter int LUT_BITS = 12,
    parameter int LIM_BITS = 14,
    parameter int LUT_SHIFT = 2,
    parameter int SUM_W = 40,
    parameter int SUM_F = 29,
    parameter int SUM_RND = 2,
    parameter int R_W = 21,
    parameter int R_F = 20,
    parameter int R_OVF = 0,
    parameter int WF = 22,
    parameter int TB = 8,
    parameter bit NEWTON = 1'b1,
    parameter int STEPS = 2,
    parameter int R_RND = 2,
    parameter string EXP_FILE = "",
    parameter string RECIP_FILE = ""
) (
    input  logic                   clk,
    input  logic                   rst,
    input  logic [DIM*Q_W-1:0]     s_q_tdata,
    input  logic                   s_q_tvalid,
    output logic                   s_q_tready,
    input  logic [DIM*K_W-1:0]     s_k_tdata,
    input  logic                   s_k_tuser,
    input  logic                   s_k_tvalid,
    output logic                   s_k_tready,
    input  logic                   s_k_tlast,
    input  logic [DIM_V*V_W-1:0]   s_v_tdata,
    input  logic                   s_v_tvalid,
    output logic                   s_v_tready,
    output logic [DIM_V*Y_W-1:0]   m_axis_tdata,
    output logic                   m_axis_tvalid,
    input  logic                   m_axis_tready,
    output logic                   m_axis_tlast
);

  localparam int SW = 8;  // shift-amount width of hwa_round_shift
  localparam int DW = IN_W;  // |s_j - m| < 2^IN_W
  localparam int PW = SUM_W + EXP_W + 2;
  localparam int QPW = Q_W + K_W;  // one lane's q*k
  localparam int SRW = SC_W + ((S_SHIFT < 0) ? -S_SHIFT : 0) + 1;  // the score before S_OVF
  localparam int YP_W = ACC_W + R_W + 1;
  localparam int YRW = YP_W + ((Y_SHIFT < 0) ? -Y_SHIFT : 0) + 1;
  localparam int MUL_W = ACC_W + EXP_W + 1;
  localparam int RLAT = 3 + (NEWTON ? STEPS : 0);
  localparam int QA = $clog2(OUTQ);
  localparam int BEATS = (OUT_LANES >= 1) ? DIM_V / OUT_LANES : 1;  // o*r cycles per row
  localparam int GA = $clog2(BEATS + 1);

  if (DIM < 1 || DIM_V < 1 || IN_W < 2 || IN_W > 32 || ACC_W < V_W + V_SHIFT || ACC_W > 40
      || V_SHIFT < 0 || SC_W > 62 || DOT_W < QPW || SUM_F < EXP_F || SUM_W > 62
      || MUL_W > 62 || YP_W > 70 || OUTQ < 2 || (1 << QA) != OUTQ || KEY_MAX < 1
      || OUT_LANES < 1 || OUT_LANES > DIM_V || DIM_V % OUT_LANES != 0
      || (HAS_SCALE && SC_W != DOT_W + SCALE_W + 1) || (!HAS_SCALE && SC_W != DOT_W))
  begin : g_bad
    $error("hwa_attention_row %m: invalid DIM=%0d DIM_V=%0d IN_W=%0d ACC_W=%0d V_W=%0d V_SHIFT=%0d DOT_W=%0d SC_W=%0d SUM_W=%0d OUTQ=%0d (power of 2 >= 2) OUT_LANES=%0d (divides DIM_V)",
           DIM, DIM_V, IN_W, ACC_W, V_W, V_SHIFT, DOT_W, SC_W, SUM_W, OUTQ, OUT_LANES);
  end

  // ---- input join: q once per row, then K and V in step --------------------------------
  logic q_have, credit_ok, k_fire, first_key;
  logic [DIM*Q_W-1:0] q_reg;
  logic [QA:0] inflight, occ;  // rows past their last key, not yet queued; rows queued
  logic [GA-1:0] gap;  // cycles since the last key of the previous row (saturating)
  assign credit_ok = (inflight + occ) < (QA + 1)'(OUTQ) && gap >= GA'(BEATS);
  assign s_k_tready = q_have && s_v_tvalid && (!s_k_tlast || credit_ok);
  assign s_v_tready = q_have && s_k_tvalid && (!s_k_tlast || credit_ok);
  assign k_fire = s_k_tvalid && s_k_tready;
  assign s_q_tready = !q_have || (k_fire && s_k_tlast);
  always_ff @(posedge clk) begin
    if (rst) begin
      q_have <= 1'b0;
      first_key <= 1'b1;
      gap <= GA'(BEATS);
    end else begin
      if (s_q_tvalid && s_q_tready) q_have <= 1'b1;
      else if (k_fire && s_k_tlast) q_have <= 1'b0;
      if (k_fire) first_key <= s_k_tlast;
      if (k_fire && s_k_tlast) gap <= GA'(1);
      else if (gap < GA'(BEATS)) gap <= gap + 1'b1;
    end
    if (s_q_tvalid && s_q_tready) q_reg <= s_q_tdata;
  end
`ifndef SYNTHESIS
  int unsigned keys_sim;
  always_ff @(posedge clk) begin
    if (rst) keys_sim <= 0;
    else if (k_fire) begin
      keys_sim <= s_k_tlast ? 0 : keys_sim + 1;
      if (keys_sim + 1 > KEY_MAX)
        $error("hwa_attention_row %m: a row of more than KEY_MAX=%0d keys", KEY_MAX);
    end
  end
`endif

  // ---- stage 1: products q_i * k_i; V, mask and row marks travel alongside ---------------
  localparam int CARRY = 6;  // stages from stage 1 to the state update (V delay)
  logic p_v;
  logic signed [QPW-1:0] p_lane[DIM];
  logic [CARRY-1:0] c_valid, c_first, c_last, c_mask;
  logic [DIM_V*V_W-1:0] v_pipe[CARRY];
  always_ff @(posedge clk) begin
    if (rst) begin
      p_v <= 1'b0;
      c_valid <= '0;
    end else begin
      p_v <= k_fire;
      c_valid <= {c_valid[CARRY-2:0], k_fire};
    end
    c_first <= {c_first[CARRY-2:0], first_key};
    c_last <= {c_last[CARRY-2:0], s_k_tlast};
    c_mask <= {c_mask[CARRY-2:0], s_k_tuser};
    v_pipe[0] <= s_v_tdata;
    for (int s = 1; s < CARRY; s++) v_pipe[s] <= v_pipe[s-1];
    for (int i = 0; i < DIM; i++) begin
      p_lane[i] <= QPW'($signed(q_reg[i*Q_W+:Q_W])) * QPW'($signed(s_k_tdata[i*K_W+:K_W]));
    end
  end
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_p;  // p_v documents stage 1; c_valid carries the key through the stages
  assign unused_p = p_v;
  /* verilator lint_on UNUSEDSIGNAL */

  // ---- stage 2: the exact dot product ----------------------------------------------------
  logic signed [DOT_W-1:0] dot_c, dot_r;
  always_comb begin
    dot_c = '0;
    for (int i = 0; i < DIM; i++) dot_c = dot_c + DOT_W'(p_lane[i]);
  end
  always_ff @(posedge clk) dot_r <= dot_c;

  // ---- stage 3: the score: [* SCALE], one cast to the softmax's in_fmt ---------------------
  logic signed [SC_W-1:0] sc;
  logic signed [SRW-1:0] s_sh;
  logic [IN_W-1:0] s_code;
  logic signed [IN_W-1:0] x_r;
  if (HAS_SCALE) begin : g_scale
    localparam logic signed [SCALE_W:0] SC = (SCALE_W + 1)'(SCALE_RAW);
    assign sc = SC_W'(dot_r) * SC_W'(SC);
  end else begin : g_noscale
    assign sc = dot_r;
  end
  if (S_SHIFT > 0) begin : g_s_rs
    hwa_round_shift #(
        .IN_W (SC_W),
        .SH_W (SW),
        .OUT_W(SRW),
        .MODE (S_RND)
    ) u_s (
        .x (sc),
        .sh(SW'(S_SHIFT)),
        .y (s_sh)
    );
  end else begin : g_s_ls
    assign s_sh = SRW'(sc) <<< (-S_SHIFT);
  end
  hwa_sat #(
      .IN_W      (SRW),
      .OUT_W     (IN_W),
      .OUT_SIGNED(1'b1),
      .OVF       (S_OVF)
  ) u_s_sat (
      .x(s_sh),
      .y(s_code)
  );
  always_ff @(posedge clk) x_r <= s_code;

  // ---- stage A: running max over live keys; the exp argument against the old max ---------
  // c_*[2] is the key in stage 3 (x_r valid), [3] in A, [5] in C (E valid), the update
  logic signed [IN_W-1:0] m_reg, m_prev;
  logic any_reg, any_prev, live;
  logic signed [IN_W:0] diff;
  logic a_new;
  logic [DW-1:0] a_delta;
  assign m_prev = c_first[2] ? '0 : m_reg;
  assign any_prev = c_first[2] ? OFF_BY_ONE : any_reg;
  assign live = !c_mask[2];
  assign diff = (IN_W + 1)'(x_r) - (IN_W + 1)'(m_prev);
  always_ff @(posedge clk) begin
    if (c_valid[2]) begin
      a_new <= live && (!any_prev || diff > 0);
      a_delta <= !any_prev ? '0 : DW'((diff > 0) ? diff : -diff);
      if (live && (!any_prev || diff > 0)) m_reg <= x_r;
      else m_reg <= m_prev;
      any_reg <= any_prev || live;
    end
  end

  // ---- stages B, C: E(delta) -------------------------------------------------------------
  logic [EXP_W-1:0] e_c;
  hwa_exp_unit #(
      .D_W(DW),
      .PIPE(1'b0),
      .MUL_IN_REG(1'b0),
      .BASE2(BASE2),
      .EXP_W(EXP_W),
      .EXP_F(EXP_F),
      .EXP_RND(EXP_RND),
      .LOG2E(LOG2E),
      .LOG2E_W(LOG2E_W),
      .PROD_SHIFT(PROD_SHIFT),
      .T_W(T_W),
      .T_F(T_F),
      .T_RND(T_RND),
      .A(A),
      .TABLE_F(TABLE_F),
      .INTERP(INTERP),
      .LUT_BITS(LUT_BITS),
      .LIM_BITS(LIM_BITS),
      .LUT_SHIFT(LUT_SHIFT),
      .TABLE_FILE(EXP_FILE)
  ) u_exp (
      .clk(clk),
      .en (1'b1),
      .d  (a_delta),
      .e  (e_c)
  );
  logic b_new, c_new;
  always_ff @(posedge clk) begin
    b_new <= a_new;
    c_new <= b_new;
  end

  // ---- stage D: the state update, the one-cycle loop -------------------------------------
  localparam logic [SUM_W-1:0] ONE = SUM_W'(1) << SUM_F;
  logic d_live, d_first, d_last;
  assign d_live = c_valid[5] && !c_mask[5];
  assign d_first = c_first[5];
  assign d_last = c_last[5];
  // running sum, as hwa_softmax_online
  logic [SUM_W-1:0] d_reg, d_cur, d_nxt;
  logic signed [PW-1:0] de;
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [PW-1:0] de_r;  // d*E/2^EXP_F <= d: fits SUM_W bits
  /* verilator lint_on UNUSEDSIGNAL */
  assign d_cur = d_first ? (OFF_BY_ONE ? ONE : '0) : d_reg;
  assign de = PW'(d_cur) * PW'(e_c);
  hwa_round_shift #(
      .IN_W (PW),
      .SH_W (SW),
      .OUT_W(PW),
      .MODE (SUM_RND)
  ) u_rescale (
      .x (de),
      .sh(SW'(EXP_F)),
      .y (de_r)
  );
  always_comb begin
    if (!d_live) d_nxt = d_cur;
    else if (c_new) d_nxt = SUM_W'(de_r) + ONE;
    else d_nxt = d_cur + (SUM_W'(e_c) << (SUM_F - EXP_F));
  end
  // accumulators: one shared multiplier per lane
  logic signed [ACC_W-1:0] o_reg[DIM_V];
  logic signed [ACC_W-1:0] o_nxt[DIM_V];
  for (genvar i = 0; i < DIM_V; i++) begin : g_lane
    logic signed [ACC_W-1:0] o_cur, v_al, mul_a, t_sat;
    logic signed [MUL_W-1:0] prod, prod_r;
    logic signed [ACC_W:0] sum;
    logic [ACC_W-1:0] t_code, o_code;
    assign o_cur = d_first ? '0 : o_reg[i];
    assign v_al = ACC_W'($signed(v_pipe[CARRY-1][i*V_W+:V_W])) <<< V_SHIFT;
    assign mul_a = c_new ? o_cur : v_al;
    assign prod = MUL_W'(mul_a) * $signed({1'b0, e_c});
    hwa_round_shift #(
        .IN_W (MUL_W),
        .SH_W (SW),
        .OUT_W(MUL_W),
        .MODE (ACC_RND)
    ) u_ra (
        .x (prod),
        .sh(SW'(EXP_F)),
        .y (prod_r)
    );
    hwa_sat #(
        .IN_W      (MUL_W),
        .OUT_W     (ACC_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_ra_sat (
        .x(prod_r),
        .y(t_code)
    );
    assign t_sat = $signed(t_code);
    assign sum = (ACC_W + 1)'(t_sat) + (ACC_W + 1)'(c_new ? v_al : o_cur);
    hwa_sat #(
        .IN_W      (ACC_W + 1),
        .OUT_W     (ACC_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_o_sat (
        .x(sum),
        .y(o_code)
    );
    assign o_nxt[i] = d_live ? $signed(o_code) : o_cur;
  end
  logic row_v, row_any;
  always_ff @(posedge clk) begin
    if (c_valid[5]) begin
      d_reg <= d_nxt;
      for (int i = 0; i < DIM_V; i++) o_reg[i] <= o_nxt[i];
    end
    if (rst) row_v <= 1'b0;
    else row_v <= c_valid[5] && d_last;
  end
  // "any live key in the row": tracked in stage D itself (stage A's flag runs ahead)
  logic live_seen;
  always_ff @(posedge clk) begin
    if (c_valid[5]) live_seen <= (d_first ? OFF_BY_ONE : live_seen) || d_live;
    if (c_valid[5] && d_last) row_any <= (d_first ? OFF_BY_ONE : live_seen) || d_live;
  end

  // ---- per row: r = 1/d; o and "any" travel alongside -------------------------------------
  logic r_v;
  logic [R_W-1:0] r_val;
  hwa_recip #(
      .D_W(SUM_W),
      .PIPE(1'b0),
      .MUL_IN_REG(1'b0),
      .D_F(SUM_F),
      .R_W(R_W),
      .R_F(R_F),
      .R_OVF(R_OVF),
      .WF(WF),
      .TB(TB),
      .NEWTON(NEWTON),
      .STEPS(STEPS),
      .RND(R_RND),
      .TABLE_FILE(RECIP_FILE)
  ) u_recip (
      .clk(clk),
      .rst(rst),
      .in_valid(row_v),
      .d(row_any ? d_reg : ONE),
      .out_valid(r_v),
      .r(r_val)
  );
  logic [RLAT-1:0] any_pipe;
  always_ff @(posedge clk) any_pipe <= {any_pipe[RLAT-2:0], row_any};

  // ---- y = cast_out(o * r), OUT_LANES lanes per cycle, into the output queue --------------
  // The row's o leaves the state in lane groups of OUT_LANES: group g through a delay line
  // of RLAT + g stages (no reset, so shift-register LUTs), read in beat g = g cycles after
  // r arrives; r and "any" are held for beats 1..BEATS-1. Rows' last keys are >= BEATS
  // cycles apart (gap), so r never arrives while a row is still being multiplied. Beat g
  // writes its lanes straight into slice g of the output queue's entry.
  localparam int LW = OUT_LANES * ACC_W;  // o lanes of one beat
  localparam int YB = OUT_LANES * Y_W;  // y lanes of one beat
  localparam int BA = (BEATS > 1) ? $clog2(BEATS) : 1;
  logic [LW-1:0] o_grp[BEATS];
  for (genvar g = 0; g < BEATS; g++) begin : g_dl
    logic [LW-1:0] dl[RLAT+g];
    always_ff @(posedge clk) begin
      for (int i = 0; i < OUT_LANES; i++) dl[0][i*ACC_W+:ACC_W] <= o_reg[g*OUT_LANES+i];
      for (int s = 1; s < RLAT + g; s++) dl[s] <= dl[s-1];
    end
    assign o_grp[g] = dl[RLAT+g-1];
  end
  logic [BA-1:0] beat;  // lane group multiplied in this cycle
  logic beat_v, beat_last;
  logic [LW-1:0] o_beat;
  logic [R_W-1:0] r_beat;
  logic any_beat;
  logic [YB-1:0] y_beat;
  if (BEATS == 1) begin : g_par
    assign beat = '0;
    assign beat_v = r_v;
    assign r_beat = r_val;
    assign any_beat = any_pipe[RLAT-1];
  end else begin : g_ser
    logic [BA-1:0] nxt;  // the next beat of the row being multiplied, 0: none
    logic [R_W-1:0] r_hold;
    logic any_hold;
    assign beat = r_v ? '0 : nxt;
    assign beat_v = r_v || nxt != '0;
    assign r_beat = r_v ? r_val : r_hold;
    assign any_beat = r_v ? any_pipe[RLAT-1] : any_hold;
    always_ff @(posedge clk) begin
      if (r_v) begin
        r_hold <= r_val;
        any_hold <= any_pipe[RLAT-1];
      end
      if (rst) nxt <= '0;
      else if (beat_v) nxt <= (beat == BA'(BEATS - 1)) ? '0 : beat + 1'b1;
    end
`ifndef SYNTHESIS
    always_ff @(posedge clk)
      if (!rst && r_v && nxt != '0) $error("hwa_attention_row %m: a row's 1/d arrived early");
`endif
  end
  assign o_beat = o_grp[beat];
  assign beat_last = beat_v && beat == BA'(BEATS - 1);
  for (genvar i = 0; i < OUT_LANES; i++) begin : g_out
    logic signed [YP_W-1:0] yp;
    logic signed [YRW-1:0] ysh;
    logic [Y_W-1:0] ycode;
    assign yp = YP_W'($signed(o_beat[i*ACC_W+:ACC_W])) * $signed({1'b0, r_beat});
    if (Y_SHIFT > 0) begin : g_rs
      hwa_round_shift #(
          .IN_W (YP_W),
          .SH_W (SW),
          .OUT_W(YRW),
          .MODE (Y_RND)
      ) u_y (
          .x (yp),
          .sh(SW'(Y_SHIFT)),
          .y (ysh)
      );
    end else begin : g_ls
      assign ysh = YRW'(yp) <<< (-Y_SHIFT);
    end
    hwa_sat #(
        .IN_W      (YRW),
        .OUT_W     (Y_W),
        .OUT_SIGNED(1'b1),
        .OVF       (Y_OVF)
    ) u_y_sat (
        .x(ysh),
        .y(ycode)
    );
    assign y_beat[i*Y_W+:Y_W] = any_beat ? ycode : '0;
  end

  // output queue: OUTQ rows, one slice per lane group
  logic [QA-1:0] q_wr, q_rd;
  logic q_pop;
  assign q_pop = m_axis_tvalid && m_axis_tready;
  for (genvar g = 0; g < BEATS; g++) begin : g_q
    logic [YB-1:0] mem[OUTQ];
    always_ff @(posedge clk) if (beat_v && beat == BA'(g)) mem[q_wr] <= y_beat;
    assign m_axis_tdata[g*YB+:YB] = mem[q_rd];
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      q_wr <= '0;
      q_rd <= '0;
      occ <= '0;
      inflight <= '0;
    end else begin
      if (beat_last) q_wr <= q_wr + 1'b1;
      if (q_pop) q_rd <= q_rd + 1'b1;
      occ <= occ + (QA + 1)'(beat_last) - (QA + 1)'(q_pop);
      inflight <= inflight + (QA + 1)'(k_fire && s_k_tlast) - (QA + 1)'(beat_last);
    end
  end
  assign m_axis_tvalid = occ != 0;
  assign m_axis_tlast = 1'b1;

endmodule
`default_nettype wire
