// hwa_out_code -- the output register of a softmax unit, linear or log-coded
// (SoftmaxSpec.out_code; RepQ-ViT, Li et al. 2023), in the parent's stall domain.
//
// FORM 0: out_y = in_y one cycle later (the unit's plain output register).
// FORM 1 / 2 (log2 / log-sqrt2): one more register, then hwa_log_code of the
//   probability code: out_y = the BITS-bit code (2^BITS - 1 = exactly 0), two cycles.
// in_y is the out_fmt code (W bits, F fraction bits; masked elements already 0).
// ce: the parent's pipeline enable (its hwa_skid's registered ready), so the stage stalls with it.
// Parameters: no defaults; the parent passes them from the spec's hw_params().
`default_nettype none
module hwa_out_code #(
    parameter int W,
    parameter bit SIGNED,
    parameter int F,
    parameter int FORM,
    parameter int BITS,
    parameter longint C12,
    parameter longint C14,
    parameter longint C34
) (
    input  logic                                    clk,
    input  logic                                    rst,
    input  logic                                    ce,
    input  logic                                    in_v,
    input  logic                                    in_l,
    input  logic [W-1:0]                            in_y,
    output logic                                    out_v,
    output logic                                    out_l,
    output logic [(FORM != 0 ? BITS : W)-1:0]       out_y
);

  if (FORM < 0 || FORM > 2 || W < 1 || W > 62 || (FORM != 0 && (BITS < 2 || BITS > 8)))
  begin : g_bad
    $error("hwa_out_code %m: invalid FORM=%0d (0..2) W=%0d BITS=%0d (2..8)", FORM, W, BITS);
  end

  if (FORM == 0) begin : g_linear
    always_ff @(posedge clk) begin
      if (rst) begin
        out_v <= 1'b0;
        out_l <= 1'b0;
      end else if (ce) begin
        out_v <= in_v;
        out_l <= in_l;
      end
      if (ce) out_y <= in_y;
    end
  end else begin : g_code
    logic v1, l1;
    logic [W-1:0] y1;
    logic [BITS-1:0] code;
    always_ff @(posedge clk) begin
      if (rst) begin
        v1 <= 1'b0;
        out_v <= 1'b0;
        out_l <= 1'b0;
      end else if (ce) begin
        v1 <= in_v;
        out_v <= v1;
        out_l <= l1;
      end
      if (ce) begin
        l1 <= in_l;
        y1 <= in_y;
        out_y <= code;
      end
    end
    hwa_log_code #(
        .W(W),
        .SIGNED(SIGNED),
        .F(F),
        .FORM(FORM),
        .BITS(BITS),
        .C12(C12),
        .C14(C14),
        .C34(C34)
    ) u_code (
        .p(y1),
        .c(code)
    );
  end

endmodule
`default_nettype wire
