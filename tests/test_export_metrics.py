"""End-to-end output metrics (hwapprox.export.metrics): the whole-array figures of
samples of one shape against the per-sample loop, on the same values."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

from hwapprox.export import metrics as M

KINDS = ["classifier", "token_logits", "embedding", "tensor"]


def _pair(shape: tuple[int, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape) * rng.uniform(0.1, 100)
    b = a + rng.normal(0, 1e-3, shape)
    b[0] = 0  # a zero sample against a non-zero one (cosine 0)
    a[1] = b[1] = 0  # two zero samples (cosine 1)
    return a, b


@pytest.mark.parametrize(
    ("shape", "kind", "keep"),
    list(itertools.product([(16, 4), (6, 12, 33), (5, 7, 3, 4)], KINDS, [False, True])),
)
def test_stacked_figures_equal_the_per_sample_loop(
    shape: tuple[int, ...], kind: str, keep: bool
) -> None:
    """Every figure (as JSON, so floats compare bit for bit) of the stacked path equals
    the loop's, with and without a token mask keeping every token; a one-element change
    in one sample moves them."""
    a, b = _pair(shape, len(shape) * 10 + KINDS.index(kind))
    info = M.OutputInfo("o", kind, "")
    k = np.ones(shape[:2], bool) if keep else None
    sa, tok = M._samples(a, 0, k)
    sb, _ = M._samples(b, 0, k)
    loop = M._one_loop(sa, sb, info, tok)
    stacked = M._one_stacked(np.stack(sa), np.stack(sb), info, tok)
    assert json.dumps(stacked) == json.dumps(loop)
    assert json.dumps(M._one(a, b, info, 0, k)) == json.dumps(loop)
    b2 = b.copy()
    b2[3].flat[0] += 0.5
    sb2, _ = M._samples(b2, 0, k)
    assert json.dumps(M._one_stacked(np.stack(sa), np.stack(sb2), info, tok)) != json.dumps(loop)


def test_ragged_samples_take_the_loop() -> None:
    """A token mask keeping different counts per sample gives samples of several shapes:
    the per-sample loop's figures."""
    a, b = _pair((4, 6, 5), 1)
    keep = np.ones((4, 6), bool)
    keep[2, 3:] = False
    info = M.OutputInfo("o", "embedding", "")
    sa, tok = M._samples(a, 0, keep)
    sb, _ = M._samples(b, 0, keep)
    assert len({x.shape for x in sa}) == 2
    assert json.dumps(M._one(a, b, info, 0, keep)) == json.dumps(M._one_loop(sa, sb, info, tok))
