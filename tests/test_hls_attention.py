"""C simulation of hwapprox/attention.h, bit-exact with AttentionRowSpec.model.

Two specs (default base-2 exp + Newton reciprocal with a 1/8 scale; a narrow one
with LUT exp, LUT reciprocal and a truncating accumulator), arrays and streams,
rows with random masks, fully masked rows and one live key, in one harness build.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from test_attention import SPECS

from hwapprox.hls.attention import attention_instances
from hwapprox.hls.csim import build_harness, run_harness

pytestmark = pytest.mark.hls

HARNESS = Path(__file__).parent / "cxx" / "hls_attention_harness.cpp"
#: (spec, n_keys, dim, dim_v)
CASES = {"default_scaled": (48, 8, 5), "narrow": (33, 6, 4), "softmax_1": (20, 8, 3)}
IO = ("arrays", "stream")


@pytest.fixture(scope="module")
def exe():
    insts = [
        i for j, c in enumerate(CASES) for i in attention_instances(f"att{j}", SPECS[c], *CASES[c])
    ]
    rows = [
        (str(j + k * len(CASES)), "run_rows_stream" if io == "stream" else "run_rows", f"att{j}")
        for k, io in enumerate(IO)
        for j in range(len(CASES))
    ]
    return build_harness(HARNESS, insts, rows, name="hls_attention")


def _inputs(case: str, rows: int, seed: int):
    sp = SPECS[case]
    n, d, dv = CASES[case]
    rng = np.random.default_rng(seed)
    q = sp.q_fmt.quantize(rng.normal(0, 2, (rows, d)))
    k = sp.k_fmt.quantize(rng.normal(0, 2, (rows, n, d)))
    v = sp.v_fmt.quantize(rng.normal(0, 1.5, (rows, n, dv)))
    k[0] = sp.k_fmt.max_raw  # saturating scores, extreme V
    v[0] = sp.v_fmt.min_raw
    mask = rng.random((rows, n)) < 0.25
    mask[1] = True  # fully masked
    mask[2] = True
    mask[2, n // 2] = False  # one live key
    mask[3] = False
    return sp, q, k, v, mask


def csim(exe, case: str, io: str, q, k, v, mask) -> np.ndarray:
    j = list(CASES).index(case) + IO.index(io) * len(CASES)
    per = [
        np.concatenate([q[r], k[r].ravel(), v[r].ravel(), mask[r].astype(np.int64)])
        for r in range(len(q))
    ]
    (got,) = run_harness(exe, [[j, len(q), *np.concatenate(per)]], [SPECS[case].out_fmt])
    return got.reshape(len(q), -1)


@pytest.mark.parametrize("io", IO)
@pytest.mark.parametrize("case", sorted(CASES))
def test_attention_row_csim_bit_exact(exe, case, io):
    sp, q, k, v, mask = _inputs(case, 40, 11)
    got = csim(exe, case, io, q, k, v, mask)
    want = sp.model(q, k, v, mask)
    bad = np.argwhere(got != want)
    assert bad.size == 0, f"{len(bad)} of {want.size} differ, first at {tuple(bad[0])}"
    assert not want[1].any()
    assert len(np.unique(want)) > 40


def test_csim_check_can_fail(exe):
    """The comparison can fail: the same C-sim against the model without the mask."""
    sp, q, k, v, mask = _inputs("default_scaled", 12, 3)
    got = csim(exe, "default_scaled", "arrays", q, k, v, mask)
    assert np.array_equal(got, sp.model(q, k, v, mask))
    assert not np.array_equal(got, sp.model(q, k, v))


@pytest.mark.slow
def test_corpus_block_with_fused_attention_csim(tmp_path):
    """``attention="fused"`` (``hwapprox hls --attention fused``) on a real export with
    padding masks: every block takes the fused schedule, the accumulator is sized for
    the sequence, and hls4ml's C simulation is bit-exact with the Python model."""
    import json

    from hwapprox.hls.project import compile_project, convert, csim_check, prepare_model

    corpus = Path(__file__).parent / "corpus"
    entry = next(
        e
        for e in json.loads((corpus / "manifest.json").read_text())["models"]
        if e["file"] == "bert_ts14.onnx"
    )
    prep = prepare_model(
        corpus / entry["file"], {"hls": {"attention": "fused"}}, inputs=corpus / entry["inputs"]
    )
    assert all(b.attention == "fused" for b in prep.blocks)
    assert {a.s.decode() for n in prep.model.graph.node for a in n.attribute
            if a.name == "attention"} == {"fused"}  # fmt: skip
    b0 = prep.blocks[0]
    assert b0.attention_row().max_keys() >= b0.seq
    hm = convert(prep, tmp_path / "prj")
    compile_project(hm, write=False)
    rep = csim_check(hm, prep, np.asarray(prep.samples), compile=False, key_mask=prep.key_mask)
    assert rep.bit_exact, rep
    assert prep.accuracy()["token_cosine_min"] > 0.9999
    with pytest.raises(Exception, match=r"attention schedule 'flash'"):
        prepare_model(corpus / entry["file"], None, attention="flash", calibrate=False)
