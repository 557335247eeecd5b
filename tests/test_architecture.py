"""The package layering of docs/ARCHITECTURE.md: no import cycle between subpackages,
each package imports only the ones below it (``fixed`` <- ``approx`` <- ``export`` <-
``hls``; ``approx`` <- ``rtl_sim``; ``boards`` and the g++ cache import nothing of ours),
``hls`` and ``rtl_sim`` never import each other, ``hls`` reads ``export`` only through
``export.handoff``, and the face -- the command line (``cli``), the rendering
(``report``) and the main job (``demo``) -- sits on top: no library package imports it."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import import_graph
import pytest

#: docs/ARCHITECTURE.md "Allowed imports": what each library package may import
ALLOWED = {
    "hwapprox.fixed": set(),
    "hwapprox._cache": set(),
    "hwapprox._cxx": {"hwapprox._cache"},
    "hwapprox.boards": set(),
    "hwapprox.approx": {"hwapprox.fixed", "hwapprox._cache"},
    "hwapprox.export": {"hwapprox.approx", "hwapprox.fixed", "hwapprox._cache"},
    "hwapprox.hls": {
        "hwapprox.approx", "hwapprox.fixed", "hwapprox.export", "hwapprox._cxx",
        "hwapprox.boards",
    },
    "hwapprox.rtl_sim": {"hwapprox.approx", "hwapprox.fixed", "hwapprox._cxx"},
}  # fmt: skip
#: the face: the command line, the rendering and the main job may import the library
#: (and the rendering nothing of the face but itself); nothing in ALLOWED imports them
FACE = {
    "hwapprox.cli": None,
    "hwapprox.__main__": None,
    "hwapprox.demo": None,
    "hwapprox.report": {"hwapprox.approx", "hwapprox.fixed", "hwapprox.export"},
}
TOP = set(FACE)
#: the one export module hls imports (export's handoff to the HLS flow)
HANDOFF = "hwapprox.export.handoff"


def test_no_cycles_and_the_layering_holds() -> None:
    edges = import_graph.package_edges()
    assert import_graph.cycles(edges) == []
    assert set(edges) <= set(ALLOWED) | TOP, "a new package: give it a row in ALLOWED"
    for pkg, allowed in ALLOWED.items():
        assert edges.get(pkg, set()) <= allowed, (pkg, edges.get(pkg, set()) - allowed)
    for pkg, deps in edges.items():
        if pkg not in TOP:
            assert not deps & TOP, (pkg, deps & TOP)
    for pkg, allowed in FACE.items():
        if allowed is not None:
            assert edges.get(pkg, set()) <= allowed, (pkg, edges.get(pkg, set()) - allowed)
    # siblings: hls and rtl_sim never import each other
    assert "hwapprox.rtl_sim" not in edges.get("hwapprox.hls", set())
    assert "hwapprox.hls" not in edges.get("hwapprox.rtl_sim", set())


@pytest.mark.parametrize("pkg", ["approx", "export", "hls", "rtl_sim", "cli", "report"])
def test_no_import_cycle_between_the_modules_of_a_package(pkg: str) -> None:
    """Module level: inside each package the imports (lazy ones included) form no
    circle (export's calibrate -> emulate -> fused -> calibrate was one: statistics now
    live in export.stats, the fused site's emulation beside the others in emulate)."""
    p = f"hwapprox.{pkg}"
    edges = {
        m: {n for n in names if n.startswith(p + ".")}
        for m, names in import_graph.module_imports().items()
        if m.startswith(p + ".")
    }
    assert len(edges) > 1
    assert import_graph.cycles(edges) == []


def test_hls_reads_export_only_through_its_handoff() -> None:
    imports = import_graph.module_imports()
    bad = {
        m: sorted(n for n in names if n.startswith("hwapprox.export") and n != HANDOFF)
        for m, names in imports.items()
        if m.startswith("hwapprox.hls")
    }
    assert {m: v for m, v in bad.items() if v} == {}
    assert any(HANDOFF in names for m, names in imports.items() if m.startswith("hwapprox.hls"))


def test_a_cycle_is_found() -> None:
    """The check can fail: a back edge makes a cycle."""
    edges = {"a": {"b"}, "b": {"c"}, "c": set()}
    assert import_graph.cycles(edges) == []
    edges["c"].add("a")
    assert import_graph.cycles(edges) == ["a", "b", "c"]


#: where each piece of the block flow is defined (docs/ARCHITECTURE.md: reading ONNX in
#: export, the composite block model in approx, hls and rtl_sim consuming it)
DEFINED_IN = {
    "EncoderBlock": "hwapprox/approx/block.py",
    "BlockFormats": "hwapprox/approx/block.py",
    "match_blocks": "hwapprox/export/blockmatch.py",
    "fold_blocks": "hwapprox/export/blockmatch.py",
    "calibrate_blocks": "hwapprox/export/blockcal.py",
    "block_instances": "hwapprox/hls/block.py",
    "block_config": "hwapprox/rtl_sim/block.py",
}


def _definitions(root: Path) -> dict[str, list[str]]:
    import ast

    out: dict[str, list[str]] = {}
    for path in sorted((root / "hwapprox").rglob("*.py")):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.ClassDef | ast.FunctionDef):
                out.setdefault(node.name, []).append(str(path.relative_to(root)))
    return out


def test_each_piece_of_the_block_flow_is_defined_on_its_layer() -> None:
    defs = _definitions(Path(__file__).resolve().parents[1])
    for name, where in DEFINED_IN.items():
        assert defs.get(name) == [where], (name, defs.get(name))
    # the check can fail: a definition on the wrong layer is seen
    assert DEFINED_IN["EncoderBlock"] not in defs.get("block_instances", [])
