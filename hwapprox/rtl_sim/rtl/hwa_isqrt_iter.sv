// hwa_isqrt_iter -- iterative integer square root root = floor(sqrt(x)), a few root
// bits per cycle, one root at a time (valid/ready on both sides).
//
// Contract: a radicand x (X_W bits, unsigned) is taken when in_v and in_rdy are high;
// root (RB = ceil(X_W / 2) bits) is exact (the digit-by-digit restoring method: per
// root bit, rem = 4*rem + next two bits of x; if rem >= 4*root + 1 then rem -= 4*root
// + 1 and the bit is 1). R = ceil(RB / (II - 1)) bits per cycle over T = ceil(RB / R)
// <= II - 1 cycles. The result and the payload (carried unchanged) are held on out_v
// until out_rdy. Timing: in -> out_v T + 1 cycles; a radicand is taken only when no
// root is held (in_rdy = !busy && !done, registers alone: no path from out_rdy to the
// load, issue 22), so one root every T + 2 cycles.
// Parameters: no defaults; the parent passes every one.
`default_nettype none
module hwa_isqrt_iter #(
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

  localparam int RB = (X_W + 1) / 2;  // root bits
  localparam int R = (II > 1) ? (RB + II - 2) / (II - 1) : 1;  // root bits per cycle
  localparam int T = (RB + R - 1) / R;  // cycles per root
  localparam int TR = T * R;  // >= RB: the radicand is zero-extended to 2*TR bits
  localparam int CW = $clog2(T + 1);
  localparam int EW = TR + 3;  // rem <= 2*root < 2^(TR+1); 4*rem + 3 < 2^(TR+3)

  if (X_W < 2 || II < 2 || P_W < 1 || X_W > 64) begin : g_bad
    $error("hwa_isqrt_iter %m: invalid X_W=%0d II=%0d P_W=%0d", X_W, II, P_W);
  end

  logic busy_reg, done_reg;
  logic [CW-1:0] cnt_reg;
  logic [2*TR-1:0] xsh_reg;  // radicand bits still to come, MSB first
  logic [TR-1:0] root_reg;
  logic [EW-1:0] rem_reg;
  logic [P_W-1:0] p_reg;

  assign in_rdy = !busy_reg && !done_reg;
  assign out_v = done_reg;
  /* verilator lint_off UNUSEDSIGNAL */
  logic [TR-1:0] root_all;  // bits above RB are zero
  /* verilator lint_on UNUSEDSIGNAL */
  assign root_all = root_reg;
  assign root = RB'(root_all);
  assign p_out = p_reg;

  logic [2*TR-1:0] xsh_c;
  logic [TR-1:0] root_c;
  logic [EW-1:0] rem_c;
  always_comb begin
    logic [EW-1:0] t, trial;
    xsh_c = xsh_reg;
    root_c = root_reg;
    rem_c = rem_reg;
    for (int j = 0; j < R; j++) begin
      t = (rem_c << 2) | EW'(xsh_c[2*TR-1-:2]);
      xsh_c = xsh_c << 2;
      trial = (EW'(root_c) << 2) | EW'(1);
      if (t >= trial) begin
        rem_c = t - trial;
        root_c = (root_c << 1) | TR'(1);
      end else begin
        rem_c = t;
        root_c = root_c << 1;
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
      xsh_reg <= (2 * TR)'(x);
      root_reg <= '0;
      rem_reg <= '0;
      p_reg <= p_in;
    end else if (busy_reg) begin
      xsh_reg <= xsh_c;
      root_reg <= root_c;
      rem_reg <= rem_c;
    end
  end

endmodule
`default_nettype wire
