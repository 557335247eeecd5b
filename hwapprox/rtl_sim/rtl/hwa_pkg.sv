// hwa_pkg -- shared constants and helpers of the hwapprox RTL units.
//
// Rounding and overflow modes use the ap_fixed names and are encoded as
// integers (the Python side, hwapprox.rtl_sim.units, writes the same codes):
//   ROUND: 0 AP_TRN (floor), 1 AP_TRN_ZERO, 2 AP_RND (ties to +inf),
//          3 AP_RND_ZERO, 4 AP_RND_INF, 5 AP_RND_MIN_INF, 6 AP_RND_CONV
//   OVF:   0 AP_WRAP, 1 AP_SAT, 2 AP_SAT_ZERO, 3 AP_SAT_SYM
`default_nettype none
package hwa_pkg;

  // constants are shared by all units; each unit uses some of them
  /* verilator lint_off UNUSEDPARAM */

  localparam int RND_TRN = 0;
  localparam int RND_TRN_ZERO = 1;
  localparam int RND_RND = 2;
  localparam int RND_RND_ZERO = 3;
  localparam int RND_RND_INF = 4;
  localparam int RND_RND_MIN_INF = 5;
  localparam int RND_RND_CONV = 6;

  localparam int OVF_WRAP = 0;
  localparam int OVF_SAT = 1;
  localparam int OVF_SAT_ZERO = 2;
  localparam int OVF_SAT_SYM = 3;
  /* verilator lint_on UNUSEDPARAM */

  // Increment (0/1) to add to the floor quotient q of a right shift, given the
  // dropped bits compared with one half LSB, as ap_fixed quantisation does.
  function automatic logic round_up(input int mode, input logic above_half,
                                    input logic at_half, input logic inexact,
                                    input logic negative, input logic q_odd);
    case (mode)
      RND_TRN:         round_up = 1'b0;
      RND_TRN_ZERO:    round_up = inexact & negative;
      RND_RND:         round_up = above_half | at_half;
      RND_RND_ZERO:    round_up = above_half | (at_half & negative);
      RND_RND_INF:     round_up = above_half | (at_half & ~negative);
      RND_RND_MIN_INF: round_up = above_half;
      default:         round_up = above_half | (at_half & q_odd);  // RND_CONV
    endcase
  endfunction

  // Latency of hwa_exp_unit (its contract header): 2 cycles unpipelined or LUT
  // variant; PIPE base2: the t front (1 when d*LOG2E is the identity, else the
  // product 3 + its rounding 3 (PROD_SHIFT > 0) + saturation 1) and 10 for 2^-t;
  // MUL_IN_REG adds one cycle per product (hwa_mul_pipe IN_REG).
  function automatic int exp_unit_lat(input bit pipe, input bit base2, input longint log2e,
                                      input int prod_shift, input bit mul_in_reg);
    if (!pipe || !base2) return 2;
    if (log2e == 1 && prod_shift == 0) return 1 + 10 + int'(mul_in_reg);
    return 3 + ((prod_shift > 0) ? 3 : 0) + 1 + 10 + 2 * int'(mul_in_reg);
  endfunction

  // Latency of hwa_recip (its contract header): 3 + Newton steps unpipelined; PIPE:
  // normalisation 3, the seed (Newton 2, PWL 10), 13 per Newton step, final 5;
  // MUL_IN_REG adds one cycle per product (PWL seed 1, Newton step 2).
  function automatic int recip_lat(input bit pipe, input bit newton, input int steps,
                                   input bit mul_in_reg);
    if (!pipe) return 3 + (newton ? steps : 0);
    return 3 + (newton ? 2 + (13 + 2 * int'(mul_in_reg)) * steps : 10 + int'(mul_in_reg)) + 5;
  endfunction

endpackage
`default_nettype wire
