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


# --- the two wings -------------------------------------------------------------------------------

TOOLING = ("pi_ask_sdk.testing", "pi_ask_sdk.cli")
"""The tooling's wings: the test tooling and the ``pi-ask`` command (each with its modules)."""

FACES = "pi_ask_sdk._faces"
"""The one helper of every package face of ``pi_ask_sdk``, in either wing: it sets
``__module__`` on what a face re-exports (``publish``) and loads names lazily (``lazy``)."""


def in_package(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == package or name.startswith(package + ".") for package in packages)


def is_library(name: str) -> bool:
    """Everything in ``pi_ask_sdk`` outside the tooling's wings."""
    return in_package(name, ("pi_ask_sdk",)) and not in_package(name, TOOLING)


def dynamic_imports(path: Path) -> set[str]:
    """Modules named by ``importlib.import_module("...")`` / ``__import__("...")`` calls."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if called in ("import_module", "__import__") and isinstance(first, ast.Constant):
                found.add(str(first.value))
    return found


def test_the_library_never_imports_the_tooling() -> None:
    """The library (``pi_ask_sdk`` outside ``testing/`` and ``cli/``) imports neither wing: not at
    module level, not under ``TYPE_CHECKING``, not inside a function, not by
    ``importlib.import_module`` with a literal name."""
    known = modules()
    edges = graph()
    strays = sorted(
        f"{module} -> {target}"
        for module, targets in edges.items()
        if is_library(module)
        for target in targets | dynamic_imports(known[module])
        if in_package(target, TOOLING)
    )
    assert strays == []


def test_the_wing_check_sees_every_kind_of_import(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from typing import TYPE_CHECKING\n"
        "import importlib\n"
        "if TYPE_CHECKING:\n"
        "    from pi_ask_sdk.testing import FakeHost\n"
        "def f():\n"
        "    from .cli import main\n"
        "    return importlib.import_module('pi_ask_sdk.testing.realpi')\n",
        encoding="utf-8",
    )
    known = {"pi_ask_sdk.m": source, "pi_ask_sdk.testing": source, "pi_ask_sdk.cli": source}
    known |= {"pi_ask_sdk.testing.realpi": source}
    found = imported("pi_ask_sdk.m", source, known) | dynamic_imports(source)
    assert {name for name in found if in_package(name, TOOLING)} == {
        "pi_ask_sdk.testing",
        "pi_ask_sdk.cli",
        "pi_ask_sdk.testing.realpi",
    }
    assert is_library("pi_ask_sdk.client")
    assert is_library("pi_ask_sdk.transports.relay")
    assert not is_library("pi_ask_sdk.testing.standin")
    assert not is_library("pi_ask_sdk.testing.realpi")
    assert not is_library("pi_ask_core.host")


# --- private names -------------------------------------------------------------------------------


def is_private(part: str) -> bool:
    return part.startswith("_") and not part.startswith("__")


def private_imports(name: str, path: Path, known: dict[str, Path]) -> list[str]:
    """The private names that module ``name`` imports against the rule of
    ``test_no_module_imports_a_private_name_of_another``."""
    is_package = path.name == "__init__.py"
    own_package = name if is_package else name.rpartition(".")[0]
    wing = wing_of(name)
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        targets: list[tuple[str, str]] = []  # (module, name imported from it or "")
        if isinstance(node, ast.Import):
            targets = [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".") if is_package else name.split(".")[:-1]
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            targets = [(source, alias.name) for alias in node.names]
        for source, imported_name in targets:
            if imported_name and f"{source}.{imported_name}" in known:
                source, imported_name = f"{source}.{imported_name}", ""  # a submodule
            if source == FACES and is_package and in_package(name, ("pi_ask_sdk",)):
                continue
            # A private module is its package's (and the package's subpackages'), in one wing.
            parts = source.split(".")
            for depth, part in enumerate(parts):
                if is_private(part):
                    holder = ".".join(parts[:depth])
                    if not in_package(own_package, (holder,)) or wing_of(source) != wing:
                        found.append(f"{name}: {source}")
                    break
            # A private name (not a submodule) is private to the module that defines it, or,
            # in a subpackage (``pi_ask_sdk.fleet``), to that subpackage: one unit.
            if imported_name and is_private(imported_name):
                unit = source.rpartition(".")[0]
                if unit.count(".") < 1 or not in_package(own_package, (unit,)):
                    found.append(f"{name}: {source}.{imported_name}")
    return found


MODULES = modules()


def wing_of(name: str) -> str:
    for wing in TOOLING:
        if in_package(name, (wing,)):
            return wing
    return name.split(".")[0]


def test_no_module_imports_a_private_name_of_another() -> None:
    """No module of ``pi_ask_core`` or ``pi_ask_sdk`` imports another module's private name.

    The rule, for every import statement anywhere in a module (top level, ``TYPE_CHECKING``,
    inside functions):

    * a private name (one ``_`` then not another: ``_x``, not ``__all__``) defined in a module
      is that module's alone: ``from m import _x`` is refused in every other module, except in
      a subpackage (``pi_ask_sdk.fleet``, ``pi_ask_sdk.transports.relay``), which is one unit:
      its modules may share private names, never with a module outside it;
    * a private module ``p._m`` (or anything under it) belongs to its package ``p``: it may be
      imported by ``p``'s ``__init__`` and by the modules and subpackages of ``p``, and only
      within one wing (the library, ``pi_ask_sdk.testing``, ``pi_ask_sdk.cli``; ``pi_ask_core``
      is its own): so ``pi_ask_sdk.client`` may use ``pi_ask_sdk._pending`` and
      ``pi_ask_sdk.transports.relay`` its ``_wire``, but ``pi_ask_sdk.cli`` may not use
      ``pi_ask_sdk.transports.relay._discovery`` nor ``pi_ask_sdk.testing`` ``pi_ask_sdk._json``:
      the tooling uses the library's public API, as a user would.

    Names inside a private module need no underscore (the module already says "private"). The
    one exception: every package face of ``pi_ask_sdk``, in either wing, may use the faces'
    helper ``pi_ask_sdk._faces``.
    """
    found = [
        line for name, path in MODULES.items() for line in private_imports(name, path, MODULES)
    ]
    assert found == []


def test_the_private_name_check_finds_each_kind(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "from pi_ask_core.answers import _is_object\n"  # a private name of another module
        "from pi_ask_sdk._pending import SubmitBook\n"  # a private module of the library
        "from ._prompts import ask\n"  # its own package's private module
        "from . import _prompts\n"  # the same, named as a submodule
        "from pi_ask_sdk import _pending\n",  # the library's private module, named so
        encoding="utf-8",
    )
    known = {**MODULES, "pi_ask_sdk.cli._prompts": source}
    found = private_imports("pi_ask_sdk.cli.m", source, known)
    assert found == [
        "pi_ask_sdk.cli.m: pi_ask_core.answers._is_object",
        "pi_ask_sdk.cli.m: pi_ask_sdk._pending",  # the tooling uses the library's public API
        "pi_ask_sdk.cli.m: pi_ask_sdk._pending",
    ]
    # A subpackage is one unit: its modules share private names, nobody outside it does.
    shared = tmp_path / "shared.py"
    shared.write_text("from pi_ask_sdk.fleet._link import _Publish\n", encoding="utf-8")
    assert private_imports("pi_ask_sdk.fleet._forwarder", shared, known) == []
    assert private_imports("pi_ask_sdk.cli.m", shared, known) == [
        "pi_ask_sdk.cli.m: pi_ask_sdk.fleet._link",
        "pi_ask_sdk.cli.m: pi_ask_sdk.fleet._link._Publish",
    ]
    # In the library, its own private module is fine; another module's private name is not.
    assert private_imports("pi_ask_sdk.m", source, known) == [
        "pi_ask_sdk.m: pi_ask_core.answers._is_object",
        "pi_ask_sdk.m: pi_ask_sdk._prompts",  # (no such module: a private name of pi_ask_sdk)
    ]


# --- no writing into another object's __dict__ ---------------------------------------------------


def foreign_writes(path: Path) -> list[str]:
    """Where a module reaches into an object other than ``self``/``cls``: its ``__dict__`` or
    ``vars()``, ``setattr``/``object.__setattr__`` on it, or a dunder assigned on it (say
    ``SomeClass.__module__ = ...``)."""
    mine = ("self", "cls")
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        where = f"{path.name}:{getattr(node, 'lineno', 0)}"
        if isinstance(node, ast.Attribute) and node.attr == "__dict__":
            if not (isinstance(node.value, ast.Name) and node.value.id in mine):
                found.append(f"{where}: {ast.unparse(node)}")
        elif isinstance(node, ast.Call):
            called = ast.unparse(node.func)
            target = node.args[0] if node.args else None
            owned = isinstance(target, ast.Name) and target.id in mine
            writes = called in ("vars", "setattr", "object.__setattr__", "type.__setattr__")
            if writes and not owned:
                found.append(f"{where}: {called}(...)")
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr.startswith("__")
                    and not (isinstance(target.value, ast.Name) and target.value.id in mine)
                ):
                    found.append(f"{where}: {ast.unparse(target)} =")
    return sorted(found)


def test_no_module_writes_into_another_objects_dict() -> None:
    """A class keeps its own state: no module reads or writes another object's ``__dict__``
    (a view's cache is made by the view's own method), calls ``setattr`` or
    ``object.__setattr__`` on an object other than ``self``/``cls``, or sets a dunder on a class
    from outside it, except ``pi_ask_sdk._faces``, which names a face as the ``__module__`` of
    what it re-exports."""
    found = [
        line for name, path in MODULES.items() if name != FACES for line in foreign_writes(path)
    ]
    assert found == []
    assert foreign_writes(MODULES[FACES]) != []  # (the exception is still needed)


def hand_set_modules(path: Path) -> list[str]:
    """Where a class body sets its own ``__module__``."""
    return sorted(
        f"{path.name}:{statement.lineno}"
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef)
        for statement in node.body
        if isinstance(statement, (ast.Assign, ast.AnnAssign))
        for target in (
            statement.targets if isinstance(statement, ast.Assign) else [statement.target]
        )
        if isinstance(target, ast.Name) and target.id == "__module__"
    )


STILL_HAND_SET: tuple[str, ...] = ()
"""Modules not yet moved to ``publish`` (being rewritten elsewhere); this tuple only shrinks."""


def test_no_class_sets_its_own_module() -> None:
    """A face publishes what it re-exports (``pi_ask_sdk._faces.publish`` or ``lazy``): no class
    body says ``__module__ = ...``."""
    found = [
        line
        for name, path in MODULES.items()
        if not in_package(name, STILL_HAND_SET)
        for line in hand_set_modules(path)
    ]
    assert found == []


def test_the_hand_set_module_check_finds_one(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text("class A:\n    x = 1\n    __module__ = 'p'\n", encoding="utf-8")
    assert hand_set_modules(source) == ["m.py:3"]


def test_the_foreign_write_check_finds_each_kind(tmp_path: Path) -> None:
    source = tmp_path / "m.py"
    source.write_text(
        "def f(view, cls):\n"
        "    view.__dict__['k'] = 1\n"
        "    object.__setattr__(view, 'x', 1)\n"
        "    Thing.__module__ = 'p'\n"
        "    cls.__dict__.get('k')\n"  # a classmethod's own class: fine
        "class Thing:\n"
        "    __module__ = 'p'\n",  # in its own body: fine
        encoding="utf-8",
    )
    assert foreign_writes(source) == [
        "m.py:2: view.__dict__",
        "m.py:3: object.__setattr__(...)",
        "m.py:4: Thing.__module__ =",
    ]


# --- the client above the transports -------------------------------------------------------------


def test_no_transport_nor_fleet_module_imports_the_client() -> None:
    """The client sits above its transports: nothing under ``pi_ask_sdk.transports`` or
    ``pi_ask_sdk.fleet`` imports ``pi_ask_sdk.client`` (nor the supervisor above it, nor the
    sync facade); serving many Pis with clients is ``pi_ask_sdk.serving``'s job."""
    above = ("pi_ask_sdk.client", "pi_ask_sdk.sync", "pi_ask_sdk.serving", "pi_ask_sdk.every_pi")
    edges = graph()
    found = sorted(
        f"{name} imports {target}"
        for name, targets in edges.items()
        if in_package(name, ("pi_ask_sdk.transports", "pi_ask_sdk.fleet"))
        for target in targets
        if in_package(target, above)
    )
    assert found == []
