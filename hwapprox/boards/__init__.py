"""FPGA board and part data (part number, clock, LUT/FF/DSP/BRAM budget).

Will hold the board files, their loader and the fit report that compares an
estimated resource use with a part's budget. Imports nothing else of
hwapprox.
"""
