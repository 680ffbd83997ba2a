"""Every public class and function of the API reference's modules has a docstring, and so does
every public method and property a class defines: the reference (docs/api/, `tox -e docs`) is
built from them, and a name without one would show as a bare signature.

The fleet's modules need nats-py to resolve their names: tests/fleet/test_docstrings_fleet.py
checks them where it is installed (`tox -e fleet`)."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import inspect
import itertools
import re
import sys
import typing
from pathlib import Path
from types import ModuleType

import pytest
from typing_extensions import is_typeddict

ROOT = Path(__file__).resolve().parents[1]


NEEDS_NATS = ("pi_ask_sdk.fleet", "pi_ask_sdk.testing.fleet")
"""The documented modules whose names load nats-py (the ``nats`` extra)."""


def documented_modules() -> list[str]:
    """The modules the API pages document (``::: module`` lines; a ``::: module.Name`` line
    documents a name its module exports, whose docstring that module's check covers)."""
    found: list[str] = []
    for page in sorted((ROOT / "docs" / "api").rglob("*.md")):
        found += re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), flags=re.M)
    return [target for target in found if importlib.util.find_spec(target) is not None]


def alias_docstrings(module: ModuleType) -> set[str]:
    """The module-level names of ``module``'s source assigned with a string right after them
    (how a type alias is documented: griffe reads it, the running alias has no ``__doc__``)."""
    source = inspect.getsource(module)
    body = ast.parse(source).body
    found: set[str] = set()
    for node, following in itertools.pairwise(body):
        targets = (
            [node.target]
            if isinstance(node, ast.AnnAssign)
            else node.targets
            if isinstance(node, ast.Assign)
            else []
        )
        documented = (
            isinstance(following, ast.Expr)
            and isinstance(following.value, ast.Constant)
            and isinstance(following.value.value, str)
            and following.value.value.strip() != ""
        )
        if documented:
            found.update(target.id for target in targets if isinstance(target, ast.Name))
    return found


def homes(module_name: str, name: str, obj: object) -> list[ModuleType]:
    """The loaded modules of ``module_name``'s top package that hold ``obj`` as ``name``."""
    top = module_name.split(".")[0]
    return [
        module
        for key, module in sorted(sys.modules.items())
        if (key == top or key.startswith(top + ".")) and vars(module).get(name) is obj
    ]


def undocumented(module_name: str) -> list[str]:
    """The public names of ``module_name`` (and their public methods) with no docstring."""
    module = importlib.import_module(module_name)
    missing: list[str] = []
    for name in module.__all__:
        obj = getattr(module, name)
        if typing.get_origin(obj) is not None:
            # A generic alias (``Callable[...]``, ``Literal[...]``) is documented in the source
            # of the module that defines it (some Pythons call ``Callable[...]`` a class, but
            # what it names is not its own).
            if not any(name in alias_docstrings(home) for home in homes(module_name, name, obj)):
                missing.append(name)
        elif inspect.isfunction(obj):
            if not (obj.__doc__ or "").strip():
                missing.append(name)
        elif inspect.isclass(obj) and not is_typeddict(obj):
            if not (obj.__dict__.get("__doc__") or "").strip():
                missing.append(name)
            for attribute, value in vars(obj).items():
                if attribute.startswith("_"):
                    continue
                function = value.fget if isinstance(value, property) else value
                if isinstance(function, (classmethod, staticmethod)):
                    function = function.__func__
                if inspect.isfunction(function) and not (function.__doc__ or "").strip():
                    missing.append(f"{name}.{attribute}")
    return missing


@pytest.mark.parametrize(
    "module_name", [name for name in documented_modules() if name not in NEEDS_NATS]
)
def test_public_names_have_docstrings(module_name: str) -> None:
    assert undocumented(module_name) == []


def test_the_modules_left_to_the_fleet_env_are_documented_ones() -> None:
    assert set(NEEDS_NATS) <= set(documented_modules())
