"""One error tree: everything pi-ask raises is a ``PiAskError``; ``pi_ask_sdk.errors`` draws the
library's generic branch, each layer's ``errors`` module its own (the relay's:
``pi_ask_sdk.transports.relay.errors``, the fleet's: ``pi_ask_sdk.fleet.errors``) and
``pi_ask_sdk.testing.errors`` the test tooling's."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path
from types import ModuleType

import pytest

import pi_ask_sdk
from pi_ask_core import PiAskError
from pi_ask_sdk import errors
from pi_ask_sdk.testing import errors as tooling_errors
from pi_ask_sdk.transports.relay import (
    NoRelayFound,
    RelayPathMissing,
    UnsafeRelayPath,
    check_relay_dir,
    check_relay_socket,
    discover_relays,
)

PUBLIC_MODULES = (
    "pi_ask_core",
    "pi_ask_sdk",
    "pi_ask_sdk.errors",
    "pi_ask_sdk.testing",
    "pi_ask_sdk.transports",
    "pi_ask_sdk.transports.relay",
    "pi_ask_sdk.transports.relay.errors",
    # (the fleet's errors import without nats-py: the rest of its package loads lazily)
    "pi_ask_sdk.fleet.errors",
    "pi_ask_sdk.testing.errors",
    "pi_ask_sdk.testing.realpi",
    "pi_ask_sdk.testing.standin",
)


def exported_exceptions() -> list[tuple[str, type[BaseException]]]:
    found = []
    for module_name in PUBLIC_MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            value = getattr(module, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                found.append((f"{module_name}.{name}", value))
    return found


def test_every_exported_exception_is_a_pi_ask_error() -> None:
    found = exported_exceptions()
    assert len(found) > 20
    strays = [name for name, kind in found if not issubclass(kind, PiAskError)]
    assert strays == []


def home(kind: type[BaseException]) -> ModuleType:
    """The errors module that draws and exports ``kind``: the one defining it (a layer's
    ``errors``), or ``pi_ask_sdk.errors`` for the core's, which it re-exports."""
    if kind.__module__.split(".")[0] == "pi_ask_core":
        return errors
    return importlib.import_module(kind.__module__)


def test_the_tree_is_drawn_with_every_error() -> None:
    for name, kind in exported_exceptions():
        tree = home(kind).__doc__ or ""
        assert re.search(rf"(── |^    ){kind.__name__}\b", tree, re.MULTILINE), name


def test_each_layer_exports_its_own_errors() -> None:
    for name, kind in exported_exceptions():
        module = home(kind)
        assert module.__name__.endswith("errors"), name  # an errors module of its own layer
        assert kind.__name__ in module.__all__, name
        if issubclass(kind, tooling_errors.ToolingError):
            assert errors.BridgeError not in kind.__mro__, name
            assert kind.__name__ not in pi_ask_sdk.__all__, name
            assert module is tooling_errors, name
        else:
            assert kind.__name__ not in tooling_errors.__all__, name


def test_the_central_module_holds_no_relay_error() -> None:
    from pi_ask_sdk.transports.relay import errors as relay_errors

    assert set(errors.__all__).isdisjoint(relay_errors.__all__)
    assert "pi_ask_sdk.transports.relay.errors" in (errors.__doc__ or "")  # its one line


def test_the_root_exports_only_library_errors() -> None:
    for name in pi_ask_sdk.__all__:
        value = getattr(pi_ask_sdk, name)
        if isinstance(value, type) and issubclass(value, BaseException):
            assert getattr(errors, name) is value, name


def test_the_tooling_errors_keep_their_codes_and_builtin_bases() -> None:
    assert issubclass(tooling_errors.PiFailed, RuntimeError)  # as before the move
    assert issubclass(tooling_errors.PiNotInstalled, RuntimeError)
    assert issubclass(tooling_errors.StandinPathTooLong, ValueError)
    assert issubclass(tooling_errors.TransportCheckFailed, AssertionError)
    assert tooling_errors.PiFailed("x").code == "pi_failed"


@pytest.mark.parametrize("name", sorted(tooling_errors.__all__))
def test_a_tooling_error_lives_in_the_tooling_alone(name: str) -> None:
    assert not hasattr(pi_ask_sdk, name)
    assert not hasattr(errors, name)


def test_an_unknown_root_name_is_an_attribute_error_without_a_warning() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(AttributeError, match="no attribute 'Nope'"):
            getattr(pi_ask_sdk, "Nope")  # noqa: B009


def test_a_missing_relay_path_is_typed_and_still_a_file_not_found(tmp_path: Path) -> None:
    with pytest.raises(RelayPathMissing) as caught:
        check_relay_socket(tmp_path / "pi-1.sock")
    assert isinstance(caught.value, NoRelayFound)
    assert isinstance(caught.value, FileNotFoundError)
    assert caught.value.path == tmp_path / "pi-1.sock"
    assert isinstance(caught.value.__cause__, FileNotFoundError)
    assert discover_relays(tmp_path / "none") == []


def test_no_raw_os_error_escapes_the_relay_checks(tmp_path: Path) -> None:
    a_file = tmp_path / "file"
    a_file.write_text("")
    with pytest.raises(UnsafeRelayPath) as caught:
        check_relay_dir(a_file / "pi-ask")  # under a file: ENOTDIR
    assert isinstance(caught.value.__cause__, NotADirectoryError)
    with pytest.raises(UnsafeRelayPath):
        discover_relays(a_file / "pi-ask")
