"""A path given as a relay socket that is no socket is refused for that, first (issue 27).

Before, a regular file given with ``--socket`` (or ``RelayTransport(path=...)``) in a directory
that was not private was refused for its directory's mode, which sent the user chmod-ing a
directory when the path itself was wrong.
"""

from __future__ import annotations

import asyncio
import os
import socket
from pathlib import Path

import pytest

from pi_ask_sdk.cli import main
from pi_ask_sdk.cli.usage import EXIT_FAILED, EXIT_RUNTIME
from pi_ask_sdk.transports.relay import (
    RelayPathNotSocket,
    RelayTransport,
    UnsafeRelayPath,
    check_relay_socket,
)

from .fake_relay import FakeRelay

HINT = (
    "give the socket Pi's relay listens on (pi-<pid>.sock in the relay directory, or one "
    "forwarded there with ssh -L)"
)


def not_a_socket(tmp_path: Path, kind: str) -> Path:
    directory = tmp_path / "open"
    directory.mkdir()
    directory.chmod(0o755)  # not private either: the path's kind is what is told
    path = directory / "pi-1.sock"
    if kind == "regular file":
        path.write_text("")
    elif kind == "directory":
        path.mkdir()
    elif kind == "FIFO":
        os.mkfifo(path)
    else:
        target = directory / "real.sock"
        with socket.socket(socket.AF_UNIX) as server:
            server.bind(str(target))
        path.symlink_to(target)
    return path


@pytest.mark.parametrize("kind", ["regular file", "directory", "FIFO", "symbolic link"])
def test_a_path_that_is_no_socket_is_refused_for_its_kind_first(tmp_path: Path, kind: str) -> None:
    path = not_a_socket(tmp_path, kind)
    with pytest.raises(RelayPathNotSocket) as caught:
        check_relay_socket(path)
    assert isinstance(caught.value, UnsafeRelayPath)  # (what callers catch already)
    assert caught.value.kind == kind
    assert caught.value.path == path
    assert str(caught.value) == (
        f"Refusing relay path {path}: it is a {kind}, not a Unix socket; {HINT}."
    )


def test_the_commands_say_so_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = not_a_socket(tmp_path, "regular file")
    assert main(["answer", "--socket", str(path)]) == EXIT_RUNTIME
    err = capsys.readouterr().err
    assert err.startswith(f"pi-ask answer: Refusing relay path {path}: it is a regular file,")
    assert "mode" not in err
    assert main(["doctor", "--socket", str(path)]) == EXIT_FAILED
    out = capsys.readouterr().out
    assert out.startswith(f"[fail] relay pi-1.sock: Refusing relay path {path}: it is a regular")


@pytest.mark.asyncio
async def test_a_transport_given_a_file_is_refused_at_once(tmp_path: Path) -> None:
    path = not_a_socket(tmp_path, "regular file")
    transport = RelayTransport(path=path)
    with pytest.raises(RelayPathNotSocket):
        await asyncio.wait_for(transport.open(_Nobody()), 5)


@pytest.mark.asyncio
async def test_a_real_socket_in_an_open_directory_is_still_refused_for_the_mode(
    tmp_path: Path,
) -> None:
    relay = FakeRelay(tmp_path / "relays")
    await relay.start()
    try:
        relay.directory.chmod(0o755)
        with pytest.raises(UnsafeRelayPath, match=r"its mode is 755; .*chmod 700") as caught:
            check_relay_socket(relay.path)
        assert not isinstance(caught.value, RelayPathNotSocket)
    finally:
        relay.directory.chmod(0o700)
        await relay.stop()


class _Nobody:
    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        raise AssertionError("nothing can arrive")

    def ended(self, reason: str) -> None:
        raise AssertionError("nothing was opened")
