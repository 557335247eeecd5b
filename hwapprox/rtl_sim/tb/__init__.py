"""cocotb testbenches for the hwapprox RTL units (importable by users)."""
