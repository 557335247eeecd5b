"""``hwapprox validate``, the embedded example, the report and bad input."""

from __future__ import annotations

import json
import re

import numpy as np
import onnx
import pytest
from click.testing import CliRunner
from onnx_models import checker_failing, float_ref_spec, single_node

from hwapprox.cli import cli
from hwapprox.export import example
from hwapprox.export.builders import EncoderShape, bert_encoder
from hwapprox.export.errors import ExportError
from hwapprox.export.graph import load_model
from hwapprox.export.validate import E2EBudget, import_model, validate
from hwapprox.report.validate import write_report

SHAPE = EncoderShape(layers=1, width=16, heads=2, ffn=32, seq=4, batch=2, vocab=20)


def _run(*args: str):
    return CliRunner().invoke(cli, ["validate", *args], catch_exceptions=False)


def test_embedded_example_is_small_and_reproducible() -> None:
    assert example.model_path().stat().st_size < 500_000
    import runpy
    from pathlib import Path

    script = Path(__file__).parents[1] / "scripts" / "make_example_model.py"
    blob, feeds = runpy.run_path(str(script))["build"]()
    assert blob == example.model_path().read_bytes()  # same seeds -> same bytes
    with np.load(example.inputs_path()) as z:
        assert sorted(z.files) == ["input_ids"]
        assert np.array_equal(z["input_ids"], feeds["input_ids"])
    imp = import_model(example.model_path())
    patterns = sorted({(s.operator.value, s.pattern) for s in imp.sites})
    assert patterns == [("gelu", "erf"), ("layernorm", "decomposed"), ("softmax", "op")]


def test_cli_default_example_writes_report(tmp_path) -> None:
    out = tmp_path / "rep"
    r = _run("--method", "softmax=ibert", "--sites", "softmax,gelu", "-o", str(out))
    assert r.exit_code == 0, r.output
    assert "End to end" in r.output
    assert "layer0.softmax_41" in r.output
    assert {p.name for p in out.iterdir()} == {
        "report.txt",
        "validate.json",
        "config.yaml",
        "validate.png",
        "report.html",
    }
    data = json.loads((out / "validate.json").read_text())
    selected = [s for s in data["sites"] if s["selected"]]
    assert {s["operator"] for s in selected} == {"softmax", "gelu"}
    assert all(s["spec"] is None for s in data["sites"] if not s["selected"])
    e2e = data["end_to_end"]["outputs"]["logits"]
    assert 0 < e2e["max_abs"] < e2e["ref_absmax"]
    assert (out / "validate.png").read_bytes()[:4] == b"\x89PNG"
    # A non-empty output directory is refused unless --force.
    r = _run("-o", str(out))
    assert r.exit_code != 0
    assert "is not empty; choose another or pass --force" in r.output
    assert _run("--sites", "softmax", "-o", str(out), "--force").exit_code == 0


def test_cli_preloads_the_plot_imports_only_without_worker_processes(tmp_path, monkeypatch) -> None:
    """With -o and no worker processes the plot's imports start on a thread before the
    run (preload_plotting, which leaves matplotlib's figure imported); with -j > 1 they
    do not (a fork during an import would leave the child waiting on its lock); the
    reports are the same."""
    import sys

    from hwapprox.report import validate as report_validate

    report_validate.preload_plotting().join(timeout=60)
    assert "matplotlib.figure" in sys.modules
    calls: list[int] = []
    real = report_validate.preload_plotting
    monkeypatch.setattr(report_validate, "preload_plotting", lambda: calls.append(1) or real())
    assert _run("--sites", "gelu", "-o", str(tmp_path / "a")).exit_code == 0
    assert calls == [1]
    assert _run("--sites", "gelu", "-j", "2", "-o", str(tmp_path / "b")).exit_code == 0
    assert calls == [1]
    a, b = (json.loads((tmp_path / d / "validate.json").read_text()) for d in "ab")
    assert a["end_to_end"] == b["end_to_end"]


