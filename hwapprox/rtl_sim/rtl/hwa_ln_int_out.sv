// hwa_ln_int_out -- the output stage of the integer LayerNorms (I-BERT, I-ViT), per
// element, a stall-all pipeline advancing when ce is high:
//   y_int = (y * factor) >>> 1                    (YF_W, YI_W bits)
//   Z     = (y_int * sqrtn + 2^(ZSHIFT-1)) >>> ZSHIFT   (YQ_W, Z_W: round half up)
//   acc   = Z * gamma + (beta <<< BETA_SHIFT)      (ACC_W)
//   out   = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF)   (OUT_W)
// exactly IBertLayerNorm._model_rows after the factor, and affine_out. Inputs are
// taken with in_v when ce is high. Stages (issue 22, ECP5 at 125 MHz; LM = 4, a
// hwa_mul_pipe with operand registers of its own): the inputs registered (1), y*factor
// (LM), y_int*sqrtn (LM), Z's rounding (1), Z*gamma (LM), acc (1), the output rounding
// and saturation into the output register m_axis (1): the output register is m_axis
// 3*LM + 4 = 16 ce cycles after the input (it was 5 with each product in one stage); the
// parent puts its hwa_skid after it and takes ce from the skid's registered ready.
// Parameters: no defaults; the parent passes every one (the spec's hw_params()).
`default_nettype none
module hwa_ln_int_out #(
    parameter int YC_W,
    parameter int FACTOR_W,
    parameter int SQRTN_W,
    parameter int YF_W,
    parameter int YI_W,
    parameter int YQ_W,
    parameter int Z_W,
    parameter int ACC_W,
    parameter int GAMMA_W,
    parameter int BETA_W,
    parameter int ZSHIFT,
    parameter int BETA_SHIFT,
    parameter int OUT_SHIFT,
    parameter int OUT_W,
    parameter bit OUT_SIGNED,
    parameter int OUT_RND,
    parameter int OUT_OVF
) (
    input  logic                       clk,
    input  logic                       rst,
    input  logic                       ce,
    input  logic                       in_v,
    input  logic                       in_l,
    input  logic signed [YC_W-1:0]     y,
    input  logic        [FACTOR_W-1:0] factor,
    input  logic        [SQRTN_W-1:0]  sqrtn,
    input  logic signed [GAMMA_W-1:0]  gamma,
    input  logic signed [BETA_W-1:0]   beta,
    output logic [OUT_W-1:0]           m_axis_tdata,
    output logic                       m_axis_tvalid,
    output logic                       m_axis_tlast
);

  if (ZSHIFT < 1 || OUT_SHIFT < 0 || OUT_SHIFT > 255 || YF_W < YC_W || YI_W < 2
      || YQ_W > 64 || ACC_W > 64 || Z_W < 2) begin : g_bad
    $error("hwa_ln_int_out %m: invalid ZSHIFT=%0d OUT_SHIFT=%0d YF_W=%0d YI_W=%0d YQ_W=%0d Z_W=%0d ACC_W=%0d",
           ZSHIFT, OUT_SHIFT, YF_W, YI_W, YQ_W, Z_W, ACC_W);
  end

  localparam int LM = 4;  // hwa_mul_pipe with operand registers of its own (IN_REG)
  // s0: the inputs registered (the parent's y comes from a block RAM read)
  logic s0_v, s0_l;
  logic signed [YC_W-1:0] s0_y;
  logic [FACTOR_W-1:0] s0_f;
  logic [SQRTN_W-1:0] s0_sq;
  logic signed [GAMMA_W-1:0] s0_g;
  logic signed [BETA_W-1:0] s0_b;
  always_ff @(posedge clk) begin
    if (rst) s0_v <= 1'b0;
    else if (ce) s0_v <= in_v;
    if (ce) begin
      s0_l <= in_l;
      s0_y <= y;
      s0_f <= factor;
      s0_sq <= sqrtn;
      s0_g <= gamma;
      s0_b <= beta;
    end
  end
  // LM stages: y * factor (mod 2^YF_W)
  logic signed [YF_W-1:0] s1_yf;
  hwa_mul_pipe #(
      .A_W(YC_W),
      .B_W(FACTOR_W),
      .B_SIGNED(1'b0),
      .P_W(YF_W),
      .IN_REG(1'b1)
  ) u_yf (
      .clk(clk),
      .en (ce),
      .a  (s0_y),
      .b  (s0_f),
      .p  (s1_yf)
  );
  logic s1_v, s1_l;
  logic [SQRTN_W-1:0] s1_sq;
  logic signed [GAMMA_W-1:0] s1_g;
  logic signed [BETA_W-1:0] s1_b;
  hwa_delay #(
      .W(2 + SQRTN_W + GAMMA_W + BETA_W),
      .L(LM)
  ) u_d1 (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({s0_v, s0_l, s0_sq, s0_g, s0_b}),
      .q  ({s1_v, s1_l, s1_sq, s1_g, s1_b})
  );
  // LM stages: y_int * sqrtn (mod 2^YQ_W), y_int = (y * factor) >>> 1
  logic signed [YI_W-1:0] yi_c;
  assign yi_c = YI_W'(s1_yf >>> 1);
  logic signed [YQ_W-1:0] s2_yq;
  hwa_mul_pipe #(
      .A_W(YI_W),
      .B_W(SQRTN_W),
      .B_SIGNED(1'b0),
      .P_W(YQ_W),
      .IN_REG(1'b1)
  ) u_yq (
      .clk(clk),
      .en (ce),
      .a  (yi_c),
      .b  (s1_sq),
      .p  (s2_yq)
  );
  logic s2_v, s2_l;
  logic signed [GAMMA_W-1:0] s2_g;
  logic signed [BETA_W-1:0] s2_b;
  hwa_delay #(
      .W(2 + GAMMA_W + BETA_W),
      .L(LM)
  ) u_d2 (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({s1_v, s1_l, s1_g, s1_b}),
      .q  ({s2_v, s2_l, s2_g, s2_b})
  );
  // 1 stage: Z = round half up (y_int * sqrtn / 2^ZSHIFT)
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [YQ_W-1:0] zr_c;  // the model's Z fits Z_W bits: the top bits are dropped
  /* verilator lint_on UNUSEDSIGNAL */
  assign zr_c = (s2_yq + (YQ_W'(1) <<< (ZSHIFT - 1))) >>> ZSHIFT;
  logic s3_v, s3_l;
  logic signed [Z_W-1:0] s3_z;
  logic signed [GAMMA_W-1:0] s3_g;
  logic signed [BETA_W-1:0] s3_b;
  always_ff @(posedge clk) begin
    if (rst) s3_v <= 1'b0;
    else if (ce) s3_v <= s2_v;
    if (ce) begin
      s3_z <= Z_W'(zr_c);
      s3_g <= s2_g;
      s3_b <= s2_b;
      s3_l <= s2_l;
    end
  end
  // LM stages: Z * gamma (mod 2^ACC_W); 1 stage: acc = Z*gamma + (beta <<< BETA_SHIFT)
  logic signed [ACC_W-1:0] s4_zg;
  hwa_mul_pipe #(
      .A_W(Z_W),
      .B_W(GAMMA_W),
      .B_SIGNED(1'b1),
      .P_W(ACC_W),
      .IN_REG(1'b1)
  ) u_zg (
      .clk(clk),
      .en (ce),
      .a  (s3_z),
      .b  (s3_g),
      .p  (s4_zg)
  );
  logic s4_v, s4_l;
  logic signed [BETA_W-1:0] s4_b;
  hwa_delay #(
      .W(2 + BETA_W),
      .L(LM)
  ) u_d4 (
      .clk(clk),
      .rst(rst),
      .en (ce),
      .d  ({s3_v, s3_l, s3_b}),
      .q  ({s4_v, s4_l, s4_b})
  );
  logic s5_v, s5_l;
  logic signed [ACC_W-1:0] s5_acc;
  always_ff @(posedge clk) begin
    if (rst) s5_v <= 1'b0;
    else if (ce) s5_v <= s4_v;
    if (ce) begin
      s5_acc <= s4_zg + (ACC_W'(s4_b) <<< BETA_SHIFT);
      s5_l <= s4_l;
    end
  end

  // one rounding into out_fmt, overflow mode, output register
  logic signed [ACC_W-1:0] rnd_c;
  logic [OUT_W-1:0] out_c;
  hwa_round_shift #(
      .IN_W (ACC_W),
      .SH_W (8),
      .OUT_W(ACC_W),
      .MODE (OUT_RND)
  ) u_round (
      .x (s5_acc),
      .sh(8'(OUT_SHIFT)),
      .y (rnd_c)
  );
  hwa_sat #(
      .IN_W      (ACC_W),
      .OUT_W     (OUT_W),
      .OUT_SIGNED(OUT_SIGNED),
      .OVF       (OUT_OVF)
  ) u_sat (
      .x(rnd_c),
      .y(out_c)
  );
  always_ff @(posedge clk) begin
    if (rst) begin
      m_axis_tvalid <= 1'b0;
      m_axis_tlast <= 1'b0;
    end else if (ce) begin
      m_axis_tvalid <= s5_v;
      m_axis_tlast <= s5_l;
    end
    if (ce) m_axis_tdata <= out_c;
  end

endmodule
`default_nettype wire
