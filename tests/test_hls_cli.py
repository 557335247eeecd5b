"""``hwapprox hls`` commands: project writing and error messages (no compilation here)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
import yaml
from click.testing import CliRunner

from hwapprox.cli import cli
from hwapprox.export.blockmatch import encoder_block_onnx

pytestmark = pytest.mark.hls

CONFIG = {
    "defaults": {
        "softmax": {"method": "online"},
        "gelu": {"method": "pwl"},
        "layernorm": {"method": "rsqrt_lut", "max_n": 64},  # eps from the model (1e-12)
    },
    "hls": {"accum_fmt": "ap_fixed<32,12,AP_TRN,AP_SAT>"},
}


@pytest.fixture
def files(tmp_path):
    model = tmp_path / "block.onnx"
    onnx.save(encoder_block_onnx(4, 8, 2, 16), model)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump(CONFIG))
    return model, cfg, tmp_path


def test_project_writes_hls4ml_project(files):
    model, cfg, tmp = files
    out = tmp / "prj"
    res = CliRunner().invoke(
        cli, ["hls", "project", str(model), "-c", str(cfg), "-o", str(out), "--backend", "Vitis"]
    )
    assert res.exit_code == 0, res.output
    assert "softmax layer0.softmax_27=online" in res.output
    assert (out / "firmware" / "myproject.cpp").is_file()
    resolved = json.loads((out / "hwapprox_resolved.json").read_text())
    assert resolved["layers"][0]["specs"]["softmax"]["method"] == "online"
    assert resolved["layers"][0]["formats"]["accum_fmt"] == "ap_fixed<32,12,AP_TRN,AP_SAT>"
    assert resolved["layers"][0]["specs"]["ln1"]["eps"] == pytest.approx(1e-12)
    assert (
        "typedef ap_fixed<32,12,AP_TRN,AP_SAT> accum_t;"
        in (out / "firmware" / "parameters.h").read_text()
    )
    # an existing non-empty directory is not overwritten without --force
    res2 = CliRunner().invoke(cli, ["hls", "project", str(model), "-c", str(cfg), "-o", str(out)])
    assert res2.exit_code != 0
    assert "exists and is not empty; pass --force" in res2.output


def test_bad_config_is_a_clear_error(files):
    model, _, tmp = files
    bad = tmp / "bad.yaml"
    bad.write_text(yaml.safe_dump({**CONFIG, "hls": {"acum_fmt": "ap_fixed<32,12>"}}))
    res = CliRunner().invoke(
        cli, ["hls", "project", str(model), "-c", str(bad), "-o", str(tmp / "p")]
    )
    assert res.exit_code != 0
    assert "unknown block format(s) acum_fmt; known:" in res.output
    assert "Traceback" not in res.output


def test_units_lists_methods():
    res = CliRunner().invoke(cli, ["hls", "units"])
    assert res.exit_code == 0
    for m in ("softmax/online", "softmax/ibert", "gelu/edgemoe", "layernorm/rsqrt_lut"):
        assert m in res.output.split()


def test_board_sets_part_and_clock(files):
    model, cfg, tmp = files
    out = tmp / "prj"
    args = ["hls", "project", str(model), "-c", str(cfg), "-o", str(out), "--board", "pynq-z2"]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    tcl = (out / "project.tcl").read_text()
    assert 'set part "xc7z020clg400-1"' in tcl
    assert "set clock_period 10.0" in tcl
    # --part overrides the board's part; the board's clock stays
    out2 = tmp / "prj2"
    res = CliRunner().invoke(cli, [*args[:6], str(out2), *args[7:], "--part", "xc7z010clg400-1"])
    assert res.exit_code == 0, res.output
    tcl = (out2 / "project.tcl").read_text()
    assert 'set part "xc7z010clg400-1"' in tcl
    assert "set clock_period 10.0" in tcl


def test_unknown_board_lists_boards(files):
    model, cfg, tmp = files
    res = CliRunner().invoke(
        cli,
        ["hls", "project", str(model), "-c", str(cfg), "-o", str(tmp / "p"), "--board", "zcu1O2"],
    )
    assert res.exit_code == 2
    assert "unknown board 'zcu1O2'; available:" in res.output
    assert "zcu102" in res.output
    assert "Traceback" not in res.output
    assert not (tmp / "p").exists()


def test_model_first_form_is_csim(files):
    model, cfg, tmp = files
    res = CliRunner().invoke(cli, ["hls", str(model), "-c", str(cfg), "-o", str(tmp), "--help"])
    assert res.exit_code == 0, res.output
    assert "Usage: cli hls csim [OPTIONS] MODEL" in res.output
    assert "--build" in res.output
    assert "--board" in res.output
    res = CliRunner().invoke(cli, ["hls", str(tmp / "none.onnx"), "-o", str(tmp / "p")])
    assert res.exit_code == 2
    assert "Invalid value for 'MODEL'" in res.output
    assert "does not exist" in res.output
    # the group's own help and subcommands are unchanged
    res = CliRunner().invoke(cli, ["hls", "--help"])
    assert res.exit_code == 0
    assert "Commands:" in res.output
    assert "project" in res.output


def _no_csim(monkeypatch) -> None:
    """Replace the g++ build and csim_check by a bit-exact report (compiles nothing)."""
    import hwapprox.hls.project as project

    monkeypatch.setattr(project, "compile_project", lambda m, **kw: None)
    monkeypatch.setattr(
        project, "csim_check", lambda m, p, x, **kw: project.CsimReport(len(x), x.size, 0, None)
    )


def test_build_without_vendor_tool_stops_after_csim(files, monkeypatch):
    """--build with no vivado_hls on PATH: exit 2 naming the tool, csim verdict kept.

    csim_check is replaced by a bit-exact report so that this test compiles nothing;
    the real C simulation is covered in test_hls_hls4ml.py.
    """

    model, cfg, tmp = files
    _no_csim(monkeypatch)
    monkeypatch.setenv("PATH", str(tmp))
    out = tmp / "prj"
    res = CliRunner().invoke(cli, ["hls", str(model), "-c", str(cfg), "-o", str(out), "--build"])
    assert res.exit_code == 2, res.output
    assert "bit-exact" in res.output
    assert "'vivado_hls' (needed by the hls4ml Vivado backend) is not on PATH" in res.output
    assert "the C-simulation result above stands" in res.output
    assert (out / "build_prj.tcl").is_file()


def test_unsupported_op_names_op_node_and_what_is_supported(tmp_path):
    from onnx import TensorProto, helper, numpy_helper

    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4, 8])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4, 2])
    i = helper.make_tensor_value_info("i", TensorProto.INT64, [1, 4, 2])
    k = numpy_helper.from_array(np.array([2], np.int64), "k")
    nodes = [
        helper.make_node("Softmax", ["x"], ["s"], name="attn_softmax", axis=-1),
        helper.make_node("TopK", ["s", "k"], ["y", "i"], name="pick_top2", axis=-1),
    ]
    graph = helper.make_graph(nodes, "g", [x], [y, i], initializer=[k])
    model = tmp_path / "topk.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_operatorsetid("", 17)]), model)
    cfg = tmp_path / "c.yaml"
    cfg.write_text(yaml.safe_dump({"defaults": {"softmax": {"method": "online"}}}))
    res = CliRunner().invoke(
        cli, ["hls", "project", str(model), "-c", str(cfg), "-o", str(tmp_path / "p")]
    )
    assert res.exit_code == 1
    assert "unsupported ONNX op(s) TopK x1 (1 node(s); first 'pick_top2')" in res.output
    assert "Supported: whole encoder blocks" in res.output
    assert "softmax/online" in res.output
    assert "Traceback" not in res.output


FAKE_VIVADO_HLS = """#!/bin/sh
# stands in for vivado_hls: writes the C-synthesis report where hls4ml reads it
d=myproject_prj
mkdir -p "$d/solution1/syn/report"
printf '<AutoPilot:project xmlns:AutoPilot="x"><solutions><solution name="solution1"/>'\\
'</solutions></AutoPilot:project>' > "$d/vivado_hls.app"
cat > "$d/solution1/syn/report/myproject_csynth.xml" <<XML
<profile>
 <UserAssignments><TargetClockPeriod>5.00</TargetClockPeriod></UserAssignments>
 <PerformanceEstimates>
  <SummaryOfTimingAnalysis><EstimatedClockPeriod>4.375</EstimatedClockPeriod>
  </SummaryOfTimingAnalysis>
  <SummaryOfOverallLatency><Best-caseLatency>1234</Best-caseLatency>
   <Worst-caseLatency>1240</Worst-caseLatency><Interval-min>1235</Interval-min>
   <Interval-max>1241</Interval-max></SummaryOfOverallLatency>
 </PerformanceEstimates>
 <AreaEstimates>
  <Resources><BRAM_18K>6</BRAM_18K><DSP48E>72</DSP48E><FF>9876</FF><LUT>54321</LUT>
   <URAM>0</URAM></Resources>
  <AvailableResources><BRAM_18K>280</BRAM_18K><DSP48E>220</DSP48E><FF>106400</FF>
   <LUT>53200</LUT><URAM>0</URAM></AvailableResources>
 </AreaEstimates>
