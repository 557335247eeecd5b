"""``hwapprox list | eval | sweep | tune`` through click's CliRunner, errors included."""

from __future__ import annotations

import json
import re
from pathlib import Path

import approx_ideal_specs
import numpy as np
import pytest
import yaml
from click.testing import CliRunner, Result

from hwapprox.approx.base import Operator
from hwapprox.approx.registry import METHODS
from hwapprox.approx.sweep import load_records
from hwapprox.cli import cli
from hwapprox.cli.parse import parse_scalar, split_list

SMALL = ["--rows", "8", "--n", "16"]


@pytest.fixture(autouse=True)
def _ideal(monkeypatch: pytest.MonkeyPatch) -> None:
    approx_ideal_specs.register(monkeypatch)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_split_and_scalars() -> None:
    assert split_list("ap_fixed<16,6>,ap_fixed<8,3,AP_RND,AP_SAT>") == [
        "ap_fixed<16,6>",
        "ap_fixed<8,3,AP_RND,AP_SAT>",
    ]
    assert split_list("256, 1024") == ["256", "1024"]
    assert parse_scalar("1024") == 1024
    assert parse_scalar("1e-5") == 1e-5
    assert parse_scalar("true") is True
    assert parse_scalar("erf") == "erf"
    assert split_list("[1, 2],[3]") == ["[1, 2]", "[3]"]
    assert parse_scalar("[0.5, -1, ap_fixed<8,3>]") == (0.5, -1, "ap_fixed<8,3>")


def test_list_shows_sources_and_missing_modules(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(METHODS[Operator.GELU], "ghost", "hwapprox.approx.no_such_module:Ghost")
    res = run("list")
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert lines[0] == "softmax:"
    ideal = "ideal test helper: float64 softmax rounded to out_fmt"
    assert any(" ".join(line.split()) == ideal for line in lines)
    assert any("ghost" in ln and "not available yet" in ln for ln in lines)
    assert run("list", "gelu").output.splitlines()[0] == "gelu:"
    ln = run("list", "layernorm").output.splitlines()
    opt = ln.index(next(x for x in ln if x.lstrip().startswith("rmsnorm"))) + 1
    assert " ".join(ln[opt].split()).startswith("option partial: pRMSNorm, Zhang & Sennrich")


def test_eval_prints_the_metrics_table() -> None:
    res = run("eval", "softmax", "-m", "ideal", "--out-fmt", "ap_ufixed<9,1>", *SMALL)
    assert res.exit_code == 0, res.output
    out = res.output
    assert out.startswith("softmax/ideal in=ap_fixed<16,6> out=ap_ufixed<9,1> coarse=0\n")
    assert "inputs: gaussian(rows=8,n=16,sigma=2,mean=0)" in out
    row = next(ln for ln in out.splitlines() if "max |err| (LSB)" in ln)
    assert 0.0 < float(row.split()[-1]) <= 0.5  # round-to-nearest spec
    assert "top-1 agreement" in out
    assert "cost score" in out


def test_eval_json_and_set(tmp_path: Path) -> None:
    res = run("eval", "softmax", "-m", "ideal", "--set", "coarse=2", "--json", *SMALL)
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["spec"]["coarse"] == 2
    # clearing 2 low bits: error in [-0.5, 3.5] LSB, beyond the 0.5 of plain rounding
    assert 0.5 < data["metrics"]["max_lsb"] <= 3.5
    assert data["cost"]["score"] == 7.0  # 64 entries x (9 - 2) bits / 64


def test_eval_user_inputs(tmp_path: Path) -> None:
    arr = np.linspace(-4.0, 4.0, 64).reshape(4, 16)
    np.savez(tmp_path / "x.npz", logits=arr, other=arr)
    npz = str(tmp_path / "x.npz")
    res = run("eval", "softmax", "-m", "ideal", "--inputs", npz, "--key", "logits")
    assert res.exit_code == 0, res.output
    assert f"file(path={tmp_path / 'x.npz'},key=logits)" in res.output
    res = run("eval", "softmax", "-m", "ideal", "--inputs", str(tmp_path / "x.npz"))
    assert res.exit_code == 2
    assert "Invalid value for --inputs:" in res.output
    assert "holds 2 arrays (logits, other); choose one with key=" in res.output


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--out-fmt", "ap_ufixed<8,1"],
            "Invalid value for --out-fmt: malformed fixed-point format 'ap_ufixed<8,1'",
        ),
        (["-m", "idael"], "Invalid value for --method: unknown softmax method 'idael'; available:"),
        (["--set", "corase=1"], "Invalid value for --set: softmax/ideal has no field 'corase'"),
        (["--set", "coarse"], "Invalid value for --set: 'coarse' is not field=value"),
        (["--set", "coarse=99"], "coarse=99 must be in [0, 9)"),
        (["--n", "4"], "Invalid value for --n: row length n=4 is outside [8, 1024]"),
        (["--sigma", "2,4"], "'2,4' is not a number (one value; comma lists only in sweep/tune)"),
        (["--rows", "1.5"], "Invalid value for --rows: '1.5' is not an integer"),
        (["--dist", "cauchy"], "Invalid value for --dist: unknown input distribution 'cauchy'"),
        (["--inputs", "/no/such.npy"], "input file '/no/such.npy' does not exist"),
        (["--key", "a"], "Invalid value for --key: --key applies only with --inputs FILE.npz"),
        (["--low", "-8"], "Invalid value for --low: --low applies to --dist uniform only"),
    ],
)
def test_eval_errors_name_the_value_and_the_fix(args: list[str], message: str) -> None:
    base = ["eval", "softmax"]
    if "-m" not in args:
        base += ["-m", "ideal"]
    res = run(*base, *args)
    assert res.exit_code == 2, res.output
    assert message in " ".join(res.output.split())
    assert "Traceback" not in res.output


def test_sweep_writes_resumes_and_refuses(tmp_path: Path) -> None:
    out = tmp_path / "sw"
    args = ["sweep", "softmax", "-m", "ideal", "--out-width", "6,8", "--sigma", "2,4", *SMALL]
    res = run(*args, "-o", str(out), "-q", "-j", "1", "--max-points", "3", "--no-plots")
    assert res.exit_code == 0, res.output
    assert res.output.startswith("3 points run, 0 already done; 3 records")
    res = run(*args, "-o", str(out), "-q", "-j", "2")
    assert res.exit_code == 0, res.output
    assert res.output.startswith("1 points run, 3 already done; 4 records (0 invalid, 0 errors)")
    assert len(load_records(out)) == 4
    assert {p.name for p in out.iterdir()} >= {
        "results.csv",
        "results.jsonl",
        "sweep.json",
        "pareto_softmax.png",
        "pareto_softmax.svg",
        "error_vs_width_softmax.png",
        "error_vs_width_softmax.svg",
    }
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "data.csv").write_text("do not touch")
    res = run(*args, "-o", str(mine), "-q")
    assert res.exit_code == 1
    assert "refusing to write into" in res.output
    assert (mine / "data.csv").read_text() == "do not touch"


def test_sweep_from_yaml(tmp_path: Path) -> None:
    cfg = {
        "grids": [
            {
                "operator": "softmax",
                "methods": ["ideal"],
                "fields": {"coarse": [0, 1]},
                "out_widths": [8],
                "inputs": [{"dist": "gaussian", "sigma": 2, "rows": 8, "n": 16}],
            },
            {
                "operator": "gelu",
                "methods": ["ideal"],
                "inputs": [{"dist": "uniform", "low": -8, "high": 8, "rows": 8, "n": 16}],
            },
        ]
    }
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(cfg))
    res = run(
        "sweep", "--config", str(path), "-o", str(tmp_path / "o"), "-q", "-j", "1", "--no-plots"
    )
    assert res.exit_code == 0, res.output
    assert res.output.startswith("3 points run")
    assert {r["operator"] for r in load_records(tmp_path / "o")} == {"softmax", "gelu"}
    res = run("sweep", "softmax", "--config", str(path), "-o", str(tmp_path / "p"))
    assert res.exit_code == 2
    assert "give the grid either in --config or as OPERATOR/--method/--set options" in res.output
    path.write_text("operator: softmax\nmethods: [ideal]\nfeilds: {}\n")
    res = run("sweep", "--config", str(path), "-o", str(tmp_path / "q"))
    assert res.exit_code == 2
    assert "grid has unknown key(s) ['feilds']" in res.output


