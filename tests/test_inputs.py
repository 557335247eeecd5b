"""Seeded input sets: distributions, quantisation, files and their errors."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from approx_ideal_specs import IdealLayerNorm, IdealSoftmax

from hwapprox.approx.base import SpecError
from hwapprox.approx.inputs import InputSet, load_array
from hwapprox.fixed import FixedFormat

FMT = FixedFormat.parse("ap_fixed<16,6>")


def test_same_seed_same_codes_other_seed_other_codes() -> None:
    spec = IdealSoftmax()
    for dist in ("uniform", "gaussian", "heavy"):
        a = InputSet(dist=dist, seed=3).generate(spec).raw
        b = InputSet(dist=dist, seed=3).generate(spec).raw
        c = InputSet(dist=dist, seed=4).generate(spec).raw
        assert np.array_equal(a, b)
        assert not np.array_equal(a, c)
        assert a.shape == (256, 64)
        assert a.dtype == np.int64


def test_codes_are_in_format_and_x_is_their_value() -> None:
    spec = IdealSoftmax(in_fmt="ap_fixed<8,3>")
    b = InputSet(dist="gaussian", sigma=3.0).generate(spec)
    fmt = spec.in_fmt
    assert b.raw.min() >= fmt.min_raw
    assert b.raw.max() <= fmt.max_raw
    assert np.array_equal(b.x, b.raw * 2.0**-5)


def test_out_of_range_samples_saturate_rather_than_wrap() -> None:
    # sigma 1000 on a format whose range is [-4, 4): nearly every sample is beyond;
    # clipping puts them at the two end codes, wrapping would spread them.
    spec = IdealSoftmax(in_fmt="ap_fixed<8,3>")
    raw = InputSet(dist="gaussian", sigma=1000.0).generate(spec).raw
    ends = np.isin(raw, [-128, 127])
    assert ends.mean() > 0.99


def test_uniform_covers_every_code_and_ranges() -> None:
    spec = IdealSoftmax(in_fmt="ap_fixed<6,2>")  # 64 codes, 256*64 samples
    raw = InputSet(dist="uniform").generate(spec).raw
    assert set(np.unique(raw)) == set(range(-32, 32))
    x = InputSet(dist="uniform", low=-1.0, high=0.5).generate(IdealSoftmax()).x
    assert x.min() >= -1.0
    assert x.max() <= 0.5


def test_gaussian_sigma() -> None:
    # Sample std of N = 256*64 normals: relative standard error 1/sqrt(2N) = 0.55 %;
    # 5 standard errors = 2.8 %, plus quantisation (LSB 2^-10, negligible).
    x = InputSet(dist="gaussian", sigma=2.0, mean=1.0).generate(IdealSoftmax()).x
    assert abs(x.std() / 2.0 - 1.0) < 5 / math.sqrt(2 * x.size)
    assert abs(x.mean() - 1.0) < 5 * 2.0 / math.sqrt(x.size)


def test_heavy_rows_have_their_spikes() -> None:
    # n = 256 -> 4 spikes per row at mean + sigma*U(4, 8) = [8, 16) for sigma 2
    s = InputSet(dist="heavy", n=256, rows=32, sigma=2.0)
    x = s.generate(IdealSoftmax()).x
    big = (x >= 8.0 - 2.0**-10).sum(axis=1)
    assert (big >= 4).all()
    x1 = InputSet(dist="heavy", n=256, rows=32, sigma=2.0, spikes=0).generate(IdealSoftmax()).x
    assert not np.array_equal(x, x1)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": 7}, r"^row length n=7 is outside \[8, 1024\]$"),
        ({"n": 1025}, r"^row length n=1025 is outside \[8, 1024\]$"),
        ({"dist": "cauchy"}, r"^unknown input distribution 'cauchy'; expected one of uniform"),
        ({"sigma": 0.0}, r"^sigma=0.0 must be a positive finite number$"),
        ({"dist": "uniform", "low": 1.0}, r"give both low= and high="),
        ({"dist": "file"}, r"needs path="),
        ({"affine": "learned"}, r"^affine='learned'; expected one of identity, random$"),
    ],
)
def test_bad_sets_are_refused(kwargs: dict, message: str) -> None:
    with pytest.raises(SpecError, match=message):
        InputSet(**kwargs)


def test_dict_round_trip_and_label() -> None:
    s = InputSet(dist="heavy", sigma=4.0, n=128, seed=7)
    assert InputSet.from_dict(s.to_dict()) == s
    assert s.label() == "heavy(rows=256,n=128,sigma=4,mean=0,df=3)"
    with pytest.raises(SpecError, match=r"^input set has no field\(s\) sgima"):
        InputSet.from_dict({"sgima": 2})


def test_layernorm_gamma_beta() -> None:
    spec = IdealLayerNorm()
    ident = InputSet(n=32, rows=4).generate(spec)
    assert ident.model_kw == {}
    assert ident.ref_kw == {}
    rnd = InputSet(n=32, rows=4, affine="random").generate(spec)
    g, b = rnd.model_kw["gamma"], rnd.model_kw["beta"]
    assert g.shape == (32,)
    assert b.shape == (32,)
    assert np.array_equal(rnd.ref_kw["gamma"], spec.gamma_fmt.to_float(g))
    assert np.array_equal(rnd.ref_kw["beta"], spec.beta_fmt.to_float(b))
    assert rnd.ref_kw["gamma"].min() >= 0.5 - 2.0**-12
    assert rnd.ref_kw["gamma"].max() <= 1.5
    again = InputSet(n=32, rows=4, affine="random").generate(spec)
    assert np.array_equal(again.model_kw["gamma"], g)


def test_user_files(tmp_path: Path) -> None:
    arr = np.linspace(-3, 3, 24).reshape(2, 12)
    np.save(tmp_path / "a.npy", arr)
    np.savez(tmp_path / "one.npz", logits=arr)
    np.savez(tmp_path / "two.npz", a=arr, b=arr)
    spec = IdealSoftmax()
    b = InputSet(dist="file", path=str(tmp_path / "a.npy")).generate(spec)
    assert np.array_equal(b.raw, spec.in_fmt.quantize(arr))
    assert np.array_equal(load_array(tmp_path / "one.npz"), arr)
    assert np.array_equal(load_array(tmp_path / "two.npz", "b"), arr)


def test_user_file_errors(tmp_path: Path) -> None:
    np.savez(tmp_path / "two.npz", a=np.ones(3), b=np.ones(3))
    np.save(tmp_path / "scalar.npy", np.float64(1.0))
    np.save(tmp_path / "nan.npy", np.array([1.0, np.nan]))
    np.save(tmp_path / "str.npy", np.array(["a"]))
    (tmp_path / "x.txt").write_text("1 2 3")
    cases = [
        (tmp_path / "missing.npy", None, r"does not exist \(give a \.npy or \.npz file\)$"),
        (tmp_path / "x.txt", None, r"must be \.npy or \.npz, got suffix '\.txt'$"),
        (tmp_path / "two.npz", None, r"holds 2 arrays \(a, b\); choose one with key=$"),
        (tmp_path / "two.npz", "c", r"has no array 'c'; arrays: a, b$"),
        (tmp_path / "scalar.npy", None, r"array of shape \(\) is empty or 0-d"),
        (tmp_path / "nan.npy", None, r"holds NaN or inf values$"),
        (tmp_path / "str.npy", None, r"array dtype <U1 is not real numbers$"),
        (tmp_path / "scalar.npy", "k", r"^key='k' applies to \.npz files only"),
    ]
    for path, key, msg in cases:
        with pytest.raises(SpecError, match=msg):
            load_array(path, key)


def test_numbers_are_canonical() -> None:
    # 2 and 2.0 are the same set (sweep keys must not depend on the spelling)
    assert InputSet(sigma=2, n=64.0) == InputSet(sigma=2.0, n=64)
    assert InputSet(sigma=2).to_dict() == InputSet(sigma=2.0).to_dict()
    with pytest.raises(SpecError, match=r"^n=6.5 must be an integer$"):
        InputSet(n=6.5)
    with pytest.raises(SpecError, match=r"^sigma='2' must be a number$"):
        InputSet(sigma="2")  # type: ignore[arg-type]
