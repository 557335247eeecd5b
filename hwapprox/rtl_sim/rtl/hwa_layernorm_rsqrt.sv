// hwa_layernorm_rsqrt -- single-pass LayerNorm (hwapprox.approx.layernorm.RsqrtLutLayerNorm).
//
// Computes, per row of n <= ROW_MAX raw input codes X (s_axis, tlast on the
// final element), exactly the integer model of RsqrtLutLayerNorm:
//   pass 1 (as the row streams in): S1 = sum X, S2 = sum X^2, n;
//   per row (pipelined, ROW_LAT cycles): D = n*S2 - S1^2,
//     De = (D << G) + n^2*EPS_Q, k = (bitlen(De)-1) >> 1,
//     m = De >> (2k-P) (or << (P-2k)), y = rsqrt_norm(m) (table of 2^TB words
//     of P fraction bits, then NEWTON Newton steps), sh = P + k - G/2 - FZ;
//   pass 2 (on the way out): A = n*X - S1 (CENTER=0: A = n*X),
//     Z = (A*y + 2^(sh-1)) >>> sh (A*y << -sh when sh <= 0),
//     acc = Z*gamma_i + (beta_i << BETA_SHIFT),
//     out = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF).
// gamma_i/beta_i come from a memory written through cfg_* (one word per cycle).
//
// Buffering (hwa_row_stream): the row is held in a circular buffer of
// BUF_DEPTH words (input stalls when full); up to ROWQ rows may wait for
// output. Latency: last input -> first output of its row ROW_LAT + 5 cycles
// (ROW_LAT = 9 + 3*NEWTON; 17 at the defaults, NEWTON = 1) when the output is
// free, then one element per cycle: last input -> last output N + 16 (NEWTON = 2:
// N + 19). Throughput: with row_stream_params' geometry (BUF_DEPTH >= 2*ROW_MAX - 1,
// ROWQ = 4) back-to-back rows of N >= 16 never stall the input and lose no output
// cycle (tests/test_rtl_throughput.py).
// Rows of 1..ROW_MAX elements. A longer row is dropped (consumed up to its
// tlast, nothing output for it) and row_err pulses for one cycle; the next row
// is processed normally (see hwa_row_stream).
// Parameter defaults: the default RsqrtLutLayerNorm spec's
// hw_params() with row_stream_params(64) (tests/test_rtl_lint.py checks them).
`default_nettype none
module hwa_layernorm_rsqrt #(
    parameter int IN_W = 16,
    parameter int OUT_W = 16,
    parameter bit OUT_SIGNED = 1'b1,
    parameter int OUT_RND = 2,
    parameter int OUT_OVF = 1,
    parameter int GAMMA_W = 16,
    parameter int BETA_W = 16,
    parameter bit CENTER = 1'b1,
    // pRMSNorm (CENTER = 0): the statistics use the first PARTIAL_K elements (0: all)
    parameter int PARTIAL_K = 0,
    parameter int ROW_MAX = 64,
    parameter int BUF_DEPTH = 128,
    parameter int ROWQ = 4,
    parameter int N_BITS = 11,
    parameter int S1_W = 27,
    parameter int S2_W = 41,
    parameter int D_W = 51,
    parameter int DE_W = 55,
    parameter int A_W = 28,
    parameter int AY_W = 49,
    parameter int Z_W = 25,
    parameter int ACC_W = 42,
    parameter logic [63:0] EPS_Q = 64'd168,
    parameter int G = 4,
    parameter int P = 20,
    parameter int TB = 8,
    parameter int NEWTON = 1,
    parameter int FZ = 18,
    parameter int BETA_SHIFT = 18,
    parameter int OUT_SHIFT = 16,
    parameter string RSQRT_FILE = ""
) (
    input  logic                           clk,
    input  logic                           rst,
    input  logic [IN_W-1:0]                s_axis_tdata,
    input  logic                           s_axis_tvalid,
    output logic                           s_axis_tready,
    input  logic                           s_axis_tlast,
    output logic [OUT_W-1:0]               m_axis_tdata,
    output logic                           m_axis_tvalid,
    input  logic                           m_axis_tready,
    output logic                           m_axis_tlast,
    input  logic                           cfg_we,
    input  logic [((ROW_MAX > 1) ? $clog2(ROW_MAX) : 1)-1:0] cfg_addr,
    input  logic [GAMMA_W-1:0]             cfg_gamma,
    input  logic [BETA_W-1:0]              cfg_beta,
    output logic                           row_err
);

  localparam int PW = 2 * D_W + 8;  // wide enough for every per-row product
  localparam int KW = $clog2(DE_W + 1) + 1;
  localparam int SHW = KW + 8;
  localparam int YW = P + 3;  // y and u, signed
  localparam int GAW = (ROW_MAX > 1) ? $clog2(ROW_MAX) : 1;
  // Z = A*y << -sh needs at most FZ + G/2 - P extra bits
  localparam int LSH = (FZ + G / 2 - P > 0) ? FZ + G / 2 - P : 0;

  // ---- parameter checks ---------------------------------------------------
  if (IN_W < 2 || IN_W > 32 || OUT_W < 1 || OUT_W > 32 || GAMMA_W < 1 || BETA_W < 1
      || ROW_MAX < 1 || (1 << N_BITS) <= ROW_MAX) begin : g_bad_w
    $error("hwa_layernorm_rsqrt %m: invalid IN_W=%0d OUT_W=%0d ROW_MAX=%0d N_BITS=%0d",
                   IN_W, OUT_W, ROW_MAX, N_BITS);
  end
  if (NEWTON < 0 || NEWTON > 2 || TB < 2 || TB - 1 > P || P > 28 || DE_W > 120)
  begin : g_bad_r
    $error("hwa_layernorm_rsqrt %m: invalid NEWTON=%0d TB=%0d P=%0d DE_W=%0d",
                   NEWTON, TB, P, DE_W);
  end

  // ---- input side: row buffer, queue, output sequencer (hwa_row_stream); sums ---
  localparam int CTX_W = YW + SHW + S1_W;  // per row: y, sh, S1 (n: the row length)
  logic in_v, in_first, in_last, ctx_v, ce, rd_issue, o1_v, o1_l;
  logic [IN_W-1:0] in_x, o1_x;
  logic [N_BITS-1:0] in_n, rd_idx, o1_n;
  logic [CTX_W-1:0] ctx, o1_ctx;
  hwa_row_stream #(
      .IN_W(IN_W),
      .CTX_W(CTX_W),
      .ROW_MAX(ROW_MAX),
      .BUF_DEPTH(BUF_DEPTH),
      .ROWQ(ROWQ),
      .N_BITS(N_BITS)
  ) u_rows (.*);  // every port: the signal of the same name
  /* verilator lint_off UNUSEDSIGNAL */
  logic unused_rows;  // rd_idx: only its low GAW bits address gamma/beta
  assign unused_rows = ^{rd_issue, rd_idx};
  /* verilator lint_on UNUSEDSIGNAL */

  // the N of the statistics: the row length, or pRMSNorm's PARTIAL_K when the row is longer
  function automatic logic [N_BITS-1:0] n_eff(input logic [N_BITS-1:0] n);
    return (PARTIAL_K != 0 && 32'(n) > PARTIAL_K) ? N_BITS'(PARTIAL_K) : n;
  endfunction

  // S1 = sum X, S2 = sum X^2 of the row so far (restarting at each row's first element)
  logic signed [S1_W-1:0] s1_reg, s1_nxt;
  logic signed [S2_W:0] s2_reg, s2_nxt;
  logic signed [IN_W-1:0] x_in;
  assign x_in = in_x;
  assign s1_nxt = (in_first ? '0 : s1_reg) + S1_W'(x_in);
  logic in_stat;  // the element counts in the statistics (pRMSNorm: the first PARTIAL_K)
  assign in_stat = (PARTIAL_K == 0) || (32'(in_n) <= PARTIAL_K);
  assign s2_nxt = (in_first ? '0 : s2_reg)
      + (in_stat ? (S2_W + 1)'(x_in) * (S2_W + 1)'(x_in) : '0);
  always_ff @(posedge clk) begin
    if (rst) begin
      s1_reg <= '0;
      s2_reg <= '0;
    end else if (in_v) begin
      s1_reg <= s1_nxt;
      s2_reg <= s2_nxt;
    end
  end

  // ---- per-row pipeline ---------------------------------------------------------
  // stage 0: the row's final sums
  logic v0;
  logic signed [PW-1:0] s1_0, s2_0, n_0;
  always_ff @(posedge clk) begin
    if (rst) v0 <= 1'b0;
    else v0 <= in_v & in_last;
    s1_0 <= CENTER ? PW'(s1_nxt) : '0;
    s2_0 <= PW'(s2_nxt);
    n_0 <= PW'({1'b0, n_eff(in_n)});
  end
  // stage 1: products
  logic v1;
  logic signed [PW-1:0] ns2_1, s1sq_1, nn_1, s1_1;
  always_ff @(posedge clk) begin
    if (rst) v1 <= 1'b0;
    else v1 <= v0;
    ns2_1 <= n_0 * s2_0;
    s1sq_1 <= s1_0 * s1_0;
    nn_1 <= n_0 * n_0;
    s1_1 <= s1_0;
  end
  // stage 2: De = ((n*S2 - S1^2) << G) + n^2 * EPS_Q
  logic v2;
  logic signed [PW-1:0] de_2, s1_2;
  always_ff @(posedge clk) begin
    if (rst) v2 <= 1'b0;
    else v2 <= v1;
    de_2 <= ((ns2_1 - s1sq_1) <<< G) + nn_1 * PW'($signed({1'b0, EPS_Q}));
    s1_2 <= s1_1;
  end
  // stage 3: leading one -> k
  logic v3;
  logic [KW-1:0] k_3;
  logic signed [PW-1:0] de_3, s1_3;
  logic [KW-1:0] bl;
  always_comb begin
    bl = '0;
    for (int i = 0; i < DE_W; i++) begin
      if (de_2[i]) bl = KW'(i + 1);
    end
  end
  always_ff @(posedge clk) begin
    if (rst) v3 <= 1'b0;
    else v3 <= v2;
    k_3 <= (bl - 1'b1) >> 1;
    de_3 <= de_2;
    s1_3 <= s1_2;
  end
  // stage 4: normalised mantissa m in [2^P, 2^(P+2)), table address
  logic v4;
  logic [P+1:0] m_4;
  logic [TB-1:0] ta_4;
  logic [KW-1:0] k_4;
  logic signed [PW-1:0] s1_4;
  logic [P+1:0] m_c;
  logic h_c;
  logic [TB-2:0] j_c;
  always_comb begin
    if (2 * 32'(k_3) >= P) m_c = (P + 2)'(de_3 >>> (2 * 32'(k_3) - P));
    else m_c = (P + 2)'(de_3 <<< (P - 2 * 32'(k_3)));
    h_c = m_c[P+1];
    j_c = h_c ? m_c[P-TB+2+:TB-1] : m_c[P-TB+1+:TB-1];
  end
  always_ff @(posedge clk) begin
    if (rst) v4 <= 1'b0;
    else v4 <= v3;
    m_4 <= m_c;
    ta_4 <= {h_c, j_c};
    k_4 <= k_3;
    s1_4 <= s1_3;
  end
  // stage 5: table read (the ROM output register is this stage)
  logic v5;
  logic [P+1:0] m_5;
  logic [KW-1:0] k_5;
  logic signed [PW-1:0] s1_5;
  logic [P-1:0] y_rom;
  hwa_rom #(
      .W(P),
      .DEPTH(1 << TB),
      .AW(TB),
      .FILE(RSQRT_FILE)
  ) u_rsqrt (
      .clk (clk),
      .en  (1'b1),
      .addr(ta_4),
      .q   (y_rom)
  );
  always_ff @(posedge clk) begin
    if (rst) v5 <= 1'b0;
    else v5 <= v4;
    m_5 <= m_4;
    k_5 <= k_4;
    s1_5 <= s1_4;
  end

  // Newton steps: sq = (y*y) >> P; t = (m*sq) >> P; u = 3*2^P - t; y = (y*u) >> (P+1)
  logic                    nv  [NEWTON+1];
  logic signed [YW-1:0]    ny  [NEWTON+1];
  logic        [P+1:0]     nm  [NEWTON+1];
  logic        [KW-1:0]    nk  [NEWTON+1];
  logic signed [PW-1:0]    ns1 [NEWTON+1];
  assign nv[0] = v5;
  assign ny[0] = YW'(y_rom);
  assign nm[0] = m_5;
  assign nk[0] = k_5;
  assign ns1[0] = s1_5;

  for (genvar s = 0; s < NEWTON; s++) begin : g_newton
    logic va, vb, vc;
    logic signed [2*YW-1:0] sq_a;
    logic signed [YW-1:0] y_a, y_b, u_b;
    logic [P+1:0] m_a, m_b, m_d;
    logic [KW-1:0] k_a, k_b, k_c;
    logic signed [PW-1:0] s1_a, s1_b, s1_c;
    logic signed [YW-1:0] y_c;
    logic signed [3*YW-1:0] msq;
    logic signed [2*YW-1:0] yu;
    assign msq = (3 * YW)'($signed({1'b0, m_a})) * (3 * YW)'(sq_a >>> P);
    assign yu = (2 * YW)'(y_b) * (2 * YW)'(u_b);
    always_ff @(posedge clk) begin
      if (rst) begin
        va <= 1'b0;
        vb <= 1'b0;
        vc <= 1'b0;
      end else begin
        va <= nv[s];
        vb <= va;
        vc <= vb;
      end
      sq_a <= (2 * YW)'(ny[s]) * (2 * YW)'(ny[s]);
      y_a <= ny[s];
      m_a <= nm[s];
      k_a <= nk[s];
      s1_a <= ns1[s];
      u_b <= YW'((3 * YW)'(3) <<< P) - YW'(msq >>> P);
      y_b <= y_a;
      m_b <= m_a;
      k_b <= k_a;
      s1_b <= s1_a;
      y_c <= YW'(yu >>> (P + 1));
      m_d <= m_b;
      k_c <= k_b;
      s1_c <= s1_b;
    end
    assign nv[s+1] = vc;
    assign ny[s+1] = y_c;
    assign nm[s+1] = m_d;
    assign nk[s+1] = k_c;
    assign ns1[s+1] = s1_c;
  end

  // final per-row stage: shift amount, then into the row queue
  logic signed [YW-1:0] ry;
  logic signed [SHW-1:0] rsh;
  logic signed [S1_W-1:0] rs1;
  always_ff @(posedge clk) begin
    if (rst) ctx_v <= 1'b0;
    else ctx_v <= nv[NEWTON];
    ry <= ny[NEWTON];
    rsh <= SHW'(P) + SHW'({1'b0, nk[NEWTON]}) - SHW'(G / 2) - SHW'(FZ);
    rs1 <= S1_W'(ns1[NEWTON]);
  end
  assign ctx = {ry, rsh, rs1};

  // ---- output side: stall-all pipeline, enable ce ----------------------------------
  // ce: the output skid buffer's registered ready (hwa_skid, at the end)

  // gamma / beta memory
  logic [GAMMA_W-1:0] gamma_mem[ROW_MAX];
  logic [BETA_W-1:0] beta_mem[ROW_MAX];
  always_ff @(posedge clk) begin
    if (cfg_we && 32'(cfg_addr) < ROW_MAX) begin  // addresses >= ROW_MAX are ignored
      gamma_mem[cfg_addr] <= cfg_gamma;
      beta_mem[cfg_addr] <= cfg_beta;
    end
  end

  // o1: the buffered x, the row context and length (hwa_row_stream), gamma/beta
  logic signed [GAMMA_W-1:0] o1_g;
  logic signed [BETA_W-1:0] o1_b;
  logic signed [YW-1:0] o1_y;
  logic signed [SHW-1:0] o1_sh;
  logic signed [S1_W-1:0] o1_s1;
  assign {o1_y, o1_sh, o1_s1} = o1_ctx;
  always_ff @(posedge clk) begin
    if (ce) begin
      o1_g <= gamma_mem[GAW'(rd_idx)];
      o1_b <= beta_mem[GAW'(rd_idx)];
    end
  end
  // o2: A = n*X - S1
  logic o2_v, o2_l;
  logic signed [A_W-1:0] o2_a;
  logic signed [GAMMA_W-1:0] o2_g;
  logic signed [BETA_W-1:0] o2_b;
  logic signed [YW-1:0] o2_y;
  logic signed [SHW-1:0] o2_sh;
  always_ff @(posedge clk) begin
    if (rst) o2_v <= 1'b0;
    else if (ce) o2_v <= o1_v;
    if (ce) begin
      o2_a <= A_W'($signed({1'b0, n_eff(o1_n)})) * A_W'($signed(o1_x))
          - (CENTER ? A_W'(o1_s1) : '0);
      o2_l <= o1_l;
      o2_g <= o1_g;
      o2_b <= o1_b;
      o2_y <= o1_y;
      o2_sh <= o1_sh;
    end
  end
  // o3: A*y
  localparam int AYX = AY_W + LSH + 2;  // room for a left shift by -sh
  logic o3_v, o3_l;
  logic signed [AYX-1:0] o3_ay;
  logic signed [GAMMA_W-1:0] o3_g;
  logic signed [BETA_W-1:0] o3_b;
  logic signed [SHW-1:0] o3_sh;
  always_ff @(posedge clk) begin
    if (rst) o3_v <= 1'b0;
    else if (ce) o3_v <= o2_v;
    if (ce) begin
      o3_ay <= AYX'(o2_a) * AYX'(o2_y);
      o3_l <= o2_l;
      o3_g <= o2_g;
      o3_b <= o2_b;
      o3_sh <= o2_sh;
    end
  end
  // o4: Z = round half up (A*y / 2^sh)
  logic o4_v, o4_l;
  logic signed [Z_W-1:0] o4_z;
  logic signed [GAMMA_W-1:0] o4_g;
  logic signed [BETA_W-1:0] o4_b;
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [AYX-1:0] z_c;  // the model's Z fits Z_W bits: the top bits are dropped
  /* verilator lint_on UNUSEDSIGNAL */
  always_comb begin
    if (o3_sh > 0) z_c = (o3_ay + (AYX'(1) <<< (o3_sh - 1))) >>> o3_sh;
    else z_c = o3_ay <<< (-o3_sh);
  end
  always_ff @(posedge clk) begin
    if (rst) o4_v <= 1'b0;
    else if (ce) o4_v <= o3_v;
    if (ce) begin
      o4_z <= Z_W'(z_c);
      o4_l <= o3_l;
      o4_g <= o3_g;
      o4_b <= o3_b;
    end
  end
  // o5: acc = Z*gamma + (beta << BETA_SHIFT)
  logic o5_v, o5_l;
  logic signed [ACC_W+1:0] o5_acc;
  always_ff @(posedge clk) begin
    if (rst) o5_v <= 1'b0;
    else if (ce) o5_v <= o4_v;
    if (ce) begin
      o5_acc <= (ACC_W + 2)'(o4_z) * (ACC_W + 2)'(o4_g) + ((ACC_W + 2)'(o4_b) <<< BETA_SHIFT);
      o5_l <= o4_l;
    end
  end
  // o6: one rounding into out_fmt, overflow mode, output register
  logic signed [ACC_W+1:0] rnd_c;
  logic [OUT_W-1:0] out_c;
  hwa_round_shift #(
      .IN_W (ACC_W + 2),
      .SH_W (8),
      .OUT_W(ACC_W + 2),
      .MODE (OUT_RND)
  ) u_round (
      .x (o5_acc),
      .sh(8'(OUT_SHIFT)),
      .y (rnd_c)
  );
  hwa_sat #(
      .IN_W      (ACC_W + 2),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_sat (
      .x(rnd_c),
      .y(out_c)
  );
  logic o_v, o_l;
  logic [OUT_W-1:0] o_d;
  always_ff @(posedge clk) begin
    if (rst) begin
      o_v <= 1'b0;
      o_l <= 1'b0;
    end else if (ce) begin
      o_v <= o5_v;
      o_l <= o5_l;
    end
    if (ce) o_d <= out_c;
  end

  // output register -> skid buffer -> m_axis (ce: its registered ready)
  hwa_skid #(
      .W(OUT_W)
  ) u_skid (
      .clk(clk),
      .rst(rst),
      .in_v(o_v),
      .in_l(o_l),
      .in_d(o_d),
      .ce(ce),
      .m_axis_tdata(m_axis_tdata),
      .m_axis_tvalid(m_axis_tvalid),
      .m_axis_tready(m_axis_tready),
      .m_axis_tlast(m_axis_tlast)
  );

endmodule
`default_nettype wire
