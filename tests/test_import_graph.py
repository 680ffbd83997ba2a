"""The packages' modules import each other without a cycle: each can be read after the modules
it names, never half-initialised by (nor, for a type checker, defined in terms of) a module that
imports it back.

Every import counts: at module level, under ``if TYPE_CHECKING:``, and inside functions (a lazy
import hides a cycle, it does not remove it). A package and its own submodules are not a cycle:
importing ``p.m`` runs ``p`` first, and ``p`` re-exports ``p.m``'s names by design.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("pi_ask_core", "pi_ask_sdk")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def imported(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Our modules that module ``name`` imports, anywhere in it."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                parent = ".".join(base + ([node.module] if node.module else []))
            else:
                parent = node.module or ""
            targets = [parent] + [f"{parent}.{alias.name}" for alias in node.names]
        for target in targets:
            # ``import a.b.c`` runs a, a.b and a.b.c: each counts.
            parts = target.split(".")
            for n in range(1, len(parts) + 1):
                candidate = ".".join(parts[:n])
                if candidate in known and candidate != name:
                    out.add(candidate)
    return out


def graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def is_parent_edge(a: str, b: str) -> bool:
    """A package and its own submodule: importing ``p.m`` runs ``p`` first and ``p`` may
    re-export from ``p.m``; Python handles that order by design, so it is not a cycle here."""
    return b.startswith(a + ".") or a.startswith(b + ".")


def test_the_import_graph_has_no_cycle() -> None:
    edges = {a: {b for b in bs if not is_parent_edge(a, b)} for a, bs in graph().items()}
    assert cycles(edges) == []


def test_the_check_finds_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []
