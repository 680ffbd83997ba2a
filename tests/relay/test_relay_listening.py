"""A live Pi's relay socket that is not there yet, or does not accept yet, is waited for (bounded
by ``LISTEN_WAIT``); a dead Pi's socket is ``NoRelayFound`` at once.

A Pi that has just started has no socket until its session starts; a socket that refuses
connections is either a dead Pi's or one whose relay does not listen yet (the gap between
``bind()`` and ``listen()``, which the real relay no longer shows: its socket's name appears only
once it accepts, tested against a real Pi in tests/integration/test_relay_lifecycle.py).
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pi_ask_sdk.transports.relay import LISTEN_WAIT, NoRelayFound, RelayTransport
from tests.integration.pi_process import make_private_dir

from .fake_relay import FakeRelay
from .test_relay_handshake import HELLO, WAIT, Recorder, hold, line

RETRYING = "does not accept yet: trying again"


class _Seen(logging.Handler):
    """Sets ``event`` when the relay transport logs that it tries a socket again."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.event = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if RETRYING in record.getMessage():
            self.event.set()


@contextmanager
def retries_seen() -> Iterator[asyncio.Event]:
    logger = logging.getLogger("pi_ask_sdk.relay")
    seen = _Seen()
    level = logger.level
    logger.setLevel(logging.DEBUG)
    logger.addHandler(seen)
    try:
        yield seen.event
    finally:
        logger.removeHandler(seen)
        logger.setLevel(level)


def bound_not_listening(path: Path) -> socket.socket:
    """A socket bound at ``path`` (0600) that does not listen: a connect is refused."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    path.chmod(0o600)
    return sock


def dead_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


@pytest.mark.asyncio
async def test_a_live_pis_socket_that_appears_late_is_waited_for(tmp_path: Path) -> None:
    relay = FakeRelay(tmp_path / "relays")
    relay.directory.mkdir(mode=0o700)
    transport = RelayTransport(relay.path)
    with retries_seen() as retried:
        opening = asyncio.ensure_future(transport.open(Recorder()))
        await asyncio.wait_for(retried.wait(), WAIT)  # it found no socket, and waits
        assert not opening.done()
        await relay.start()
        await asyncio.wait_for(opening, WAIT)
    try:
        assert transport.is_connected
        assert transport.connections == 1
    finally:
        await transport.close()
        await relay.stop()


@pytest.mark.asyncio
async def test_a_live_pis_socket_that_refuses_is_tried_until_it_listens(tmp_path: Path) -> None:
    path = make_private_dir(tmp_path / "relays") / f"pi-{os.getpid()}.sock"
    sock = bound_not_listening(path)  # the gap between bind() and listen()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line({**HELLO, "socket": str(path)}))
        await hold(reader)
        writer.close()

    transport = RelayTransport(path)
    with retries_seen() as retried:
        opening = asyncio.ensure_future(transport.open(Recorder()))
        await asyncio.wait_for(retried.wait(), WAIT)  # refused, and tried again
        assert not opening.done()
        server = await asyncio.start_unix_server(serve, sock=sock)  # listens now
        try:
            await asyncio.wait_for(opening, WAIT)
            assert transport.is_connected
            assert transport.hello is not None
            assert transport.hello.pid == os.getpid()
        finally:
            await transport.close()
            server.close()
            await asyncio.wait_for(server.wait_closed(), WAIT)


@pytest.mark.asyncio
async def test_a_live_pis_socket_that_never_accepts_is_no_relay_found_after_the_wait(
    tmp_path: Path,
) -> None:
    path = make_private_dir(tmp_path / "relays") / f"pi-{os.getpid()}.sock"
    with bound_not_listening(path):
        loop = asyncio.get_running_loop()
        began = loop.time()
        with pytest.raises(NoRelayFound) as raised:
            await asyncio.wait_for(RelayTransport(path).open(Recorder()), LISTEN_WAIT + WAIT)
        took = loop.time() - began
    assert took >= LISTEN_WAIT * 0.9
    assert f"Pi {os.getpid()} runs, but its relay does not listen" in str(raised.value)


@pytest.mark.asyncio
@pytest.mark.parametrize("missing", [False, True])
async def test_a_dead_pis_socket_is_no_relay_found_at_once(tmp_path: Path, missing: bool) -> None:
    pid = dead_pid()
    path = make_private_dir(tmp_path / "relays") / f"pi-{pid}.sock"
    sock = None if missing else bound_not_listening(path)  # what a killed Pi leaves behind
    try:
        with retries_seen() as retried:
            with pytest.raises(NoRelayFound) as raised:
                await asyncio.wait_for(RelayTransport(path).open(Recorder()), WAIT)
            assert not retried.is_set()  # never tried again
    finally:
        if sock is not None:
            sock.close()
    if not missing:
        assert "a stale socket: its Pi has exited" in str(raised.value)
    with pytest.raises(NoRelayFound, match=f"no process with pid {pid}"):
        await RelayTransport(pid=pid, directory=path.parent).open(Recorder())


@pytest.mark.asyncio
async def test_a_connection_cut_before_its_hello_while_pi_lives_is_tried_again(
    tmp_path: Path,
) -> None:
    """A relay replaced as a client connects (a second copy of it loaded: the first closes
    as the second listens) cuts the connection before its hello: while Pi lives, ``open``
    tries again (bounded by ``LISTEN_WAIT``), as a reconnect does, and reaches the new one."""
    relay = FakeRelay(tmp_path / "relays")
    relay.directory.mkdir(mode=0o700)
    cut = asyncio.Event()

    async def closes_at_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.close()  # the copy being replaced: no hello
        cut.set()

    old = await asyncio.start_unix_server(closes_at_once, path=str(relay.path))
    relay.path.chmod(0o600)
    transport = RelayTransport(relay.path)
    opening = asyncio.ensure_future(transport.open(Recorder()))
    try:
        await asyncio.wait_for(cut.wait(), WAIT)
        old.close()
        await old.wait_closed()
        relay.path.unlink(missing_ok=True)
        await relay.start()  # the copy that listens last
        await asyncio.wait_for(opening, WAIT)
        assert transport.is_connected
    finally:
        opening.cancel()
        await transport.close()
        await relay.stop()
