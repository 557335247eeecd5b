"""HLS type widths = ``spec.hw_params()`` = the SV parameters of the same spec.

Shared by the HLS unit tests (``test_hls_softmax/gelu/layernorm.py``): their
harnesses list every instance a second time with ``run_widths``
(``tests/cxx/hls_widths.h``), which prints ``T::width`` of every type the
unit's header declares, named by the hardware parameter it must equal. The
report comes from the same binary, and the same types, as the bit-exactness
tests. :func:`check_widths` then demands, per unit and format set:

* every ``*_W`` of ``hw_params()`` types something in the header, and every
  type has exactly the width of its parameter (a header typedef that changes
  fails);
* the generated config carries ``hw_params()`` unchanged (softmax: with the
  constants of softmax.h's log-code post-stage);
* for the units that also exist in SystemVerilog (GELU lut and pwl, softmax
  online, LayerNorm rsqrt_lut / rmsnorm) the SV parameters ``rtl_sim.units``
  gives the unit are the same numbers under the same names (a mapping that
  changes fails), intermediates included (``V_W``, ``RESCALE_W``, ``RN_W``,
  ``RP_W``, ...: ``test_hls_widths.SV_DERIVED`` lists the few the SV does not take);
* nothing is wider than 64 bits except the types listed in :data:`WIDE_OK`.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from hwapprox.approx.base import Operator
from hwapprox.hls.units import unit_instance
from hwapprox.rtl_sim.units import UNITS as RTL_UNITS

#: harness id of the width report of instance i: WIDTHS_ID0 + i
WIDTHS_ID0 = 1000
#: types wider than 64 bits, each documented in its header and spec docstring
WIDE_OK = {("softmax", "ibert", "RQ_W"), ("softmax", "online", "RESCALE_W")}
#: widths only the SV unit types: its one-pass statistics (the HLS unit re-reads the row)
SV_ONLY = {("layernorm", m, k) for m in ("ibert", "ivit") for k in ("S2_W", "MOM_W")}
#: SV parameters that are not the spec's: the row buffer geometry of the instance
ROW_BUFFER = {"ROW_MAX", "BUF_DEPTH", "ROWQ", "N_BITS"}


def widths_rows(prefix: str, count: int) -> list[tuple[str, str, str]]:
    """X-macro rows that list instances ``prefix0 ..`` again for their width reports."""
    return [(str(WIDTHS_ID0 + i), "run_widths", f"{prefix}{i}") for i in range(count)]


def read_widths(exe: Path, i: int) -> dict[str, list[int]]:
    """The width report of instance ``i``: parameter name -> widths of the types named so."""
    proc = subprocess.run(
        [str(exe)], input=f"{WIDTHS_ID0 + i}\n", capture_output=True, text=True, check=True
    )
    got: dict[str, list[int]] = {}
    for item in proc.stdout.split():
        name, w = item.split("=")
        got.setdefault(name, []).append(int(w))
    return got


def rtl_params(spec, n: int) -> dict[str, int | str] | None:
    """The SV parameters of the spec's RTL unit for rows of ``n``, or None (no unit)."""
    key = (spec.operator, spec.method)
    if key not in RTL_UNITS or not spec.in_fmt.signed:
        return None
    if key == (Operator.SOFTMAX, "online") and spec.schedule != "online":
        return None  # the SV unit is single-pass only
    if key == (Operator.SOFTMAX, "softermax") and n > int(spec.sum_fmt.max) // 2:
        return None
    max_n = getattr(spec, "max_n", getattr(spec, "MAX_N", n))
    if spec.operator == Operator.LAYERNORM and not (
        spec.gamma_fmt.signed and spec.beta_fmt.signed and n <= max_n
    ):
        return None
    params, _ = RTL_UNITS[key].config(spec, n)
    return params


def sv_value(v: int | str) -> int:
    """An SV parameter value as an integer (``64'd...`` and two's-complement ``64'h...``
    literals included)."""
    if isinstance(v, str):
        m = re.fullmatch(r"64'd(\d+)", v)
        if m:
            return int(m.group(1))
        m = re.fullmatch(r"64'h([0-9A-F]{16})", v)
        assert m, v
        u = int(m.group(1), 16)
        return u - (1 << 64) if u >> 63 else u
    return int(v)


def check_widths(spec, n: int, got: dict[str, list[int]]) -> dict[str, int]:
    """Assert the width identities for ``spec`` on rows of ``n``; return the HLS widths."""
    hw = spec.hw_params(n)
    sv_only = {k for k in hw if (str(spec.operator), spec.method, k) in SV_ONLY}
    missing = {k for k in hw if k.endswith("_W")} - set(got) - sv_only
    assert not missing, f"hw_params widths that no type of the header uses: {sorted(missing)}"
    for name, ws in got.items():
        assert name in hw, f"the header types {name}, which hw_params() lacks"
        assert ws == [hw[name]] * len(ws), f"{name}: HLS types {ws}, hw_params {hw[name]}"
        if max(ws) > 64:
            assert (str(spec.operator), spec.method, name) in WIDE_OK, f"{name} = {ws} > 64 bits"
    inst = unit_instance("w", spec, n)
    want = {**hw, "n_in": n}
    assert dict(inst.consts) == want, "the config is not hw_params() unchanged"
    rtl = rtl_params(spec, n)
    if rtl is not None:
        full = hw
        outside = set(rtl) - set(full)
        assert outside <= ROW_BUFFER, f"SV parameters outside hw_params: {sorted(outside)}"
        for k in set(rtl) & set(full):
            assert sv_value(rtl[k]) == full[k], f"SV {k}={rtl[k]}, hw_params {full[k]}"
        for name, ws in got.items():
            if name in rtl:
                assert ws[0] == sv_value(rtl[name]), f"HLS {name}={ws[0]}, SV {rtl[name]}"
    return {k: v[0] for k, v in got.items()}