def test_cli_config_and_budget(tmp_path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(
        "defaults:\n  softmax: {method: ibert}\n  gelu: {method: ibert}\nsites:\n  Erf_69: float\n"
    )
    r = _run("--config", str(cfg))
    assert r.exit_code == 0, r.output
    line = next(x for x in r.output.splitlines() if x.startswith("Erf_69"))
    assert " float " in line
    r = _run("--config", str(cfg), "--sites", "softmax", "--budget", "top1=1")
    assert r.exit_code == 0, r.output
    assert "Budget top1=1: met" in r.output


def test_budget_tuning_meets_budget() -> None:
    """Greedy tuning: the final end-to-end metrics meet the budget, and each chosen
    spec is the cheapest evaluated candidate that met it at its turn."""
    res = validate(
        example.model_path(),
        inputs=example.inputs_path(),
        sites=["softmax"],
        methods={"softmax": "ibert"},
        budget="max_abs=0.02",
        threads=1,
    )
    assert E2EBudget(max_abs=0.02).meets(res.end_to_end)
    for t in res.tuning:
        scores = [c["score"] for c in t["evaluated"]]
        assert scores == sorted(scores)
        if t["chosen"] is not None:
            assert t["evaluated"][-1]["max_abs"] <= 0.02
            assert all(c["max_abs"] > 0.02 for c in t["evaluated"][:-1])


def test_float_reference_validation_reproduces_float() -> None:
    """validate() with float-reference specs: per-site and end-to-end errors at
    float32 rounding (float32 site outputs vs float64 formulas: a few ulps of
    values up to ~5, so < 1e-5; 1e-3 would already be a wrong site)."""
    imp = import_model(example.model_path())
    res = validate(
        imp,
        inputs=example.inputs_path(),
        specs={s.name: float_ref_spec(s) for s in imp.sites},
        threads=1,
    )
    assert max(e["max_abs"] for e in res.site_errors.values()) < 1e-5
    assert res.end_to_end["max_abs"] < 1e-5
    assert res.end_to_end["top1"] == 1.0


def test_write_report_refuses_file_path(tmp_path) -> None:
    f = tmp_path / "afile"
    f.write_text("x")
    imp = import_model(example.model_path())
    res = validate(
        imp,
        inputs=example.inputs_path(),
        specs={s.name: float_ref_spec(s) for s in imp.sites[:1]},
        sites=[imp.sites[0].name],
        threads=1,
    )
    msg = r"^output path '.*afile' exists and is not a directory; give a directory$"
    with pytest.raises(ExportError, match=msg):
        write_report(res, f)


# -- bad input -----------------------------------------------------------------
def test_missing_model_file(tmp_path) -> None:
    with pytest.raises(ExportError, match=r"^ONNX model '.*nope.onnx' does not exist$"):
        load_model(tmp_path / "nope.onnx")
    r = _run(str(tmp_path / "nope.onnx"))
    assert r.exit_code == 1
    assert "Error: ONNX model" in r.output
    assert "does not exist" in r.output


def test_not_an_onnx_model(tmp_path) -> None:
    p = tmp_path / "junk.onnx"
    p.write_bytes(b"\x00\x01garbage that is not protobuf\xff" * 10)
    with pytest.raises(ExportError, match=r"^'.*junk.onnx' is not an ONNX model"):
        load_model(p)
    p.write_text("hello")
    with pytest.raises(ExportError, match=r"^'.*junk.onnx' is not an ONNX model"):
        load_model(p)


def test_model_failing_the_checker(tmp_path) -> None:
    p = tmp_path / "broken.onnx"
    onnx.save(checker_failing(), str(p))
    with pytest.raises(ExportError, match=r"broken.onnx fails the ONNX checker: .*nowhere"):
        load_model(p)


def test_dynamic_dims_need_inputs() -> None:
    model = bert_encoder(EncoderShape(layers=1, width=16, heads=2, ffn=32, seq=4, batch=None))
    with pytest.raises(
        ExportError,
        match=r"^input 'input_ids' has dynamic dims \[batch, 4\]; sample inputs cannot be "
        r"generated -- pass them as an .npz file",
    ):
        validate(model, methods={"softmax": "float", "gelu": "float", "layernorm": "float"})


def test_generated_inputs_for_static_model() -> None:
    imp = import_model(bert_encoder(SHAPE))
    res = validate(imp, specs={s.name: float_ref_spec(s) for s in imp.sites}, threads=1)
    assert res.n_samples == 2
    # It ran, so the generated token ids were below the vocabulary size (Gather bound).
    assert res.trace.outputs["logits"].shape == (2, SHAPE.classes)


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        (
            {"ids": np.zeros((2, 4), np.int64)},
            r"input names do not match the model \(missing \['input_ids'\]; unknown \['ids'\]\);"
            r" the model's inputs are \['input_ids'\]",
        ),
        (
            {"input_ids": np.zeros((2, 5), np.int64)},
            r"input 'input_ids' has shape \[2, 5\] but the model expects \[2, 4\]",
        ),
        (
            {"input_ids": np.zeros((2, 4), np.float32)},
            r"input 'input_ids' holds floats \(float32\) but the model expects int64",
        ),
    ],
)
def test_bad_sample_inputs(tmp_path, arrays, match) -> None:
    p = tmp_path / "x.npz"
    np.savez(p, **arrays)
    model = bert_encoder(SHAPE)
    with pytest.raises(ExportError, match=match):
        validate(model, inputs=p)
    mp = tmp_path / "m.onnx"
    onnx.save(model, str(mp))
    r = _run(str(mp), "--inputs", str(p))
    assert r.exit_code == 1
    assert "Error:" in r.output


