"""Old import paths that still work for one release, with a ``DeprecationWarning``.

The shim modules (``pi_ask_sdk.standin``, ``pi_ask_sdk.realpi``, ``pi_ask_sdk.pytest_plugin``)
call ``warn_moved_module`` once, when first imported; the ``__getattr__`` of the root and of
``pi_ask_sdk.errors`` call ``moved_attribute`` for a name that left them (each module's
``_MOVED`` table says where it went). All of it goes in ``REMOVED_IN`` (CHANGELOG.md says so).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Mapping
from types import FrameType

__all__ = ["from_import_probe", "moved_attribute", "warn_moved_module"]

REMOVED_IN = "0.3.0"


def warn_moved_module(old: str, new: str) -> None:
    """Warn that module ``old`` is now ``new`` (called by the shim ``old`` on its import)."""
    warnings.warn(
        f"{old} is deprecated: import {new} instead ({old} is removed in {REMOVED_IN}).",
        DeprecationWarning,
        # the line that imported the shim (warnings skips the import system's own frames)
        stacklevel=3,
    )


def from_import_probe(caller: FrameType | None) -> bool:
    """Whether ``caller`` (the frame that asked a package's ``__getattr__``) is the import
    system checking, for ``from package import name``, whether ``name`` is a submodule to
    import: the statement itself gets the name right after, and warns then (once, at its line)."""
    return (
        caller is not None
        and caller.f_code.co_name == "_handle_fromlist"
        and "importlib" in caller.f_code.co_filename
    )


def moved_attribute(package: str, name: str, moved: Mapping[str, str]) -> object:
    """``package.name`` for a ``name`` that moved to module ``moved[name]``: warn, return it.
    Raises ``AttributeError`` for a name that is not in ``moved`` (as a module's ``__getattr__``
    must)."""
    module = moved.get(name)
    if module is None:
        raise AttributeError(f"module {package!r} has no attribute {name!r}")
    if from_import_probe(sys._getframe(2)):  # (2: past the module's __getattr__)
        return getattr(importlib.import_module(module), name)
    warnings.warn(
        f"{package}.{name} is deprecated: import it from {module} "
        f"(it leaves {package} in {REMOVED_IN}).",
        DeprecationWarning,
        stacklevel=3,
    )
    return getattr(importlib.import_module(module), name)
