"""The fused attention row in RTL: ``hwa_attention_row`` configured from an
:class:`~hwapprox.approx.attention.AttentionRowSpec` and simulated against its model.

:func:`attention_config` passes the spec's :meth:`AttentionRowSpec.hw_params` to the SV
parameters by name (the online softmax's exp / sum / reciprocal units included; the
names and 64-bit types read from the SV source, :func:`.svparams.derive_sv_params`)
and its softmax's tables as ``$readmemh`` files. :func:`simulate_attention` streams
queries, keys, values and mask bits through the unit under idle input cycles and
output backpressure (cocotb + Verilator, :mod:`hwapprox.rtl_sim.tb.attention_test`)
and compares every output lane with :meth:`AttentionRowSpec.model` on the same raw
integers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from hwapprox.approx.attention import AttentionRowSpec
from hwapprox.approx.base import SpecError
from hwapprox.rtl_sim.emit import memh_text
from hwapprox.rtl_sim.runner import BuildInfo, SimResult, build, lint, run_job
from hwapprox.rtl_sim.sources import sv_sources
from hwapprox.rtl_sim.svparams import derive_sv_params
from hwapprox.rtl_sim.units import EXP_VARIANT_PARAMS, _new_maxima, exp_unit_lat, recip_lat

__all__ = [
    "ATTENTION_SOURCES",
    "ATTENTION_TOP",
    "AttentionTiming",
    "attention_config",
    "attention_schedule",
    "attention_timing",
    "build_attention",
    "lint_attention",
    "simulate_attention",
]

ATTENTION_TOP = "hwa_attention_row"
#: every SV file the row needs, read from the sources (:func:`.sources.sv_sources`)
ATTENTION_SOURCES = sv_sources(ATTENTION_TOP)


def attention_config(
    spec: AttentionRowSpec, dim: int, dim_v: int, outq: int = 4, out_lanes: int | None = None
) -> tuple[dict[str, int | str], dict[str, str]]:
    """SV parameters and ``$readmemh`` files of ``hwa_attention_row`` for ``spec`` with
    ``dim`` K lanes and ``dim_v`` V lanes; ``outq`` rows fit the output queue (a power of
    two >= 2); ``out_lanes`` output lanes are computed per cycle (``o·r`` multipliers,
    a divisor of ``dim_v``; None: all ``dim_v`` at once)."""
    if outq < 2 or outq & (outq - 1):
        raise SpecError(f"outq must be a power of two >= 2, got {outq}")
    lanes = dim_v if out_lanes is None else int(out_lanes)
    if lanes < 1 or dim_v % lanes:
        raise SpecError(
            f"out_lanes must divide dim_v={dim_v}, got {out_lanes}; use a divisor such as 1 "
            f"(one o·r multiplier) or {dim_v} (all lanes at once)"
        )
    hw: Mapping[str, int] = spec.hw_params(dim, dim_v)
    base2 = bool(hw["BASE2"])
    t = spec.softmax.tables()
    if base2:
        exp_mem = memh_text(t["exp2_table"], hw["TABLE_F"] + 1)
    else:
        exp_mem = memh_text(t["exp_lut"], hw["EXP_W"])
    mems = {"EXP_FILE": exp_mem, "RECIP_FILE": memh_text(t["recip_table"], hw["WF"] + 1)}
    params = derive_sv_params(
        ATTENTION_TOP,
        hw,
        spec=spec,
        given={"OUTQ": outq, "OUT_LANES": lanes},
        mems=mems,
        # the exp unit's V_W is EXP_V_W here (V_W: the V lanes' width)
        unused=tuple("EXP_V_W" if k == "V_W" else k for k in EXP_VARIANT_PARAMS[not base2]),
    )
    return params, mems


#: ``hwa_attention_row``: a key that raises its row's running max (past the row's first
#: key) leaves the key queue this many cycles or more after the key before it (U -> F:
#: products 4, floor 1, term 1, addend 1, F 1; the contract header's MB)
ATTN_RESCALE_SPACING = 8


@dataclass(frozen=True)
class AttentionTiming:
    """``hwa_attention_row``'s pipeline constants (its contract header): ``front`` key
    accepted -> stage A (LF), ``exp`` ELAT, ``recip`` RLAT, ``out`` OLAT, ``beats``
    output cycles per row, ``queue`` the key queue's entries (FD)."""

    front: int
    exp: int
    recip: int
    out: int
    beats: int
    queue: int

    @property
    def v_entries(self) -> int:
        """The V buffer's entries (VD): the power of 2 >= queue + ELAT + 1."""
        return 1 << (self.queue + self.exp).bit_length()

    @property
    def latency(self) -> int:
        """Last key accepted -> output taken, when the key leaves the queue at once and
        the output is free: ``front + 1 + to_queue + 1`` = LF + ELAT + RLAT + OLAT +
        BEATS + 9."""
        return self.front + 1 + self.to_queue + 1

    @property
    def to_queue(self) -> int:
        """A row's last key leaving the key queue -> its last beat entering the output
        queue: ELAT + 7 (U -> F) + 1 + RLAT + BEATS - 1 + OLAT."""
        return self.exp + ATTN_RESCALE_SPACING + self.recip + self.beats - 1 + self.out


