"""Sweeps: grid expansion, resume without duplicates, pool/executor paths, plots."""

from __future__ import annotations

import concurrent.futures as cf
import csv
import json
import sys
from pathlib import Path

import approx_ideal_specs
import pytest

from hwapprox.approx.base import SpecError
from hwapprox.approx.inputs import InputSet
from hwapprox.approx.sweep import (
    RESULTS_CSV,
    RESULTS_JSONL,
    Grid,
    SweepError,
    expand,
    load_records,
    make_executor,
    pareto_front,
    run_point,
    run_sweep,
)

SMALL = (InputSet(rows=16, n=16, sigma=2.0), InputSet(dist="heavy", rows=16, n=32, sigma=2.0))


@pytest.fixture(autouse=True)
def _ideal(monkeypatch: pytest.MonkeyPatch) -> None:
    approx_ideal_specs.register(monkeypatch)


def _grid(**kw: object) -> Grid:
    base: dict = {
        "operator": "softmax",
        "methods": ["ideal"],
        "fields": {"coarse": [0, 1]},
        "out_widths": [6, 8],
        "inputs": SMALL,
    }
    base.update(kw)
    return Grid(**base)  # type: ignore[arg-type]


def _csv_rows(out: Path) -> list[dict[str, str]]:
    with (out / RESULTS_CSV).open(newline="") as fh:
        return list(csv.DictReader(fh))


def test_expand_product_widths_and_order() -> None:
    exp = expand(_grid())
    # 2 coarse x 2 widths = 4 specs, x 2 input sets
    assert len(exp.specs) == 4
    assert len(exp.points) == 8
    assert {(s.out_fmt.width, s.coarse) for s in exp.specs} == {(6, 0), (6, 1), (8, 0), (8, 1)}
    # widths keep the default's integer bits (ap_ufixed<9,1> -> <6,1>, <8,1>)
    assert {str(s.out_fmt) for s in exp.specs} == {"ap_ufixed<6,1>", "ap_ufixed<8,1>"}
    scores = [p.cost_score for p in exp.points]
    assert scores == sorted(scores)
    assert len({p.key for p in exp.points}) == 8


def test_expand_skips_refused_specs_and_dedupes() -> None:
    # coarse=6 on a 6-bit output is refused by the spec (coarse < width)
    exp = expand(_grid(fields={"coarse": [0, 6, 0]}, out_widths=[6]))
    assert len(exp.specs) == 1
    assert len(exp.skipped) == 1
    desc, why = exp.skipped[0]
    assert desc["coarse"] == 6
    assert why == "coarse=6 must be in [0, 6)"


def test_expand_rejects_a_field_no_method_has() -> None:
    with pytest.raises(SpecError, match=r"^no softmax method among ideal has a field 'corase'"):
        expand(_grid(fields={"corase": [1]}))


def test_run_point_is_pure_and_reports_failures() -> None:
    exp = expand(_grid(out_widths=[8], fields={}))
    p = exp.points[0]
    a = run_point(p.config, p.inputs.to_dict())
    b = run_point(p.config, p.inputs.to_dict())
    assert a["status"] == "ok"
    assert a["key"] == p.key
    assert {k: v for k, v in a.items() if k != "seconds"} == {
        k: v for k, v in b.items() if k != "seconds"
    }
    # ideal softmax rounds to nearest: at most half an output LSB
    assert 0.4 < a["max_lsb"] <= 0.5
    bad = run_point({**p.config, "coarse": 99}, p.inputs.to_dict())
    assert bad["status"] == "invalid"
    assert bad["message"] == "coarse=99 must be in [0, 8)"
    gone = run_point(p.config, {"dist": "file", "path": "/no/such.npy"})
    assert gone["status"] == "error"
    assert gone["message"] == (
        "SpecError: input file '/no/such.npy' does not exist (give a .npy or .npz file)"
    )


