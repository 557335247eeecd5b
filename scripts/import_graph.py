"""Import graph of the hwapprox subpackages (static, from the AST): edges and cycles.

Usage: ``.venv/bin/python scripts/import_graph.py`` -- prints the package-level
edges, any cycle between subpackages, and whether ``hls`` imports ``rtl_sim``;
exit status 1 on a cycle. (tests/test_architecture.py runs it.)
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "hwapprox"


def module_name(f: Path) -> str:
    parts = list(f.relative_to(ROOT.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_imports() -> dict[str, set[str]]:
    """Module -> the hwapprox modules it imports (anywhere in it, lazy imports too;
    ``from pkg import mod`` counts as importing ``pkg.mod``)."""
    mods = {module_name(f): f for f in ROOT.rglob("*.py")}
    out: dict[str, set[str]] = {}
    for m, f in mods.items():
        got = out.setdefault(m, set())
        for node in ast.walk(ast.parse(f.read_text())):
            names: list[str] = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
            got.update(n for n in names if n.startswith("hwapprox.") and n in mods)
    return out


def package_edges() -> dict[str, set[str]]:
    """Subpackage (``hwapprox.x``) -> the subpackages its modules import."""
    edges: dict[str, set[str]] = {}
    for m, names in module_imports().items():
        for n in names:
            a, b = ".".join(m.split(".")[:2]), ".".join(n.split(".")[:2])
            if a != b and b != "hwapprox":
                edges.setdefault(a, set()).add(b)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[str]:
    def reach(a: str) -> set[str]:
        seen: set[str] = set()
        stack = [a]
        while stack:
            for y in edges.get(stack.pop(), ()):
                if y not in seen:
                    seen.add(y)
                    stack.append(y)
        return seen

    return sorted(a for a in edges if a in reach(a))


def main() -> int:
    edges = package_edges()
    for a in sorted(edges):
        print(f"{a} -> {', '.join(sorted(edges[a]))}")
    cyc = cycles(edges)
    print(f"cycles: {cyc or 'none'}")
    print(f"hls imports rtl_sim: {'hwapprox.rtl_sim' in edges.get('hwapprox.hls', set())}")
    return 1 if cyc else 0


if __name__ == "__main__":
    sys.exit(main())