def attention_timing(
    spec: AttentionRowSpec, dim: int, dim_v: int, out_lanes: int | None = None
) -> AttentionTiming:
    """The pipeline constants of ``hwa_attention_row`` at ``spec`` (see
    :class:`AttentionTiming`), from its ``hw_params`` as the SV derives them."""
    hw = spec.hw_params(dim, dim_v)
    lt = (dim - 1).bit_length()  # clog2(dim) adder-tree levels
    ls = (4 if hw["HAS_SCALE"] else 0) + (3 if int(hw["S_SHIFT"]) > 0 else 0)
    front = 5 + lt + ls
    lanes = dim_v if out_lanes is None else int(out_lanes)
    fd = 1 << (front + 3 + ATTN_RESCALE_SPACING - 1).bit_length()
    return AttentionTiming(
        front=front,
        exp=exp_unit_lat(hw),
        recip=recip_lat(hw),
        out=4 + (3 if int(hw["Y_SHIFT"]) > 0 else 0) + 1,
        beats=dim_v // lanes,
        queue=fd,
    )


def _rescales(spec: AttentionRowSpec, q: Any, k: Any, mask: Any) -> list[list[bool]]:
    """Per row, per key: whether the key raises the row's running max past the row's
    first key (so it waits for the keys before it to leave the state update): a live key
    above the running max of the live keys before it, or the row's first live key when
    it is not the row's first key (with ``off_by_one`` the row starts at the zero logit:
    the first live key counts only when above 0)."""
    obo = bool(spec.softmax.off_by_one)
    raised = _new_maxima(np.asarray(spec.scores(q, k)).tolist(), mask, obo)
    out = []
    for r, row in enumerate(raised):
        first_live = next((j for j, m in enumerate(mask[r]) if not m), None)
        out.append([j > 0 and (g or (not obo and j == first_live)) for j, g in enumerate(row)])
    return out


def attention_schedule(
    spec: AttentionRowSpec,
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    dim_v: int,
    outq: int = 4,
    out_lanes: int | None = None,
) -> tuple[list[int], list[int]]:
    """``hwa_attention_row``'s timeline, cycle by cycle, for rows offered back to back
    with every input valid and the output always ready: the cycle each key is accepted
    (rows in order, the first key at 0) and the cycle each row's output is taken.

    As the contract header states: a key is accepted while fewer than ``queue`` keys are
    in flight to and in the key queue (and, a row's last key, while fewer than ``outq``
    rows are past their last key and not yet taken); it enters the queue ``front``
    cycles later and may leave from the next cycle, at most one a cycle, a rescale
    (:func:`_rescales`) only :data:`ATTN_RESCALE_SPACING` cycles or more after the
    previous key, a row's last key only ``beats`` cycles or more after the previous
    row's; a row's last beat enters the output queue ``to_queue`` cycles after its last
    key left, and the output queue hands out one row a cycle from the next cycle."""
    qr = np.atleast_2d(np.asarray(q, dtype=np.int64))
    kr = np.asarray(k, dtype=np.int64)
    rows, n = kr.shape[0], kr.shape[1]
    mk = np.zeros((rows, n), bool) if mask is None else np.broadcast_to(mask, (rows, n))
    tm = attention_timing(spec, qr.shape[1], dim_v, out_lanes)
    hold = [h for row in _rescales(spec, qr, kr, mk) for h in row]
    last = [j == n - 1 for _ in range(rows) for j in range(n)]
    b, mb = tm.beats, ATTN_RESCALE_SPACING
    accepted: list[int] = []
    taken: list[int] = []
    queue: deque[tuple[int, int]] = deque()  # (first cycle it may leave, key)
    to_out: dict[int, int] = {}  # cycle -> rows whose last beat enters the output queue
    t = i = tokens = inflight = occ = 0
    since, gap = mb, b
    while len(taken) < rows:
        acc = i < len(hold) and tokens < tm.queue and (not last[i] or inflight + occ < outq)
        head = queue[0][1] if queue and queue[0][0] <= t else None
        pop = head is not None and (not hold[head] or since >= mb) and (not last[head] or gap >= b)
        if occ > 0:
            taken.append(t)
        y_last = to_out.pop(t, 0)
        if acc:
            accepted.append(t)
            queue.append((t + tm.front + 1, i))
            inflight += last[i]
            i += 1
        tokens += int(acc) - int(pop)
        if pop:
            assert head is not None
            queue.popleft()
            if last[head]:
                to_out[t + tm.to_queue] = to_out.get(t + tm.to_queue, 0) + 1
        since = 1 if pop else min(since + 1, mb)
        gap = 1 if pop and head is not None and last[head] else min(gap + 1, b)
        occ += y_last - int(occ > 0)
        inflight -= y_last
        t += 1
    return accepted, taken


