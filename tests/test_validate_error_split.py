"""validate's per-site error split into its two causes (issue 26): quantising the
site's input (the exact function of the quantised input vs the float output) and
the approximation itself (the spec vs that exact function), in text and HTML."""

from __future__ import annotations

import numpy as np
import pytest

from hwapprox.approx.softmax import stable_softmax
from hwapprox.export.emulate import apply_spec, rows_view
from hwapprox.export.example import inputs_path, model_path
from hwapprox.export.validate import validate
from hwapprox.report.html import validate_html
from hwapprox.report.validate import _jsonable, format_report


@pytest.fixture(scope="module")
def result():  # type: ignore[no-untyped-def]
    return validate(model_path(), inputs=inputs_path())


def test_both_causes_reported_per_site(result) -> None:  # type: ignore[no-untyped-def]
    for s in result.imported.sites:
        err = result.site_errors[s.name]
        q, a, tot = err["quant_max_lsb"], err["approx_max_lsb"], err["max_lsb"]
        assert q >= 0
        assert a >= 0
        assert tot <= q + a + 1e-6, (s.name, tot, q, a)  # |y - yf| <= |y - yi| + |yi - yf|
    text = format_report(result)
    assert "LSB input q." in text
    assert "LSB approx." in text


def test_softmax_split_against_float64(result) -> None:  # type: ignore[no-untyped-def]
    """The approximation part recomputed independently: the model's outputs vs the float64
    softmax of the quantised input; the input part: that softmax vs the float output."""
    s = next(s for s in result.imported.sites if s.kind == "softmax")
    spec = result.specs[s.name]
    x, yf = result.trace.site_inputs[s.name], result.trace.site_outputs[s.name]
    xv, axis = rows_view(s, np.asarray(x, dtype=np.float64))
    xq = spec.in_fmt.to_float(spec.quantize_input(xv))
    p = stable_softmax(xq, axis=axis)
    y = apply_spec(s, spec, x)
    lsb = float(spec.out_fmt.lsb)
    approx = np.abs(y.reshape(p.shape) - p).max() / lsb
    quant = np.abs(p - np.asarray(yf, dtype=np.float64).reshape(p.shape)).max() / lsb
    err = result.site_errors[s.name]
    assert err["approx_max_lsb"] == pytest.approx(approx, rel=1e-9)
    assert err["quant_max_lsb"] == pytest.approx(quant, rel=1e-9)
    # on this model the input format dominates the softmax sites' error, not the method
    assert err["quant_max_lsb"] > 2 * err["approx_max_lsb"]
    assert err["approx_max_lsb"] <= 1.0


def test_html_report_shows_the_split(result) -> None:  # type: ignore[no-untyped-def]
    html = validate_html(_jsonable(result.as_dict()))
    assert "LSB from input quantisation" in html
    assert "LSB from the approximation" in html


@pytest.mark.parametrize("threads", [1, 2])
def test_reports_beside_the_emulation_match_the_reports_before_it(
    threads: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The per-site reports run beside the emulation (a small model's on the background
    worker, after its statistics; with worker threads on a thread of their own): the same
    site errors, saturation counts, warnings (in order) and outputs as run before it on
    the calling thread."""
    from hwapprox.export import example
    from hwapprox.export import validate as val

    kw = {"inputs": example.inputs_path(), "width": 8, "range_stat": 0.5, "threads": threads}
    beside = validate(example.model_path(), **kw)
    monkeypatch.setattr(val, "REPORTS_BESIDE", False)
    before = validate(example.model_path(), **kw)
    assert beside.timing["reports_beside"] == 1.0
    assert before.timing["reports_beside"] == 0.0
    assert beside.site_errors == before.site_errors
    assert beside.saturation == before.saturation
    assert beside.warnings == before.warnings
    assert before.warnings  # width 8 saturates somewhere: the order is checked
    for k, v in before.emulated.items():
        assert np.array_equal(v, beside.emulated[k])


@pytest.mark.parametrize("who", ["worker", "caller"])
def test_report_passes_give_the_same_reports_whichever_thread_runs_them(
    who: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The small model's report passes are shared out: the background worker takes them
    from the front, the joining thread the ones left from the end. Every pass run by the
    worker, or every pass by the caller: the reports of the serial path."""
    from concurrent.futures import Future

    from hwapprox.export import example
    from hwapprox.export import validate as val

    kw = {"inputs": example.inputs_path(), "width": 8, "range_stat": 0.5}
    monkeypatch.setattr(val, "REPORTS_BESIDE", False)
    serial = validate(example.model_path(), **kw)
    monkeypatch.setattr(val, "REPORTS_BESIDE", True)
    taken: list[int] = []

    def bg(fn, take):  # type: ignore[no-untyped-def]
        def counted() -> int:
            i = take()
            taken.append(i)
            return i

        if who == "worker":  # (done before the caller joins)
            f: Future[None] = Future()
            f.set_result(fn(counted))
            return f

        class Late:  # (begins only when the caller has taken every pass)
            def result(self) -> None:
                fn(counted)

        return Late()

    monkeypatch.setattr(val, "background", bg)
    shared = validate(example.model_path(), **kw)
    assert len(taken) == (len(serial.site_errors) if who == "worker" else 0)
    assert shared.site_errors == serial.site_errors
    assert shared.saturation == serial.saturation
    assert shared.warnings == serial.warnings