</profile>
XML
echo "$@" > fake_vivado_hls.args
"""


def test_build_summarises_the_csynth_report(files, monkeypatch):
    """--build with the vendor tool on PATH: the csynth report's latency and resources
    (as hls4ml parses them) are printed and written to hwapprox_csynth.json.

    A stand-in vivado_hls writes a report with known numbers; csim_check is replaced
    as above (the real C simulation is covered in test_hls_hls4ml.py)."""
    import json
    import os

    model, cfg, tmp = files
    _no_csim(monkeypatch)
    tool = tmp / "bin" / "vivado_hls"
    tool.parent.mkdir()
    tool.write_text(FAKE_VIVADO_HLS)
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    out = tmp / "prj_build"
    res = CliRunner().invoke(cli, ["hls", str(model), "-c", str(cfg), "-o", str(out), "--build"])
    assert res.exit_code == 0, res.output
    assert "synth=True" in (out / "fake_vivado_hls.args").read_text()
    assert "C synthesis: latency 1234..1240 cycles, interval 1235..1241 cycles, clock 4.375 ns" in (
        res.output
    )
    assert "  LUT: 54321 of 53200 (102.1 %)" in res.output
    assert "  DSP: 72 of 220 (32.7 %)" in res.output
    summary = json.loads((out / "hwapprox_csynth.json").read_text())
    assert summary["resources"]["FF"] == {"used": 9876, "available": 106400}
    assert summary["latency_cycles"] == {"best": 1234, "worst": 1240}


def test_build_without_report_fails(files, monkeypatch):
    """A vendor tool that writes no report: exit 1 saying so (never a silent success)."""
    import os

    model, cfg, tmp = files
    _no_csim(monkeypatch)
    tool = tmp / "bin2" / "vivado_hls"
    tool.parent.mkdir()
    tool.write_text("#!/bin/sh\nexit 0\n")
    tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tool.parent}{os.pathsep}{os.environ['PATH']}")
    res = CliRunner().invoke(
        cli, ["hls", str(model), "-c", str(cfg), "-o", str(tmp / "prj_nr"), "--build"]
    )
    assert res.exit_code == 1, res.output
    assert "ran but wrote no C-synthesis report" in res.output


@pytest.mark.parametrize(
    ("arrays", "match"),
    [
        ({"wrong_name": np.zeros((1, 16), np.int64)}, "input names do not match the model"),
        ({"input_ids": np.zeros((1, 3, 16), np.int64)}, "has shape"),
        ({"input_ids": np.zeros((1, 16), np.float32)}, "holds floats"),
    ],
)
def test_bad_inputs_are_refused_as_validate_refuses_them(tmp_path, arrays, match):
    """issue 21: a wrong --inputs file gave one note and uncalibrated 'bit-exact' output."""
    from hwapprox.export import example

    f = tmp_path / "wrong.npz"
    np.savez(f, **arrays)
    out = tmp_path / "prj"
    res = CliRunner().invoke(
        cli, ["hls", "project", str(example.model_path()), "--inputs", str(f), "-o", str(out)]
    )
    assert res.exit_code == 1, res.output
    assert match in res.output
    assert not out.exists() or not any(out.iterdir())
    v = CliRunner().invoke(cli, ["validate", str(example.model_path()), "--inputs", str(f)])
    assert v.exit_code == 1
    assert match in v.output


def test_garbage_part_is_refused(files, tmp_path):
    model, cfg, _ = files
    res = CliRunner().invoke(
        cli,
        [
            "hls",
            "project",
            str(model),
            "-c",
            str(cfg),
            "-o",
            str(tmp_path / "p"),
            "--part",
            "garbage",
        ],
    )
    assert res.exit_code == 2
    assert "part 'garbage' is not an AMD/Xilinx part name" in res.output


@pytest.mark.parametrize(("backend", "tool"), [("Vivado", "vivado_hls"), ("Vitis", "vitis-run")])
def test_cosim_without_vendor_tool_exits_2_naming_it(files, monkeypatch, backend, tool):
    """hls cosim with no vendor HLS tool on PATH: exit 2 naming the tool, nothing written."""
    model, cfg, tmp = files
    monkeypatch.setenv("PATH", str(tmp))
    out = tmp / "prj_cosim"
    res = CliRunner().invoke(
        cli, ["hls", "cosim", str(model), "-c", str(cfg), "-o", str(out), "--backend", backend]
    )
    assert res.exit_code == 2, res.output
    assert f"cosim: '{tool}' (needed by the hls4ml {backend} backend" in res.output
    assert "is not on PATH" in res.output
    assert not out.exists()
