"""Bit-exactness of :mod:`hwapprox.fixed` against the real ``ap_fixed``.

The oracle is ``tests/cxx/fixed_oracle.cpp`` compiled with g++ against the
``ap_types`` headers bundled with hls4ml (no vendor tools). The formats under
test are its template parameters, listed in a data-only include generated
here into the build cache; the binary is built once per content (cached
across sessions by :func:`hwapprox._cxx.compile_cxx`) and run once per
session on one binary job file.

Coverage: every rounding x overflow mode pair, signed and unsigned, widths
1..32 (1 and 2 for every pair, the rest rotated over the mode pairs) plus one
of 33..62 per pair, integer bits negative / zero / inside / equal to / beyond
the width; >= 100,000 doubles per mode pair including every exact half-LSB
tie of formats up to 10 bits (near zero, near the range ends and at 300
random codes for wider ones), the doubles adjacent to those ties, ±2**I,
huge, tiny, subnormal and signed-zero inputs. Casts between formats
(narrowing, widening, signed <-> unsigned, all destination modes),
add/sub/mul (raw codes and result type) and shifts are compared the same way.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from hwapprox._cxx import cache_dir, compile_cxx, hls4ml_include_dirs
from hwapprox.fixed import FixedFormat, Overflow, Rounding, add, mul, shl, shr, sub

ORACLE_SRC = Path(__file__).parent / "cxx" / "fixed_oracle.cpp"
# -O0: 433 instantiations; measured g++ CPU 61 s at -O0 vs 94 s at -O1, while the
# oracle run itself takes 7 s vs 0.6 s CPU (same output bytes)
ORACLE_FLAGS = ("-O0", "-pipe", "-std=c++17", "-DNDEBUG")

MODE_PAIRS = [(q, o) for q in Rounding for o in Overflow]
VALUES_PER_QUANT_FORMAT = 8_500  # 12 formats per mode pair -> 102,000 values
VALUES_PER_CAST = 34_000  # 3 casts per destination mode pair -> >= 100,000 codes
VALUES_PER_BINOP = 20_000
WIDE_WIDTHS = (33, 40, 48, 53, 62)

Shape = tuple[int, int, bool]  # (W, I, signed)

# Cast shapes (src, dst); the destination modes come from the mode pair.
NARROWING: list[tuple[Shape, Shape]] = [
    ((16, 5, True), (8, 3, True)),
    ((16, 5, True), (8, 3, False)),
    ((14, 2, False), (6, 1, True)),
    ((12, 12, True), (6, 4, True)),
    ((10, -3, True), (5, -5, False)),
    ((16, 8, True), (4, -2, True)),  # every source bit below the new LSB
    ((9, 9, False), (3, -4, True)),
    ((16, 0, False), (1, 0, False)),
    ((16, 4, True), (1, 1, True)),
    ((40, 20, True), (12, 6, True)),
    ((62, 31, True), (32, 16, False)),
    ((24, 10, False), (16, 10, True)),
    ((13, 1, True), (2, 2, True)),
]
WIDENING: list[tuple[Shape, Shape]] = [
    ((8, 4, True), (20, 12, True)),
    ((8, 4, True), (20, 12, False)),
    ((6, 2, False), (12, 3, True)),
    ((5, -2, True), (9, 9, True)),
    ((7, 3, True), (7, 3, False)),
    ((8, 3, True), (8, 3, True)),
    ((4, 4, False), (16, 20, True)),
    ((12, 6, True), (48, 30, True)),
    ((3, 1, True), (62, 40, True)),
    ((16, 8, False), (16, 12, False)),
    ((10, 2, True), (14, 2, True)),
    ((6, 6, True), (6, -6, True)),  # exact left shift that always overflows
    ((12, 6, False), (13, 7, True)),
]
BINOP_SHAPES: list[tuple[Shape, Shape]] = [
    ((8, 3, True), (8, 3, True)),
    ((8, 3, True), (6, -2, False)),
    ((5, 5, False), (7, 2, True)),
    ((12, 0, False), (10, 4, False)),
    ((16, 6, True), (16, 6, True)),
    ((1, 1, True), (1, 0, False)),
    ((10, 12, True), (4, -3, True)),
    ((20, 8, False), (20, -4, True)),
    ((30, 15, True), (31, 1, True)),
    ((31, 31, False), (30, 0, False)),
    ((24, 3, True), (9, 9, False)),
    ((3, -5, False), (13, 20, True)),
]
OPS = {2: ("+", add), 3: ("-", sub), 4: ("*", mul)}
# x << n and x >> n keep the type; its modes do not apply (no __SC_COMPATIBLE__).
SHIFT_FORMATS = [
    FixedFormat(8, 3, True),
    FixedFormat(8, 3, True, Rounding.RND, Overflow.SAT),
    FixedFormat(12, 0, False, Rounding.RND_CONV, Overflow.SAT_SYM),
    FixedFormat(1, 1, True, Rounding.TRN, Overflow.SAT),
    FixedFormat(5, -2, True, Rounding.RND_INF, Overflow.SAT_ZERO),
    FixedFormat(40, 10, True),
    FixedFormat(62, 30, False, Rounding.RND, Overflow.SAT),
]
SHIFT_OPS = {5: ("<<", shl), 6: (">>", shr)}


def _fmt(shape: Shape, q: Rounding = Rounding.TRN, o: Overflow = Overflow.WRAP) -> FixedFormat:
    return FixedFormat(shape[0], shape[1], shape[2], q, o)


def quant_formats(m: int) -> list[FixedFormat]:
    """Formats tested for mode pair number ``m``: 6 signed + 6 unsigned.

    Widths 1, 2, three of 3..33 rotating with ``m`` (so every width 2..32 meets
    several mode pairs) and one of 33..62; integer bits cycle through
    negative, zero, inside, equal to and beyond the width.
    """
    q, o = MODE_PAIRS[m]
    out = []
    for s, signed in enumerate((True, False)):
        slot = 2 * m + s
        widths = [1, 2, *(3 + (3 * slot + k) % 31 for k in range(3)), WIDE_WIDTHS[slot % 5]]
        for k, w in enumerate(widths):
            cat = (k + slot) % 5
            if cat == 0:  # negative: the binary point left of the word
                i = -1 - (m + w) % 4
            elif cat == 1:
                i = 0
            elif cat == 2:  # inside
                i = max(1, min(w - 1, (w * (1 + m % 3)) // 4))
            elif cat == 3:
                i = w
            else:  # beyond: the binary point right of the word
                i = w + 1 + m % 5
            out.append(FixedFormat(w, i, signed, q, o))
    return out


def cast_pairs(m: int) -> list[tuple[FixedFormat, FixedFormat]]:
    """(src, dst) formats tested for destination mode pair number ``m``."""
    q, o = MODE_PAIRS[m]
    every = NARROWING + WIDENING
    picks = [
        NARROWING[m % len(NARROWING)],
        WIDENING[m % len(WIDENING)],
        every[(5 * m + 3) % len(every)],
    ]
    return [(_fmt(src), _fmt(dst, q, o)) for src, dst in picks]


def _rng(*key: object) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(key).encode()))


def quant_inputs(fmt: FixedFormat, n: int) -> np.ndarray:
    """Seeded doubles for ``fmt``: ties, their neighbours, edges, extremes, random."""
    rng = _rng("quant", str(fmt))
    f, i = fmt.frac_bits, fmt.int_bits
    lo, hi = fmt.min_raw, fmt.max_raw
    if fmt.width <= 10:  # every code and every tie of the format, and a few beyond
        ks = np.arange(lo - 3, hi + 4).astype(np.float64)
    else:  # near zero, near both ends, 300 random codes
        ks = np.concatenate(
            [
                np.arange(-6, 7),
                lo + np.arange(-3, 4),
                hi + np.arange(-3, 4),
                rng.integers(lo - 4, hi + 5, size=300, endpoint=False),
            ]
        ).astype(np.float64)
    grid = np.ldexp(ks, -f)
    ties = np.ldexp(2.0 * ks + 1.0, -f - 1)  # exact (k + 1/2) LSB where representable
    bounds = np.array([2.0**i, 2.0 ** (i - 1), 2.0 ** (i - 2)])
    bounds = np.concatenate([bounds, -bounds])
    tiny = np.finfo(np.float64).smallest_normal
    big = np.finfo(np.float64).max
    sub = np.nextafter(tiny, 0.0)  # largest subnormal
    specials = np.array(
        [
            *(0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 1e30, -1e30, 1e-30, -1e-30, 1e300, -1e300),
            *(5e-324, -5e-324, 1e-320, -1e-320, tiny, -tiny, sub, -sub, big, -big),
        ]
    )
    quarter = np.ldexp(np.array([0.25, -0.25, 0.75, -0.75]), -f)
    anchors = np.concatenate([grid, ties, bounds])
    near = np.concatenate([anchors, np.nextafter(anchors, np.inf), np.nextafter(anchors, -np.inf)])
    fixed_part = np.concatenate([near, specials, quarter])
    n_rand = n - fixed_part.size
    if n_rand < 0:
        raise AssertionError(f"n={n} too small for the fixed inputs of {fmt}")
    span = 2.0 ** (i + 1)
    k_rand = rng.integers(lo - 8, hi + 9, size=n_rand // 4, endpoint=False).astype(np.float64)
    mags = np.ldexp(1.0, rng.integers(-f - 12, i + 12, size=n_rand // 4)) * rng.uniform(
        1.0, 2.0, size=n_rand // 4
    )
    signs = rng.choice([-1.0, 1.0], size=n_rand // 4)
    rest = n_rand - 3 * (n_rand // 4)
    random_part = np.concatenate(
        [
            np.ldexp(2.0 * k_rand + 1.0, -f - 1),  # random ties
            signs * mags,  # log-uniform magnitudes around the format
            rng.uniform(-span, span, size=n_rand // 4),
            np.ldexp(rng.uniform(-1.0, 1.0, size=rest), rng.integers(-1074, 1000, size=rest)),
        ]
    )
    x = np.concatenate([fixed_part, random_part])
    if x.size != n or not np.isfinite(x).all():
        raise AssertionError(f"input generator broke for {fmt}")
    return x


def _edge_codes(fmt: FixedFormat) -> np.ndarray:
    lo, hi = fmt.min_raw, fmt.max_raw
    e = np.array([lo, lo + 1, lo + 2, -2, -1, 0, 1, 2, hi - 2, hi - 1, hi, hi // 2, lo // 2])
    return np.clip(e, lo, hi).astype(np.int64)


def random_codes(fmt: FixedFormat, n: int, *key: object) -> np.ndarray:
    """All codes of ``fmt`` when it has at most 2**16, else edges + seeded random codes."""
    if fmt.width <= 16:
        return fmt.all_codes()
    rng = _rng("codes", str(fmt), *key)
    edges = _edge_codes(fmt)
    rand = rng.integers(fmt.min_raw, fmt.max_raw, size=n - edges.size, endpoint=True)
    return np.concatenate([edges, rand.astype(np.int64)])


def binop_inputs(fa: FixedFormat, fb: FixedFormat, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = _rng("binop", str(fa), str(fb))
    ea, eb = _edge_codes(fa), _edge_codes(fb)
    ga, gb = np.meshgrid(ea, eb)
    m = n - ga.size
    a = rng.integers(fa.min_raw, fa.max_raw, size=m, endpoint=True)
    b = rng.integers(fb.min_raw, fb.max_raw, size=m, endpoint=True)
    return np.concatenate([ga.ravel(), a]), np.concatenate([gb.ravel(), b])


def _cxx_bool(b: bool) -> str:
    return "true" if b else "false"


def formats_include() -> str:
    """The data-only include listing every instantiation (order = dispatch index)."""
    lines = ["// Generated by tests/test_fixed_oracle.py: formats under test (data only)."]
    for m in range(len(MODE_PAIRS)):
        for f in quant_formats(m):
            lines.append(
                f"FX_QUANT({f.width}, {f.int_bits}, {_cxx_bool(f.signed)}, "
                f"{f.rounding.value}, {f.overflow.value})"
            )
    for m in range(len(MODE_PAIRS)):
        for s, d in cast_pairs(m):
            lines.append(
                f"FX_CAST({s.width}, {s.int_bits}, {_cxx_bool(s.signed)}, {d.width}, "
                f"{d.int_bits}, {_cxx_bool(d.signed)}, {d.rounding.value}, {d.overflow.value})"
            )
    for sa, sb in BINOP_SHAPES:
        lines.append(
            f"FX_BINOP({sa[0]}, {sa[1]}, {_cxx_bool(sa[2])}, {sb[0]}, {sb[1]}, {_cxx_bool(sb[2])})"
        )
    for f in SHIFT_FORMATS:
        lines.append(
            f"FX_SHIFT({f.width}, {f.int_bits}, {_cxx_bool(f.signed)}, "
            f"{f.rounding.value}, {f.overflow.value})"
        )
    return "\n".join(lines) + "\n"


def build_oracle() -> Path:
    """Write the include into the cache (content-addressed) and compile the oracle once."""
    text = formats_include()
    inc_dir = cache_dir() / "fixed_oracle" / hashlib.sha256(text.encode()).hexdigest()[:16]
    inc_dir.mkdir(parents=True, exist_ok=True)
    inc = inc_dir / "fixed_oracle_formats.inc"
    if not inc.exists() or inc.read_text() != text:
        tmp = inc_dir / f"fixed_oracle_formats.inc.{os.getpid()}"
        tmp.write_text(text)
        tmp.replace(inc)
    return compile_cxx(
        ORACLE_SRC,
        name="fixed_oracle",
        include_dirs=[inc_dir, *hls4ml_include_dirs()],
        flags=ORACLE_FLAGS,
    )


def _head(op: int, idx: int, n: int) -> bytes:
    return np.array([op, idx], dtype="<i4").tobytes() + np.array([n], dtype="<i8").tobytes()


@dataclass
class OracleRun:
    """Inputs and the oracle's outputs, per tested item."""

    quant: dict[int, list[tuple[FixedFormat, np.ndarray, np.ndarray]]]
    cast: dict[int, list[tuple[FixedFormat, FixedFormat, np.ndarray, np.ndarray]]]
    binop: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, tuple[int, int, bool], np.ndarray]]
    shift: dict[tuple[int, int], tuple[np.ndarray, np.ndarray, np.ndarray]]


