"""validate --budget with the evaluations on worker processes or a Dask cluster gives the
serial search's result: the same spec per site and the same candidates tried."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

import pytest

from hwapprox.export import example
from hwapprox.export.errors import ExportError
from hwapprox.export.validate import import_model, validate

BUDGET = "top1=1,cosine=0.999"


@pytest.fixture(scope="module")
def imported() -> Any:
    return import_model(example.model_path())


@pytest.fixture(scope="module")
def serial(imported: Any) -> Any:
    return validate(imported, inputs=example.inputs_path(), budget=BUDGET)


def _summary(res: Any) -> tuple[Any, ...]:
    specs = tuple((k, None if v is None else v.describe()) for k, v in sorted(res.specs.items()))
    tried = tuple(
        (
            t["site"],
            t["met"],
            t["candidates"],
            t["front"],  # screened where the evaluations ran: the same fronts
            tuple((c["spec"], c["screen_rms"]) for c in t["evaluated"]),
        )
        for t in res.tuning
    )
    return specs, tried, res.end_to_end["outputs"]["logits"]["max_abs"]


def test_local_workers_match_serial(imported: Any, serial: Any) -> None:
    par = validate(imported, inputs=example.inputs_path(), budget=BUDGET, jobs=2)
    assert _summary(par) == _summary(serial)
    assert any(len(t["evaluated"]) > 1 for t in serial.tuning)  # the walk went past one


def test_screening_on_one_thread_matches(imported: Any, serial: Any) -> None:
    """The sites' candidates are screened on worker threads: one thread gives the same
    fronts, picks and candidates tried."""
    one = validate(imported, inputs=example.inputs_path(), budget=BUDGET, threads=1)
    assert _summary(one) == _summary(serial)
    assert [t["front"] for t in one.tuning] == [t["front"] for t in serial.tuning]
    assert [[c["screen_rms"] for c in t["evaluated"]] for t in one.tuning] == [
        [c["screen_rms"] for c in t["evaluated"]] for t in serial.tuning
    ]


def test_dask_cluster_matches_serial(imported: Any, serial: Any) -> None:
    distributed = pytest.importorskip("dask.distributed")
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        par = validate(
            imported, inputs=example.inputs_path(), budget=BUDGET, dask=cluster.scheduler_address
        )
    assert _summary(par) == _summary(serial)


def test_bad_jobs_and_dask_address_are_named(imported: Any) -> None:
    with pytest.raises(ExportError, match=r"jobs=0"):
        validate(imported, inputs=example.inputs_path(), budget=BUDGET, jobs=0)
    with pytest.raises(ExportError, match=r"tcp://127\.0\.0\.1:1"):
        validate(imported, inputs=example.inputs_path(), budget=BUDGET, dask="tcp://127.0.0.1:1")


def test_workers_die_with_a_killed_parent(tmp_path: Any) -> None:
    """kill -9 of a sweep / tune / budget search leaves none of its workers running
    (issue 21: two sweep workers kept running at ~55 % CPU after their parent died)."""
    script = tmp_path / "run.py"
    pids = tmp_path / "pids"
    script.write_text(
        "import os, time\n"
        "import multiprocessing as mp, concurrent.futures as cf\n"
        "from hwapprox.approx.sweep import die_with_parent, make_executor\n"
        "def pid() -> int:\n"
        "    time.sleep(0.5)\n"
        "    return os.getpid()\n"
        "if __name__ == '__main__':\n"
        "    sweep_pool, _ = make_executor(jobs=2)  # the sweep's and tune's pool\n"
        "    ctx = mp.get_context('spawn')  # validate --budget's pool\n"
        "    tune_pool = cf.ProcessPoolExecutor(2, mp_context=ctx, initializer=die_with_parent)\n"
        "    got = {f.result() for ex in (sweep_pool, tune_pool)\n"
        "           for f in [ex.submit(pid) for _ in range(4)]}\n"
        f"    open({str(pids)!r}, 'w').write(' '.join(map(str, got)))\n"
        "    time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, str(script)])
    try:
        for _ in range(600):
            if pids.exists() and pids.read_text():
                break
            time.sleep(0.1)
        workers = [int(p) for p in pids.read_text().split()]
        assert workers
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        for _ in range(50):
            alive = [w for w in workers if _alive(w)]
            if not alive:
                break
            time.sleep(0.1)
        assert not alive, f"workers {alive} outlived their killed parent"
    finally:
        if proc.poll() is None:
            proc.kill()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = open(f"/proc/{pid}/stat").read().split()  # noqa: SIM115 - a zombie is not running
    return stat[2] != "Z"
