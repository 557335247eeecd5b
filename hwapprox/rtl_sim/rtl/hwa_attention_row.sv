// hwa_attention_row -- a single-pass attention row: the online softmax fused with P.V
// (hwapprox.approx.attention.AttentionRowSpec.model, bit-exact).
//
// Per row (one query): q (DIM lanes) on s_q, one beat; then its keys, one per cycle:
// K (DIM lanes) on s_k with the mask bit on s_k_tuser (1 = masked out) and tlast on
// the row's last key, and V (DIM_V lanes) on s_v in step with K. Nothing is stored
// per row but the state: the running max m, the running sum d and DIM_V accumulators o.
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
//
// Pipeline (issue 22: no stage holds more than one DSP-sized product or one adder, for
// ECP5 at 125 MHz; every product through hwa_mul_pipe with operand registers of its own):
//   front, LF = 5 + LT + LS cycles from a key's acceptance to its stage A:
//     q_i*k_i (hwa_mul_pipe, 4) -> adder tree, one registered level per cycle (LT =
//     clog2(DIM)) -> [* SCALE (hwa_mul_pipe, 4)] -> [round (hwa_round_shift_pipe, 3)]
//     (LS = 4·HAS_SCALE + 3·(S_SHIFT > 0)) -> cast to IN_W, registered (1) ->
//     stage A: the running max over the live keys, the new-max flag and |s_j - m|, into
//     the key queue (hwa_fifo, FD entries). V waits in a buffer of its own (block RAM,
//     VD entries), written as the key is accepted.
//   back, from the key queue, at most one key per cycle: E (hwa_exp_unit PIPE = 1, ELAT
//     = hwa_pkg::exp_unit_lat, 19 at the defaults; V read alongside) -> stage U: each
//     lane's multiplier takes o (a new max) or v << V_SHIFT, the sum's takes d (a new
//     max) -> the products (hwa_mul_pipe, 4) -> floor and rounding increment (1) ->
//     the term t and the new-max addend sat(t + (v << V_SHIFT)) side by side (t = 0
//     for a row's first key), and R_s(d*E) + ONE (1) -> stage B, the addend (1): a
//     two-select LUT per bit picks the new-max addend, t (another live key) or 0 (a
//     masked key, an empty cycle) -> stage F, the one-cycle loop: per lane
//     o = sat(o + addend), or the addend itself for a key that opens its row or raises
//     the max (that select sits after the adder, beside the saturation); d one add (or
//     the rescaled d).
//   A key that raises the running max (other than its row's first key, whose state is
//   the row's start) multiplies the state, so it enters U only after every earlier key
//   has left F: it leaves the key queue MB = 8 cycles or more after the key before it.
//   Per row: r = 1/d (hwa_recip PIPE = 1, RLAT = hwa_pkg::recip_lat, 40 at the
//   defaults), o waits in a queue of OUTQ rows; y = o*r (hwa_mul_pipe 4, hwa_round_shift_pipe
//   3 when Y_SHIFT > 0, the cast 1: OLAT) into the output queue of OUTQ rows.
// Throughput: one key per cycle, except MB - 1 cycles lost before each key that raises
//   its row's running max past its first live key (the key queue absorbs them while it
//   has room: the input stalls only when FD keys are in flight); a row's last key leaves
//   the key queue only BEATS cycles or more after the previous row's (the output
//   multipliers); the last key of a row is accepted only while fewer than OUTQ rows are
//   past their last key and not yet taken at the output. hwapprox.rtl_sim.attention.
//   attention_schedule models this cycle by cycle (tests compare it with simulation).
// Handshake (issue 22): K and V are joined: s_k_tready needs s_v_tvalid and s_v_tready
//   needs s_k_tvalid (a key and its value are taken together; legal AXI-Stream, as a
//   source may not wait for ready before raising valid). No ready depends on
//   m_axis_tready: the output side is a queue whose occupancy (a register) gates the
//   last key of a row, and the key queue's room is a counter, so the input readies are
//   registered-credit functions.
// Latency: last key in -> output taken LF + ELAT + RLAT + OLAT + BEATS + 9 cycles when
//   its key leaves the queue at once and the output is free (92 at the test defaults
//   d = 8, all lanes at once; hwapprox.rtl_sim.attention.AttentionTiming.latency).
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
    parameter int MUL_W = 62,  // o*E, v*E: ACC_W + EXP_W + 1 (hw_params)
    parameter int Y_SHIFT = 26,
    parameter int YP_W = 54,  // o*r: ACC_W + R_W + 1 (hw_params)
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
    // the exp unit's interpolation width (OnlineSoftmax.hw_params' V_W, renamed here:
    // this unit's V_W is the V lanes' width)
    parameter int EXP_V_W = 45,
    parameter int LUT_BITS = 12,
    parameter int LIM_BITS = 14,
    parameter int LUT_SHIFT = 2,
    parameter int SUM_W = 40,
    parameter int SUM_F = 29,
    parameter int SUM_RND = 2,
    parameter int RESCALE_W = 69,  // d*E, unsigned (hw_params: SUM_W + EXP_W)
    parameter int R_W = 21,
    parameter int R_F = 20,
    parameter int R_OVF = 0,
    parameter int WF = 22,
    parameter int TB = 8,
    parameter bit NEWTON = 1'b1,
    parameter int STEPS = 2,
    parameter int R_RND = 2,
    parameter int RN_W = 25,
    parameter int RP_W = 47,
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

  localparam int SW = 8;  // shift-amount width of the rounding units
  localparam int DW = IN_W;  // |s_j - m| < 2^IN_W
  localparam int QPW = Q_W + K_W;  // one lane's q*k
  localparam int SRW = SC_W + ((S_SHIFT < 0) ? -S_SHIFT : 0) + 1;  // the score before S_OVF
  localparam int YRW = YP_W + ((Y_SHIFT < 0) ? -Y_SHIFT : 0) + 1;
  localparam int QA = $clog2(OUTQ);
  localparam int BEATS = (OUT_LANES >= 1) ? DIM_V / OUT_LANES : 1;  // o*r cycles per row
  localparam int GA = $clog2(BEATS + 1);
  // latencies (the contract header)
  localparam int LT = (DIM > 1) ? $clog2(DIM) : 0;  // adder-tree levels
  localparam int DIMP = 1 << LT;
  localparam int LS = (HAS_SCALE ? 4 : 0) + ((S_SHIFT > 0) ? 3 : 0);
  localparam int LF = 5 + LT + LS;  // accepted -> stage A
  localparam int ELAT = hwa_pkg::exp_unit_lat(1'b1, BASE2, LOG2E, PROD_SHIFT, 1'b1);
  // (hwa_recip's RLAT = hwa_pkg::recip_lat(1, NEWTON, STEPS, 1) needs no alignment here:
  // the row's o waits in the o queue until its 1/d arrives)
  localparam int MB = 8;  // U -> F: products 4, floor 1, term 1, addend 1, F 1
  localparam int UF = MB - 1;  // stages from U to F
  localparam int OLAT = 4 + ((Y_SHIFT > 0) ? 3 : 0) + 1;
  localparam int FD = 1 << $clog2(LF + 3 + MB);  // key queue: full rate plus one rescale
  localparam int FA = $clog2(FD);
  localparam int VD = 1 << $clog2(FD + ELAT + 1);  // V buffer: the key queue + the exp stages
  localparam int VA = $clog2(VD);
  localparam int MW = DW + 4;  // key queue word: {first, last, live, new, delta}
  localparam int VBW = DIM_V * V_W;
  localparam int OW = DIM_V * ACC_W;

  if (DIM < 1 || DIM_V < 1 || IN_W < 2 || IN_W > 32 || ACC_W < V_W + V_SHIFT || ACC_W > 40
      || V_SHIFT < 0 || SC_W > 62 || DOT_W < QPW || SUM_F < EXP_F || SUM_W > 62
      || RESCALE_W < SUM_W + EXP_W || MUL_W < ACC_W + EXP_W + 1 || YP_W < ACC_W + R_W + 1
      || MUL_W > 62 || YP_W > 70 || OUTQ < 2 || (1 << QA) != OUTQ || KEY_MAX < 1
      || OUT_LANES < 1 || OUT_LANES > DIM_V || DIM_V % OUT_LANES != 0 || EXP_F < 2 || ELAT < 2
      || (HAS_SCALE && SC_W != DOT_W + SCALE_W + 1) || (!HAS_SCALE && SC_W != DOT_W))
  begin : g_bad
    $error("hwa_attention_row %m: invalid DIM=%0d DIM_V=%0d IN_W=%0d ACC_W=%0d V_W=%0d V_SHIFT=%0d DOT_W=%0d SC_W=%0d SUM_W=%0d RESCALE_W=%0d (>= SUM_W + EXP_W) MUL_W=%0d (>= ACC_W + EXP_W + 1) YP_W=%0d (>= ACC_W + R_W + 1) OUTQ=%0d (power of 2 >= 2) OUT_LANES=%0d (divides DIM_V)",
           DIM, DIM_V, IN_W, ACC_W, V_W, V_SHIFT, DOT_W, SC_W, SUM_W, RESCALE_W, MUL_W, YP_W, OUTQ,
           OUT_LANES);
  end

  // ---- input join: q once per row, then K and V in step --------------------------------
  logic q_have, credit_ok, room_ok, k_fire, first_key, pop;
  logic [DIM*Q_W-1:0] q_reg;
  logic [QA:0] inflight, occ;  // rows past their last key, not yet queued; rows queued
  logic [FA:0] tokens;  // keys accepted and not yet out of the key queue
  logic y_last;  // a row's last output beat enters the output queue
  assign room_ok = tokens < (FA + 1)'(FD);
  assign credit_ok = (inflight + occ) < (QA + 1)'(OUTQ);
  assign s_k_tready = q_have && room_ok && s_v_tvalid && (!s_k_tlast || credit_ok);
  assign s_v_tready = q_have && room_ok && s_k_tvalid && (!s_k_tlast || credit_ok);
  assign k_fire = s_k_tvalid && s_k_tready;
  assign s_q_tready = !q_have || (k_fire && s_k_tlast);
  always_ff @(posedge clk) begin
    if (rst) begin
      q_have <= 1'b0;
      first_key <= 1'b1;
      tokens <= '0;
    end else begin
      if (s_q_tvalid && s_q_tready) q_have <= 1'b1;
      else if (k_fire && s_k_tlast) q_have <= 1'b0;
      if (k_fire) first_key <= s_k_tlast;
      tokens <= tokens + (FA + 1)'(k_fire) - (FA + 1)'(pop);
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

  // the key's flags through the front: c_*[LF-1] is the key in stage A
  logic [LF-1:0] c_valid, c_first, c_last, c_mask;
  always_ff @(posedge clk) begin
    if (rst) c_valid <= '0;
    else c_valid <= {c_valid[LF-2:0], k_fire};
    c_first <= {c_first[LF-2:0], first_key};
    c_last <= {c_last[LF-2:0], s_k_tlast};
    c_mask <= {c_mask[LF-2:0], s_k_tuser};
  end

  // ---- front 1: products q_i * k_i (4 cycles) ---------------------------------------------
  logic signed [DOT_W-1:0] lvl[LT+1][DIMP];
  for (genvar i = 0; i < DIMP; i++) begin : g_qk
    if (i < DIM) begin : g_p
      logic signed [QPW-1:0] p;
      hwa_mul_pipe #(
          .A_W(Q_W),
          .B_W(K_W),
          .B_SIGNED(1'b1),
          .P_W(QPW),
          .IN_REG(1'b1)
      ) u_qk (
          .clk(clk),
          .en (1'b1),
          .a  ($signed(q_reg[i*Q_W+:Q_W])),
          .b  (s_k_tdata[i*K_W+:K_W]),
          .p  (p)
      );
      assign lvl[0][i] = DOT_W'(p);
    end else begin : g_z
      assign lvl[0][i] = '0;
    end
  end

  // ---- front 2: the exact dot product, one registered adder level per cycle ---------------
  for (genvar l = 0; l < LT; l++) begin : g_tree
    for (genvar i = 0; i < (DIMP >> (l + 1)); i++) begin : g_add
      always_ff @(posedge clk) lvl[l+1][i] <= lvl[l][2*i] + lvl[l][2*i+1];
    end
    for (genvar i = (DIMP >> (l + 1)); i < DIMP; i++) begin : g_zero
      always_ff @(posedge clk) lvl[l+1][i] <= '0;
    end
  end
  logic signed [DOT_W-1:0] dot;
  assign dot = lvl[LT][0];

  // ---- front 3: the score: [* SCALE], one cast to the softmax's in_fmt --------------------
  logic signed [SC_W-1:0] sc;
  logic signed [SRW-1:0] s_sh;
  logic [IN_W-1:0] s_code;
  logic signed [IN_W-1:0] x_r;
  if (HAS_SCALE) begin : g_scale
    localparam logic signed [SCALE_W:0] SC = (SCALE_W + 1)'(SCALE_RAW);
    hwa_mul_pipe #(
        .A_W(DOT_W),
        .B_W(SCALE_W + 1),
        .B_SIGNED(1'b1),
        .P_W(SC_W),
        .IN_REG(1'b1)
    ) u_sc (
        .clk(clk),
        .en (1'b1),
        .a  (dot),
        .b  (SC),
        .p  (sc)
    );
  end else begin : g_noscale
    assign sc = dot;
  end
  if (S_SHIFT > 0) begin : g_s_rs
    hwa_round_shift_pipe #(
        .IN_W (SC_W),
        .SH_W (SW),
        .OUT_W(SRW),
        .MODE (S_RND)
    ) u_s (
        .clk(clk),
        .en (1'b1),
        .x  (sc),
        .sh (SW'(S_SHIFT)),
        .y  (s_sh)
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
  logic signed [IN_W-1:0] m_reg, m_prev;
  logic any_reg, any_prev, live, a_new;
  logic signed [IN_W:0] diff;
  logic [DW-1:0] a_delta;
  assign m_prev = c_first[LF-1] ? '0 : m_reg;
  assign any_prev = c_first[LF-1] ? OFF_BY_ONE : any_reg;
  assign live = !c_mask[LF-1];
  assign diff = (IN_W + 1)'(x_r) - (IN_W + 1)'(m_prev);
  assign a_new = live && (!any_prev || diff > 0);
  assign a_delta = !any_prev ? '0 : DW'((diff > 0) ? diff : -diff);
  always_ff @(posedge clk) begin
    if (c_valid[LF-1]) begin
      m_reg <= a_new ? x_r : m_prev;
      any_reg <= any_prev || live;
    end
  end

  // ---- the key queue; a key leaves it for the exp unit at most once a cycle ---------------
  logic h_v, h_first, h_last, h_live, h_new;
  logic [DW-1:0] h_delta;
  logic [GA-1:0] gap;  // cycles since the previous row's last key left (saturating)
  logic [3:0] since;  // cycles since the previous key left (saturating at MB)
  logic pop_ok;
  hwa_fifo #(
      .W(MW),
      .DEPTH(FD)
  ) u_keyq (
      .clk(clk),
      .rst(rst),
      .in_v(c_valid[LF-1]),
      .in_d({c_first[LF-1], c_last[LF-1], live, a_new, a_delta}),
      .out_v(h_v),
      .out_rdy(pop_ok),
      .out_d({h_first, h_last, h_live, h_new, h_delta})
  );
  // a rescale waits until the keys before it have left F; a row's last key until the
  // previous row's output multiplications are done
  assign pop_ok = (!(h_new && !h_first) || since >= 4'(MB)) && (!h_last || gap >= GA'(BEATS));
  assign pop = h_v && pop_ok;
  always_ff @(posedge clk) begin
    if (rst) begin
      since <= 4'(MB);
      gap <= GA'(BEATS);
    end else begin
      if (pop) since <= 4'd1;
      else if (since < 4'(MB)) since <= since + 4'd1;
      if (pop && h_last) gap <= GA'(1);
      else if (gap < GA'(BEATS)) gap <= gap + 1'b1;
    end
  end

  // ---- E(delta); V read from its buffer to arrive with E ----------------------------------
  logic [EXP_W-1:0] e_u;
  hwa_exp_unit #(
      .D_W(DW),
      .PIPE(1'b1),
      .MUL_IN_REG(1'b1),
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
      .V_W(EXP_V_W),
      .LUT_BITS(LUT_BITS),
      .LIM_BITS(LIM_BITS),
      .LUT_SHIFT(LUT_SHIFT),
      .TABLE_FILE(EXP_FILE)
  ) u_exp (
      .clk(clk),
      .en (1'b1),
      .d  (h_delta),
      .e  (e_u)
  );
  logic u_v, u_first, u_last, u_live, u_new;
  hwa_delay #(
      .W(5),
      .L(ELAT)
  ) u_ud (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  ({pop, h_first, h_last, h_live, h_new}),
      .q  ({u_v, u_first, u_last, u_live, u_new})
  );
  logic v_rd;  // read V so that it arrives in stage U with its key's E: the block RAM's
  // read register, then one more (the RAM's clock-to-out is a path of its own)
  hwa_delay #(
      .W(1),
      .L(ELAT - 2)
  ) u_vrd (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  (pop),
      .q  (v_rd)
  );
  logic [VBW-1:0] vmem[VD];
  logic [VA-1:0] v_wp, v_rp;
  logic [VBW-1:0] v_q, v_u;
  always_ff @(posedge clk) begin
    if (k_fire) vmem[v_wp] <= s_v_tdata;
    if (v_rd) v_q <= vmem[v_rp];
    v_u <= v_q;
    if (rst) begin
      v_wp <= '0;
      v_rp <= '0;
    end else begin
      if (k_fire) v_wp <= v_wp + 1'b1;
      if (v_rd) v_rp <= v_rp + 1'b1;
    end
  end

  // ---- stage U: the multipliers' operands; U -> F: products, rounding, the term -----------
  localparam logic [SUM_W-1:0] ONE = SUM_W'(1) << SUM_F;
  localparam logic [SUM_W-1:0] D_START = OFF_BY_ONE ? ONE : '0;
  logic [SUM_W-1:0] d_reg;
  logic signed [ACC_W-1:0] o_reg[DIM_V];
  logic w_v, w_first, w_last, w_live, w_new;  // the key in stage R2 (the term), F - 2
  logic b_v, b_first, b_new;  // the key in stage B (the addend), F - 1
  logic f_v, f_first, f_last, f_live, f_new;
  logic [EXP_W-1:0] e_w, e_f;
  logic [VBW-1:0] v_w;
  hwa_delay #(
      .W(5 + EXP_W + VBW),
      .L(UF - 2)
  ) u_ur (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  ({u_v, u_first, u_last, u_live, u_new, e_u, v_u}),
      .q  ({w_v, w_first, w_last, w_live, w_new, e_w, v_w})
  );
  hwa_delay #(
      .W(5 + EXP_W),
      .L(2)
  ) u_rf (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  ({w_v, w_first, w_last, w_live, w_new, e_w}),
      .q  ({f_v, f_first, f_last, f_live, f_new, e_f})
  );
  // the addend's select, registered in R2 (each bit drives one LUT per lane bit in B)
  logic sel_n, sel_t;
  always_ff @(posedge clk) begin
    if (rst) begin
      {b_v, b_first, b_new} <= '0;
      sel_n <= 1'b0;
      sel_t <= 1'b0;
    end else begin
      {b_v, b_first, b_new} <= {w_v, w_first, w_new};
      sel_n <= w_v && w_live && w_new;
      sel_t <= w_v && w_live && !w_new;
    end
  end
  // d: R_s(d*E) + ONE for a new max, ready in F
  logic [RESCALE_W-1:0] de;  // d*E < 2^(SUM_W + EXP_W), exact
  logic [SUM_W-1:0] dq, d_resc_b, d_resc;
  logic d_inc;
  hwa_mul_pipe #(
      .A_W(SUM_W + 1),
      .B_W(EXP_W),
      .B_SIGNED(1'b0),
      .P_W(RESCALE_W),
      .IN_REG(1'b1)
  ) u_de (
      .clk(clk),
      .en (1'b1),
      .a  ($signed({1'b0, u_first ? D_START : d_reg})),
      .b  (e_u),
      .p  (de)
  );
  always_ff @(posedge clk) begin
    dq <= SUM_W'(de >> EXP_F);  // d*E/2^EXP_F <= d: fits SUM_W bits
    d_inc <= hwa_pkg::round_up(SUM_RND, de[EXP_F-1] & (|de[EXP_F-2:0]),
                               de[EXP_F-1] & ~(|de[EXP_F-2:0]), |de[EXP_F-1:0], 1'b0,
                               de[EXP_F]);
    d_resc_b <= dq + ONE + SUM_W'(d_inc);
    d_resc <= d_resc_b;
  end
  // o lanes: one multiplier each, o*E (a new max; 0 when it opens its row: the state is
  // the row's start) or (v << V_SHIFT)*E. R2 forms both candidate addends of F, the term
  // t = R_a(.) and, for a new max, n = sat(t + v); B selects n, t or 0 (a masked key or
  // an empty cycle) with two registered selects: one LUT per bit.
  // n = sat(q + inc + v) equals the model's sat(sat(q + inc) + v): |R_a(x*E)| <= |x| as E
  // <= 1, so t's saturation never acts (simulation checks it).
  logic signed [ACC_W-1:0] b_f[DIM_V];
  for (genvar i = 0; i < DIM_V; i++) begin : g_mul
    logic signed [ACC_W-1:0] mul_a, t_b, n_b, v_al;
    logic signed [MUL_W-1:0] prod;
    logic signed [MUL_W-1:0] q1, r1;
    logic signed [MUL_W:0] n_sum;
    logic inc1;
    logic [ACC_W-1:0] t_code, n_code;
    always_comb begin
      if (!u_new) mul_a = ACC_W'($signed(v_u[i*V_W+:V_W])) <<< V_SHIFT;
      else if (u_first) mul_a = '0;
      else mul_a = o_reg[i];
    end
    hwa_mul_pipe #(
        .A_W(ACC_W),
        .B_W(EXP_W),
        .B_SIGNED(1'b0),
        .P_W(MUL_W),
        .IN_REG(1'b1)
    ) u_oe (
        .clk(clk),
        .en (1'b1),
        .a  (mul_a),
        .b  (e_u),
        .p  (prod)
    );
    hwa_sat #(
        .IN_W      (MUL_W),
        .OUT_W     (ACC_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_ra_sat (
        .x(r1),
        .y(t_code)
    );
    assign r1 = q1 + MUL_W'(inc1);
    always_ff @(posedge clk) begin
      q1 <= prod >>> EXP_F;
      inc1 <= hwa_pkg::round_up(ACC_RND, prod[EXP_F-1] & (|prod[EXP_F-2:0]),
                                prod[EXP_F-1] & ~(|prod[EXP_F-2:0]), |prod[EXP_F-1:0],
                                prod[MUL_W-1], prod[EXP_F]);
      t_b <= $signed(t_code);
      n_b <= $signed(n_code);
    end
    assign v_al = ACC_W'($signed(v_w[i*V_W+:V_W])) <<< V_SHIFT;
    assign n_sum = (MUL_W + 1)'(q1) + (MUL_W + 1)'(v_al) + (MUL_W + 1)'(inc1);
    hwa_sat #(
        .IN_W      (MUL_W + 1),
        .OUT_W     (ACC_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_n_sat (
        .x(n_sum),
        .y(n_code)
    );
    always_ff @(posedge clk) begin
      if (sel_n) b_f[i] <= n_b;
      else if (sel_t) b_f[i] <= t_b;
      else b_f[i] <= '0;
    end
`ifndef SYNTHESIS
    always_ff @(posedge clk)
      if (!rst && w_v && r1 != MUL_W'($signed(t_code)))
        $error("hwa_attention_row %m: the term's saturation acted (R_a(x*E) outside ACC_W)");
`endif
  end

  // ---- stage F: the state update, the one-cycle loop -------------------------------------
  logic d_live;
  logic [SUM_W-1:0] d_cur, d_nxt;
  assign d_live = f_v && f_live;
  assign d_cur = f_first ? D_START : d_reg;
  always_comb begin
    if (!d_live) d_nxt = d_cur;
    else if (f_new) d_nxt = d_resc;
    else d_nxt = d_cur + (SUM_W'(e_f) << (SUM_F - EXP_F));
  end
  // o = sat(o + addend) in every cycle (the addend is 0 when nothing changes), or the
  // addend itself for a key that opens its row or raises the max (f_rst: a register; its
  // select sits after the adder, beside the saturation, so F is one add per lane)
  logic f_rst;
  always_ff @(posedge clk) begin
    if (rst) f_rst <= 1'b0;
    else f_rst <= b_v && (b_first || b_new);
  end
  for (genvar i = 0; i < DIM_V; i++) begin : g_lane
    logic signed [ACC_W:0] sum;
    logic [ACC_W-1:0] o_code;
    assign sum = (ACC_W + 1)'(o_reg[i]) + (ACC_W + 1)'(b_f[i]);
    hwa_sat #(
        .IN_W      (ACC_W + 1),
        .OUT_W     (ACC_W),
        .OUT_SIGNED(1'b1),
        .OVF       (hwa_pkg::OVF_SAT)
    ) u_o_sat (
        .x(sum),
        .y(o_code)
    );
    always_ff @(posedge clk) begin
      if (rst) o_reg[i] <= '0;
      else o_reg[i] <= f_rst ? b_f[i] : $signed(o_code);
    end
  end
  logic row_v, row_any, live_seen;
  always_ff @(posedge clk) begin
    if (f_v) begin
      d_reg <= d_nxt;
      live_seen <= (f_first ? OFF_BY_ONE : live_seen) || d_live;
    end
    if (f_v && f_last) row_any <= (f_first ? OFF_BY_ONE : live_seen) || d_live;
    if (rst) row_v <= 1'b0;
    else row_v <= f_v && f_last;
  end
`ifndef SYNTHESIS
  // a rescale reads the state: nothing may be between U and F when it enters U
  logic [UF-1:0] uf_busy;
  always_ff @(posedge clk) begin
    if (rst) uf_busy <= '0;
    else uf_busy <= {uf_busy[UF-2:0], u_v};
    if (!rst && u_v && u_new && !u_first && (uf_busy != '0 || f_v))
      $error("hwa_attention_row %m: a rescale entered U with keys in flight");
  end
`endif

  // ---- per row: r = 1/d; the row's o and "any" wait in the o queue ------------------------
  logic r_v;
  logic [R_W-1:0] r_val;
  hwa_recip #(
      .D_W(SUM_W),
      .PIPE(1'b1),
      .MUL_IN_REG(1'b1),
      .D_F(SUM_F),
      .R_W(R_W),
      .R_F(R_F),
      .R_OVF(R_OVF),
      .WF(WF),
      .TB(TB),
      .NEWTON(NEWTON),
      .STEPS(STEPS),
      .RND(R_RND),
      .RN_W(RN_W),
      .RP_W(RP_W),
      .TABLE_FILE(RECIP_FILE)
  ) u_recip (
      .clk(clk),
      .rst(rst),
      .in_valid(row_v),
      .d(row_any ? d_reg : ONE),
      .out_valid(r_v),
      .r(r_val)
  );
  logic [OW-1:0] o_row;
  for (genvar i = 0; i < DIM_V; i++) begin : g_orow
    assign o_row[i*ACC_W+:ACC_W] = o_reg[i];
  end
  logic [OW-1:0] o_head;
  logic any_head, beat_last;
  logic oq_v;  // the row is there whenever its 1/d is (it entered RLAT cycles earlier)
  hwa_fifo #(
      .W(OW + 1),
      .DEPTH(OUTQ)
  ) u_oq (
      .clk(clk),
      .rst(rst),
      .in_v(row_v),
      .in_d({row_any, o_row}),
      .out_v(oq_v),
      .out_rdy(beat_last),
      .out_d({any_head, o_head})
  );

  // ---- y = cast_out(o * r), OUT_LANES lanes per cycle, into the output queue --------------
  // beat g multiplies lane group g, g cycles after r arrives; r is held for beats
  // 1..BEATS-1. Rows' last keys left the key queue >= BEATS cycles apart (gap), so r never
  // arrives while a row is still being multiplied.
  localparam int LW = OUT_LANES * ACC_W;  // o lanes of one beat
  localparam int YB = OUT_LANES * Y_W;  // y lanes of one beat
  localparam int BA = (BEATS > 1) ? $clog2(BEATS) : 1;
  logic [BA-1:0] beat;  // lane group multiplied in this cycle
  logic beat_v;
  logic [LW-1:0] o_beat;
  logic [R_W-1:0] r_beat;
  if (BEATS == 1) begin : g_par
    assign beat = '0;
    assign beat_v = r_v;
    assign r_beat = r_val;
    assign o_beat = o_head;
  end else begin : g_ser
    logic [BA-1:0] nxt;  // the next beat of the row being multiplied, 0: none
    logic [R_W-1:0] r_hold;
    // beat 0 reads lane group 0 from the o queue; the other groups wait in a register
    // that shifts down a group per beat (no BEATS-to-1 select in front of the multiplier)
    logic [OW-LW-1:0] o_rest;
    assign beat = r_v ? '0 : nxt;
    assign beat_v = r_v || nxt != '0;
    assign r_beat = r_v ? r_val : r_hold;
    assign o_beat = r_v ? o_head[LW-1:0] : o_rest[LW-1:0];
    always_ff @(posedge clk) begin
      if (r_v) r_hold <= r_val;
      if (r_v) o_rest <= o_head[OW-1:LW];
      else o_rest <= o_rest >> LW;
      if (rst) nxt <= '0;
      else if (beat_v) nxt <= (beat == BA'(BEATS - 1)) ? '0 : beat + 1'b1;
    end
`ifndef SYNTHESIS
    always_ff @(posedge clk)
      if (!rst && r_v && nxt != '0) $error("hwa_attention_row %m: a row's 1/d arrived early");
`endif
  end
`ifndef SYNTHESIS
  always_ff @(posedge clk)
    if (!rst && beat_v && !oq_v) $error("hwa_attention_row %m: a 1/d with no row in the o queue");
`endif
  assign beat_last = beat_v && beat == BA'(BEATS - 1);
  logic y_v, y_any;
  logic [BA-1:0] y_beat_i;
  hwa_delay #(
      .W(3 + BA),
      .L(OLAT)
  ) u_yd (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  ({beat_v, beat_last, any_head, beat}),
      .q  ({y_v, y_last, y_any, y_beat_i})
  );
  logic [YB-1:0] y_beat;
  for (genvar i = 0; i < OUT_LANES; i++) begin : g_out
    logic signed [YP_W-1:0] yp;
    logic signed [YRW-1:0] ysh;
    logic [Y_W-1:0] ycode;
    hwa_mul_pipe #(
        .A_W(ACC_W),
        .B_W(R_W),
        .B_SIGNED(1'b0),
        .P_W(YP_W),
        .IN_REG(1'b1)
    ) u_or (
        .clk(clk),
        .en (1'b1),
        .a  ($signed(o_beat[i*ACC_W+:ACC_W])),
        .b  (r_beat),
        .p  (yp)
    );
    if (Y_SHIFT > 0) begin : g_rs
      hwa_round_shift_pipe #(
          .IN_W (YP_W),
          .SH_W (SW),
          .OUT_W(YRW),
          .MODE (Y_RND)
      ) u_y (
          .clk(clk),
          .en (1'b1),
          .x  (yp),
          .sh (SW'(Y_SHIFT)),
          .y  (ysh)
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
    always_ff @(posedge clk) y_beat[i*Y_W+:Y_W] <= ycode;
  end

  // output queue: OUTQ rows, one slice per lane group (y_beat is the cast of the beat
  // OLAT - 1 cycles ago, registered; a fully masked row writes zeros)
  logic [QA-1:0] q_wr, q_rd;
  logic q_pop;
  assign q_pop = m_axis_tvalid && m_axis_tready;
  for (genvar g = 0; g < BEATS; g++) begin : g_q
    logic [YB-1:0] mem[OUTQ];
    always_ff @(posedge clk) if (y_v && y_beat_i == BA'(g)) mem[q_wr] <= y_any ? y_beat : '0;
    assign m_axis_tdata[g*YB+:YB] = mem[q_rd];
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      q_wr <= '0;
      q_rd <= '0;
      occ <= '0;
      inflight <= '0;
    end else begin
      if (y_last) q_wr <= q_wr + 1'b1;
      if (q_pop) q_rd <= q_rd + 1'b1;
      occ <= occ + (QA + 1)'(y_last) - (QA + 1)'(q_pop);
      inflight <= inflight + (QA + 1)'(k_fire && s_k_tlast) - (QA + 1)'(y_last);
    end
  end
  assign m_axis_tvalid = occ != 0;
  assign m_axis_tlast = 1'b1;

endmodule
`default_nettype wire
