"""FPGA board and part data (part number, clock, LUT/FF/DSP/BRAM budget).

Board files live in ``boards.yaml`` (package data); :func:`get_board` loads one,
:func:`fit_report` compares an estimated resource use with its budget.
Imports nothing else of hwapprox.

>>> get_board("pynq-z2").part
'xc7z020clg400-1'
>>> fit_report({"LUT": 5320, "DSP": 22}, "pynq-z2").fits
True
"""

from hwapprox.boards.catalog import (
    FILE_KINDS,
    RESOURCE_KINDS,
    Board,
    BoardError,
    FitReport,
    check_part,
    fit_report,
    get_board,
    list_boards,
)

__all__ = [
    "FILE_KINDS",
    "RESOURCE_KINDS",
    "Board",
    "BoardError",
    "FitReport",
    "check_part",
    "fit_report",
    "get_board",
    "list_boards",
]
