// hwa_row_stream -- the row buffer, row queue and output sequencer of every row-wise
// unit (hwa_softmax_online, hwa_softmax_softermax, hwa_softmax_3pass, the LayerNorms):
// rows of 1..ROW_MAX raw input codes in on s_axis (tlast on the last one), re-read
// once, element by element, after the unit has computed the row's context (its max
// and 1/sum, its mean and 1/sqrt, ...).
//
// Ingest (combinational view of the accepted element, for the unit's one-pass stage):
//   in_v     an element of a row within ROW_MAX was accepted this cycle;
//   in_x     its code (= s_axis_tdata); in_first: it starts a row; in_last: it ends
//            one (= s_axis_tlast); in_n: its 1-based position in the row.
//   The unit computes the row's context from these and hands it in with a one-cycle
//   ctx_v pulse (at most one per row, in row order, a cycle or more after the row's
//   in_last; any latency, rows pipelined).
// Input handshake (issue 22): s_axis_tready is a flip-flop. It is computed a cycle
//   ahead from the registered buffer occupancy and row count (exact: the ready is high
//   whenever the element would find a place, as a combinational ready from the counts
//   would be), this cycle's accept, and the unit's s_hold: s_hold high in a cycle
//   (it may depend on that cycle's in_v) holds s_axis_tready low in the next one --
//   how a unit pauses its input without ANDing anything into valid or ready. The
//   occupancy and row counts take the accept a cycle late (registered, low fanout).
// Output (stall-all pipeline, advancing when ce is high; ce is the unit's output
//   register enable: the registered ready of its output skid buffer, hwa_skid):
//   rd_issue  an element is read this cycle (a row whose context arrived is pending);
//   rd_idx    its 0-based position in the row (for the unit's own synchronous
//             memories, read in the same ce cycle, e.g. LayerNorm's gamma/beta);
//   o1_*      one ce-cycle later: o1_v, o1_l (last of its row), o1_x (the buffered
//             code), o1_ctx (its row's context), o1_n (its row's length).
//   Rows leave in arrival order at one element per ce cycle; a row starts as soon
//   as its context is in the queue, also while later rows stream in.
// Buffering: circular buffer of BUF_DEPTH codes (s_axis stalls while full) and a
//   queue of ROWQ rows (s_axis stalls while ROWQ rows wait for output).
//   BUF_DEPTH >= 2*ROW_MAX lets a row stream out while the next streams in.
// Rows longer than ROW_MAX: defined behaviour, no deadlock. When element ROW_MAX+1
//   of a row is accepted, its first ROW_MAX codes are taken back out of the buffer,
//   row_err pulses high for one cycle (the next one) and the rest of the row is
//   consumed up to its tlast (s_axis_tready high meanwhile unless s_hold) and
//   dropped: the unit sees no in_last and no in_v for it, nothing is output for it,
//   and the next element starts a new row (in_first). Simulation also reports it
//   with $error.
// Latency: s_axis -> in_*: 0 cycles; ctx_v -> rd_issue of that row: the next cycle
//   when ce is high and no earlier row is pending; rd_issue -> o1_*: 1 ce cycle.
//   The handshake and output timing are cycle for cycle those of the combinational
//   ready before issue 22, except that an overlong row's codes free their places in
//   the buffer one cycle later.
// Parameters: all must be set (no defaults): IN_W code width; CTX_W context bits;
//   ROW_MAX; BUF_DEPTH (power of 2 >= ROW_MAX); ROWQ (power of 2 >= 2); N_BITS
//   (row length counter, 2^N_BITS > ROW_MAX). See approx/hwparams.row_stream_params.
`default_nettype none
module hwa_row_stream #(
    parameter int IN_W,
    parameter int CTX_W,
    parameter int ROW_MAX,
    parameter int BUF_DEPTH,
    parameter int ROWQ,
    parameter int N_BITS
) (
    input  logic              clk,
    input  logic              rst,
    // input stream
    input  logic [IN_W-1:0]   s_axis_tdata,
    input  logic              s_axis_tvalid,
    output logic              s_axis_tready,
    input  logic              s_axis_tlast,
    // the unit's hold: 1 = s_axis_tready low in the next cycle (may depend on in_v)
    input  logic              s_hold,
    // ingest view
    output logic              in_v,
    output logic [IN_W-1:0]   in_x,
    output logic              in_first,
    output logic              in_last,
    output logic [N_BITS-1:0] in_n,
    // the row's context from the unit
    input  logic              ctx_v,
    input  logic [CTX_W-1:0]  ctx,
    // output sequencer
    input  logic              ce,
    output logic              rd_issue,
    output logic [N_BITS-1:0] rd_idx,
    output logic              o1_v,
    output logic              o1_l,
    output logic [IN_W-1:0]   o1_x,
    output logic [CTX_W-1:0]  o1_ctx,
    output logic [N_BITS-1:0] o1_n,
    // a row longer than ROW_MAX was dropped (one-cycle pulse)
    output logic              row_err
);

  localparam int AW = $clog2(BUF_DEPTH);
  localparam int QW = $clog2(ROWQ);

  if (IN_W < 1 || CTX_W < 1 || ROW_MAX < 1 || N_BITS < 1 || (1 << N_BITS) <= ROW_MAX
      || BUF_DEPTH < ROW_MAX || (1 << AW) != BUF_DEPTH || ROWQ < 2 || (1 << QW) != ROWQ)
  begin : g_bad
    $error("hwa_row_stream %m: invalid IN_W=%0d CTX_W=%0d ROW_MAX=%0d N_BITS=%0d BUF_DEPTH=%0d (power of 2 >= ROW_MAX) ROWQ=%0d (power of 2 >= 2)",
           IN_W, CTX_W, ROW_MAX, N_BITS, BUF_DEPTH, ROWQ);
  end

  // ---- input: buffer, counters, overlong rows ---------------------------------------
  // s_axis_tready is a register (rdy_reg): next cycle's ready, computed this cycle from
  // the registered occupancy and queue counts, this cycle's accept (one LUT level at the
  // end) and the unit's hold request. The accept (keep) loads the buffer, the write
  // pointer and the row counter; the occupancy and queue counts take it one cycle later
  // (keep_d, klast_d, over_d: registered, low fanout), so no adder hangs off the accept.
  logic in_fire, over, keep, klast, drop_reg, drop_nxt, first_reg, at_max, rd_last, q_pop;
  logic rdy_reg, rdy_nxt, keep_d, klast_d, over_d;
  logic occ_a, occ_b, rows_a, rows_b;  // room after this cycle: with / without an accept
  logic [AW:0] occ_reg;  // codes in the buffer at the previous cycle's start (see below)
  logic [QW:0] rows_reg;  // rows whose tlast arrived before the previous cycle, unread
  logic [AW-1:0] wp_reg, wp_row, rp_reg;  // wp_row: where the current row starts
  logic [N_BITS-1:0] cnt_reg;  // codes of the current row so far

  assign s_axis_tready = rdy_reg;
  assign in_fire = s_axis_tvalid & rdy_reg;
  assign over = in_fire & ~drop_reg & at_max;  // at_max: cnt_reg == ROW_MAX, registered
  assign keep = in_fire & ~drop_reg & ~at_max;
  assign klast = keep & s_axis_tlast;
  assign in_v = keep;
  assign in_x = s_axis_tdata;
  assign in_first = first_reg;
  assign in_last = s_axis_tlast;
  assign in_n = cnt_reg + 1'b1;

  // Occupancy: occ_reg(t) = occ(t - 1) (the keeps of t - 2 and before, the reads of
  // t - 1 and before), so occ(t) = occ_reg + keep_d - over_d·ROW_MAX and
  // occ(t + 1) <= occ_reg + keep_d - rd_issue + keep. Next cycle's ready needs
  // occ(t + 1) < BUF_DEPTH: occ_a = "<= BUF_DEPTH - 2 before this cycle's accept" (room
  // whatever it is), occ_b = "<= BUF_DEPTH - 1" (room without one); cases on occ_reg
  // against constants (no adder before the compare). The same for the row count (rows
  // whose tlast arrived, not read out; klast_d, q_pop; ROWQ). Exactly the combinational
  // ready of before, except that the codes of an overlong row (over_d) free their
  // places one cycle later.
  localparam int DB = BUF_DEPTH;
  always_comb begin
    occ_a = ((AW + 2)'(occ_reg) + 3 <= (AW + 2)'(DB))
        || ((AW + 2)'(occ_reg) + 2 == (AW + 2)'(DB) && (!keep_d || rd_issue))
        || ((AW + 2)'(occ_reg) + 1 == (AW + 2)'(DB) && !keep_d && rd_issue);
    occ_b = ((AW + 2)'(occ_reg) + 2 <= (AW + 2)'(DB))
        || ((AW + 2)'(occ_reg) + 1 == (AW + 2)'(DB) && (!keep_d || rd_issue))
        || ((AW + 2)'(occ_reg) == (AW + 2)'(DB) && !keep_d && rd_issue);
    rows_a = ((QW + 2)'(rows_reg) + 3 <= (QW + 2)'(ROWQ))
        || ((QW + 2)'(rows_reg) + 2 == (QW + 2)'(ROWQ) && (!klast_d || q_pop))
        || ((QW + 2)'(rows_reg) + 1 == (QW + 2)'(ROWQ) && !klast_d && q_pop);
    rows_b = ((QW + 2)'(rows_reg) + 2 <= (QW + 2)'(ROWQ))
        || ((QW + 2)'(rows_reg) + 1 == (QW + 2)'(ROWQ) && (!klast_d || q_pop))
        || ((QW + 2)'(rows_reg) == (QW + 2)'(ROWQ) && !klast_d && q_pop);
  end
  // an overlong row: its codes are taken back and the rest up to tlast is consumed
  // (ready high meanwhile, unless the unit holds)
  assign drop_nxt = over ? ~s_axis_tlast : (drop_reg & ~(in_fire & s_axis_tlast));
  assign rdy_nxt = ~s_hold
      & (drop_nxt | ((occ_a | (occ_b & ~keep)) & (rows_a | (rows_b & ~klast))));

  // the buffer: distributed (LUT) RAM up to 256 words -- a block RAM's read has no
  // output register as yosys maps it (~6 ns clock to out on ECP5 -6, issue 22), so a
  // LUT RAM read into o1_x closes timing where it cannot; deeper buffers: block RAM
  logic [IN_W-1:0] rd_word;
  if (BUF_DEPTH <= 256) begin : g_lutram
    (* ram_style = "distributed" *) logic [IN_W-1:0] buf_mem[BUF_DEPTH];
    always_ff @(posedge clk) begin
      if (keep) buf_mem[wp_reg] <= s_axis_tdata;
    end
    assign rd_word = buf_mem[rp_reg];
  end else begin : g_bram
    logic [IN_W-1:0] buf_mem[BUF_DEPTH];
    always_ff @(posedge clk) begin
      if (keep) buf_mem[wp_reg] <= s_axis_tdata;
    end
    assign rd_word = buf_mem[rp_reg];
  end
  always_ff @(posedge clk) begin
    if (rst) begin
      wp_reg <= '0;
      wp_row <= '0;
      cnt_reg <= '0;
      at_max <= 1'b0;
      first_reg <= 1'b1;
      drop_reg <= 1'b0;
      rdy_reg <= 1'b1;  // empty: ready from the first cycle after reset
      keep_d <= 1'b0;
      klast_d <= 1'b0;
      over_d <= 1'b0;
      occ_reg <= '0;
      rows_reg <= '0;
      row_err <= 1'b0;
    end else begin
      row_err <= over;
      rdy_reg <= rdy_nxt;
      drop_reg <= drop_nxt;
      keep_d <= keep;
      klast_d <= klast;
      over_d <= over;
      if (in_fire) first_reg <= s_axis_tlast;
      if (over) begin  // take the row's codes back; drop the rest up to tlast
        wp_reg <= wp_row;
        cnt_reg <= '0;
        at_max <= 1'b0;
      end else if (keep) begin
        wp_reg <= wp_reg + 1'b1;
        if (s_axis_tlast) begin
          wp_row <= wp_reg + 1'b1;
          cnt_reg <= '0;
          at_max <= 1'b0;
        end else begin
          cnt_reg <= cnt_reg + 1'b1;
          at_max <= cnt_reg == N_BITS'(ROW_MAX - 1);
        end
      end
      occ_reg <= occ_reg + (AW + 1)'(keep_d) - (AW + 1)'(rd_issue)
          - (over_d ? (AW + 1)'(ROW_MAX) : '0);
      rows_reg <= rows_reg + (QW + 1)'(klast_d) - (QW + 1)'(q_pop);
    end
  end
`ifndef SYNTHESIS
  // the registered bookkeeping against the contract: no overflow, ready never promised
  // a place that is not there, at_max mirrors the row counter
  logic [AW+1:0] occ_now;
  logic [QW+1:0] rows_now;
  assign occ_now = (AW + 2)'(occ_reg) + (AW + 2)'(keep_d) - (over_d ? (AW + 2)'(ROW_MAX) : '0);
  assign rows_now = (QW + 2)'(rows_reg) + (QW + 2)'(klast_d);
  always_ff @(posedge clk) begin
    if (!rst && over) begin
      $error("hwa_row_stream %m: a row longer than ROW_MAX=%0d: flagged (row_err) and dropped",
             ROW_MAX);
    end
    if (!rst && (occ_now > (AW + 2)'(BUF_DEPTH) || rows_now > (QW + 2)'(ROWQ)
                 || at_max != (cnt_reg == N_BITS'(ROW_MAX)))) begin
      $error("hwa_row_stream %m: internal: occupancy %0d (BUF_DEPTH=%0d) rows %0d (ROWQ=%0d) %s",
             occ_now, BUF_DEPTH, rows_now, ROWQ, "or at_max != (cnt_reg == ROW_MAX)");
    end
  end
`endif

  // ---- row queue: each row's length (at its tlast) and context (at ctx_v) -----------
  // never overflows: the input stalls while ROWQ rows wait
  logic [N_BITS-1:0] q_n[ROWQ];
  logic [N_BITS-1:0] q_nm1[ROWQ];  // the length - 1: the sequencer's down counter
  logic [CTX_W-1:0] q_ctx[ROWQ];
  logic [QW-1:0] qn_wr, qc_wr, q_rd, q_rd1;  // q_rd1 = q_rd + 1
  logic [QW:0] q_cnt;  // rows with a context, not yet read out
  always_ff @(posedge clk) begin
    if (klast) q_n[qn_wr] <= in_n;
    if (klast) q_nm1[qn_wr] <= cnt_reg;  // in_n - 1
    if (ctx_v) q_ctx[qc_wr] <= ctx;
    if (rst) begin
      qn_wr <= '0;
      qc_wr <= '0;
      q_rd <= '0;
      q_rd1 <= QW'(1);
      q_cnt <= '0;
    end else begin
      if (klast) qn_wr <= qn_wr + 1'b1;
      if (ctx_v) qc_wr <= qc_wr + 1'b1;
      if (q_pop) begin
        q_rd <= q_rd1;
        q_rd1 <= q_rd1 + 1'b1;
      end
      q_cnt <= q_cnt + (QW + 1)'(ctx_v) - (QW + 1)'(q_pop);
    end
  end
`ifndef SYNTHESIS
  // a context comes after its row's last element (a cycle or more): the sequencer
  // loads the row's length from the queue as the context arrives
  logic [QW+1:0] ctx_owed;  // rows whose tlast was accepted, context not yet in
  always_ff @(posedge clk) begin
    if (rst) ctx_owed <= '0;
    else begin
      ctx_owed <= ctx_owed + (QW + 2)'(klast) - (QW + 2)'(ctx_v);
      if (ctx_v && ctx_owed == 0) begin
        $error("hwa_row_stream %m: ctx_v with no row whose last element came before it");
      end
    end
  end
`endif

  // ---- output sequencer ------------------------------------------------------------
  // rd_last is a register (last_reg): rem_reg counts the head row's elements left after
  // the one at idx_reg (a down counter loaded from q_nm1), so a pop is rd_issue and a
  // flip-flop, not a queue read and a compare. While no row is readable (q_cnt = 0) the
  // head's entry is reloaded every cycle (its length is in the queue by the cycle its
  // context arrives); at a pop the next entry (q_rd1) is loaded, valid whenever that
  // row is readable in the next cycle.
  logic [N_BITS-1:0] idx_reg, rem_reg, ld_nm1;
  logic last_reg, q_idle;
  assign q_idle = q_cnt == 0;
  assign ld_nm1 = q_nm1[q_idle ? q_rd : q_rd1];
  assign rd_issue = ce && !q_idle;
  assign rd_last = last_reg;
  assign q_pop = rd_issue & rd_last;
  assign rd_idx = idx_reg;
  always_ff @(posedge clk) begin
    if (rst) begin
      rp_reg <= '0;
      idx_reg <= '0;
    end else if (rd_issue) begin
      rp_reg <= rp_reg + 1'b1;
      idx_reg <= rd_last ? '0 : idx_reg + 1'b1;
    end
    if (q_idle || q_pop) begin
      rem_reg <= ld_nm1;
      last_reg <= ld_nm1 == '0;
    end else if (rd_issue) begin
      rem_reg <= rem_reg - 1'b1;
      last_reg <= rem_reg == N_BITS'(1);
    end
  end
`ifndef SYNTHESIS
  always_ff @(posedge clk) begin
    if (!rst && !q_idle && last_reg != (idx_reg == q_nm1[q_rd])) begin
      $error("hwa_row_stream %m: internal: the sequencer's last flag disagrees with the queue");
    end
  end
`endif
  always_ff @(posedge clk) begin
    if (rst) o1_v <= 1'b0;
    else if (ce) o1_v <= rd_issue;
    if (ce) begin
      o1_x <= rd_word;
      o1_l <= rd_last;
      o1_ctx <= q_ctx[q_rd];
      o1_n <= q_n[q_rd];
    end
  end

endmodule
`default_nettype wire
