"""Small AXI-Stream source and sink for cocotb 2.x (``valid``/``ready``/``last``).

Handshake sampling: after each rising edge the driver updates what it drives,
then waits for ``ReadOnly`` and samples ``valid && ready`` (all combinational
paths settled). A transfer sampled there happens at the next rising edge,
which is when it is recorded, with its cycle number.

Pause generators (``idle`` on the source, backpressure on the sink) are plain
iterators of booleans; :func:`random_pauses` gives a seeded Bernoulli stream.
"""

from __future__ import annotations

import collections
import itertools
import random
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import cocotb
from cocotb.simtime import get_sim_time
from cocotb.triggers import FallingEdge, ReadOnly, RisingEdge, Timer

__all__ = [
    "AxisMonitor",
    "AxisSink",
    "AxisSource",
    "Beat",
    "CycleCounter",
    "ReadyProbe",
    "axis_violations",
    "no_pauses",
    "random_pauses",
]


def random_pauses(probability: float, seed: int) -> Iterator[bool]:
    """True (pause this cycle) with the given probability, seeded."""
    if not 0.0 <= probability < 1.0:
        raise ValueError(f"pause probability must be in [0, 1), got {probability}")
    rng = random.Random(seed)
    while True:
        yield rng.random() < probability


def no_pauses() -> Iterator[bool]:
    """Never pause."""
    return itertools.repeat(False)


class CycleCounter:
    """Clock cycle number from simulation time (``period`` in simulator steps).

    Derived from time rather than counted by a coroutine, so every reader at
    the same edge sees the same number whatever order coroutines resume in.
    """

    def __init__(self, period_steps: int) -> None:
        self.period = period_steps

    @property
    def cycle(self) -> int:
        return get_sim_time("step") // self.period


@dataclass(frozen=True, slots=True)
class Beat:
    """One transfer: data (a signed or unsigned int), last flag, edge number."""

    data: int
    last: bool
    cycle: int


class AxisSource:
    """Drives ``<prefix>_tdata/_tvalid`` (and ``_tlast``, ``_tuser`` when the DUT has
    them) and watches ``<prefix>_tready``."""

    def __init__(
        self,
        dut: Any,
        prefix: str,
        clk: Any,
        counter: CycleCounter,
        pauses: Iterator[bool] | None = None,
    ) -> None:
        self.data = getattr(dut, f"{prefix}_tdata")
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.last = getattr(dut, f"{prefix}_tlast", None)
        self.user = getattr(dut, f"{prefix}_tuser", None)
        self.clk = clk
        self.counter = counter
        self.pauses = pauses if pauses is not None else no_pauses()
        self.width = len(self.data)
        self.queue: collections.deque[tuple[int, bool, int]] = collections.deque()
        self.sent: list[Beat] = []
        self.valid.value = 0
        self.data.value = 0
        self._drive(0, False, 0)
        self._task = cocotb.start_soon(self._run())

    def _drive(self, data: int, last: bool, user: int) -> None:
        self.data.value = data
        if self.last is not None:
            self.last.value = int(last)
        if self.user is not None:
            self.user.value = user

    def send(
        self, values: list[int], last_at_end: bool = True, user: list[int] | None = None
    ) -> None:
        """Queue one packet (a row); ``last`` is set on its final beat, ``user[i]`` (when
        given) drives ``tuser`` with beat ``i``."""
        n = len(values)
        if user is not None and len(user) != n:
            raise ValueError(f"user has {len(user)} entries for {n} beats")
        for i, v in enumerate(values):
            u = 0 if user is None else int(user[i])
            self.queue.append((int(v), last_at_end and i == n - 1, u))

    @property
    def idle(self) -> bool:
        return not self.queue and not int(self.valid.value)

    def _encode(self, v: int) -> int:
        return v & ((1 << self.width) - 1)

    async def _run(self) -> None:
        fired = False
        current: tuple[int, bool, int] | None = None
        while True:
            await RisingEdge(self.clk)
            if fired and current is not None:
                self.sent.append(Beat(current[0], current[1], self.counter.cycle))
                current = None
            if current is None and self.queue and not next(self.pauses):
                current = self.queue.popleft()
                self._drive(self._encode(current[0]), current[1], current[2])
                self.valid.value = 1
            elif current is None:
                self.valid.value = 0
                if self.last is not None:
                    self.last.value = 0
            await ReadOnly()
            fired = bool(int(self.valid.value)) and bool(int(self.ready.value))


class AxisSink:
    """Drives ``<prefix>_tready`` (with backpressure) and records every beat."""

    def __init__(
        self,
        dut: Any,
        prefix: str,
        clk: Any,
        counter: CycleCounter,
        pauses: Iterator[bool] | None = None,
        signed: bool = True,
        on_beat: Any = None,
    ) -> None:
        self.data = getattr(dut, f"{prefix}_tdata")
        self.valid = getattr(dut, f"{prefix}_tvalid")
        self.ready = getattr(dut, f"{prefix}_tready")
        self.last = getattr(dut, f"{prefix}_tlast")
        self.clk = clk
        self.counter = counter
        self.pauses = pauses if pauses is not None else no_pauses()
        self.signed = signed
        self.on_beat = on_beat
        self.beats: list[Beat] = []
        self.ready.value = 0
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        sample: tuple[int, bool] | None = None
        while True:
            await RisingEdge(self.clk)
            if sample is not None:
                beat = Beat(sample[0], sample[1], self.counter.cycle)
                self.beats.append(beat)
                if self.on_beat is not None:
                    self.on_beat(beat)
                sample = None
            self.ready.value = 0 if next(self.pauses) else 1
            await ReadOnly()
            if int(self.valid.value) and int(self.ready.value):
                raw = self.data.value
                value = raw.to_signed() if self.signed else raw.to_unsigned()
                sample = (value, bool(int(self.last.value)))


