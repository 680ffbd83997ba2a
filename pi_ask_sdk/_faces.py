"""How a package's face presents what its private modules define: ``publish`` names the face as
the module of each public class and function it re-exports, ``lazy`` loads a name when it is
first used.

A class defined in ``pi_ask_sdk.testing.realpi._process`` and imported as
``pi_ask_sdk.testing.realpi.PiProcess`` should say so wherever Python prints its module: reprs,
tracebacks (an error's class is shown by ``__module__``), warnings and pickles. Each face calls
``publish`` once, below its imports, rather than each class setting ``__module__`` in its body.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from types import FunctionType

__all__ = ["lazy", "publish"]


def _is_private_under(module: str, face: str) -> bool:
    """Whether ``module`` is a private module inside ``face`` (``face._x`` or ``face.y._z``)."""
    if not module.startswith(face + "."):
        return False
    return any(part.startswith("_") for part in module[len(face) + 1 :].split("."))


def publish(face: str, names: Iterable[str], namespace: Mapping[str, object]) -> None:
    """Make ``face`` the ``__module__`` of each class and function among ``names`` (the face's
    ``__all__``) that a private module inside ``face`` defines. A name another face published
    first (its module is public already) keeps that module.

    Args:
        face: The importing module's ``__name__``.
        names: The names it exports.
        namespace: Where those names are bound (the face's ``globals()``).
    """
    for name in names:
        value = namespace.get(name)
        if isinstance(value, (type, FunctionType)) and _is_private_under(value.__module__, face):
            value.__module__ = face


def lazy(
    face: str, namespace: MutableMapping[str, object], table: Mapping[str, str]
) -> Callable[[str], object]:
    """A module ``__getattr__`` for ``face`` that imports a name from its module when first asked
    for, publishes it (the module if public, else ``face``) and keeps it in ``namespace``, so it
    is looked up once.

    Args:
        face: The importing module's ``__name__``.
        namespace: The face's ``globals()``.
        table: Each lazily loaded name and the module that defines it, relative to ``face``
            (``".relay"``, ``"._fleet"``).

    Returns:
        The function to bind as the face's ``__getattr__`` (under ``if not TYPE_CHECKING:``, so
        that a type checker still reports a name the face does not have). It raises
        ``AttributeError`` for any other name, as Python requires.
    """

    def __getattr__(name: str) -> object:
        relative = table.get(name)
        if relative is None:
            raise AttributeError(f"module {face!r} has no attribute {name!r}")
        module = importlib.import_module(relative, face)
        value = getattr(module, name)
        home = face if _is_private_under(module.__name__, face) else module.__name__
        publish(home, (name,), {name: value})
        namespace[name] = value
        return value

    return __getattr__
