"""The testbench class shared by every unit: clock, reset, stream ends, scoreboard.

Every hwapprox unit has ``clk``, synchronous active-high ``rst``, an input
stream ``s_axis_*`` and an output stream ``m_axis_*`` (``tdata``, ``tvalid``,
``tready``, ``tlast``). LayerNorm units also have a gamma/beta memory write
port (``cfg_we``, ``cfg_addr``, ``cfg_gamma``, ``cfg_beta``).

Row-wise units also have ``row_err`` (a one-cycle pulse per row longer than
``ROW_MAX``, which the unit drops); the bench counts the pulses and fails unless
there are exactly as many as rows it sent over ``row_max``.

Use from your own cocotb test::

    tb = UnitTB(dut, spec, idle=0.2, backpressure=0.3, seed=1)
    await tb.reset()
    tb.send_rows(rows)                     # expected values come from spec.model
    stats = await tb.wait_done()           # raises StreamError on a timeout
    tb.scoreboard.finish()                 # raises ScoreboardError on a mismatch
"""

from __future__ import annotations

import time
from typing import Any

import cocotb
import numpy as np
import numpy.typing as npt
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge

from hwapprox.approx.base import ApproxSpec, Operator
from hwapprox.rtl_sim.tb.axis import (
    AxisMonitor,
    AxisSink,
    AxisSource,
    Beat,
    CycleCounter,
    ReadyProbe,
    random_pauses,
)
from hwapprox.rtl_sim.tb.scoreboard import Scoreboard

__all__ = ["CLOCK_PERIOD_NS", "StreamError", "UnitTB", "expected_rows", "row_latencies"]


class StreamError(AssertionError):
    """A run that timed out with outputs missing, broke the AXI-Stream protocol or
    flagged another number of overlong rows than were sent; ``stats`` holds the
    measurements of the run."""

    def __init__(self, message: str, stats: dict[str, Any] | None = None) -> None:
        super().__init__(message)
        self.stats = stats or {}


CLOCK_PERIOD_NS = 10


def expected_rows(
    spec: ApproxSpec,
    rows: list[npt.NDArray[np.int64]],
    gamma: npt.ArrayLike | None = None,
    beta: npt.ArrayLike | None = None,
    masks: list[npt.NDArray[np.bool_]] | None = None,
) -> list[npt.NDArray[np.int64]]:
    """The model's raw output for each row (rows of equal length batched); ``masks``
    (softmax units: one bool per element, True = masked out) go to ``spec.model``."""
    out: list[Any] = [None] * len(rows)
    if spec.operator is Operator.GELU:
        flat = np.concatenate(rows) if rows else np.zeros(0, np.int64)
        y = spec.model(flat)
        pos = 0
        for i, r in enumerate(rows):
            out[i] = y[pos : pos + r.size]
            pos += r.size
        return out
    by_len: dict[int, list[int]] = {}
    for i, r in enumerate(rows):
        by_len.setdefault(r.size, []).append(i)
    for n, idx in by_len.items():
        x = np.stack([rows[i] for i in idx])
        kw: dict[str, Any] = {}
        if spec.operator is Operator.LAYERNORM:
            kw["gamma"] = None if gamma is None else np.asarray(gamma, np.int64)[:n]
            kw["beta"] = None if beta is None else np.asarray(beta, np.int64)[:n]
        if masks is not None:
            kw["mask"] = np.stack([np.asarray(masks[i], bool) for i in idx])
        y = spec.model(x, axis=-1, **kw)
        for j, i in enumerate(idx):
            out[i] = y[j]
    return out


def row_spans(beats: list[Beat]) -> list[tuple[int, int]]:
    """Per row (ended by ``last``): the cycles of its first and last beat."""
    spans, first = [], None
    for b in beats:
        if first is None:
            first = b.cycle
        if b.last:
            spans.append((first, b.cycle))
            first = None
    return spans


def row_latencies(
    sent: list[Beat], received: list[Beat], kept: list[bool] | None = None
) -> tuple[list[int], list[int]]:
    """Per row: cycles from first input to first output, last input to last output.

    ``kept[i]`` false: sent row ``i`` gives no output (an overlong row, dropped).
    """
    s_in, s_out = row_spans(sent), row_spans(received)
    if kept is not None:
        s_in = [sp for sp, k in zip(s_in, kept, strict=False) if k]  # rows sent so far
    n = min(len(s_in), len(s_out))
    first = [s_out[i][0] - s_in[i][0] for i in range(n)]
    last = [s_out[i][1] - s_in[i][1] for i in range(n)]
    return first, last


