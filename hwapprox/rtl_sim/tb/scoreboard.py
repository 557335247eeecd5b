"""Scoreboard: every output beat against the approx model's raw codes, in order."""

from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from hwapprox.rtl_sim.tb.axis import Beat

__all__ = ["Mismatch", "Scoreboard", "ScoreboardError"]


class ScoreboardError(AssertionError):
    """Outputs differed from the model, or some were missing or unexpected."""


@dataclass(frozen=True, slots=True)
class Mismatch:
    index: int
    row: int
    expected: int
    got: int
    expected_last: bool
    got_last: bool

    def __str__(self) -> str:
        return (
            f"output #{self.index} (row {self.row}): expected {self.expected} "
            f"last={int(self.expected_last)}, got {self.got} last={int(self.got_last)}"
        )


@dataclass
class Scoreboard:
    """Expected raw codes queued per row; :meth:`check` pops one per output beat.

    ``last`` must be set exactly on the final element of each row.
    """

    name: str = "scoreboard"
    expected: collections.deque[tuple[int, bool, int]] = field(default_factory=collections.deque)
    mismatches: list[Mismatch] = field(default_factory=list)
    unexpected: list[Beat] = field(default_factory=list)
    matched: int = 0
    checked: int = 0
    _rows: int = 0

    def add_row(self, values: npt.ArrayLike) -> None:
        """Queue the model's raw output for one row (``last`` on its final element)."""
        arr = np.asarray(values, dtype=np.int64).ravel()
        n = arr.size
        for i, v in enumerate(arr.tolist()):
            self.expected.append((int(v), i == n - 1, self._rows))
        self._rows += 1

    def check(self, beat: Beat) -> None:
        """Compare one output beat with the next expected value."""
        if not self.expected:
            self.unexpected.append(beat)
            return
        value, last, row = self.expected.popleft()
        if beat.data == value and beat.last == last:
            self.matched += 1
        else:
            self.mismatches.append(Mismatch(self.checked, row, value, beat.data, last, beat.last))
        self.checked += 1

    @property
    def ok(self) -> bool:
        return not self.mismatches and not self.unexpected and not self.expected

    def summary(self) -> str:
        lines = [
            f"{self.name}: {self.matched}/{self.checked} outputs matched, "
            f"{len(self.mismatches)} mismatches, {len(self.expected)} still expected, "
            f"{len(self.unexpected)} unexpected"
        ]
        lines += [f"  {m}" for m in self.mismatches[:10]]
        return "\n".join(lines)

    def finish(self) -> None:
        """Raise :class:`ScoreboardError` unless everything matched and nothing is left."""
        if not self.ok:
            raise ScoreboardError(self.summary())
