"""A package's face names itself as the module of what it re-exports (``pi_ask_sdk._faces``), so
reprs, tracebacks and pickles show the import a user writes; ``lazy`` loads a name on first use."""

from __future__ import annotations

import importlib
import pickle
import pkgutil
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import FunctionType

import pytest

import pi_ask_core
import pi_ask_sdk
from pi_ask_sdk._faces import lazy, publish


def public_modules() -> list[str]:
    found: list[str] = []
    for package in (pi_ask_core, pi_ask_sdk):
        found.append(package.__name__)
        for info in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
            if not any(part.startswith("_") for part in info.name.split(".")):
                found.append(info.name)
    return found


@pytest.mark.parametrize("name", public_modules())
def test_every_exported_class_and_function_names_a_public_module_that_has_it(name: str) -> None:
    try:
        module = importlib.import_module(name)
        exports = {name: getattr(module, name) for name in getattr(module, "__all__", ())}
    except ModuleNotFoundError as missing:
        if (missing.name or "").split(".")[0] != "nats":
            raise
        pytest.skip("needs nats-py: tests/fleet/test_fleet_faces.py checks it in the fleet env")
    wrong = []
    for exported, value in exports.items():
        if not isinstance(value, (type, FunctionType)):
            continue
        home = value.__module__
        if not home.startswith(("pi_ask_core", "pi_ask_sdk")):
            continue  # (a re-exported standard or third-party name)
        private = any(part.startswith("_") for part in home.split("."))
        if private or getattr(importlib.import_module(home), value.__name__, None) is not value:
            wrong.append(f"{exported}: {home}")
    assert wrong == []


def test_a_published_class_pickles_and_prints_by_its_face() -> None:
    from pi_ask_sdk.testing.realpi import PiProcess
    from pi_ask_sdk.testing.standin import StandinServer

    assert PiProcess.__module__ == "pi_ask_sdk.testing.realpi"
    assert repr(StandinServer) == "<class 'pi_ask_sdk.testing.standin.StandinServer'>"
    assert pickle.loads(pickle.dumps(PiProcess)) is PiProcess


@pytest.fixture
def package(tmp_path: Path) -> Iterator[str]:
    """A package ``face_probe`` whose face re-exports from a private and a public module."""
    root = tmp_path / "face_probe"
    (root / "public").mkdir(parents=True)
    (root / "_impl.py").write_text(
        "class Thing:\n    pass\n\ndef helper() -> int:\n    return 1\n\nLIMIT = 3\n",
        encoding="utf-8",
    )
    (root / "public" / "__init__.py").write_text(
        "from ._deep import Deep\n__all__ = ['Deep']\n", encoding="utf-8"
    )
    (root / "public" / "_deep.py").write_text("class Deep:\n    pass\n", encoding="utf-8")
    (root / "__init__.py").write_text(
        textwrap.dedent(
            """
            from pi_ask_sdk._faces import lazy, publish
            from ._impl import LIMIT, Thing, helper
            __all__ = ["LIMIT", "Thing", "helper", "Deep", "Late"]
            publish(__name__, __all__, globals())
            __getattr__ = lazy(__name__, globals(), {"Deep": ".public", "Late": "._late"})
            """
        ),
        encoding="utf-8",
    )
    (root / "_late.py").write_text("class Late:\n    pass\n", encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        yield "face_probe"
    finally:
        sys.path.remove(str(tmp_path))
        for name in [name for name in sys.modules if name.split(".")[0] == "face_probe"]:
            del sys.modules[name]


def test_publish_names_the_face_for_what_its_private_modules_define(package: str) -> None:
    face = importlib.import_module(package)
    assert face.Thing.__module__ == package
    assert face.helper.__module__ == package
    assert face.LIMIT == 3  # (not a class or function: left as it is)


def test_lazy_loads_on_first_use_and_keeps_the_name(package: str) -> None:
    face = importlib.import_module(package)
    assert f"{package}._late" not in sys.modules
    late = face.Late
    assert f"{package}._late" in sys.modules
    assert late.__module__ == package  # a private module's name: the face's
    assert vars(face)["Late"] is late  # (asked once: the next lookup is a plain attribute)


def test_lazy_leaves_a_name_to_the_public_module_it_comes_from(package: str) -> None:
    face = importlib.import_module(package)
    assert face.Deep.__module__ == f"{package}.public"


def test_lazy_refuses_a_name_it_does_not_have(package: str) -> None:
    face = importlib.import_module(package)
    with pytest.raises(AttributeError, match="module 'face_probe' has no attribute 'Nope'"):
        _ = face.Nope
    assert not hasattr(face, "Nope")


def test_publish_keeps_a_module_another_face_published_first() -> None:
    kept = type("Kept", (), {"__module__": "pi_ask_sdk.other"})  # (public already)
    moved = type("Moved", (), {"__module__": "pi_ask_sdk.other._impl"})
    publish("pi_ask_sdk", ["Kept", "Moved"], {"Kept": kept, "Moved": moved})
    assert kept.__module__ == "pi_ask_sdk.other"
    assert moved.__module__ == "pi_ask_sdk"


def test_lazy_is_a_module_getattr() -> None:
    namespace: dict[str, object] = {}
    getattr_ = lazy("pi_ask_sdk.transports", namespace, {"RelayTransport": ".relay"})
    from pi_ask_sdk.transports.relay import RelayTransport

    assert getattr_("RelayTransport") is RelayTransport
    assert namespace == {"RelayTransport": RelayTransport}
