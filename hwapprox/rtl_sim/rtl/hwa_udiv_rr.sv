// hwa_udiv_rr -- hwa_udiv_iter at one quotient bit per cycle, M copies taken in turn
// (issue 22): the same q = floor(n / d), r = n - q*d and payload, valid/ready on both
// sides, rows in order, one division every II cycles at most, but each cycle of a
// division is one compare-subtract of D_W + 1 bits (hwa_udiv_iter with R = 1) instead
// of ceil(Q_W / (II - 1)) of them chained.
// Contract: as hwa_udiv_iter (n / d < 2^Q_W; d = 0 gives q = all ones). M = ceil((Q_W +
// 2) / II) copies, each one division per Q_W + 2 cycles (hwa_udiv_iter takes a division
// only when idle and empty, so in_rdy and every copy's load are functions of registers
// and in_v, never of out_rdy); a division goes to copy w and its result is taken from
// copy w, w = 0, 1, ..., M - 1, 0, ... on both sides.
// Timing: in -> out_v Q_W + 1 cycles (hwa_udiv_iter: ceil(Q_W / R) + 1).
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_udiv_rr #(
    parameter int N_W,
    parameter int D_W,
    parameter int Q_W,
    parameter int II,
    parameter int P_W
) (
    input  logic           clk,
    input  logic           rst,
    input  logic           in_v,
    output logic           in_rdy,
    input  logic [N_W-1:0] n,
    input  logic [D_W-1:0] d,
    input  logic [P_W-1:0] p_in,
    output logic           out_v,
    input  logic           out_rdy,
    output logic [Q_W-1:0] q,
    output logic [D_W-1:0] r,
    output logic [P_W-1:0] p_out
);

  // a copy takes a new one only when idle and empty (in_rdy from registers alone: no
  // ready path through the copy to out_rdy): Q_W + 2 cycles per copy
  localparam int M = (Q_W + 2 + II - 1) / II;
  localparam int WW = (M > 1) ? $clog2(M) : 1;

  if (II < 2 || Q_W < 1) begin : g_bad
    $error("hwa_udiv_rr %m: invalid II=%0d Q_W=%0d", II, Q_W);
  end

  logic [WW-1:0] wsel, rsel;
  logic i_rdy[M], o_v[M];
  logic [Q_W-1:0] o_q[M];
  logic [D_W-1:0] o_r[M];
  logic [P_W-1:0] o_p[M];
  for (genvar i = 0; i < M; i++) begin : g_div
    hwa_udiv_iter #(
        .N_W(N_W),
        .D_W(D_W),
        .Q_W(Q_W),
        .II (Q_W + 1),  // R = 1
        .P_W(P_W)
    ) u_div (
        .clk(clk),
        .rst(rst),
        .in_v(in_v && 32'(wsel) == i),
        .in_rdy(i_rdy[i]),
        .n(n),
        .d(d),
        .p_in(p_in),
        .out_v(o_v[i]),
        .out_rdy(out_rdy && 32'(rsel) == i),
        .q(o_q[i]),
        .r(o_r[i]),
        .p_out(o_p[i])
    );
  end
  assign in_rdy = i_rdy[wsel];  // that copy is not busy and holds no result
  assign out_v = o_v[rsel];
  assign q = o_q[rsel];
  assign r = o_r[rsel];
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
