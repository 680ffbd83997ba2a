"""One error tree: everything pi-ask raises is a ``PiAskError``, drawn in ``pi_ask_sdk.errors``."""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import pytest

import pi_ask_sdk
from pi_ask_core import PiAskError
from pi_ask_sdk import errors
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
    "pi_ask_sdk.realpi",
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


def test_the_tree_is_drawn_with_every_error_and_exported_from_pi_ask_sdk() -> None:
    tree = errors.__doc__ or ""
    for name, kind in exported_exceptions():
        assert re.search(rf"(── |^    ){kind.__name__}\b", tree, re.MULTILINE), name
        assert getattr(pi_ask_sdk, kind.__name__) is kind, name


def test_old_import_paths_still_work() -> None:
    from pi_ask_sdk import realpi
    from pi_ask_sdk.transports import relay

    assert realpi.PiFailed is pi_ask_sdk.PiFailed
    assert realpi.PiNotInstalled is pi_ask_sdk.PiNotInstalled
    assert relay.UnsafeRelayPath is pi_ask_sdk.UnsafeRelayPath
    assert issubclass(realpi.PiFailed, RuntimeError)  # as before the move


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