def run_oracle(exe: Path, workdir: Path) -> OracleRun:
    """Write every job into one file, run the oracle once, split its output."""
    jobs: list[bytes] = []
    plan: list[tuple[str, object, int]] = []
    qi = ci = 0
    for m in range(len(MODE_PAIRS)):
        for f in quant_formats(m):
            x = quant_inputs(f, VALUES_PER_QUANT_FORMAT)
            jobs += [_head(0, qi, x.size), x.astype("<f8").tobytes()]
            plan.append(("quant", (m, f, x), x.size))
            qi += 1
    for m in range(len(MODE_PAIRS)):
        for s, d in cast_pairs(m):
            codes = random_codes(s, VALUES_PER_CAST, m)
            jobs += [_head(1, ci, codes.size), codes.astype("<i8").tobytes()]
            plan.append(("cast", (m, s, d, codes), codes.size))
            ci += 1
    for bi, (sa, sb) in enumerate(BINOP_SHAPES):
        a, b = binop_inputs(_fmt(sa), _fmt(sb), VALUES_PER_BINOP)
        for op in OPS:
            jobs += [_head(op, bi, a.size), a.astype("<i8").tobytes(), b.astype("<i8").tobytes()]
            plan.append(("binop", (bi, op, a, b), a.size))
    for si, f in enumerate(SHIFT_FORMATS):
        codes = random_codes(f, 2_000, "shift")
        amounts = np.arange(min(f.width + 4, 63) + 1)  # every amount, past the width
        x, n = (g.ravel() for g in np.meshgrid(codes, amounts))
        for op in SHIFT_OPS:
            jobs += [_head(op, si, x.size), x.astype("<i8").tobytes(), n.astype("<i8").tobytes()]
            plan.append(("shift", (si, op, x, n), x.size))
    job_file, out_file = workdir / "jobs.bin", workdir / "out.bin"
    job_file.write_bytes(b"".join(jobs))
    proc = subprocess.run(
        [str(exe), str(job_file), str(out_file)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        raise AssertionError(f"fixed_oracle failed ({proc.returncode}): {proc.stderr}")
    buf = out_file.read_bytes()
    run = OracleRun({}, {}, {}, {})
    pos = 0
    for kind, item, n in plan:
        rtype = None
        if kind == "binop":
            w, iw, sg, _ = np.frombuffer(buf, dtype="<i4", count=4, offset=pos).tolist()
            rtype = (w, iw, bool(sg))
            pos += 16
        res = np.frombuffer(buf, dtype="<i8", count=n, offset=pos).astype(np.int64)
        pos += 8 * n
        if kind == "quant":
            m, f, x = item
            run.quant.setdefault(m, []).append((f, x, res))
        elif kind == "cast":
            m, s, d, codes = item
            run.cast.setdefault(m, []).append((s, d, codes, res))
        elif kind == "binop":
            bi, op, a, b = item
            run.binop[(bi, op)] = (a, b, rtype, res)
        else:
            si, op, x, sh = item
            run.shift[(si, op)] = (x, sh, res)
    if pos != len(buf):
        raise AssertionError(f"oracle output has {len(buf)} bytes, expected {pos}")
    return run


@pytest.fixture(scope="session")
def oracle(tmp_path_factory: pytest.TempPathFactory) -> OracleRun:
    exe = build_oracle()
    return run_oracle(exe, tmp_path_factory.mktemp("fixed_oracle"))


def _mismatch_report(what: str, inputs: np.ndarray, want: np.ndarray, got: np.ndarray) -> str:
    bad = np.flatnonzero(want != got)
    rows = [f"  in={inputs[k]!r} ap_fixed={want[k]} core={got[k]}" for k in bad[:8]]
    return f"{what}: {bad.size}/{want.size} codes differ\n" + "\n".join(rows)


def _ids(pairs: list[tuple[Rounding, Overflow]]) -> list[str]:
    return [f"{q.value}-{o.value}" for q, o in pairs]


def test_oracle_matches_hand_computed_values(oracle: OracleRun) -> None:
    """The oracle itself is sane: ap_fixed<8,3,AP_RND,AP_SAT> codes worked out by hand."""
    m = MODE_PAIRS.index((Rounding.RND, Overflow.SAT))
    fmt, x, want = next(t for t in oracle.quant[m] if t[0].signed and t[0].width == 1)
    # ap_fixed<1,I,AP_RND,AP_SAT>: codes -1, 0; LSB 2**(I-1). 0 -> 0, +-huge -> 0 / -1.
    lsb = 2.0 ** (fmt.int_bits - 1)
    for value, code in [(0.0, 0), (1e30, 0), (-1e30, -1), (-lsb, -1), (-0.5 * lsb, 0)]:
        hits = want[x == value]
        assert hits.size > 0, (fmt, value)
        assert (hits == code).all(), (fmt, value, hits)
    assert len(oracle.quant[m]) == 12
    assert sum(t[1].size for t in oracle.quant[m]) >= 100_000


@pytest.mark.parametrize("m", range(len(MODE_PAIRS)), ids=_ids(MODE_PAIRS))
def test_quantize_matches_ap_fixed(oracle: OracleRun, m: int) -> None:
    failures = []
    for fmt, x, want in oracle.quant[m]:
        got = fmt.quantize(x)
        if not np.array_equal(got, want):
            failures.append(_mismatch_report(f"quantize {fmt}", x, want, got))
        # quantize picks its path from the array's extremes: redo the moderate values
        # alone (|x| < 2**(I+8)) so the int64 wrap path is compared as well.
        mod = np.abs(x) < 2.0 ** (fmt.int_bits + 8)
        got = fmt.quantize(x[mod])
        if not np.array_equal(got, want[mod]):
            failures.append(_mismatch_report(f"quantize {fmt} (moderate)", x[mod], want[mod], got))
    assert not failures, "\n".join(failures)


@pytest.mark.parametrize("m", range(len(MODE_PAIRS)), ids=_ids(MODE_PAIRS))
def test_cast_matches_ap_fixed(oracle: OracleRun, m: int) -> None:
    failures = []
    for src, dst, codes, want in oracle.cast[m]:
        got = dst.cast(codes, src)
        if not np.array_equal(got, want):
            failures.append(_mismatch_report(f"cast {src} -> {dst}", codes, want, got))
    assert not failures, "\n".join(failures)
    for src, _, codes, _ in oracle.cast[m]:  # every source code, or >= VALUES_PER_CAST
        assert codes.size == (1 << src.width) or codes.size >= VALUES_PER_CAST


@pytest.mark.parametrize("op", list(OPS), ids=[OPS[k][0] for k in OPS])
@pytest.mark.parametrize("bi", range(len(BINOP_SHAPES)), ids=[f"{a}{b}" for a, b in BINOP_SHAPES])
def test_binop_matches_ap_fixed(oracle: OracleRun, bi: int, op: int) -> None:
    sa, sb = BINOP_SHAPES[bi]
    fa, fb = _fmt(sa), _fmt(sb)
    a, b, (width, iwidth, signed), want = oracle.binop[(bi, op)]
    got, fr = OPS[op][1](a, fa, b, fb)
    assert (fr.width, fr.int_bits, fr.signed) == (width, iwidth, signed)
    assert np.array_equal(got, want), _mismatch_report(
        f"{fa} {OPS[op][0]} {fb}", np.stack([a, b], axis=1), want, got
    )


@pytest.mark.parametrize("op", list(SHIFT_OPS), ids=[SHIFT_OPS[k][0] for k in SHIFT_OPS])
@pytest.mark.parametrize("si", range(len(SHIFT_FORMATS)), ids=[str(f) for f in SHIFT_FORMATS])
def test_shift_matches_ap_fixed(oracle: OracleRun, si: int, op: int) -> None:
    fmt = SHIFT_FORMATS[si]
    x, n, want = oracle.shift[(si, op)]
    got = np.empty_like(want)
    for amount in np.unique(n):
        sel = n == amount
        got[sel] = SHIFT_OPS[op][1](x[sel], fmt, int(amount))
    assert np.array_equal(got, want), _mismatch_report(
        f"{fmt} {SHIFT_OPS[op][0]} n", np.stack([x, n], axis=1), want, got
    )
