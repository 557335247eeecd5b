"""Test-session wiring: keep tests that share one expensive g++ build on one xdist worker.

``make test`` runs ``pytest -n 2 --dist loadgroup``. A module/session fixture that
compiles a C++ harness (or an hls4ml project) is built once per *worker*;
:func:`hwapprox._cxx.compile_cxx` holds a file lock, so when its tests are spread over
both workers the second worker sits idle on the lock and then repeats the run (hls4ml
projects have no lock: both workers compile the same project).

``@pytest.mark.xdist_group`` cannot express this here: pytest-xdist 3.8 groups by
rewriting ``item._nodeid``, which pytest 9 no longer reads (``nodeid`` comes from
``item._id``), so the marks are silently ignored. Instead this file gives the
controller a scheduler whose work units are the shared builds below; everything else
stays one unit per test. loadgroup schedules multi-test units first (largest first),
so the heaviest builds start in parallel on the two workers.
"""

from __future__ import annotations

import re

import pytest

# test module -> group rule: "module" (every test of it) or a regex on the rest of the
# node id whose first group (if any) names the unit, e.g. the hls4ml backend.
SHARED_BUILDS: dict[str, str] = {
    "tests/test_fixed_oracle.py": "module",  # session fixture `oracle`
    "tests/test_hls_gelu.py": "module",  # module fixture `setup` (harness)
    "tests/test_hls_softmax.py": "module",
    "tests/test_hls_layernorm.py": "module",
    "tests/test_hls_block.py": "module",
    "tests/test_hls_intmath.py": "module",  # module fixture `exe`
    "tests/test_hls_linear.py": "module",
    "tests/test_softmax.py": r"::test_hls4ml_(?:tables_equal_header|bit_exact)\[",  # `harness`
    "tests/test_hls_hls4ml.py": r"::test_\w+\[((?:Vivado|Vitis)(?:-io_\w+)?)\]$",  # per build
    "tests/test_hls_head.py": "module",  # harness + two hls4ml projects
    "tests/test_hls_attention.py": "module",  # module fixture `exe`
}


def build_group(nodeid: str) -> str | None:
    """The shared-build unit of a test node id, or None (the test is its own unit)."""
    module, sep, rest = nodeid.partition("::")
    rule = SHARED_BUILDS.get(module)
    if not sep or rule is None:
        return None
    if rule == "module":
        return module
    m = re.search(rule, "::" + rest)
    if m is None:
        return None
    return f"{module}::{m.group(1) if m.groups() else 'shared'}"


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object | None:
    """``--dist loadgroup``: xdist's group scheduler plus the units of :func:`build_group`."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadGroupScheduling

    class SharedBuildScheduling(LoadGroupScheduling):
        def _split_scope(self, nodeid: str) -> str:
            scope = super()._split_scope(nodeid)  # an xdist_group, if xdist set one
            if scope != nodeid:
                return scope
            return build_group(nodeid) or nodeid

    return SharedBuildScheduling(config, log)
