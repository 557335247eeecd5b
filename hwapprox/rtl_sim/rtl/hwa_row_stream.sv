// hwa_row_stream -- the row buffer, row queue and output sequencer of every row-wise
// unit (hwa_softmax_online, hwa_layernorm_rsqrt): rows of 1..ROW_MAX raw input codes
// in on s_axis (tlast on the last one), re-read once, element by element, after the
// unit has computed the row's context (its max and 1/sum, its mean and 1/sqrt, ...).
//
// Ingest (combinational view of the accepted element, for the unit's one-pass stage):
//   in_v     an element of a row within ROW_MAX was accepted this cycle;
//   in_x     its code (= s_axis_tdata); in_first: it starts a row; in_last: it ends
//            one (= s_axis_tlast); in_n: its 1-based position in the row.
//   The unit computes the row's context from these and hands it in with a one-cycle
//   ctx_v pulse (at most one per row, in row order; any latency, rows pipelined).
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
//   consumed up to its tlast (s_axis_tready high meanwhile) and dropped: the unit
//   sees no in_last and no in_v for it, nothing is output for it, and the next
//   element starts a new row (in_first). Simulation also reports it with $error.
// Latency: s_axis -> in_*: 0 cycles; ctx_v -> rd_issue of that row: 0 cycles when
//   ce is high and no earlier row is pending; rd_issue -> o1_*: 1 ce cycle.
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
  logic in_fire, over, keep, drop_reg, first_reg, rd_last, q_pop;
  logic [AW:0] occ_reg;  // codes in the buffer not yet read out
  logic [QW:0] rows_reg;  // rows whose last code arrived, not yet read out
  logic [AW-1:0] wp_reg, wp_row, rp_reg;  // wp_row: where the current row starts
  logic [N_BITS-1:0] cnt_reg;  // codes of the current row so far

  assign s_axis_tready = drop_reg
      || ((occ_reg < (AW + 1)'(BUF_DEPTH)) && (rows_reg < (QW + 1)'(ROWQ)));
  assign in_fire = s_axis_tvalid & s_axis_tready;
  assign over = in_fire & ~drop_reg & (cnt_reg == N_BITS'(ROW_MAX));
  assign keep = in_fire & ~drop_reg & ~over;
  assign in_v = keep;
  assign in_x = s_axis_tdata;
  assign in_first = first_reg;
  assign in_last = s_axis_tlast;
  assign in_n = cnt_reg + 1'b1;

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
      first_reg <= 1'b1;
      drop_reg <= 1'b0;
      occ_reg <= '0;
      rows_reg <= '0;
      row_err <= 1'b0;
    end else begin
      row_err <= over;
      if (in_fire) first_reg <= s_axis_tlast;
      if (over) begin  // take the row's codes back; drop the rest up to tlast
        wp_reg <= wp_row;
        cnt_reg <= '0;
        drop_reg <= ~s_axis_tlast;
      end else if (drop_reg) begin
        if (in_fire && s_axis_tlast) drop_reg <= 1'b0;
      end else if (keep) begin
        wp_reg <= wp_reg + 1'b1;
        if (s_axis_tlast) begin
          wp_row <= wp_reg + 1'b1;
          cnt_reg <= '0;
        end else begin
          cnt_reg <= cnt_reg + 1'b1;
        end
      end
      occ_reg <= occ_reg + (AW + 1)'(keep) - (AW + 1)'(rd_issue)
          - (over ? (AW + 1)'(cnt_reg) : '0);
      rows_reg <= rows_reg + (QW + 1)'(keep & s_axis_tlast) - (QW + 1)'(q_pop);
    end
  end
`ifndef SYNTHESIS
  always_ff @(posedge clk) begin
    if (!rst && over) begin
      $error("hwa_row_stream %m: a row longer than ROW_MAX=%0d: flagged (row_err) and dropped",
             ROW_MAX);
    end
  end
`endif

  // ---- row queue: each row's length (at its tlast) and context (at ctx_v) -----------
  // never overflows: the input stalls while ROWQ rows wait
  logic [N_BITS-1:0] q_n[ROWQ];
  logic [N_BITS-1:0] q_nm1[ROWQ];  // the length - 1 (the last index: no adder on rd_last)
  logic [CTX_W-1:0] q_ctx[ROWQ];
  logic [QW-1:0] qn_wr, qc_wr, q_rd;
  logic [QW:0] q_cnt;  // rows with a context, not yet read out
  always_ff @(posedge clk) begin
    if (keep && s_axis_tlast) q_n[qn_wr] <= in_n;
    if (keep && s_axis_tlast) q_nm1[qn_wr] <= cnt_reg;  // in_n - 1
    if (ctx_v) q_ctx[qc_wr] <= ctx;
    if (rst) begin
      qn_wr <= '0;
      qc_wr <= '0;
      q_rd <= '0;
      q_cnt <= '0;
    end else begin
      if (keep && s_axis_tlast) qn_wr <= qn_wr + 1'b1;
      if (ctx_v) qc_wr <= qc_wr + 1'b1;
      if (q_pop) q_rd <= q_rd + 1'b1;
      q_cnt <= q_cnt + (QW + 1)'(ctx_v) - (QW + 1)'(q_pop);
    end
  end

  // ---- output sequencer ------------------------------------------------------------
  logic [N_BITS-1:0] idx_reg;
  assign rd_issue = ce && (q_cnt != 0);
  assign rd_last = idx_reg == q_nm1[q_rd];
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
  end
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
