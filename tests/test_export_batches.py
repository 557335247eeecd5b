"""--inputs as a directory or glob of .npz batches: calibration streamed over every batch
(statistics merged, memory not growing with the batch count), errors on the first."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hwapprox.export import example
from hwapprox.export.calibrate import batch_files, calibrate
from hwapprox.export.errors import ExportError
from hwapprox.export.validate import import_model, validate


@pytest.fixture(scope="module")
def batches(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example's 16 sequences as four .npz batches of 4."""
    d = tmp_path_factory.mktemp("batches")
    z = dict(np.load(example.inputs_path()))
    n = next(iter(z.values())).shape[0]
    for i, lo in enumerate(range(0, n, 4)):
        np.savez(d / f"batch_{i:02d}.npz", **{k: v[lo : lo + 4] for k, v in z.items()})
    return d


def test_streamed_statistics_equal_one_pass_over_the_concatenation(batches: Path) -> None:
    imp = import_model(example.model_path())
    files = batch_files(batches)
    assert files is not None
    assert len(files) == 4
    from hwapprox.export.calibrate import iter_batches, prepare_inputs

    first = prepare_inputs(imp.model, files[0])
    streamed = calibrate(imp.model, imp.sites, first, more=iter_batches(imp.model, files[1:]))
    whole = calibrate(imp.model, imp.sites, prepare_inputs(imp.model, example.inputs_path()))
    assert streamed.batches == 4
    for s in imp.sites:
        a, b = streamed.stats[s.name], whole.stats[s.name]
        assert (a.count, a.min, a.max, a.masked) == (b.count, b.min, b.max, b.masked)
        assert a.percentiles == b.percentiles  # the histograms merge exactly
        assert a.std == pytest.approx(b.std, rel=1e-9)
        assert streamed.out_stats[s.name].max == whole.out_stats[s.name].max
    # the trace's tensors are the first batch's (4 sequences)
    name = imp.sites[0].name
    assert streamed.site_inputs[name].shape[0] == 4


def test_validate_calibrates_over_the_batches_and_says_so(batches: Path) -> None:
    res = validate(example.model_path(), inputs=batches)
    whole = validate(example.model_path(), inputs=example.inputs_path())
    assert res.in_fmts == whole.in_fmts  # formats from all 16 sequences, not the first 4
    assert any("calibrated over 4 batch files" in n for n in res.notes)
    glob = validate(example.model_path(), inputs=str(batches / "batch_0[0-1].npz"))
    assert any("calibrated over 2 batch files" in n for n in glob.notes)


def test_empty_directory_and_pattern_are_named(tmp_path: Path) -> None:
    with pytest.raises(ExportError, match=r"holds no \.npz batch files"):
        validate(example.model_path(), inputs=tmp_path)
    with pytest.raises(ExportError, match=r"matches no \.npz files"):
        validate(example.model_path(), inputs=str(tmp_path / "x_*.npz"))


def test_batches_folded_on_a_dask_cluster_equal_the_serial_statistics(batches: Path) -> None:
    """Batches 2..4 run on two Dask workers; their merged statistics are the serial
    run's exactly (equal floats, not approximately: the merge is the serial update)."""
    distributed = pytest.importorskip("dask.distributed")
    from hwapprox.export.calibrate import iter_batches, prepare_inputs

    imp = import_model(example.model_path())
    files = batch_files(batches)
    assert files is not None
    first = prepare_inputs(imp.model, files[0])
    serial = calibrate(imp.model, imp.sites, first, more=iter_batches(imp.model, files[1:]))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None
    ) as cluster:
        spread = calibrate(
            imp.model,
            imp.sites,
            first,
            more=iter_batches(imp.model, files[1:]),
            dask=cluster.scheduler_address,
        )
        res = validate(example.model_path(), inputs=batches, dask=cluster.scheduler_address)
    assert res.in_fmts == validate(example.model_path(), inputs=batches).in_fmts
    assert spread.batches == serial.batches == 4
    for s in imp.sites:
        for got, want in (
            (spread.stats[s.name], serial.stats[s.name]),
            (spread.out_stats[s.name], serial.out_stats[s.name]),
        ):
            assert got.as_dict() == want.as_dict()
    # the cluster really saw the batches: without them the statistics differ
    alone = calibrate(imp.model, imp.sites, first)
    assert any(alone.stats[s.name].as_dict() != serial.stats[s.name].as_dict() for s in imp.sites)


def test_an_unreachable_dask_scheduler_is_named(batches: Path) -> None:
    pytest.importorskip("dask.distributed")
    from hwapprox.export.calibrate import iter_batches, prepare_inputs

    imp = import_model(example.model_path())
    files = batch_files(batches)
    assert files is not None
    with pytest.raises(ExportError, match=r"tcp://127\.0\.0\.1:1"):
        calibrate(
            imp.model,
            imp.sites,
            prepare_inputs(imp.model, files[0]),
            more=iter_batches(imp.model, files[1:]),
            dask="tcp://127.0.0.1:1",
        )
