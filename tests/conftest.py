"""Test-session wiring: keep tests that share one expensive g++ build on one xdist worker.

``make test`` runs ``pytest -n 2 --dist loadgroup``. A module/session fixture that
compiles a C++ harness is built once per *worker*; :func:`hwapprox._cxx.compile_cxx`
holds a file lock, so when its tests are spread over both workers the second worker
sits idle on the lock (and then repeats the run). Marking every test that uses such a
fixture with one ``xdist_group`` sends them to a single worker, while the other worker
runs other tests; loadgroup also schedules these multi-test groups first, so the two
heaviest builds start in parallel at the beginning of the session.
"""

from __future__ import annotations

from pathlib import Path

import pytest

# (test module, fixture that compiles a shared binary) -> xdist group
SHARED_BUILDS: dict[tuple[str, str], str] = {
    ("test_fixed_oracle.py", "oracle"): "cxx_fixed_oracle",
    ("test_softmax.py", "harness"): "cxx_hls4ml_softmax",
    ("test_hls_gelu.py", "setup"): "cxx_hls_gelu",
    ("test_hls_softmax.py", "setup"): "cxx_hls_softmax",
    ("test_hls_layernorm.py", "setup"): "cxx_hls_layernorm",
    ("test_hls_block.py", "setup"): "cxx_hls_block",
    ("test_hls_intmath.py", "exe"): "cxx_hls_intmath",
    ("test_hls_linear.py", "exe"): "cxx_hls_linear",
}


@pytest.hookimpl(tryfirst=True)  # before xdist turns the marks into work units
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Add the ``xdist_group`` of :data:`SHARED_BUILDS` to the tests using those fixtures."""
    for item in items:
        module = Path(str(item.fspath)).name
        for name in getattr(item, "fixturenames", ()):
            group = SHARED_BUILDS.get((module, name))
            if group is not None:
                item.add_marker(pytest.mark.xdist_group(group))
                break
