// hwa_udiv_iter -- iterative unsigned division q = floor(n / d), r = n - q*d, a few
// quotient bits per cycle, one division at a time (valid/ready on both sides).
//
// Contract: a division is taken when in_v and in_rdy are high; the caller guarantees
// n / d < 2^Q_W (equivalently n >> Q_W < d). Restoring division, R = ceil(Q_W /
// (II - 1)) quotient bits per cycle over T = ceil(Q_W / R) <= II - 1 cycles: the
// remainder starts at n >> (T*R) and takes the low T*R bits of n one by one (r = 2r +
// bit; if r >= d then r -= d, quotient bit 1). The result (q, r and the payload p_in,
// carried unchanged) is held on out_v until out_rdy. d = 0 gives q = all ones.
// Timing: in -> out_v T + 1 cycles; a division is taken only when no result is held
// (in_rdy = !busy && !done, a function of registers alone: no path from out_rdy to the
// load, issue 22), so one division every T + 2 cycles (T + 1 <= II - 1 + 1).
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_udiv_iter #(
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

  localparam int R = (II > 1) ? (Q_W + II - 2) / (II - 1) : 1;  // quotient bits per cycle
  localparam int T = (Q_W + R - 1) / R;  // cycles per division
  localparam int TR = T * R;
  localparam int CW = $clog2(T + 1);
  localparam int NX = N_W + TR;

  if (N_W < 1 || D_W < 1 || Q_W < 1 || P_W < 1 || II < 2 || N_W > 64 || D_W > 63)
  begin : g_bad
    $error("hwa_udiv_iter %m: invalid N_W=%0d D_W=%0d Q_W=%0d II=%0d P_W=%0d", N_W, D_W, Q_W, II,
           P_W);
  end

  logic busy_reg, done_reg;
  logic [CW-1:0] cnt_reg;
  logic [D_W-1:0] r_reg, d_reg;
  logic [TR-1:0] nsh_reg, q_reg;  // numerator bits still to come (MSB first); quotient
  logic [P_W-1:0] p_reg;
  logic [NX-1:0] n_ext;
  assign n_ext = NX'(n);

  assign in_rdy = !busy_reg && !done_reg;
  assign out_v = done_reg;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [TR-1:0] q_all;  // bits above Q_W are zero (n / d < 2^Q_W)
  /* verilator lint_on UNUSEDSIGNAL */
  assign q_all = q_reg;
  assign q = Q_W'(q_all);
  assign r = r_reg;
  assign p_out = p_reg;

  // R restoring steps
  logic [D_W-1:0] r_c;
  logic [TR-1:0] nsh_c, q_c;
  always_comb begin
    logic [D_W:0] t;
    r_c = r_reg;
    nsh_c = nsh_reg;
    q_c = q_reg;
    for (int j = 0; j < R; j++) begin
      t = {r_c, nsh_c[TR-1]};
      nsh_c = nsh_c << 1;
      if (t >= {1'b0, d_reg}) begin
        r_c = D_W'(t - {1'b0, d_reg});
        q_c = (q_c << 1) | TR'(1);
      end else begin
        r_c = D_W'(t);
        q_c = q_c << 1;
      end
    end
  end

  always_ff @(posedge clk) begin
    if (rst) begin
      busy_reg <= 1'b0;
      done_reg <= 1'b0;
      cnt_reg <= '0;
    end else if (in_v && in_rdy) begin
      busy_reg <= 1'b1;
      done_reg <= 1'b0;
      cnt_reg <= '0;
    end else if (busy_reg) begin
      cnt_reg <= cnt_reg + 1'b1;
      if (cnt_reg == CW'(T - 1)) begin
        busy_reg <= 1'b0;
        done_reg <= 1'b1;
      end
    end else if (out_rdy) begin
      done_reg <= 1'b0;
    end
    if (in_v && in_rdy) begin
      r_reg <= D_W'(n_ext >> TR);  // < d by the contract
      nsh_reg <= TR'(n);
      q_reg <= '0;
      d_reg <= d;
      p_reg <= p_in;
    end else if (busy_reg) begin
      r_reg <= r_c;
      nsh_reg <= nsh_c;
      q_reg <= q_c;
    end
  end

endmodule
`default_nettype wire
