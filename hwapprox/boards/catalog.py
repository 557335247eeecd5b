"""Board catalogue loader and resource fit report."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import yaml

#: Resource kinds a board file lists (BRAM_18K in 18 Kb blocks, URAM in 288 Kb blocks).
FILE_KINDS: tuple[str, ...] = ("LUT", "FF", "DSP", "BRAM_18K", "URAM")
#: Kinds a fit report accepts: the file kinds plus ``BRAM`` in 36 Kb blocks
#: (what yosys and the RTL synthesis report count), derived as BRAM_18K / 2.
RESOURCE_KINDS: tuple[str, ...] = ("LUT", "FF", "DSP", "BRAM", "BRAM_18K", "URAM")
FAMILIES: tuple[str, ...] = ("7series", "ultrascale+")


class BoardError(ValueError):
    """Unknown board or malformed board file."""


@dataclass(frozen=True, slots=True)
class Board:
    """One FPGA board: its part, yosys family, default clock and resource budget."""

    name: str
    description: str
    part: str
    family: str
    clock_mhz: float
    resources: dict[str, int] = field(hash=False)
    vendor: str = ""
    source: str = ""

    @property
    def clock_period_ns(self) -> float:
        return 1000.0 / self.clock_mhz


@dataclass(frozen=True, slots=True)
class FitReport:
    """Use vs budget per resource kind; ``fits`` when every kind is within budget."""

    board: Board
    used: dict[str, float]
    utilisation: dict[str, float]  # fraction of the budget, per kind

    @property
    def fits(self) -> bool:
        return all(u <= 1.0 for u in self.utilisation.values())

    def table(self) -> str:
        """A plain-text table: kind, used, available, percent."""
        lines = [f"{self.board.name} ({self.board.part})", "kind      used   available    util"]
        for kind in RESOURCE_KINDS:
            if kind not in self.used:
                continue
            avail = self.board.resources[kind]
            pct = 100.0 * self.utilisation[kind] if avail else float("inf")
            lines.append(f"{kind:<5} {self.used[kind]:>9.0f} {avail:>11d} {pct:>6.1f}%")
        lines.append("fits" if self.fits else "DOES NOT FIT")
        return "\n".join(lines)


def _parse_board(name: str, entry: Any, origin: str) -> Board:
    if not isinstance(entry, dict):
        raise BoardError(f"{origin}: board {name!r} must be a mapping, got {type(entry).__name__}")
    missing = {"part", "family", "clock_mhz", "resources", "source"} - set(entry)
    if missing:
        raise BoardError(f"{origin}: board {name!r} lacks {', '.join(sorted(missing))}")
    family = entry["family"]
    if family not in FAMILIES:
        raise BoardError(
            f"{origin}: board {name!r} has family {family!r}; expected one of {FAMILIES}"
        )
    res = entry["resources"]
    if not isinstance(res, dict) or set(res) != set(FILE_KINDS):
        raise BoardError(
            f"{origin}: board {name!r} resources must list exactly {', '.join(FILE_KINDS)}"
        )
    for kind, value in res.items():
        if not isinstance(value, int) or value < 0:
            raise BoardError(f"{origin}: board {name!r} {kind}={value!r} is not a count >= 0")
    clock = entry["clock_mhz"]
    if not isinstance(clock, int | float) or clock <= 0:
        raise BoardError(f"{origin}: board {name!r} clock_mhz={clock!r} must be > 0")
    return Board(
        name=name,
        description=str(entry.get("description", "")),
        part=str(entry["part"]),
        family=family,
        clock_mhz=float(clock),
        resources={**{k: int(v) for k, v in res.items()}, "BRAM": int(res["BRAM_18K"]) // 2},
        vendor=str(entry.get("vendor", "")),
        source=str(entry["source"]),
    )


def load_boards(path: str | Path | None = None) -> dict[str, Board]:
    """Load a board file (the bundled catalogue when ``path`` is None)."""
    if path is None:
        return dict(_bundled())
    p = Path(path)
    if not p.is_file():
        raise BoardError(f"board file {str(p)!r} does not exist")
    return _load_text(p.read_text(), str(p))


def _load_text(text: str, origin: str) -> dict[str, Board]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise BoardError(f"{origin}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise BoardError(f"{origin}: expected a mapping of board name -> board")
    return {name: _parse_board(name, entry, origin) for name, entry in data.items()}


@functools.cache
def _bundled() -> dict[str, Board]:
    text = resources.files("hwapprox.boards").joinpath("boards.yaml").read_text()
    return _load_text(text, "hwapprox/boards/boards.yaml")


def list_boards() -> list[str]:
    """Names of the bundled boards."""
    return sorted(_bundled())


def get_board(name: str | Board) -> Board:
    """A bundled board by name (case-insensitive)."""
    if isinstance(name, Board):
        return name
    boards = _bundled()
    key = name.lower()
    if key not in boards:
        raise BoardError(f"unknown board {name!r}; available: {', '.join(sorted(boards))}")
    return boards[key]


def fit_report(used: dict[str, float], board: str | Board) -> FitReport:
    """Compare resource use (kind -> count) with a board's budget."""
    b = get_board(board)
    unknown = set(used) - set(RESOURCE_KINDS)
    if unknown:
        raise BoardError(
            f"unknown resource kind(s) {', '.join(sorted(unknown))}; "
            f"expected {', '.join(RESOURCE_KINDS)}"
        )
    util: dict[str, float] = {}
    for kind, count in used.items():
        if count < 0:
            raise BoardError(f"resource {kind}={count} must be >= 0")
        avail = b.resources[kind]
        util[kind] = count / avail if avail else (0.0 if count == 0 else float("inf"))
    return FitReport(board=b, used=dict(used), utilisation=util)


#: an AMD/Xilinx device part name: family + device, package + pins, speed grade, and an
#: optional temperature grade (xc7z020clg400-1, xczu3eg-sbva484-1-e, xcu55c-fsvh2892-2L-e)
_PART = re.compile(r"^x[a-z]{1,3}[0-9a-z]*-?[a-z]{2,5}[0-9]{2,4}-[0-9][a-z]{0,2}(-[a-z])?$", re.I)


def check_part(part: str) -> str:
    """``part`` when it reads as an AMD/Xilinx part name, else :class:`BoardError` naming
    it and the fix (hls4ml passes the part to the vendor tool, which would fail late)."""
    if not _PART.match(part.strip()):
        known = ", ".join(sorted(b.part for b in _bundled().values())[:3])
        raise BoardError(
            f"part {part!r} is not an AMD/Xilinx part name (family, device, package, speed "
            f"grade: e.g. {known}); give a full part or --board NAME (hwapprox boards)"
        )
    return part.strip()
