// hwa_softmax_online -- single-pass softmax (hwapprox.approx.softmax.OnlineSoftmax,
// schedule "online"; exp_unit "base2" or "lut"; recip_unit "newton" or "lut").
//
// Per row of n <= ROW_MAX raw in_fmt codes x (s_axis, tlast on the last one) with
// one mask bit each (s_axis_tuser, 1 = masked out: the mask contract of
// hwapprox.approx.softmax -- a masked element takes no part in max or sum and
// outputs 0, the others get the codes of the row without it; a fully masked row
// outputs zeros):
//   ingest (one element per cycle, no second read of the input):
//     first unmasked element: m = x_j, d = ONE;
//     later unmasked element: if x_j > m: d = R_s(d * E(x_j - m)) + ONE, m = x_j
//                             else        d = d + (E(m - x_j) << (SUM_F - EXP_F))
//     with E = hwa_exp_unit and R_s = round_shift(., EXP_F, SUM_RND);
//     OFF_BY_ONE (Softmax_1): the state starts at a zero logit, (m, d) = (0, ONE),
//     and the first unmasked element takes the later-element rule;
//   per row: r = 1/d (hwa_recip, one per row);
//   output (row re-read from the buffer): y_i = cast_out(E(m - x_i) * r):
//     round_shift by EXP_F + R_F - OUT_F (OUT_RND; negative: exact left
//     shift), then the out_fmt overflow (OUT_OVF), OUT_W bits.
//   CLIP (clipped softmax, Bondarenko et al. 2023): per row r_s = round(CLIP_S * r /
//     2^CLIP_F) (half up: the stretch zeta - gamma folded into the reciprocal), then
//     y_i = clamp(cast_out(E * r_s + CLIP_G * 2^(EXP_F + R_F - CLIP_F)), 0, CLIP_ONE).
// Options (OnlineSoftmax / SoftmaxSpec, issue 15; all off by default: the unit is then
// exactly the one above):
//   SKIP (threshold skipping, BLASST): a live element that is not a new max (and does
//     not open the row) with m - x_j > SKIP_TAU (m = the running max before it) is
//     skipped: decided as it enters, from the input port and the running max, and
//     buffered with its zero bit set -- so it leaves m and d unchanged and outputs 0,
//     exactly as a masked element. One comparator on the difference stage A forms.
//   UNIFIED (unified max phi, FlashDecoding++): alongside the exact (m, d), a second
//     exp unit sums d_phi = sum (E(PHI - x_j) << (SUM_F - EXP_F)) over the live
//     elements (exact adds: no max, no rescale) and flags a live x_j > PHI. At the
//     row's end a row in the safe range (a live element, none above PHI, d_phi >=
//     U_FLOOR = ONE >> U_LOW) divides d_phi << s (s the smallest shift with
//     d_phi << s >= ONE, s <= U_LOW) and outputs y_i = cast_out((E(PHI - x_i) * r) << s)
//     (UOUTP_W bits before the cast); any other row is on the exact path already: the
//     fallback needs no second read of the row and costs no cycle. Not with
//     OFF_BY_ONE, CLIP or SKIP (the spec refuses them; elaboration too).
//   OUT_CODE (log-coded outputs, RepQ-ViT): 1 log2, 2 log-sqrt2: one more output
//     register stage, hwa_log_code: the CODE_BITS-bit code round(-log2 p) (round(-2
//     log2 p)) of the out_fmt code p by a priority encoder and constant compares
//     (CODE_C12 / CODE_C14, CODE_C34); p <= 0 -- masked, skipped, underflowed -- gives
//     the zero code CODE_ZERO. m_axis_tdata is then CODE_BITS wide (unsigned).
// The running max is resolved one stage ahead of the sum, so E is pipelined
// and only d = f(d, e) is a one-cycle loop.
//
// Pipelining (PIPE = 1, the default; issue 22, ECP5 at 125 MHz): the exp units are
// hwa_exp_unit with PIPE = 1 (ELAT = 19 at the defaults, hwa_pkg::exp_unit_lat), the
// reciprocal hwa_recip with PIPE = 1 (RLAT = 10 + 15·STEPS = 40, hwa_pkg::recip_lat), the
// output product E·r hwa_mul_pipe (4), z (1) and its rounding hwa_round_shift_pipe (3):
// OLAT = 8; every one of those products with operand registers of its own (MUL_IN_REG,
// IN_REG: on ECP5 the MULT18X18D's input and output registers, +1 cycle each); m - x
// is registered before the output exp unit (1). The rescale of a new
// running max, d = R_s(d·E) + ONE, cannot stay a one-cycle loop bit-exactly (the model
// rounds each rescale of the previous, rounded sum), so its product runs through
// hwa_mul_pipe (3) and its rounding (1): the sum stage takes no element in the MB = 4
// cycles after each element that raises the running max (an unmasked, unskipped
// element above the max before it, other than the row's opener; with OFF_BY_ONE every
// one above the zero logit counts), and the unit holds s_axis_tready low for MB cycles
// per such element, from the second cycle after accepting it: its new-max flag is a
// register (the comparator x > m feeds only it and the running max), the hold (a
// counter of the cycles owed) is folded into hwa_row_stream's registered s_axis_tready
// (its s_hold), so tready is a flip-flop and nothing is ANDed into the valid. The
// element accepted in the cycle after a new max (its ready already decided) waits MB
// cycles in stage A, the one-entry buffer behind the registered ready; two new maxima
// in a row owe 2·MB held cycles. PIPE = 0: the original one-stage schedule
// (ELAT 2, RLAT 3 + STEPS, OLAT 0, MB 0).
// Buffering (hwa_row_stream): circular buffer of {zero bit, code} words (a row streams
// out while the next streams in), BUF_DEPTH or (PIPE) the power of 2 >= ROW_MAX +
// ROW_LAT + 4 when larger; up to ROWQ rows (PIPE: or the power of 2 >= 4 + (ROW_LAT +
// ROW_MAX + 15) / 16) wait for output; ROW_LAT = ELAT + RLAT + 2 + 2·MB.
// Latency: last input -> first output of its row = 5 + 2·ELAT + RLAT + OLAT + (PIPE)
// cycles when the output is free, + MB when the row's last element was accepted in the
// cycle after a new max (it waits in stage A), + MB when it is a new max itself (its
// rescale); then one element per cycle: last input -> last output N + 91 at the
// defaults (N + 13 with PIPE = 0, and before issue 22), at most N + 99. SKIP and
// UNIFIED add no cycle; OUT_CODE adds one.
// Throughput: input one element per cycle except MB held cycles per new running max,
// starting the second cycle after it (rows of n elements in all with k new maxima take
// n + 4k input cycles, a row's last held cycles possibly after the next row's first
// element: random rows have ~ln n new maxima, an ascending row n - 1, the worst case
// 1/5 rate); output one element per cycle; rows back to back lose no other cycle
// (tests/test_rtl_throughput.py, hwapprox.rtl_sim.units.online_schedule).
// Rows of 1..ROW_MAX elements. A longer row is dropped (consumed up to its
// tlast, nothing output for it) and row_err pulses for one cycle; the next row
// is processed normally (see hwa_row_stream).
// Parameter defaults: the default OnlineSoftmax spec's hw_params() with
// row_stream_params(64) (tests/test_rtl_lint.py checks they agree).
`default_nettype none
module hwa_softmax_online #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b0,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int OUT_SHIFT = 32,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 8,
    // pipelining (issue 22): 1 = registered stages for ECP5 at 125 MHz (exp units,
    // reciprocal, output product, the rescale multiply with its new-max input bubbles);
    // 0 = the original schedule (one-cycle rescale, full rate on every row)
    parameter bit PIPE = 1'b1,
    // Softmax_1 (OnlineSoftmax.off_by_one): every row's state starts at a zero logit
    parameter bit OFF_BY_ONE = 1'b0,
    // clipped softmax (OnlineSoftmax.clip_gamma/clip_zeta): y = clamp(cast(E*r_s + G'), 0, ONE)
    parameter bit CLIP = 1'b0,
    parameter int CLIP_F = 16,
    parameter int CLIP_S = 65536,
    parameter int CLIP_G = 0,
    parameter int CLIP_ONE = 65535,
    parameter int CS_W = 21,
    parameter int CRS_W = 42,
    parameter int CZ_W = 56,
    // exp unit (see hwa_exp_unit)
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
    parameter int V_W = 45,
    parameter int LUT_BITS = 12,
    parameter int LIM_BITS = 14,
    parameter int LUT_SHIFT = 2,
    // running sum
    parameter int SUM_W = 40,
    parameter int SUM_F = 29,
    parameter int SUM_RND = 2,
    parameter int RESCALE_W = 69,  // d*E, unsigned (hw_params: SUM_W + EXP_W)
    // reciprocal (see hwa_recip)
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
    // the output product E*r, unsigned (hw_params: EXP_W + R_W)
    parameter int OUTP_W = 50,
    // threshold skipping (OnlineSoftmax.skip_threshold; BLASST): skip when m - x > SKIP_TAU
    parameter bit SKIP = 1'b0,
    parameter longint SKIP_TAU = 64'd0,
    // unified max (OnlineSoftmax.unified_max; FlashDecoding++): the static max PHI, the
    // safe sum floor U_FLOOR = ONE >> U_LOW, the shift s <= U_LOW (U_S_W bits) and
    // (E*r) << s (UOUTP_W bits)
    parameter bit UNIFIED = 1'b0,
    parameter int PHI = 0,
    parameter int U_LOW = 4,
    parameter longint U_FLOOR = 64'd33554432,
    parameter int U_S_W = 3,
    parameter int UOUTP_W = 54,
    // log-coded outputs (SoftmaxSpec.out_code; RepQ-ViT): 0 linear, 1 log2, 2 log-sqrt2
    parameter int OUT_CODE = 0,
    parameter int CODE_BITS = 4,
    parameter int CODE_ZERO = 15,
    parameter int CODE_NW = 16,
    parameter int CODE_F = 16,
    parameter longint CODE_C12 = 64'd46340,
    parameter longint CODE_C14 = 64'd38967,
    parameter longint CODE_C34 = 64'd55108,
    parameter string EXP_FILE = "",
    parameter string RECIP_FILE = ""
) (
    input  logic             clk,
    input  logic             rst,
    input  logic [IN_W-1:0]  s_axis_tdata,
    input  logic             s_axis_tvalid,
    output logic             s_axis_tready,
    input  logic             s_axis_tlast,
    input  logic             s_axis_tuser,  // mask bit: 1 = masked out
    // out_fmt codes, or (OUT_CODE) CODE_BITS-bit log codes
    output logic [(OUT_CODE != 0 ? CODE_BITS : OUT_W)-1:0] m_axis_tdata,
    output logic             m_axis_tvalid,
    input  logic             m_axis_tready,
    output logic             m_axis_tlast,
    output logic             row_err
);

  localparam int DW = IN_W;  // |x_j - m| < 2^IN_W
  localparam int SW = 8;

  if (IN_W < 2 || IN_W > 32 || OUT_W < 1 || OUT_W > 40 || ROW_MAX < 1
      || (1 << N_BITS) <= ROW_MAX || SUM_F < EXP_F || SUM_W > 62 || RESCALE_W < SUM_W + EXP_W
      || OUTP_W < EXP_W + R_W
      || (CLIP && (CLIP_F < 1 || CS_W < CLIP_F + 5 || CRS_W < R_W + CS_W
                   || CZ_W < EXP_W + R_W + 6))) begin : g_bad_w
    $error("hwa_softmax_online %m: invalid IN_W=%0d OUT_W=%0d ROW_MAX=%0d N_BITS=%0d SUM_W=%0d SUM_F=%0d EXP_F=%0d RESCALE_W=%0d (>= SUM_W + EXP_W) OUTP_W=%0d (>= EXP_W + R_W) (CLIP=%0d: CLIP_F=%0d CS_W=%0d CRS_W=%0d CZ_W=%0d)",
           IN_W, OUT_W, ROW_MAX, N_BITS, SUM_W, SUM_F, EXP_F, RESCALE_W, OUTP_W, CLIP, CLIP_F, CS_W,
           CRS_W, CZ_W);
  end
  if ((SKIP && (SKIP_TAU < 1 || SKIP_TAU >= (64'd1 << IN_W) || UNIFIED))
      || (UNIFIED && (OFF_BY_ONE || CLIP || U_LOW < 0 || U_LOW > SUM_F || U_LOW > 16
                      || U_FLOOR != (64'd1 << (SUM_F - U_LOW)) || (1 << U_S_W) <= U_LOW
                      || UOUTP_W < EXP_W + R_W + U_LOW))) begin : g_bad_opt
    $error("hwa_softmax_online %m: invalid options SKIP=%0d SKIP_TAU=%0d (1..2^IN_W-1) UNIFIED=%0d (not with OFF_BY_ONE=%0d, CLIP=%0d, SKIP) U_LOW=%0d U_FLOOR=%0d (ONE >> U_LOW) U_S_W=%0d UOUTP_W=%0d",
           SKIP, SKIP_TAU, UNIFIED, OFF_BY_ONE, CLIP, U_LOW, U_FLOOR, U_S_W, UOUTP_W);
  end
  if (OUT_CODE != 0 && (OUT_CODE > 2 || CODE_NW != OUT_W || CODE_BITS < 2 || CODE_BITS > 8
                        || CODE_ZERO != (1 << CODE_BITS) - 1)) begin : g_bad_code
    $error("hwa_softmax_online %m: invalid OUT_CODE=%0d (0..2) CODE_NW=%0d (= OUT_W=%0d) CODE_BITS=%0d (2..8) CODE_ZERO=%0d (2^CODE_BITS - 1)",
           OUT_CODE, CODE_NW, OUT_W, CODE_BITS, CODE_ZERO);
  end
  // ---- latencies (derived) and the buffer geometry they need ----------------------
  // ELAT: hwa_exp_unit; RLAT: hwa_recip; MB: the rescale multiply's input bubbles after
  // a new running max (hwa_mul_pipe 3 + its rounding 1); OLAT: the output product's
  // stages (hwa_mul_pipe 4 with its operand registers, the shift/offset 1, the rounding
  // 3 when OUT_SHIFT > 0); PIPE: every product of the exp units, the reciprocal and the
  // output with operand registers of its own (MUL_IN_REG / IN_REG)
  localparam int ELAT = hwa_pkg::exp_unit_lat(PIPE, BASE2, LOG2E, PROD_SHIFT, PIPE);
  localparam int RLAT = hwa_pkg::recip_lat(PIPE, NEWTON, STEPS, PIPE);
  localparam int MB = PIPE ? 4 : 0;
  localparam int OLAT = PIPE ? 5 + ((OUT_SHIFT > 0) ? 3 : 0) : 0;
  // in_last -> ctx_v, at most: the last element may wait MB cycles in stage A and then
  // be a new max (its rescale, MB)
  localparam int ROW_LAT = ELAT + RLAT + 2 + 2 * MB;
  localparam int BUF_NEED = ROW_MAX + ROW_LAT + 4;
  localparam int BUF_U = (PIPE && BUF_NEED > BUF_DEPTH) ? 1 << $clog2(BUF_NEED) : BUF_DEPTH;
  localparam int ROWQ_NEED = 4 + (ROW_LAT + ROW_MAX + 15) / 16;
  localparam int ROWQ_U = (PIPE && ROWQ_NEED > ROWQ) ? 1 << $clog2(ROWQ_NEED) : ROWQ;

  // ---- input: row buffer, queue and output sequencer (hwa_row_stream) -------------
  // the buffered word is {zero bit, code}: the zero bit is the mask bit, or (SKIP) the
  // skip decision made as the element enters -- either way the element takes no part
  // in max or sum and outputs 0
  // per row: the output's reference max (m, or UNIFIED's PHI on a safe row), (UNIFIED)
  // the shift s, and r = 1/d (CLIP: r_s = round(S·r / 2^CLIP_F), the stretch folded in)
  localparam int RC_W = CLIP ? CRS_W : R_W;
  localparam int S_W = UNIFIED ? U_S_W : 0;
  localparam int CTX_W = IN_W + S_W + RC_W;
  logic in_v, in_first, in_last, ctx_v, ce, rd_issue, o1_v, o1_l;
  logic [IN_W:0] in_w, o1_w;
  logic o1_mask;
  logic signed [IN_W-1:0] o1_xs;
  assign {o1_mask, o1_xs} = o1_w;
  logic [N_BITS-1:0] in_n, o1_n, rd_idx;
  logic [CTX_W-1:0] ctx, o1_ctx;
  logic zero_in;  // masked or skipped
  // PIPE: MB cycles of s_axis_tready low per accepted new running max (g_hold): the
  // hold request goes to hwa_row_stream, which folds it into its registered ready
  logic hold_nxt;
  hwa_row_stream #(
      .IN_W(IN_W + 1),
      .CTX_W(CTX_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_U),
      .ROWQ(ROWQ_U),
      .N_BITS(N_BITS)
  ) u_rows (
      .clk(clk),
      .rst(rst),
      .s_axis_tdata({zero_in, s_axis_tdata}),
      .s_axis_tvalid(s_axis_tvalid),
      .s_axis_tready(s_axis_tready),
      .s_axis_tlast(s_axis_tlast),
      .s_hold(hold_nxt),
      .in_v(in_v),
      .in_x(in_w),
      .in_first(in_first),
      .in_last(in_last),
      .in_n(in_n),
      .ctx_v(ctx_v),
      .ctx(ctx),
      .ce(ce),
      .rd_issue(rd_issue),
      .rd_idx(rd_idx),
      .o1_v(o1_v),
      .o1_l(o1_l),
      .o1_x(o1_w),
      .o1_ctx(o1_ctx),
      .o1_n(o1_n),
      .row_err(row_err)
  );
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_rows;  // the sequencer's length and position outputs and the ingest view's
  assign unused_rows = ^{in_n, o1_n, rd_idx, rd_issue, in_w};  // word (= the input here)
  /* verilator lint_on UNUSEDSIGNAL */

  // stage A: running max over the unmasked elements; the exp argument against the
  // previous max. A row starts empty (its first unmasked element sets m), or with
  // OFF_BY_ONE at the zero logit (m = 0). A masked element changes nothing.
  // SKIP: an element that is not a new max (and does not open the row) and lies more
  // than SKIP_TAU below the running max before it is skipped: decided here, from the
  // input port and the running max, so its zero bit is buffered with its code.
  logic signed [IN_W-1:0] x_in, m_reg, m_prev;
  // diff = x - m and ndiff = m - x, two subtractions side by side (IN_W + 1 bits: no
  // overflow); x > m is ndiff's sign bit, the end of one carry chain: no zero test, and
  // nothing shared with diff (the running-max loop is m -> that chain -> the select)
  logic signed [IN_W:0] diff, ndiff;
  logic a_v, a_first, a_last, a_new, a_live, a_start, starts, live, seen_reg, seen_prev;
  logic gt;  // x > the running max before it
  logic skip_in;
  logic [DW-1:0] a_delta;
  logic signed [IN_W-1:0] a_m;
  assign x_in = s_axis_tdata;
  assign seen_prev = !in_first && seen_reg;  // an unmasked element earlier in this row
  assign m_prev = (OFF_BY_ONE && in_first) ? '0 : m_reg;
  assign diff = (IN_W + 1)'(x_in) - (IN_W + 1)'(m_prev);
  assign ndiff = (IN_W + 1)'(m_prev) - (IN_W + 1)'(x_in);
  assign gt = ndiff[IN_W];
  if (SKIP) begin : g_skip
    localparam logic [IN_W:0] TAU = (IN_W + 1)'(SKIP_TAU);
    // ndiff = m - x when not a new max: in [0, 2^IN_W - 1]
    assign skip_in = !s_axis_tuser && (seen_prev || OFF_BY_ONE) && !gt
        && ($unsigned(ndiff) > TAU);
  end else begin : g_noskip
    assign skip_in = 1'b0;
  end
  assign zero_in = s_axis_tuser || skip_in;
  assign live = !zero_in;
  assign starts = live && !seen_prev && !OFF_BY_ONE;  // it opens the empty state
  // a_in: an element was accepted in the previous cycle (it is in stage A's registers);
  // a_v: the element in A goes on to the exp unit and the sum this cycle; a_wait: it
  // stays in A (PIPE: a rescale is under way), so A keeps its registers
  logic a_in, a_wait;
  if (PIPE) begin : g_hold
    // The new-max flag is a register (a_new): nothing on the input handshake waits for
    // the comparator. Input side: an accepted new max (a_in && a_new, the cycle after
    // it was accepted) owes MB held cycles of s_axis_tready, paid one per cycle from the
    // next one on (hold_nxt: "low in the next cycle"; owe_cnt: the cycles still owed
    // after this one's). So the element accepted in the cycle after a new max is in
    // flight: it waits in A. Sum side: an element leaves A (a_v) only MB cycles or more
    // after a new max left it (gap_cnt), so the rescale d = R_s(d·E) + ONE is in d_reg
    // when the next element reaches the sum. A waiting element leaves A in the cycle
    // before the next accepted one reaches it (the MB owed cycles cover the MB gap
    // cycles, shifted by one), so A never holds two; the one in flight after a new max
    // reaches the sum MB cycles late, the rest on time.
    localparam int OWE_W = $clog2(2 * MB);  // at most 2·MB - 2 owed: two new maxima in a row
    localparam int GAP_W = $clog2(MB + 1);
    logic [OWE_W-1:0] owe_cnt;
    logic [GAP_W-1:0] gap_cnt;
    logic a_full;  // A holds an element that has not gone on
    assign hold_nxt = (a_in && a_new) || (owe_cnt != 0);
    assign a_v = a_full && (gap_cnt == 0);
    assign a_wait = a_full && (gap_cnt != 0);
    always_ff @(posedge clk) begin
      if (rst) begin
        owe_cnt <= '0;
        gap_cnt <= '0;
        a_full <= 1'b0;
      end else begin
        if (a_in && a_new) owe_cnt <= owe_cnt + OWE_W'(MB - 1);
        else if (owe_cnt != 0) owe_cnt <= owe_cnt - 1'b1;
        if (a_v && a_new) gap_cnt <= GAP_W'(MB);
        else if (gap_cnt != 0) gap_cnt <= gap_cnt - 1'b1;
        a_full <= in_v || a_wait;
      end
    end
`ifndef SYNTHESIS
    always_ff @(posedge clk) begin
      if (!rst && in_v && a_wait) begin
        $error("hwa_softmax_online %m: an element was accepted while one waits in stage A");
      end
    end
