"""HWAPPROX_NUMBA=0: the models without importing numba (the RTL simulators' processes)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

_SCRIPT = """
import json, sys, warnings
import numpy as np
warnings.simplefilter("error")  # the missing-numba note must not be given
from hwapprox.approx import _kernels
from hwapprox.approx.registry import make_spec
spec = make_spec("softmax", "online")
x = np.random.default_rng(0).integers(-2000, 2000, size=(64, 37))
print(json.dumps({"numba": "numba" in sys.modules, "available": _kernels.available(),
                  "out": spec.model(x).tolist()}))
"""


def _run(env_value: str | None) -> dict:
    env = dict(os.environ)
    env.pop("HWAPPROX_NUMBA", None)
    if env_value is not None:
        env["HWAPPROX_NUMBA"] = env_value
    p = subprocess.run(
        [sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env, check=True
    )
    return json.loads(p.stdout)


def test_numba_off_by_env_is_not_imported_and_gives_the_same_codes() -> None:
    off, on = _run("0"), _run(None)
    assert off["numba"] is False
    assert off["available"] is False
    assert on["numba"] is True
    assert on["available"] is True
    assert off["out"] == on["out"]  # the numpy path, bit for bit (64 rows of 37)


@pytest.mark.rtl
def test_the_simulator_runs_the_scoreboard_without_numba() -> None:
    """run_phases gives the cocotb process HWAPPROX_NUMBA=0: its scoreboard's model
    is the numpy path and numba is never imported there."""
    from hwapprox.approx.registry import make_spec
    from hwapprox.rtl_sim.runner import simulator_available
    from hwapprox.rtl_sim.sim import simulate

    if simulator_available("verilator") is not None:
        pytest.skip("Verilator not usable")
    r = simulate(make_spec("gelu", "pwl"), n_rows=2)
    assert r.passed
    assert r.stats["numba_loaded"] is False