def test_resume_after_interruption_has_no_duplicates(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    exp = expand(_grid())
    first = run_sweep(exp.points, out, progress=False, max_points=3)
    assert first.ran == 3
    assert len(load_records(out)) == 3
    # a kill in the middle of a write leaves a truncated JSONL line and no CSV row
    with (out / RESULTS_JSONL).open("a") as fh:
        fh.write('{"key": "trunc')
    second = run_sweep(exp.points, out, progress=False)
    assert second.ran == 5
    assert second.skipped_done == 3
    keys = [r["key"] for r in load_records(out)]
    assert len(keys) == 8
    assert sorted(keys) == sorted(p.key for p in exp.points)
    rows = _csv_rows(out)
    assert len(rows) == 8
    assert sorted(r["key"] for r in rows) == sorted(keys)
    third = run_sweep(exp.points, out, progress=False)
    assert third.ran == 0
    assert len(load_records(out)) == 8


def test_csv_is_rebuilt_from_jsonl_when_they_disagree(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    exp = expand(_grid(out_widths=[8]))
    run_sweep(exp.points, out, progress=False, max_points=2)
    # killed between the JSONL append and the CSV append: drop the last CSV row
    lines = (out / RESULTS_CSV).read_text().splitlines(keepends=True)
    (out / RESULTS_CSV).write_text("".join(lines[:-1]))
    run_sweep(exp.points, out, progress=False)
    rows = _csv_rows(out)
    assert [r["key"] for r in rows] == [r["key"] for r in load_records(out)]
    assert len(rows) == len(exp.points)


def test_error_points_are_retried(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    exp = expand(_grid(out_widths=[8], fields={}))
    run_sweep(exp.points, out, progress=False)
    recs = load_records(out)
    recs[0]["status"] = "error"
    (out / RESULTS_JSONL).write_text("".join(json.dumps(r) + "\n" for r in recs))
    again = run_sweep(exp.points, out, progress=False)
    assert again.ran == 1
    assert all(r["status"] == "ok" for r in again.records)


def test_process_pool_gives_the_same_records(tmp_path: Path) -> None:
    exp = expand(_grid(out_widths=[8]))
    inline = run_sweep(exp.points, tmp_path / "a", progress=False, jobs=1)
    pooled = run_sweep(exp.points, tmp_path / "b", progress=False, jobs=2)
    assert pooled.ran == len(exp.points)

    def strip(rs: list[dict]) -> dict[str, dict]:
        return {r["key"]: {k: v for k, v in r.items() if k != "seconds"} for r in rs}

    assert strip(inline.records) == strip(pooled.records)


def test_any_concurrent_executor_runs_the_same_path(tmp_path: Path) -> None:
    # Dask is reached through Client.get_executor(), a concurrent.futures executor;
    # a thread pool stands in for it here.
    exp = expand(_grid(out_widths=[8], fields={}))
    with cf.ThreadPoolExecutor(2) as ex:
        res = run_sweep(exp.points, tmp_path / "t", progress=False, executor=ex)
    assert res.ran == 2
    assert all(r["status"] == "ok" for r in res.records)


def test_missing_dask_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "dask", None)
    monkeypatch.setitem(sys.modules, "dask.distributed", None)
    with pytest.raises(SweepError, match=r"pip install 'hwapprox\[dask\]'$"):
        make_executor(dask="tcp://127.0.0.1:8786")
    with pytest.raises(SweepError, match=r"^jobs=0 must be >= 1$"):
        make_executor(jobs=0)


def test_refuses_unrelated_directories(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    exp = expand(_grid(out_widths=[8], fields={}))
    with pytest.raises(SweepError, match=r"^refusing to write into .*it is not empty and has no"):
        run_sweep(exp.points, tmp_path, progress=False)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"]
    (tmp_path / "f").write_text("")
    with pytest.raises(SweepError, match=r"is a file; give a directory$"):
        run_sweep(exp.points, tmp_path / "f", progress=False)


def test_pareto_front_by_hand() -> None:
    items = [(1.0, 5.0, "a"), (2.0, 3.0, "b"), (2.0, 4.0, "c"), (3.0, 3.0, "d"), (4.0, 1.0, "e")]
    # c is beaten by b (same cost, lower error); d by b (cheaper, same error)
    assert [t[2] for t in pareto_front(items)] == ["a", "b", "e"]
    assert pareto_front([]) == []


def test_plots_are_written(tmp_path: Path) -> None:
    from hwapprox.report.plots import plot_sweep

    exp = expand(_grid())
    res = run_sweep(exp.points, tmp_path / "p", progress=False)
    files = plot_sweep(res.records, res.out_dir)
    names = sorted(p.name for p in files)
    stems = ["error_vs_width", "pareto", "pareto_lut"]
    # the DSP plot needs a DSP estimate: the fitted cost model has one for these methods
    has_dsp = any(r.get("DSP") is not None for r in res.records)
    stems += ["pareto_dsp"] * has_dsp
    assert names == sorted(f"{s}_softmax.{ext}" for s in stems for ext in ("png", "svg"))
    for p in files:
        head = p.read_bytes()[:64]
        assert head.startswith(b"\x89PNG") if p.suffix == ".png" else b"<svg" in p.read_bytes()


def test_grid_from_plain_data() -> None:
    g = Grid.from_dict(
        {
            "operator": "softmax",
            "methods": "ideal",
            "fields": {"coarse": 1},
            "out_widths": [8],
            "inputs": [{"dist": "gaussian", "sigma": 4, "n": 16, "rows": 4}],
        }
    )
    assert g.methods == ["ideal"]
    assert g.fields == {"coarse": [1]}
    assert g.inputs[0] == InputSet(sigma=4, n=16, rows=4)
    with pytest.raises(SweepError, match=r"^grid has unknown key\(s\) \['method'\]"):
        Grid.from_dict({"operator": "softmax", "method": ["x"]})
    with pytest.raises(SweepError, match=r"^grid 'inputs': input set has no field\(s\) sd"):
        Grid.from_dict({"operator": "softmax", "inputs": [{"sd": 1}]})


def test_dask_cluster_by_address(tmp_path: Path) -> None:
    # An in-process LocalCluster: a real scheduler address, the same run_sweep path.
    distributed = pytest.importorskip("distributed")
    exp = expand(_grid(out_widths=[8], fields={}))
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None
    ) as cluster:
        res = run_sweep(exp.points, tmp_path / "d", dask=cluster.scheduler_address, progress=False)
    assert res.ran == 2
    inline = run_sweep(exp.points, tmp_path / "i", progress=False)
    assert {r["key"]: r["max_abs"] for r in res.records} == {
        r["key"]: r["max_abs"] for r in inline.records
    }


def test_bad_dask_address_is_named() -> None:
    pytest.importorskip("distributed")
    with pytest.raises(
        SweepError, match=r"^cannot reach the Dask scheduler at 'foo' \(.*\); give its address as"
    ):
        make_executor(dask="foo")


class _InterruptAfter(cf.Executor):
    """Runs the first ``after`` calls, then answers Ctrl-C (KeyboardInterrupt)."""

    def __init__(self, after: int) -> None:
        self.after = after
        self.calls = 0

    def submit(self, fn, /, *args, **kwargs):  # type: ignore[no-untyped-def]
        fut: cf.Future = cf.Future()
        self.calls += 1
        if self.calls > self.after:
            fut.set_exception(KeyboardInterrupt())
        else:
            fut.set_result(fn(*args, **kwargs))
        return fut


def test_ctrl_c_keeps_finished_points_and_resumes(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    exp = expand(_grid())
    with pytest.raises(KeyboardInterrupt):
        run_sweep(exp.points, out, progress=False, executor=_InterruptAfter(4))
    kept = load_records(out)
    assert len(kept) <= 4
    assert all(r["status"] == "ok" for r in kept)
    res = run_sweep(exp.points, out, progress=False)
    assert res.ran == 8 - len(kept)
    keys = [r["key"] for r in load_records(out)]
    assert sorted(keys) == sorted(p.key for p in exp.points)
    assert len(_csv_rows(out)) == 8


def test_each_point_is_on_disk_before_the_next_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """jobs=1 (in-process): point k starts only after points 1..k-1 are in the JSONL,
    so a kill loses at most the point being computed (it used to compute every point
    before writing any)."""
    import hwapprox.approx.sweep as sweep

    out = tmp_path / "sw"
    exp = expand(_grid())
    seen: list[int] = []
    real = sweep.run_point

    def spy(config, inputs, family="7series"):  # type: ignore[no-untyped-def]
        path = out / RESULTS_JSONL
        seen.append(len(path.read_text().splitlines()) if path.exists() else 0)
        return real(config, inputs, family)

    monkeypatch.setattr(sweep, "run_point", spy)
    res = run_sweep(exp.points, out, progress=False, jobs=1)
    assert res.ran == 8
    assert seen == list(range(8))


def test_pool_writes_points_while_others_run(tmp_path: Path) -> None:
    """A process pool keeps at most 2 x workers points in flight and writes each as it
    finishes: the records are complete and unique."""
    out = tmp_path / "sw"
    exp = expand(_grid(out_widths=[6, 7, 8]))
    res = run_sweep(exp.points, out, progress=False, jobs=2)
    assert res.ran == len(exp.points) == 12
    keys = [r["key"] for r in load_records(out)]
    assert sorted(keys) == sorted(p.key for p in exp.points)
