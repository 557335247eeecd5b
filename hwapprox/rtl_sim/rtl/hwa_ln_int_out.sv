// hwa_ln_int_out -- the output stage of the integer LayerNorms (I-BERT, I-ViT), per
// element, a stall-all pipeline advancing when ce is high:
//   y_int = (y * factor) >>> 1                    (YF_W, YI_W bits)
//   Z     = (y_int * sqrtn + 2^(ZSHIFT-1)) >>> ZSHIFT   (YQ_W, Z_W: round half up)
//   acc   = Z * gamma + (beta <<< BETA_SHIFT)      (ACC_W)
//   out   = sat(round_shift(acc, OUT_SHIFT, OUT_RND), OUT_OVF)   (OUT_W)
// exactly IBertLayerNorm._model_rows after the factor, and affine_out. Inputs are
// taken with in_v when ce is high; the output register is m_axis (4 ce cycles later;
// the parent puts its hwa_skid after it and takes ce from the skid's registered ready).
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

  // s1: y * factor
  logic s1_v, s1_l;
  logic signed [YF_W-1:0] s1_yf;
  logic [SQRTN_W-1:0] s1_sq;
  logic signed [GAMMA_W-1:0] s1_g;
  logic signed [BETA_W-1:0] s1_b;
  // s2: y_int * sqrtn
  logic s2_v, s2_l;
  logic signed [YQ_W-1:0] s2_yq;
  logic signed [GAMMA_W-1:0] s2_g;
  logic signed [BETA_W-1:0] s2_b;
  // s3: Z
  logic s3_v, s3_l;
  logic signed [Z_W-1:0] s3_z;
  logic signed [GAMMA_W-1:0] s3_g;
  logic signed [BETA_W-1:0] s3_b;
  // s4: acc
  logic s4_v, s4_l;
  logic signed [ACC_W-1:0] s4_acc;

  logic signed [YI_W-1:0] yi_c;
  /* verilator lint_off UNUSEDSIGNAL */
  logic signed [YQ_W-1:0] zr_c;  // the model's Z fits Z_W bits: the top bits are dropped
  /* verilator lint_on UNUSEDSIGNAL */
  assign yi_c = YI_W'(s1_yf >>> 1);
  assign zr_c = (s2_yq + (YQ_W'(1) <<< (ZSHIFT - 1))) >>> ZSHIFT;

  always_ff @(posedge clk) begin
    if (rst) begin
      s1_v <= 1'b0;
      s2_v <= 1'b0;
      s3_v <= 1'b0;
      s4_v <= 1'b0;
    end else if (ce) begin
      s1_v <= in_v;
      s2_v <= s1_v;
      s3_v <= s2_v;
      s4_v <= s3_v;
    end
    if (ce) begin
      s1_yf <= YF_W'(y) * YF_W'($signed({1'b0, factor}));
      s1_sq <= sqrtn;
      s1_g <= gamma;
      s1_b <= beta;
      s1_l <= in_l;
      s2_yq <= YQ_W'(yi_c) * YQ_W'($signed({1'b0, s1_sq}));
      s2_g <= s1_g;
      s2_b <= s1_b;
      s2_l <= s1_l;
      s3_z <= Z_W'(zr_c);
      s3_g <= s2_g;
      s3_b <= s2_b;
      s3_l <= s2_l;
      s4_acc <= ACC_W'(s3_z) * ACC_W'(s3_g) + (ACC_W'(s3_b) <<< BETA_SHIFT);
      s4_l <= s3_l;
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
      .x (s4_acc),
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
      m_axis_tvalid <= s4_v;
      m_axis_tlast <= s4_l;
    end
    if (ce) m_axis_tdata <= out_c;
  end

endmodule
`default_nettype wire