class UnitTB:
    """Clock, reset, source, sink and scoreboard around one hwapprox unit."""

    def __init__(
        self,
        dut: Any,
        spec: ApproxSpec,
        *,
        idle: float = 0.0,
        backpressure: float = 0.0,
        seed: int = 0,
        probe_ready: bool = False,
    ) -> None:
        self.dut = dut
        #: after reset, check s_axis_tready for a combinational path from m_axis_tready
        #: (:class:`~hwapprox.rtl_sim.tb.axis.ReadyProbe`); a path fails :meth:`check`
        self.probe_ready = probe_ready
        self.ready_probe: ReadyProbe | None = None
        self.spec = spec
        period_ps = CLOCK_PERIOD_NS * 1000
        self.clock = Clock(dut.clk, CLOCK_PERIOD_NS, unit="ns")
        self.clock.start()
        from cocotb.simtime import convert

        self.counter = CycleCounter(int(convert(period_ps, "ps", to="step")))
        self.scoreboard = Scoreboard(f"{spec.operator}/{spec.method}")
        self.source = AxisSource(
            dut, "s_axis", dut.clk, self.counter, random_pauses(idle, seed * 2 + 1)
        )
        self.sink = AxisSink(
            dut,
            "m_axis",
            dut.clk,
            self.counter,
            random_pauses(backpressure, seed * 2 + 2),
            # log codes (out_code) are unsigned integers of out_code_bits
            signed=spec.out_fmt.signed and getattr(spec, "out_code", "linear") == "linear",
            on_beat=self.scoreboard.check,
        )
        self.n_expected = 0
        self.long_rows = 0  # rows sent over row_max: the unit must drop and flag them
        self.kept: list[bool] = []  # per row sent: whether it expects output
        self.row_errors = 0  # row_err pulses seen
        self.gamma: npt.NDArray[np.int64] | None = None
        self.beta: npt.NDArray[np.int64] | None = None
        dut.rst.value = 1

    async def reset(self, cycles: int = 4) -> None:
        """Synchronous reset held for ``cycles`` rising edges; then the output stream's
        protocol monitor starts."""
        self.dut.rst.value = 1
        await ClockCycles(self.dut.clk, cycles)
        self.dut.rst.value = 0
        await RisingEdge(self.dut.clk)
        if getattr(self, "monitor", None) is None:
            self.monitor = AxisMonitor(self.dut, "m_axis", self.dut.clk, self.counter)
            err = getattr(self.dut, "row_err", None)
            if err is not None:
                cocotb.start_soon(self._count_row_errors(err))
        if self.probe_ready and self.ready_probe is None:
            self.ready_probe = ReadyProbe(self.dut, self.dut.clk, self.counter, "s_axis", "m_axis")

    async def _count_row_errors(self, sig: Any) -> None:
        while True:
            await RisingEdge(self.dut.clk)
            await ReadOnly()
            try:
                self.row_errors += int(sig.value)
            except ValueError:  # X or Z
                self.row_errors += 1

    async def load_affine(self, gamma: npt.ArrayLike, beta: npt.ArrayLike) -> None:
        """Write gamma/beta raw codes into a LayerNorm unit's memory (one word per cycle)."""
        g = np.asarray(gamma, np.int64)
        b = np.asarray(beta, np.int64)
        gw, bw = len(self.dut.cfg_gamma), len(self.dut.cfg_beta)
        for i in range(g.size):
            self.dut.cfg_we.value = 1
            self.dut.cfg_addr.value = i
            self.dut.cfg_gamma.value = int(g[i]) & ((1 << gw) - 1)
            self.dut.cfg_beta.value = int(b[i]) & ((1 << bw) - 1)
            await RisingEdge(self.dut.clk)
        self.dut.cfg_we.value = 0
        await RisingEdge(self.dut.clk)
        self.gamma, self.beta = g, b

    def send_rows(
        self,
        rows: list[npt.NDArray[np.int64]],
        corrupt: int | None = None,
        *,
        row_max: int | None = None,
        masks: list[npt.NDArray[np.bool_]] | None = None,
    ) -> None:
        """Queue rows on the source and their model outputs on the scoreboard.

        ``corrupt`` flips the LSB of that expected output (to prove the
        scoreboard fails). With ``row_max`` (row-wise units), rows longer than it
        are sent too but expect no output and one ``row_err`` pulse each. ``masks``
        (one bool array per row, True = masked out) drive ``s_axis_tuser`` and the
        model's ``mask``.
        """
        if masks is not None and self.source.user is None:
            raise StreamError(f"masks given, but {self.spec.method}'s unit has no s_axis_tuser")
        long = [row_max is not None and r.size > row_max for r in rows]
        short = [r for r, lg in zip(rows, long, strict=True) if not lg]
        short_masks = None
        if masks is not None:
            short_masks = [m for m, lg in zip(masks, long, strict=True) if not lg]
        exp = expected_rows(self.spec, short, self.gamma, self.beta, short_masks)
        it = iter(exp)
        pos = 0
        for i, (r, lg) in enumerate(zip(rows, long, strict=True)):
            user = None if masks is None else [int(b) for b in masks[i]]
            self.source.send(r.tolist(), user=user)
            self.kept.append(not lg)
            if lg:
                self.long_rows += 1
                continue
            e = np.array(next(it), dtype=np.int64)
            if corrupt is not None and pos <= corrupt < pos + e.size:
                e[corrupt - pos] ^= 1
            pos += e.size
            self.scoreboard.add_row(e)
        self.n_expected += pos

    async def wait_done(
        self, timeout_cycles: int | None = None, *, raise_on_error: bool = True
    ) -> dict[str, Any]:
        """Run until every expected output arrived (or the timeout); return measurements.

        Raises :class:`StreamError` (unless ``raise_on_error`` is false; then see
        :meth:`check`) when the timeout passed with outputs missing, the output
        stream broke the AXI-Stream handshake rules, or ``row_err`` pulsed another
        number of times than rows over ``row_max`` were sent.
        """
        limit = timeout_cycles if timeout_cycles is not None else 50 * self.n_expected + 2000
        t0 = time.perf_counter()
        c0 = self.counter.cycle
        while (
            len(self.sink.beats) < self.n_expected or not self.source.idle
        ) and self.counter.cycle - c0 < limit:
            await ClockCycles(self.dut.clk, 16)
        await ClockCycles(self.dut.clk, 32)  # anything extra would show up here
        wall = time.perf_counter() - t0
        cycles = self.counter.cycle - c0
        stats = self.measure(wall, cycles)
        stats["timed_out"] = len(self.sink.beats) < self.n_expected or not self.source.idle
        stats["timeout_cycles"] = limit
        mon = getattr(self, "monitor", None)
        stats["protocol_violations"] = [] if mon is None else list(mon.violations)
        stats["row_errors"] = self.row_errors
        stats["long_rows"] = self.long_rows
        if self.ready_probe is not None:
            stats["ready_probes"] = self.ready_probe.probes
            stats["ready_comb"] = list(self.ready_probe.changes)
        if raise_on_error:
            self.check(stats)
        return stats

    @staticmethod
    def check(stats: dict[str, Any]) -> None:
        """Raise :class:`StreamError` for a timeout, protocol violations or (with
        ``probe_ready``) a combinational ready path in ``stats``."""
        if stats.get("timed_out"):
            raise StreamError(
                f"timed out after {stats['timeout_cycles']} cycles with {stats['n_out']} of "
                f"{stats['n_expected']} outputs (a stall or deadlock in the unit)",
                stats,
            )
        v = stats.get("protocol_violations") or []
        if v:
            raise StreamError(
                f"{len(v)} AXI-Stream protocol violation(s) on m_axis: {'; '.join(v[:5])}", stats
            )
        comb = stats.get("ready_comb") or []
        if comb:
            raise StreamError(
                f"s_axis_tready changed combinationally with m_axis_tready in {len(comb)} "
                f"cycle(s) (needs a registered ready, hwa_skid): {'; '.join(comb[:3])}",
                stats,
            )
        if stats.get("row_errors", 0) != stats.get("long_rows", 0):
            raise StreamError(
                f"row_err pulsed {stats['row_errors']} times for {stats['long_rows']} rows "
                "longer than ROW_MAX",
                stats,
            )

    def measure(self, wall: float, cycles: int) -> dict[str, Any]:
        sent, got = self.source.sent, self.sink.beats
        first, last = row_latencies(sent, got, self.kept)
        stats: dict[str, Any] = {
            "n_in": len(sent),
            "n_out": len(got),
            "n_expected": self.n_expected,
            "matched": self.scoreboard.matched,
            "mismatches": len(self.scoreboard.mismatches),
            "first_mismatches": [str(m) for m in self.scoreboard.mismatches[:10]],
            "unexpected": len(self.scoreboard.unexpected),
            "missing": len(self.scoreboard.expected),
            "latency_first": _span(first),
            "latency_last": _span(last),
            "latency_last_rows": [int(v) for v in last],
            # per sent row: its last input's cycle, counted from the first input's
            "last_in_rows": [int(b - sent[0].cycle) for _, b in row_spans(sent)],
            "sim_cycles": cycles,
            "wall_seconds": wall,
            "cycles_per_second": cycles / wall if wall > 0 else 0.0,
        }
        if sent and got:
            stats["throughput_in"] = len(sent) / (sent[-1].cycle - sent[0].cycle + 1)
            stats["throughput_out"] = len(got) / (got[-1].cycle - got[0].cycle + 1)
            stats["throughput"] = len(got) / (got[-1].cycle - sent[0].cycle + 1)
        stats["passed"] = self.scoreboard.ok
        stats["summary"] = self.scoreboard.summary()
        return stats


def _span(v: list[int]) -> dict[str, float]:
    if not v:
        return {}
    a = np.asarray(v)
    return {"min": int(a.min()), "max": int(a.max()), "mean": float(a.mean())}
