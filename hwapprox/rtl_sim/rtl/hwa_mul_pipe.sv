// hwa_mul_pipe -- a wide product split into DSP-sized partial products, pipelined.
//
// Computes p = a * b mod 2^P_W (a signed A_W bits; b signed or unsigned B_W bits),
// exactly as P_W'(a) * P_W'(b) would in one cycle, but in three registered stages so
// that no stage holds more than one 18 x 18 multiply or one two-input adder:
//   limbs  a = sum_i a_i·2^(17 i), b = sum_j b_j·2^(17 j): every limb 17 bits unsigned
//          but the top one, which keeps the sign (up to 18 bits signed);
//   s1     pp_ij = a_i · b_j                  (NA·NB products, each one MULT18X18D)
//   s2     r_i   = sum_j pp_ij · 2^(17 j)     (a row per a-limb; NB - 1 adders)
//   s3     p     = sum_i r_i · 2^(17 i)       (NA - 1 adders), mod 2^P_W
// NB = 1 or NA = 1 leaves s2 or s3 a plain register (the latency stays 3).
// IN_REG = 1 (issue 22) adds a stage s0 in front: every product's two limbs in registers
// of its own (fan-out 1, placed at its MULT18X18D), so that no operand register drives
// several multipliers across the die; the path s0 -> s1 is then one register -> DSP ->
// register.
// Latency: 3 + IN_REG cycles, one result per cycle; advances when en is high (the
// parent's pipeline enable). Parameters: A_W, B_W (1..68), B_SIGNED, P_W (1..128), no
// defaults; IN_REG (0 or 1, default 0).
`default_nettype none
module hwa_mul_pipe #(
    parameter int A_W,
    parameter int B_W,
    parameter bit B_SIGNED,
    parameter int P_W,
    parameter bit IN_REG = 1'b0
) (
    input  wire logic                  clk,
    input  wire logic                  en,
    input  wire logic signed [A_W-1:0] a,
    input  wire logic        [B_W-1:0] b,
    output logic signed      [P_W-1:0] p
);

  localparam int L = 17;
  localparam int NA = (A_W <= L + 1) ? 1 : (A_W - 1 + L - 1) / L;  // top limb <= 18 bits
  localparam int NB_S = (B_W <= L + 1) ? 1 : (B_W - 1 + L - 1) / L;
  localparam int NB_U = (B_W + L - 1) / L;
  localparam int NB = B_SIGNED ? NB_S : NB_U;
  localparam int PPW = 36;  // an 18 x 18 signed product

  if (A_W < 1 || A_W > 68 || B_W < 1 || B_W > 68 || P_W < 1 || P_W > 128) begin : g_bad
    $error("hwa_mul_pipe %m: invalid A_W=%0d B_W=%0d (1..68) P_W=%0d (1..128)", A_W, B_W, P_W);
  end

  // sign-extended operands, wide enough for every limb
  localparam int BXW = B_SIGNED ? NB * L + 1 : NB * L;  // the top limb's sign bit
  logic signed [NA*L:0] ax;
  logic signed [BXW-1:0] bx;
  assign ax = (NA * L + 1)'(a);
  if (B_SIGNED) begin : g_bs
    assign bx = BXW'($signed(b));
  end else begin : g_bu
    assign bx = BXW'($signed({1'b0, b}));
  end

  // s1: the limb products
  logic signed [PPW-1:0] pp[NA][NB];
  for (genvar i = 0; i < NA; i++) begin : g_a
    logic signed [17:0] al;
    if (i == NA - 1) begin : g_top
      assign al = 18'(ax[i*L+:L+1]);  // the top limb: its bits and the sign
    end else begin : g_low
      assign al = $signed({1'b0, ax[i*L+:L]});
    end
    for (genvar j = 0; j < NB; j++) begin : g_b
      logic signed [17:0] bl;
      if (j == NB - 1 && B_SIGNED) begin : g_top
        assign bl = 18'(bx[j*L+:L+1]);
      end else begin : g_low
        assign bl = $signed({1'b0, bx[j*L+:L]});
      end
      if (IN_REG) begin : g_in_reg
        (* keep *) logic signed [17:0] al_r, bl_r;  // this product's own copies
        always_ff @(posedge clk) begin
          if (en) begin
            al_r <= al;
            bl_r <= bl;
          end
        end
        always_ff @(posedge clk) begin
          if (en) pp[i][j] <= PPW'(al_r) * PPW'(bl_r);
        end
      end else begin : g_no_in_reg
        always_ff @(posedge clk) begin
          if (en) pp[i][j] <= PPW'(al) * PPW'(bl);
        end
      end
    end
  end

  // s2: one row per a-limb (mod 2^P_W)
  logic signed [P_W-1:0] row[NA];
  for (genvar i = 0; i < NA; i++) begin : g_row
    logic signed [P_W-1:0] sum_c;
    always_comb begin
      sum_c = '0;
      for (int j = 0; j < NB; j++) sum_c = sum_c + (P_W'(pp[i][j]) <<< (L * j));
    end
    always_ff @(posedge clk) begin
      if (en) row[i] <= sum_c;
    end
  end

  // s3: the rows
  logic signed [P_W-1:0] tot_c;
  always_comb begin
    tot_c = '0;
    for (int i = 0; i < NA; i++) tot_c = tot_c + (row[i] <<< (L * i));
  end
  always_ff @(posedge clk) begin
    if (en) p <= tot_c;
  end

endmodule
`default_nettype wire