def build_attention(
    spec: AttentionRowSpec,
    dim: int,
    dim_v: int,
    *,
    outq: int = 4,
    out_lanes: int | None = None,
    waves: bool = False,
) -> BuildInfo:
    """Build (or reuse from the cache) the Verilator model of one configuration."""
    from hwapprox.rtl_sim.runner import RTL_DIR

    params, mems = attention_config(spec, dim, dim_v, outq, out_lanes)
    return build(
        ATTENTION_TOP,
        [RTL_DIR / s for s in ATTENTION_SOURCES],
        params,
        mems,
        waves=waves,
    )


def lint_attention(
    spec: AttentionRowSpec, dim: int, dim_v: int, out_lanes: int | None = None
) -> str:
    """``verilator --lint-only -Wall`` of the unit at ``spec``'s parameters (tables aside)."""
    from hwapprox.rtl_sim.runner import RTL_DIR

    params, _ = attention_config(spec, dim, dim_v, out_lanes=out_lanes)
    return lint(ATTENTION_TOP, [RTL_DIR / s for s in ATTENTION_SOURCES], params)


def simulate_attention(
    spec: AttentionRowSpec,
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    idle: float = 0.0,
    backpressure: float = 0.0,
    seed: int = 0,
    outq: int = 4,
    out_lanes: int | None = None,
    corrupt: int | None = None,
) -> SimResult:
    """Stream rows through ``hwa_attention_row`` and compare with ``spec.model``.

    ``q`` ``[R, D]``, ``k`` ``[R, N, D]``, ``v`` ``[R, N, D_v]`` raw codes (rows may not
    differ in N here: pass equal-length rows), ``mask`` bool ``[R, N]`` (True = masked).
    ``idle`` / ``backpressure``: per-cycle pause probabilities of every input stream and
    of the output. ``out_lanes``: o·r multipliers (see :func:`attention_config`).
    ``corrupt``: index of one expected output lane (row-major) to falsify, so the
    comparison must fail (a test of the test). ``stats`` holds ``matched``,
    ``mismatches``, ``first_mismatches``, ``latency`` (last key accepted -> output, per
    row), ``keys_per_cycle`` (keys accepted / cycles from the first key to the last).
    """
    qr = np.atleast_2d(np.asarray(q, dtype=np.int64))
    kr = np.asarray(k, dtype=np.int64)
    vr = np.asarray(v, dtype=np.int64)
    rows, dim = qr.shape
    if kr.ndim != 3 or vr.ndim != 3 or kr.shape[0] != rows or vr.shape[0] != rows:
        raise SpecError(
            f"simulate_attention needs q [R, D], k [R, N, D], v [R, N, Dv]; got "
            f"{list(qr.shape)}, {list(kr.shape)}, {list(vr.shape)}"
        )
    n, dim_v = kr.shape[1], vr.shape[2]
    mk = np.zeros((rows, n), bool) if mask is None else np.broadcast_to(mask, (rows, n))
    expected = spec.model(qr, kr, vr, mk)  # validates formats, lengths and the mask
    exp_list = expected.astype(np.int64).tolist()
    if corrupt is not None:
        r, lane = divmod(int(corrupt), dim_v)
        exp_list[r][lane] += 1
    info = build_attention(spec, dim, dim_v, outq=outq, out_lanes=out_lanes)
    job: dict[str, Any] = {
        "q": qr.tolist(),
        "k": kr.tolist(),
        "v": vr.tolist(),
        "mask": mk.astype(int).tolist(),
        "expected": exp_list,
        "widths": {
            "Q_W": spec.q_fmt.width,
            "K_W": spec.k_fmt.width,
            "V_W": spec.v_fmt.width,
            "Y_W": spec.out_fmt.width,
        },
        "dim_v": int(dim_v),
        "idle": float(idle),
        "backpressure": float(backpressure),
        "seed": int(seed),
    }
    return run_job(info, job, test_module="hwapprox.rtl_sim.tb.attention_test")
