// hwa_isqrt_rr -- hwa_isqrt_iter at one root bit per cycle, M copies taken in turn
// (issue 22): the same root = floor(sqrt(x)) and payload, valid/ready on both sides, rows
// in order, one root every II cycles at most, but each cycle of a root is one trial
// subtraction (hwa_isqrt_iter with R = 1) instead of ceil(RB / (II - 1)) of them chained.
// Contract: as hwa_isqrt_iter. RB = ceil(X_W / 2); M = ceil((RB + 2) / II) copies, each
// one root per RB + 2 cycles (hwa_isqrt_iter takes a radicand only when idle and
// empty, so in_rdy and every copy's load are functions of registers and in_v, never of
// out_rdy); a radicand goes to copy w and its root is taken from copy w, w = 0, 1, ...,
// M - 1, 0, ... on both sides.
// Timing: in -> out_v RB + 1 cycles (hwa_isqrt_iter: ceil(RB / R) + 1).
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_isqrt_rr #(
    parameter int X_W,
    parameter int II,
    parameter int P_W
) (
    input  logic                     clk,
    input  logic                     rst,
    input  logic                     in_v,
    output logic                     in_rdy,
    input  logic [X_W-1:0]           x,
    input  logic [P_W-1:0]           p_in,
    output logic                     out_v,
    input  logic                     out_rdy,
    output logic [(X_W + 1) / 2-1:0] root,
    output logic [P_W-1:0]           p_out
);

  localparam int RB = (X_W + 1) / 2;
  // a copy takes a new one only when idle and empty (in_rdy from registers alone: no
  // ready path through the copy to out_rdy): RB + 2 cycles per copy
  localparam int M = (RB + 2 + II - 1) / II;
  localparam int WW = (M > 1) ? $clog2(M) : 1;

  if (II < 2 || X_W < 2) begin : g_bad
    $error("hwa_isqrt_rr %m: invalid II=%0d X_W=%0d", II, X_W);
  end

  logic [WW-1:0] wsel, rsel;
  logic i_rdy[M], o_v[M];
  logic [RB-1:0] o_root[M];
  logic [P_W-1:0] o_p[M];
  for (genvar i = 0; i < M; i++) begin : g_sq
    hwa_isqrt_iter #(
        .X_W(X_W),
        .II (RB + 1),  // R = 1
        .P_W(P_W)
    ) u_sq (
        .clk(clk),
        .rst(rst),
        .in_v(in_v && 32'(wsel) == i),
        .in_rdy(i_rdy[i]),
        .x(x),
        .p_in(p_in),
        .out_v(o_v[i]),
        .out_rdy(out_rdy && 32'(rsel) == i),
        .root(o_root[i]),
        .p_out(o_p[i])
    );
  end
  assign in_rdy = i_rdy[wsel];  // that copy is not busy and holds no result
  assign out_v = o_v[rsel];
  assign root = o_root[rsel];
  assign p_out = o_p[rsel];
  always_ff @(posedge clk) begin
    if (rst) begin
      wsel <= '0;
      rsel <= '0;
    end else begin
      if (in_v && in_rdy) wsel <= (32'(wsel) == M - 1) ? '0 : wsel + 1'b1;
      if (out_v && out_rdy) rsel <= (32'(rsel) == M - 1) ? '0 : rsel + 1'b1;
    end
  end

endmodule
`default_nettype wire