#: One sampled cycle of a stream: (cycle, valid, ready, data, last); valid/ready/
#: last may be None when the simulator shows X or Z on them.
Sample = tuple[int, int | None, int | None, int | None, int | None]


def axis_violations(samples: list[Sample]) -> list[str]:
    """AXI4-Stream handshake rules broken in a sequence of sampled cycles.

    * ``tvalid`` and ``tready`` are 0 or 1 (never X/Z) after reset;
    * once ``tvalid`` is high it stays high until a transfer (``tvalid && tready``)
      and ``tdata``/``tlast`` do not change meanwhile (ARM IHI 0051, 2.2.1).
    """
    out: list[str] = []
    prev: Sample | None = None
    for smp in samples:
        cyc, valid, ready, data, last = smp
        if valid is None or ready is None:
            out.append(f"cycle {cyc}: tvalid/tready is X or Z")
        elif prev is not None and prev[1] == 1 and prev[2] == 0:
            if valid != 1:
                out.append(f"cycle {cyc}: tvalid dropped before the transfer (tready was low)")
            elif (data, last) != (prev[3], prev[4]):
                out.append(
                    f"cycle {cyc}: tdata/tlast changed while stalled "
                    f"({prev[3]}/{prev[4]} -> {data}/{last})"
                )
        prev = smp
    return out


class AxisMonitor:
    """Samples a stream every cycle (in ``ReadOnly``) for :func:`axis_violations`.

    Passive: it drives nothing. Start it after reset; :attr:`violations` lists
    every broken rule with its cycle number (capped at 100 messages).
    """

    def __init__(self, dut: Any, prefix: str, clk: Any, counter: CycleCounter) -> None:
        self.sig = {k: getattr(dut, f"{prefix}_t{k}") for k in ("valid", "ready", "data", "last")}
        self.clk = clk
        self.counter = counter
        self.violations: list[str] = []
        self._prev: Sample | None = None
        self._task = cocotb.start_soon(self._run())

    @staticmethod
    def _int(v: Any) -> int | None:
        try:
            return int(v.value)
        except ValueError:  # X or Z
            return None

    async def _run(self) -> None:
        while True:
            await RisingEdge(self.clk)
            await ReadOnly()
            smp: Sample = (
                self.counter.cycle,
                self._int(self.sig["valid"]),
                self._int(self.sig["ready"]),
                self._int(self.sig["data"]),
                self._int(self.sig["last"]),
            )
            pair = [smp] if self._prev is None else [self._prev, smp]
            found = axis_violations(pair)
            if self._prev is not None:  # the first sample's X check was reported already
                found = [f for f in found if not f.startswith(f"cycle {self._prev[0]}:")]
            if len(self.violations) < 100:
                self.violations.extend(found)
            self._prev = smp


class ReadyProbe:
    """Checks that ``<s>_tready`` has no combinational path from ``<m>_tready``.

    Every cycle, at the falling clock edge (half a period after the sink set
    ``<m>_tready``), the probe inverts ``<m>_tready``, lets the design settle (1 ns),
    samples ``<s>_tready``, puts ``<m>_tready`` back and settles again; all of it
    between two rising edges, so no register sees the flipped value and the stream
    is unchanged. ``changes`` lists every cycle where ``<s>_tready`` followed the
    flip (a combinational path, which a skid buffer with a registered ready removes);
    ``probes`` counts the cycles probed.
    """

    def __init__(self, dut: Any, clk: Any, counter: CycleCounter, s: str, m: str) -> None:
        self.s_ready = getattr(dut, f"{s}_tready")
        self.m_ready = getattr(dut, f"{m}_tready")
        self.names = (f"{s}_tready", f"{m}_tready")
        self.clk = clk
        self.counter = counter
        self.probes = 0
        self.changes: list[str] = []
        self._task = cocotb.start_soon(self._run())

    async def _run(self) -> None:
        while True:
            await FallingEdge(self.clk)
            held = str(self.m_ready.value)
            if held not in ("0", "1"):
                continue
            before = str(self.s_ready.value)
            self.m_ready.value = 1 - int(held)
            await Timer(1, unit="ns")
            after = str(self.s_ready.value)
            self.m_ready.value = int(held)
            await Timer(1, unit="ns")
            self.probes += 1
            if after != before:
                s, m = self.names
                self.changes.append(
                    f"cycle {self.counter.cycle}: {s} {before} -> {after} when {m} "
                    f"{held} -> {1 - int(held)} with no clock edge"
                )