def test_sweep_option_errors(tmp_path: Path) -> None:
    res = run("sweep", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "give OPERATOR (softmax, gelu, layernorm) or --config FILE" in res.output
    res = run("sweep", "softmax", "-m", "ideal", "--metric", "l2", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "Invalid value for --metric: 'l2' is not a metric" in res.output
    res = run("sweep", "softmax", "-m", "ideal", "--set", "tabel=1,2", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "no softmax method among ideal has a field 'tabel'" in res.output
    res = run("sweep", "softmax", "-m", "ideal", "--out-width", "8,x", "-o", str(tmp_path / "x"))
    assert res.exit_code == 2
    assert "Invalid value for --out-width: 'x' is not a positive integer width" in res.output
    assert not (tmp_path / "x").exists()


def test_tune_finds_or_reports_none(tmp_path: Path) -> None:
    base = ["tune", "softmax", "-m", "ideal", "--out-width", "6,8", "--set", "coarse=0,1", "-q"]
    res = run(*base, "--budget-lsb", "1", *SMALL)
    assert res.exit_code == 0, res.output
    assert res.output.startswith("cheapest spec meeting max_lsb <= 1")
    assert "softmax/ideal in=ap_fixed<16,6> out=ap_ufixed<6,1> coarse=0" in res.output
    save = tmp_path / "best.yaml"
    res = run(*base, "--budget-lsb", "1", *SMALL, "--save", str(save), "--json")
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["best"]["spec"]["out_fmt"] == "ap_ufixed<6,1>"
    # cheapest first: scores 5 (6, coarse 1) then 6 (6, coarse 0), where it stops
    assert [c["cost_score"] for c in data["candidates"]] == [5.0, 6.0]
    assert data["candidates"][0]["ratio"] > 1.0
    assert yaml.safe_load(save.read_text())["coarse"] == 0
    res = run(*base, "--budget-lsb", "1", *SMALL, "--save", str(save))
    assert res.exit_code == 2
    assert "exists; choose another file or add --force" in res.output
    res = run(*base, "--budget-lsb", "0.4", *SMALL)
    assert res.exit_code == 1
    assert res.output.startswith("no spec in the search space (4 candidates) meets max_lsb <= 0.4")
    res = run(*base, *SMALL)
    assert res.exit_code == 2
    assert "an error budget needs at least one limit" in res.output


def test_real_methods_evaluate_when_present() -> None:
    try:
        from hwapprox.approx.registry import get_method

        get_method("softmax", "ibert")
    except (ModuleNotFoundError, AttributeError):
        pytest.skip("softmax models not landed")
    res = run("eval", "softmax", "-m", "ibert", "--json", *SMALL)
    assert res.exit_code == 0, res.output
    data = json.loads(res.output)
    assert data["spec"]["method"] == "ibert"
    assert data["metrics"]["n"] == 128


def test_eval_counts_and_reports_saturated_inputs(tmp_path: Path) -> None:
    """issue 21: inputs of sigma 200 into ap_fixed<16,5> saturated silently."""
    f = tmp_path / "huge.npy"
    x = np.random.default_rng(0).normal(0, 200, (4, 64))
    np.save(f, x)
    outside = int(np.count_nonzero((x < -16.0) | (x > 16.0)))
    assert outside > 0
    res = run("eval", "gelu", "-m", "pwl", "--inputs", str(f))
    assert res.exit_code == 0, res.output
    got = re.search(r"saturated inputs\s+(\d+) of 256", res.output)
    assert got is not None, res.output
    assert int(got.group(1)) == outside
    assert "saturate; the errors below" in res.output
    res = run("eval", "gelu", "-m", "pwl", "--inputs", str(f), "--json")
    assert json.loads(res.stdout)["saturated_inputs"] == {"count": outside, "total": 256}
    ok = tmp_path / "ok.npy"
    np.save(ok, np.linspace(-3, 3, 64))
    res = run("eval", "gelu", "-m", "pwl", "--inputs", str(ok), "--json")
    assert json.loads(res.stdout)["saturated_inputs"] == {"count": 0, "total": 64}


def test_eval_file_rows_shorter_than_the_minimum_are_refused(tmp_path: Path) -> None:
    """issue 21: five values bypassed the n >= 8 rule --n enforces."""
    f = tmp_path / "five.npy"
    np.save(f, np.arange(5.0))
    res = CliRunner().invoke(cli, ["eval", "gelu", "-m", "pwl", "--inputs", str(f)])
    assert res.exit_code == 2
    assert "rows of length 5" in res.output
    assert "at least 8" in res.output


def test_unwritable_outputs_are_refused_before_the_work(tmp_path: Path) -> None:
    """issue 21: sweep -o /proc/x ended in a traceback; tune --save crashed after the
    search; hls -o after calibration."""
    res = CliRunner().invoke(cli, ["sweep", "gelu", "-m", "pwl", *SMALL, "-o", "/proc/hwa-x"])
    assert res.exit_code != 0
    assert "'/proc' is not writable" in res.output
    res = CliRunner().invoke(
        cli, ["tune", "gelu", "-m", "pwl", "--budget-lsb", "4", "--save", "/proc/hwa-x.yaml"]
    )
    assert res.exit_code == 2
    assert "'/proc' is not writable" in res.output
    assert "met" not in res.output.lower()  # refused before the search ran
    from hwapprox.export import example

    res = CliRunner().invoke(
        cli, ["hls", "project", str(example.model_path()), "-o", "/proc/hwa-x"]
    )
    assert res.exit_code == 2
    assert "'/proc' is not writable" in res.output
    assert "note:" not in res.output  # before the model was prepared
