// hwa_udiv -- pipelined unsigned integer division q = floor(n / d), one result per cycle.
//
// Contract: n (N_W bits) and d (D_W bits, d > 0) enter with a payload (P_W bits, carried
// unchanged); Q_W quotient bits come out N_W cycles later (restoring division, one
// quotient bit per stage: r = 2r + n_k; if r >= d then r -= d, q_k = 1), advancing when
// en is high. The caller guarantees n / d < 2^Q_W. d = 0 gives q = all ones.
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_udiv #(
    parameter int N_W,
    parameter int D_W,
    parameter int Q_W,
    parameter int P_W
) (
    input  logic           clk,
    input  logic           en,
    input  logic [N_W-1:0] n,
    input  logic [D_W-1:0] d,
    input  logic [P_W-1:0] p_in,
    output logic [Q_W-1:0] q,
    output logic [P_W-1:0] p_out
);

  if (N_W < 1 || D_W < 1 || Q_W < 1 || Q_W > N_W || P_W < 1 || N_W > 64) begin : g_bad
    $error("hwa_udiv %m: invalid N_W=%0d D_W=%0d Q_W=%0d (<= N_W) P_W=%0d", N_W, D_W, Q_W, P_W);
  end

  // stage s holds the partial remainder after numerator bit N_W-1-s, the numerator bits
  // still to come, the quotient bits so far, the divisor and the payload
  logic [D_W:0] r_st[N_W];
  logic [N_W-1:0] n_st[N_W];
  logic [Q_W-1:0] q_st[N_W];
  logic [D_W-1:0] d_st[N_W];
  logic [P_W-1:0] p_st[N_W];
  always_ff @(posedge clk) begin
    if (en) begin
      for (int s = 0; s < N_W; s++) begin
        logic [D_W:0] r_prev, r_try;
        logic [N_W-1:0] n_prev;
        /* verilator lint_off UNUSEDSIGNAL */
        logic [Q_W-1:0] q_prev;  // its top bit shifts out: n / d < 2^Q_W
        /* verilator lint_on UNUSEDSIGNAL */
        logic [D_W-1:0] d_prev;
        logic [D_W+1:0] sh;
        r_prev = (s == 0) ? '0 : r_st[s-1];
        n_prev = (s == 0) ? n : n_st[s-1];
        q_prev = (s == 0) ? '0 : q_st[s-1];
        d_prev = (s == 0) ? d : d_st[s-1];
        sh = {r_prev, n_prev[N_W-1-s]};
        if (sh >= (D_W + 2)'(d_prev)) begin
          r_try = (D_W + 1)'(sh - (D_W + 2)'(d_prev));
          q_st[s] <= {q_prev[Q_W-2:0], 1'b1};
        end else begin
          r_try = (D_W + 1)'(sh);
          q_st[s] <= {q_prev[Q_W-2:0], 1'b0};
        end
        r_st[s] <= r_try;
        n_st[s] <= n_prev;
        d_st[s] <= d_prev;
        p_st[s] <= (s == 0) ? p_in : p_st[s-1];
      end
    end
  end
  assign q = q_st[N_W-1];
  assign p_out = p_st[N_W-1];

endmodule
`default_nettype wire
