"""The package layering of docs/ARCHITECTURE.md: no import cycle between subpackages,
``hls`` never imports ``rtl_sim``, ``approx`` imports only the fixed-point core."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import import_graph


def test_no_cycles_and_the_layering_holds() -> None:
    edges = import_graph.package_edges()
    assert import_graph.cycles(edges) == []
    assert "hwapprox.rtl_sim" not in edges.get("hwapprox.hls", set())
    assert edges.get("hwapprox.approx", set()) <= {"hwapprox.fixed"}
    assert edges.get("hwapprox.fixed", set()) == set()


def test_a_cycle_is_found() -> None:
    """The check can fail: a back edge makes a cycle."""
    edges = {"a": {"b"}, "b": {"c"}, "c": set()}
    assert import_graph.cycles(edges) == []
    edges["c"].add("a")
    assert import_graph.cycles(edges) == ["a", "b", "c"]