`endif
  end else begin : g_nohold
    assign hold_nxt = 1'b0;
    assign a_v = a_in;
    assign a_wait = 1'b0;
  end
  always_ff @(posedge clk) begin
    if (rst) a_in <= 1'b0;
    else a_in <= in_v;
    // the stage's data load every cycle but while an element waits in A (a_v marks an
    // element going on; no enable fanout from in_v)
    if (!a_wait) begin
      a_first <= in_first;
      a_last <= in_last;
      a_live <= live;
      a_start <= starts;
      a_new <= live && !starts && gt;
      a_delta <= starts ? '0 : DW'(gt ? diff : ndiff);
      a_m <= (starts || (live && gt)) ? x_in : m_prev;
    end
    if (in_v) begin  // the running state: accepted elements only
      m_reg <= (starts || (live && gt)) ? x_in : m_prev;
      seen_reg <= seen_prev || live;
    end
  end

  // stages B, C: E(delta)
  logic [EXP_W-1:0] e_in;
  hwa_exp_unit #(
      .D_W(DW),
      .PIPE(PIPE),
      .MUL_IN_REG(PIPE),
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
      .V_W(V_W),
      .LUT_BITS(LUT_BITS),
      .LIM_BITS(LIM_BITS),
      .LUT_SHIFT(LUT_SHIFT),
      .TABLE_FILE(EXP_FILE)
  ) u_exp_in (
      .clk(clk),
      .en (1'b1),
      .d  (a_delta),
      .e  (e_in)
  );
  // the element's flags alongside E (ELAT stages)
  logic c_v, c_first, c_last, c_new, c_live, c_start;
  logic signed [IN_W-1:0] c_m;
  hwa_delay #(
      .W(1),
      .L(ELAT)
  ) u_cv (
      .clk(clk),
      .rst(rst),
      .en (1'b1),
      .d  (a_v),
      .q  (c_v)
  );
  hwa_delay #(
      .W(5 + IN_W),
      .L(ELAT)
  ) u_cf (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  ({a_first, a_last, a_new, a_live, a_start, a_m}),
      .q  ({c_first, c_last, c_new, c_live, c_start, c_m})
  );

  // stage D: the running sum (the only one-cycle loop)
  localparam logic [SUM_W-1:0] ONE = SUM_W'(1) << SUM_F;
  logic [SUM_W-1:0] d_reg, d_nxt;
  logic [RESCALE_W-1:0] de;  // d*E < 2^(SUM_W + EXP_W), exact
  /* verilator lint_off UNUSEDSIGNAL */
  logic [RESCALE_W:0] de_r;  // d*e/2^EXP_F <= d: fits SUM_W bits
  /* verilator lint_on UNUSEDSIGNAL */
  logic [SUM_W-1:0] d_cur;  // the state before this element (OFF_BY_ONE: ONE at a row start)
  assign d_cur = (OFF_BY_ONE && c_first) ? ONE : d_reg;
  logic row_v, row_end;  // row_end: the row's sum is final in d_reg from the next cycle
  logic signed [IN_W-1:0] row_m;
  if (PIPE) begin : g_rescale_pipe
    // a new max launches d·E through hwa_mul_pipe (3 stages) and its rounding (1): the
    // input was held for MB cycles after that element, so no element reaches this stage
    // until d_reg = R_s(d·E) + ONE (merged in the fourth cycle after it)
    logic launch, m3, l3, m4, l4;
    logic [SUM_W-1:0] q4;
    logic inc4;
    assign launch = c_v && c_live && !c_start && c_new;
    hwa_mul_pipe #(
        .A_W(SUM_W + 1),
        .B_W(EXP_W),
        .B_SIGNED(1'b0),
        .P_W(RESCALE_W)
    ) u_rescale (
        .clk(clk),
        .en (1'b1),
        .a  ($signed({1'b0, d_cur})),
        .b  (e_in),
        .p  (de)
    );
    hwa_delay #(
        .W(2),
        .L(3)
    ) u_ml (
        .clk(clk),
        .rst(rst),
        .en (1'b1),
        .d  ({launch, c_last}),
        .q  ({m3, l3})
    );
    assign de_r = (RESCALE_W + 1)'(de >> EXP_F);  // the floor quotient; the increment below
    logic half, below;
    assign half = de[EXP_F-1];
    if (EXP_F > 1) begin : g_below
      assign below = |de[EXP_F-2:0];
    end else begin : g_nobelow
      assign below = 1'b0;
    end
    always_ff @(posedge clk) begin
      if (rst) m4 <= 1'b0;
      else m4 <= m3;
      l4 <= l3;
      q4 <= SUM_W'(de_r);
      inc4 <= hwa_pkg::round_up(SUM_RND, half & below, half & ~below, half | below, 1'b0,
                                de_r[0]);
    end
    always_comb begin
      if (!c_live) d_nxt = d_cur;  // masked or skipped: no change
      else if (c_start) d_nxt = ONE;
      else d_nxt = d_cur + (SUM_W'(e_in) << (SUM_F - EXP_F));
    end
    always_ff @(posedge clk) begin
      if (rst) d_reg <= '0;
      else if (m4) d_reg <= q4 + ONE + SUM_W'(inc4);
      else if (c_v && !launch) d_reg <= d_nxt;
    end
    assign row_end = (c_v && c_last && !launch) || (m4 && l4);
`ifndef SYNTHESIS
    always_ff @(posedge clk) begin
      if (!rst && c_v && (m3 || m4 || $past(launch) || $past(launch, 2))) begin
        $error("hwa_softmax_online %m: an element reached the sum during a rescale");
      end
    end
