// hwa_rsqrt_pipe -- the per-row 1/sqrt of the rsqrt LayerNorms (hwa_layernorm_rsqrt,
// hwa_layernorm_rmsnorm), pipelined for ECP5 (issue 22): the integer model's
// normalisation, table and Newton steps (hwapprox.approx.layernorm.rsqrt_norm), bit for bit.
//
// For De (DE_W bits unsigned, > 0) on a cycle with in_v high:
//   k = (bitlen(De) - 1) >> 1 (KW bits, as the model's), m = De >> (2k - P) (or
//   << (P - 2k)) in [2^P, 2^(P+2)), table address {h, j} (h = m[P+1]),
//   y = table[{h, j}] (2^TB words of P bits, FILE), then NEWTON Newton steps
//   sq = (y*y) >> P, t = (m*sq) >> P, u = 3*2^P - t, y = (y*u) >> (P+1).
// Widths (RsqrtLutLayerNorm.hw_params, passed by the parent): y <= 2^P (Y_W = P+1 bits),
// m < 2^(P+2) (M_W = P+2), y*y <= 2^(2P) (SQ_W), m*sq < 2^(2P+2) (MSQ_W), u in (0, 3*2^P]
// (U_W), y*u <= 3*2^(2P) (YU_W): unsigned values, each product formed mod 2^(its width)
// through hwa_mul_pipe (18 x 18 partial products), exact as it is below that bound.
// Stages: per byte of De its bit length, then bitlen(De); k and the shift amount; the
// shift by a multiple of 8, then by the rest; the table address; the table read
// (the ROM's output register); y registered (a block RAM read has ~6 ns clock to out);
// then per Newton step 13: y*y (4), m*sq (4), u (1), y*u (4), each product hwa_mul_pipe
// with operand registers of its own (IN_REG; on ECP5 the MULT18X18D's own input and
// output registers; 10 per step before, issue 22).
// Latency: LAT = 8 + 13*NEWTON cycles from in_v to out_v (y, k of that De), one row per
// cycle, free running (no enable: the per-row pipeline never stalls).
// Parameters: no defaults; DE_W (2..120), P (TB - 1..28), TB (>= 2), NEWTON (0..2), KW
// (k's width, bitlen(DE_W) + 1), the widths above, FILE (the table, $readmemh).
`default_nettype none
module hwa_rsqrt_pipe #(
    parameter int DE_W,
    parameter int P,
    parameter int TB,
    parameter int NEWTON,
    parameter int KW,
    parameter int M_W,
    parameter int Y_W,
    parameter int SQ_W,
    parameter int MSQ_W,
    parameter int U_W,
    parameter int YU_W,
    parameter string FILE
) (
    input  wire logic            clk,
    input  wire logic            rst,
    input  wire logic            in_v,
    input  wire logic [DE_W-1:0] de,
    output logic                 out_v,
    output logic      [P:0]      y,
    output logic      [KW-1:0]   k
);

  localparam bit MUL_IN_REG = 1'b1;
  localparam int LM = 3 + int'(MUL_IN_REG);  // hwa_mul_pipe's latency
  localparam int NS = 3 * LM + 1;  // stages per Newton step
  localparam int LAT = 8 + NS * NEWTON;
  localparam int SW = KW + 1;  // 2k - P, signed

  if (DE_W < 2 || DE_W > 120 || TB < 2 || TB - 1 > P || P > 28 || NEWTON < 0 || NEWTON > 2
      || (1 << (KW - 1)) <= DE_W) begin : g_bad
    $error("hwa_rsqrt_pipe %m: invalid DE_W=%0d P=%0d TB=%0d NEWTON=%0d KW=%0d", DE_W, P, TB,
           NEWTON, KW);
  end
  if (M_W != P + 2 || Y_W != P + 1 || SQ_W < 2 * P + 1 || MSQ_W < 2 * P + 2 || U_W < P + 2
      || YU_W < 2 * P + 2) begin : g_bad_w
    $error("hwa_rsqrt_pipe %m: widths M_W=%0d Y_W=%0d SQ_W=%0d MSQ_W=%0d U_W=%0d YU_W=%0d do not hold P=%0d's values (P+2, P+1, 2P+1, 2P+2, P+2, 2P+2)",
           M_W, Y_W, SQ_W, MSQ_W, U_W, YU_W, P);
  end

  // valid: LAT stages
  logic [LAT-1:0] v_sr;
  always_ff @(posedge clk) begin
    if (rst) v_sr <= '0;
    else v_sr <= {v_sr[LAT-2:0], in_v};
  end
  assign out_v = v_sr[LAT-1];

  // a1: per byte of De, whether it has a one and the bit length within it; a2: bitlen(De)
  localparam int NG = (DE_W + 7) / 8;
  logic [NG*8-1:0] de_x;
  assign de_x = (NG * 8)'(de);
  logic [NG-1:0] any_a1;
  logic [3:0] lb_a1[NG];
  logic [DE_W-1:0] de_a1, de_a, de_b, de_c1;
  for (genvar g = 0; g < NG; g++) begin : g_byte
    logic [3:0] lb_c;
    always_comb begin
      lb_c = '0;
      for (int i = 0; i < 8; i++) begin
        if (de_x[8*g+i]) lb_c = 4'(i + 1);
      end
    end
    always_ff @(posedge clk) begin
      any_a1[g] <= |de_x[8*g+:8];
      lb_a1[g] <= lb_c;
    end
  end
  logic [KW-1:0] bl_c, bl_a;
  always_comb begin
    bl_c = '0;
    for (int g = 0; g < NG; g++) begin
      if (any_a1[g]) bl_c = KW'(8 * g) + KW'(lb_a1[g]);
    end
  end
  always_ff @(posedge clk) begin
    de_a1 <= de;
    bl_a <= bl_c;
    de_a <= de_a1;
  end
  // b: k, and the shift: right by 2k - P or left by P - 2k
  logic [KW-1:0] k_c, k_b, k_c1;
  logic signed [SW-1:0] s_c;
  logic right_b, right_c1;
  logic [SW-1:0] amt_b;
  logic [2:0] amt_c1;
  assign k_c = (bl_a - 1'b1) >> 1;
  assign s_c = $signed({1'b0, k_c[KW-2:0], 1'b0}) - SW'(P);  // 2k - P (k < 2^(KW-1))
  always_ff @(posedge clk) begin
    k_b <= k_c;
    right_b <= s_c >= 0;
    amt_b <= (s_c >= 0) ? s_c : -s_c;
    de_b <= de_a;
  end
  // c1: the shift by the amount's multiple of 8; c: the rest, m in [2^P, 2^(P+2))
  // (a left shift keeps the low DE_W >= M_W bits: the only ones m takes)
  always_ff @(posedge clk) begin
    de_c1 <= right_b ? de_b >> {amt_b[SW-1:3], 3'b000} : de_b << {amt_b[SW-1:3], 3'b000};
    amt_c1 <= amt_b[2:0];
    right_c1 <= right_b;
    k_c1 <= k_b;
  end
  logic [M_W-1:0] m_c, m_cr;
  logic [KW-1:0] k_cr;
  always_comb begin
    if (right_c1) m_c = M_W'(de_c1 >> amt_c1);
    else m_c = M_W'(de_c1 << amt_c1);
  end
  always_ff @(posedge clk) begin
    m_cr <= m_c;
    k_cr <= k_c1;
  end
  // d: the table address {h, j}
  logic [TB-1:0] ta_d;
  logic [M_W-1:0] m_d, m_e, m_f;
  logic [KW-1:0] k_d, k_e, k_f;
  always_ff @(posedge clk) begin
    ta_d <= m_cr[P+1] ? {1'b1, m_cr[P-TB+2+:TB-1]} : {1'b0, m_cr[P-TB+1+:TB-1]};
    m_d <= m_cr;
    k_d <= k_cr;
  end
  // e: the table read; f: y registered
  logic [P-1:0] y_rom, y_f;
  hwa_rom #(
      .W(P),
      .DEPTH(1 << TB),
      .AW(TB),
      .FILE(FILE)
  ) u_rom (
      .clk (clk),
      .en  (1'b1),
      .addr(ta_d),
      .q   (y_rom)
  );
  always_ff @(posedge clk) begin
    m_e <= m_d;
    k_e <= k_d;
    y_f <= y_rom;
    m_f <= m_e;
    k_f <= k_e;
  end

  // Newton steps, NS stages each
  logic [Y_W-1:0] ny[NEWTON+1];
  logic [M_W-1:0] nm[NEWTON+1];
  assign ny[0] = Y_W'(y_f);
  assign nm[0] = m_f;
  for (genvar s = 0; s < NEWTON; s++) begin : g_newton
    logic [M_W-1:0] m_3;
    logic [Y_W-1:0] y_7;
    logic [U_W-1:0] u_7;  // u = 3*2^P - t in (0, 3*2^P]
    /* verilator lint_off UNUSEDSIGNAL */
    logic [SQ_W-1:0] yy_u;  // the products (unsigned), their dropped low bits
    logic [MSQ_W-1:0] ms_u;
    logic [YU_W-1:0] yu_u;
    /* verilator lint_on UNUSEDSIGNAL */
    // 1..LM: y*y
    hwa_mul_pipe #(
        .A_W(Y_W + 1),
        .B_W(Y_W),
        .B_SIGNED(1'b0),
        .P_W(SQ_W),
        .IN_REG(MUL_IN_REG)
    ) u_yy (
        .clk(clk),
        .en (1'b1),
        .a  ($signed({1'b0, ny[s]})),
        .b  (ny[s]),
        .p  (yy_u)
    );
    hwa_delay #(
        .W(M_W),
        .L(LM)
    ) u_m3 (
        .clk(clk),
        .rst(1'b0),
        .en (1'b1),
        .d  (nm[s]),
        .q  (m_3)
    );
    // LM+1..2LM: m * (y*y >> P)
    hwa_mul_pipe #(
        .A_W(M_W + 1),
        .B_W(Y_W),
        .B_SIGNED(1'b0),
        .P_W(MSQ_W),
        .IN_REG(MUL_IN_REG)
    ) u_ms (
        .clk(clk),
        .en (1'b1),
        .a  ($signed({1'b0, m_3})),
        .b  (yy_u[P+:Y_W]),
        .p  (ms_u)
    );
    // 2LM+1: u = 3*2^P - (m*sq >> P)
    always_ff @(posedge clk) u_7 <= U_W'(3 << P) - U_W'(ms_u[P+:M_W]);
    hwa_delay #(
        .W(Y_W),
        .L(2 * LM + 1)
    ) u_y7 (
        .clk(clk),
        .rst(1'b0),
        .en (1'b1),
        .d  (ny[s]),
        .q  (y_7)
    );
    // 2LM+2..NS: y*u
    hwa_mul_pipe #(
        .A_W(Y_W + 1),
        .B_W(U_W),
        .B_SIGNED(1'b0),
        .P_W(YU_W),
        .IN_REG(MUL_IN_REG)
    ) u_yu (
        .clk(clk),
        .en (1'b1),
        .a  ($signed({1'b0, y_7})),
        .b  (u_7),
        .p  (yu_u)
    );
    assign ny[s+1] = yu_u[P+1+:Y_W];
    hwa_delay #(
        .W(M_W),
        .L(NS - LM)
    ) u_m10 (
        .clk(clk),
        .rst(1'b0),
        .en (1'b1),
        .d  (m_3),
        .q  (nm[s+1])
    );
  end
  assign y = ny[NEWTON];
  hwa_delay #(
      .W(KW),
      .L(NS * NEWTON)
  ) u_k (
      .clk(clk),
      .rst(1'b0),
      .en (1'b1),
      .d  (k_f),
      .q  (k)
  );
  /* verilator lint_off UNUSEDSIGNAL */
  logic [M_W-1:0] unused_m;  // the mantissa after the last step
  /* verilator lint_on UNUSEDSIGNAL */
  assign unused_m = nm[NEWTON];

endmodule
`default_nettype wire