def test_inputs_file_not_npz(tmp_path) -> None:
    p = tmp_path / "x.npz"
    p.write_text("not a zip")
    with pytest.raises(ExportError, match=r"is not a numpy .npz archive"):
        validate(bert_encoder(SHAPE), inputs=p)


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (["--method", "softmax"], r"'softmax' is not OP=METHOD"),
        (["--method", "relu=x"], r"--method relu=x: unknown operator 'relu'"),
        (["--method", "softmax=nope"], r"unknown softmax method 'nope'; available: "),
        (["--sites", "relu"], r"unknown site selector\(s\) \['relu'\]"),
        (["--budget", "accuracy=1"], r"budget item 'accuracy=1' is not KEY=VALUE with KEY one of"),
        (["--budget", "top1=high"], r"budget top1='high' is not a number"),
    ],
)
def test_cli_bad_options(args: list[str], match: str) -> None:
    r = _run(*args)
    assert r.exit_code != 0
    assert re.search(match, r.output), r.output


def test_top1_budget_needs_a_class_axis() -> None:
    with pytest.raises(ExportError, match=r"^budget top1=1 needs a classifier"):
        validate(single_node("Gelu", [6], 20), budget="top1=1", methods={"gelu": "ibert"})


def test_written_config_reproduces_the_run(tmp_path) -> None:
    """config.yaml written by -o is a complete per-site config: feeding it back
    gives the same specs and the same end-to-end result."""
    out = tmp_path / "a"
    assert _run("--method", "gelu=pwl", "--sites", "gelu,layernorm", "-o", str(out)).exit_code == 0
    first = json.loads((out / "validate.json").read_text())
    out2 = tmp_path / "b"
    r = _run("--config", str(out / "config.yaml"), "-o", str(out2))
    assert r.exit_code == 0, r.output
    second = json.loads((out2 / "validate.json").read_text())
    assert [s["spec"] for s in second["sites"]] == [s["spec"] for s in first["sites"]]
    assert second["end_to_end"] == first["end_to_end"]


# -- issue 21: bad input gets a clear error, an unmet budget a non-zero exit -------------------
@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("cosine=1.5", r"cosine=1\.5 is out of range: cosine is a cosine similarity, in \[-1, 1\]"),
        ("top1=2", r"top1=2 is out of range: top1 is a fraction of samples, in \[0, 1\]"),
        ("max_abs=-1", r"max_abs=-1 is out of range"),
        ("mean_abs=nan", r"mean_abs=nan is out of range"),
    ],
)
def test_impossible_budgets_are_refused(text: str, match: str) -> None:
    with pytest.raises(ExportError, match=match):
        E2EBudget.parse(text)


def test_unmet_budget_exits_1_with_a_complete_report(tmp_path) -> None:
    out = tmp_path / "rep"
    res = CliRunner().invoke(
        cli, ["validate", "--budget", "max_abs=0", "--sites", "softmax", "-o", str(out)]
    )
    assert res.exit_code == 1, res.output
    assert "NOT met" in res.output
    assert (out / "report.txt").is_file()  # the report says what was tried


def test_failed_validate_leaves_no_report_directory(tmp_path) -> None:
    out = tmp_path / "rep"
    res = CliRunner().invoke(cli, ["validate", "--budget", "cosine=1.5", "-o", str(out)])
    assert res.exit_code != 0
    assert "out of range" in res.output
    assert not out.exists()


def test_unwritable_output_is_refused_before_the_work() -> None:
    res = CliRunner().invoke(cli, ["validate", "-o", "/proc/hwapprox-report"])
    assert res.exit_code == 1
    assert "'/proc' is not writable" in res.output
    assert "Traceback" not in res.output


def test_too_new_opset_is_a_one_line_error(tmp_path) -> None:
    m = single_node("Relu", [2, 4], opset=30)
    m.ir_version = 8
    f = tmp_path / "new.onnx"
    onnx.save(m, str(f))
    with pytest.raises(ExportError, match=r"opset ai\.onnx 30 is newer than the installed onnx"):
        load_model(f)


def test_model_without_sites_warns() -> None:
    from onnx import TensorProto, helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 4])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 4])
    w = helper.make_tensor("w", TensorProto.FLOAT, [4, 4], [0.1] * 16)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["y"])], "g", [x], [y], [w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    res = validate(m)
    assert res.warnings[0].startswith("no softmax, GELU, LayerNorm/RMSNorm")


def test_out_of_vocabulary_ids_name_the_cause(tmp_path, capfd) -> None:
    f = tmp_path / "oov.npz"
    np.savez(f, input_ids=np.full((2, 16), 5000, dtype=np.int64))
    with pytest.raises(ExportError, match=r"token ids\?\) is beyond its table"):
        validate(example.model_path(), inputs=f)
    assert "onnxruntime" not in capfd.readouterr().err  # no raw runtime log line


def test_embedded_example_named_uses_its_shipped_inputs() -> None:
    """issue 21: `validate MODEL` on the embedded example generated inputs instead of
    using bert_tiny_inputs.npz (as `validate` without MODEL does)."""
    named = CliRunner().invoke(cli, ["validate", str(example.model_path())])
    bare = CliRunner().invoke(cli, ["validate"])
    assert named.exit_code == bare.exit_code == 0
    n = int(np.load(example.inputs_path())["input_ids"].shape[0])
    assert f"{n} samples" in named.output
    assert named.output.split("Time:")[0] == bare.output.split("Time:")[0]