`endif
  end else begin : g_rescale
    assign de = RESCALE_W'(d_cur) * RESCALE_W'(e_in);
    hwa_round_shift #(
        .IN_W (RESCALE_W + 1),
        .SH_W (SW),
        .OUT_W(RESCALE_W + 1),
        .MODE (SUM_RND)
    ) u_rescale (
        .x ($signed({1'b0, de})),
        .sh(SW'(EXP_F)),
        .y (de_r)
    );
    always_comb begin
      if (!c_live) d_nxt = d_cur;  // masked or skipped: no change
      else if (c_start) d_nxt = ONE;
      else if (c_new) d_nxt = SUM_W'(de_r) + ONE;
      else d_nxt = d_cur + (SUM_W'(e_in) << (SUM_F - EXP_F));
    end
    always_ff @(posedge clk) begin
      if (rst) d_reg <= '0;
      else if (c_v) d_reg <= d_nxt;
    end
    assign row_end = c_v & c_last;
  end
  always_ff @(posedge clk) begin
    if (rst) row_v <= 1'b0;
    else row_v <= row_end;
    if (c_v & c_last) row_m <= c_m;
  end

  // per row: what the reciprocal divides and what the output stage takes. Exact path:
  // d and (m, s = 0). UNIFIED: alongside the exact state, d_phi = sum E(PHI - x) over
  // the unmasked elements (its own exp unit, exact adds: no max, no rescale) and
  // whether one lies above PHI; a row in the safe range (an unmasked element, none
  // above PHI, d_phi >= U_FLOOR) takes d_phi << s (the smallest s with d_phi << s >=
  // ONE, s <= U_LOW) and (PHI, s); any other row is already on the exact path, so the
  // fallback costs no second read of the row and no cycle.
  logic [SUM_W-1:0] rd_in;  // what 1/. takes at row_v
  logic signed [IN_W-1:0] row_ref;  // the output's reference max
  logic [(UNIFIED ? U_S_W : 1)-1:0] row_s;
  if (UNIFIED) begin : g_uni
    localparam logic signed [IN_W-1:0] PHI_X = IN_W'(PHI);
    localparam logic [SUM_W-1:0] FLOOR = SUM_W'(U_FLOOR);
    // stage A: the phi argument (an element above PHI leaves the safe range)
    logic a_uover, c_uover;
    logic [DW-1:0] a_udelta;
    always_ff @(posedge clk) begin
      if (in_v) begin
        a_uover <= live && (x_in > PHI_X);
        a_udelta <= (live && !(x_in > PHI_X)) ? DW'(PHI_X - x_in) : '0;
      end
    end
    hwa_delay #(
        .W(1),
        .L(ELAT)
    ) u_cu (
        .clk(clk),
        .rst(1'b0),
        .en (1'b1),
        .d  (a_uover),
        .q  (c_uover)
    );
    logic [EXP_W-1:0] e_phi;
    hwa_exp_unit #(
        .D_W(DW),
        .PIPE(PIPE),
        .MUL_IN_REG(PIPE),
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
        .V_W(V_W),
        .LUT_BITS(LUT_BITS),
        .LIM_BITS(LIM_BITS),
        .LUT_SHIFT(LUT_SHIFT),
        .TABLE_FILE(EXP_FILE)
    ) u_exp_phi (
        .clk(clk),
        .en (1'b1),
        .d  (a_udelta),
        .e  (e_phi)
    );
    // stage D: the phi sum (a row start clears it)
    logic [SUM_W-1:0] du_reg, du_cur;
    logic uover_reg, uany_reg;
    assign du_cur = c_first ? '0 : du_reg;
    always_ff @(posedge clk) begin
      if (rst) begin
        du_reg <= '0;
        uover_reg <= 1'b0;
        uany_reg <= 1'b0;
      end else if (c_v) begin
        du_reg <= du_cur + ((c_live && !c_uover) ? (SUM_W'(e_phi) << (SUM_F - EXP_F)) : '0);
        uover_reg <= (!c_first && uover_reg) || (c_live && c_uover);
        uany_reg <= (!c_first && uany_reg) || c_live;
      end
    end
    // at row_v: the safe-range test and the normalising shift
    logic safe;
    logic [SUM_W-1:0] dn;
    logic [U_S_W-1:0] s_n;
    assign safe = uany_reg && !uover_reg && (du_reg >= FLOOR);
    always_comb begin
      dn = du_reg;
      s_n = '0;
      for (int k = 0; k < U_LOW; k++) begin
        if (dn < ONE) begin
          dn = dn << 1;
          s_n = s_n + 1'b1;
        end
      end
    end
    assign rd_in = safe ? dn : d_reg;
    assign row_ref = safe ? PHI_X : row_m;
    assign row_s = safe ? s_n : '0;
  end else begin : g_exact
    assign rd_in = d_reg;
    assign row_ref = row_m;
    assign row_s = '0;
  end

  // per row: r = 1/d; the row's reference max (and shift) travel alongside, and all go
  // to the row queue
  localparam int MQ_W = IN_W + (UNIFIED ? U_S_W : 1);
  logic r_v;
  logic [R_W-1:0] r_val;
  hwa_recip #(
      .D_W(SUM_W),
      .PIPE(PIPE),
      .MUL_IN_REG(PIPE),
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
      .d(rd_in),
      .out_valid(r_v),
      .r(r_val)
  );
  logic [MQ_W-1:0] mq_pipe[RLAT];
  always_ff @(posedge clk) begin
    mq_pipe[0] <= {row_ref, row_s};
    for (int s = 1; s < RLAT; s++) mq_pipe[s] <= mq_pipe[s-1];
  end
  assign ctx_v = r_v;
  logic [RC_W-1:0] r_ctx;
  if (CLIP) begin : g_clip_r
    logic [CRS_W-1:0] rsp;
    assign rsp = CRS_W'(r_val) * CRS_W'(CLIP_S);
    assign r_ctx = RC_W'((rsp + (CRS_W'(1) << (CLIP_F - 1))) >> CLIP_F);  // half up
  end else begin : g_plain_r
    assign r_ctx = r_val;
  end

  // ---- output: stall-all pipeline ---------------------------------------------------
  // o1 (in hwa_row_stream): the buffered x and the row context
  logic signed [IN_W-1:0] o1_m;
  logic [(UNIFIED ? U_S_W : 1)-1:0] o1_s;
  logic [RC_W-1:0] o1_r;
  // ce: the output skid buffer's registered ready (hwa_skid, at the end)
  if (UNIFIED) begin : g_ctx_s
    assign ctx = {mq_pipe[RLAT-1], r_ctx};
    assign {o1_m, o1_s, o1_r} = o1_ctx;
  end else begin : g_ctx
    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_s;  // s is always 0 on the exact path
    assign unused_s = mq_pipe[RLAT-1][0];
    /* verilator lint_on UNUSEDSIGNAL */
    assign ctx = {mq_pipe[RLAT-1][MQ_W-1:1], r_ctx};
    assign {o1_m, o1_r} = o1_ctx;
    assign o1_s = '0;
  end
  // o2, o3: E(m - x) (UNIFIED safe rows: E(PHI - x))
  logic [EXP_W-1:0] e_out;
  // PIPE: m - x registered (OD = 1 stage) before the exp unit's multiplier
  localparam int OD = PIPE ? 1 : 0;
  logic [DW-1:0] o_delta, o_delta_c;
  assign o_delta_c = DW'((IN_W + 1)'(o1_m) - (IN_W + 1)'(o1_xs));
  if (PIPE) begin : g_od
    always_ff @(posedge clk) begin
      if (ce) o_delta <= o_delta_c;
    end
  end else begin : g_nod
    assign o_delta = o_delta_c;
  end
  hwa_exp_unit #(
      .D_W(DW),
      .PIPE(PIPE),
      .MUL_IN_REG(PIPE),
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
      .V_W(V_W),
      .LUT_BITS(LUT_BITS),
      .LIM_BITS(LIM_BITS),
      .LUT_SHIFT(LUT_SHIFT),
      .TABLE_FILE(EXP_FILE)
  ) u_exp_out (
      .clk(clk),
      .en (ce),
      .d  (o_delta),
      .e  (e_out)
  );
  // the element's flags, r and s alongside E (ELAT ce stages)
  localparam int US_W = UNIFIED ? U_S_W : 1;
  logic o3_v, o3_l, o3_mask, o4_v, o4_l, o4_mask;
  logic [RC_W-1:0] o3_r;
  logic [US_W-1:0] o3_s;
  hwa_delay #(
      .W(1),
      .L(ELAT + OD)
  ) u_o3v (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  (o1_v),
      .q  (o3_v)
  );
  hwa_delay #(
      .W(2 + RC_W + US_W),
      .L(ELAT + OD)
  ) u_o3f (
      .clk(clk),
      .rst(1'b0),
      .en (ce),
      .d  ({o1_l, o1_mask, o1_r, o1_s}),
      .q  ({o3_l, o3_mask, o3_r, o3_s})
  );
  // o4: y = cast_out(e * r) (UNIFIED: cast_out((e * r) << s), UOUTP_W bits); PIPE: the
  // product through hwa_mul_pipe, then z (the shift or offset) and the rounding
  // (hwa_round_shift_pipe) registered, OLAT ce stages; the flags alongside
  localparam int EP_W = CLIP ? CZ_W : (UNIFIED ? UOUTP_W : OUTP_W);
  localparam int YW = EP_W + ((OUT_SHIFT < 0) ? -OUT_SHIFT : 0) + 2;
  logic signed [YW-1:0] er, er_r, er_l;
  logic [OUT_W-1:0] y_c, y_o, y_z;
  hwa_delay #(
      .W(1),
      .L(OLAT)
  ) u_o4v (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  (o3_v),
      .q  (o4_v)
  );
  hwa_delay #(
      .W(2),
      .L(OLAT)
  ) u_o4f (
      .clk(clk),
      .rst(1'b0),
      .en (ce),
      .d  ({o3_l, o3_mask}),
      .q  ({o4_l, o4_mask})
  );
  if (PIPE) begin : g_prod_pipe
    localparam int ZP_W = (YW > RC_W) ? YW : RC_W;
    logic signed [ZP_W-1:0] pz;
    logic [US_W-1:0] s3;
    hwa_mul_pipe #(
        .A_W(EXP_W + 1),
        .B_W(RC_W),
        .B_SIGNED(1'b0),
        .P_W(ZP_W),
        .IN_REG(1'b1)
    ) u_er (
        .clk(clk),
        .en (ce),
        .a  ($signed({1'b0, e_out})),
        .b  (o3_r),
        .p  (pz)
    );
    hwa_delay #(
        .W(US_W),
        .L(4)
    ) u_s3 (
        .clk(clk),
        .rst(1'b0),
        .en (ce),
        .d  (o3_s),
        .q  (s3)
    );
    /* verilator lint_off UNUSEDSIGNAL */
    logic signed [ZP_W-1:0] zc;  // the bits above YW: sign copies (CLIP) or none
    /* verilator lint_on UNUSEDSIGNAL */
    if (CLIP) begin : g_zc
      assign zc = pz + (ZP_W'(CLIP_G) <<< (EXP_F + R_F - CLIP_F));
    end else if (UNIFIED) begin : g_zu
      assign zc = ZP_W'(YW'(pz) <<< s3);
    end else begin : g_zp
      assign zc = pz;
    end
    if (!UNIFIED) begin : g_no_s3
      /* verilator lint_off UNUSEDSIGNAL */
      logic unused_s3;  // s is 0 on the exact path
      assign unused_s3 = s3[0];
      /* verilator lint_on UNUSEDSIGNAL */
    end
    always_ff @(posedge clk) begin
      if (ce) er <= YW'(zc);
    end
    if (OUT_SHIFT > 0) begin : g_rs
      hwa_round_shift_pipe #(
          .IN_W (YW),
          .SH_W (SW),
          .OUT_W(YW),
          .MODE (OUT_RND)
      ) u_out (
          .clk(clk),
          .en (ce),
          .x  (er),
          .sh (SW'(OUT_SHIFT)),
          .y  (er_r)
      );
      assign er_l = er_r;
    end else begin : g_ls
      assign er_r = '0;
      assign er_l = er <<< (-OUT_SHIFT);
    end
  end else if (CLIP) begin : g_clip_z  // z = E·r_s + G·2^(EXP_F + R_F - CLIP_F), exact
    // r_s < 2^(R_F + 4) (S < 2^(CLIP_F + 4)): CRS_W may exceed YW at narrow formats, so
    // the product is formed at the wider of the two; z itself fits CZ_W < YW bits
    localparam int ZP_W = (YW > RC_W) ? YW : RC_W;
    /* verilator lint_off UNUSEDSIGNAL */
    logic signed [ZP_W-1:0] z_full;  // the bits above YW are sign copies
    /* verilator lint_on UNUSEDSIGNAL */
    assign z_full = ZP_W'(e_out) * ZP_W'(o3_r) + (ZP_W'(CLIP_G) <<< (EXP_F + R_F - CLIP_F));
    assign er = YW'(z_full);
  end else if (UNIFIED) begin : g_uni_z
    assign er = (YW'(e_out) * YW'(o3_r)) <<< o3_s;
  end else begin : g_plain_z
    assign er = YW'(e_out) * YW'(o3_r);
  end
  if (!UNIFIED) begin : g_no_s
    /* verilator lint_off UNUSEDSIGNAL */
    logic unused_o3s;  // s is 0 on the exact path
    assign unused_o3s = o3_s[0];
    /* verilator lint_on UNUSEDSIGNAL */
  end
  if (PIPE) begin : g_pipe_rs
    // above (g_prod_pipe)
  end else if (OUT_SHIFT > 0) begin : g_rs
    hwa_round_shift #(
        .IN_W (YW),
        .SH_W (SW),
        .OUT_W(YW),
        .MODE (OUT_RND)
    ) u_out (
        .x (er),
        .sh(SW'(OUT_SHIFT)),
        .y (er_r)
    );
    assign er_l = er_r;
  end else begin : g_ls
    assign er_l = er <<< (-OUT_SHIFT);
  end
  hwa_sat #(
      .IN_W      (YW),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_sat (
      .x(er_l),
      .y(y_c)
  );
  if (CLIP) begin : g_clamp  // clamp to [0, 1.0] (CLIP_ONE: 1.0 or the largest code)
    logic neg;
    assign neg = OUT_SIGNED && y_c[OUT_W-1];
    /* verilator lint_off CMPCONST */  // constant when 1.0 is above the largest code
    assign y_o = neg ? '0 : (({1'b0, y_c} > (OUT_W + 1)'(CLIP_ONE)) ? OUT_W'(CLIP_ONE) : y_c);
    /* verilator lint_on CMPCONST */
  end else begin : g_noclamp
    assign y_o = y_c;
  end
  assign y_z = o4_mask ? '0 : y_o;  // a masked (or skipped) element outputs 0
  // the output register, or (OUT_CODE) one more and the log code (hwa_log_code)
  localparam int OW = OUT_CODE != 0 ? CODE_BITS : OUT_W;
  logic o_v, o_l;
  logic [OW-1:0] o_y;
  hwa_out_code #(
      .W(OUT_W),
      .SIGNED(OUT_SIGNED),
      .F(CODE_F),
      .FORM(OUT_CODE),
      .BITS(CODE_BITS),
      .C12(CODE_C12),
      .C14(CODE_C14),
      .C34(CODE_C34)
  ) u_out (
      .clk  (clk),
      .rst  (rst),
      .ce   (ce),
      .in_v (o4_v),
      .in_l (o4_l),
      .in_y (y_z),
      .out_v(o_v),
      .out_l(o_l),
      .out_y(o_y)
  );
  // output register -> skid buffer -> m_axis (ce: its registered ready)
  hwa_skid #(
      .W(OW)
  ) u_skid (
      .clk(clk),
      .rst(rst),
      .in_v(o_v),
      .in_l(o_l),
      .in_d(o_y),
      .ce(ce),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast)
  );

endmodule
`default_nettype wire
