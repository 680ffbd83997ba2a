"""Liveness: the transport answers the relay's pings in its reader, whatever the bridge's own
code is doing, and a connection the relay dropped for silence is reported as a lost one.

A relay that pings announces ``"ping": 1`` (with ``pingMs``, ``pingTimeoutMs``) in its hello;
the client hello then says ``"pong": 1`` and every ``{"type":"ping"}`` gets ``{"type":"pong"}``.
The relay's side (pinging, dropping) is tested against a real Pi in
tests/integration/test_liveness.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

import pytest

from pi_ask_sdk import (
    BridgeClient,
    SessionEnded,
    SubmitLost,
    SubmitNotSent,
    SyncBridgeClient,
)
from pi_ask_sdk.transports.relay import PING, RelayTransport
from tests.integration.pi_process import choose, make_private_dir

from .test_relay_handshake import HELLO, STARTED, WAIT, Recorder, event, fake_relay, hold, line

PINGING = {**HELLO, "clientHello": 1, "ping": 1, "pingMs": 5000, "pingTimeoutMs": 15000}
PING_LINE = line({"type": "ping"})
PONG = {"type": "pong"}


async def greet(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, hello: dict[str, object]
) -> dict[str, object]:
    """Say ``hello``, read the client's, welcome it; returns the client's hello."""
    writer.write(line(hello))
    said = json.loads(await asyncio.wait_for(reader.readline(), WAIT))
    assert isinstance(said, dict)
    writer.write(line({"type": "welcome", "version": 1, "role": said["role"]}))
    return said


async def read_json(reader: asyncio.StreamReader) -> object:
    return json.loads(await asyncio.wait_for(reader.readline(), WAIT))


@pytest.mark.asyncio
@pytest.mark.parametrize("role", ["answerer", "observer"])
async def test_the_client_hello_says_pong_when_the_relay_pings(tmp_path: Path, role: str) -> None:
    said: asyncio.Queue[object] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await said.put(await greet(reader, writer, PINGING))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        transport = RelayTransport(path, role="observer" if role == "observer" else "answerer")
        await transport.open(Recorder())
        try:
            assert said.get_nowait() == {"type": "hello", "version": 1, "role": role, "pong": PING}
            assert transport.hello is not None
            assert (transport.hello.ping, transport.hello.ping_ms) == (1, 5000)
            assert transport.hello.ping_timeout_ms == 15000
        finally:
            await transport.close()


@pytest.mark.asyncio
@pytest.mark.parametrize("ping", [None, 0], ids=["relay-without-pings", "pings-turned-off"])
async def test_no_pong_is_promised_to_a_relay_that_does_not_ping(
    tmp_path: Path, ping: int | None
) -> None:
    said: asyncio.Queue[object] = asyncio.Queue()
    hello = {**HELLO, "clientHello": 1} if ping is None else {**PINGING, "ping": ping}

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await said.put(await greet(reader, writer, hello))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        transport = RelayTransport(path)
        await transport.open(Recorder())
        try:
            assert said.get_nowait() == {"type": "hello", "version": 1, "role": "answerer"}
        finally:
            await transport.close()


@pytest.mark.asyncio
async def test_every_ping_is_answered_while_the_bridge_awaits_something_else(
    tmp_path: Path,
) -> None:
    pongs: asyncio.Queue[object] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await greet(reader, writer, PINGING)
        for _ in range(3):
            writer.write(PING_LINE)
            await pongs.put(await read_json(reader))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path, BridgeClient(RelayTransport(path)) as client:
        # The bridge's own code waits (a person thinking); the reader answers meanwhile.
        answered = [await asyncio.wait_for(pongs.get(), WAIT) for _ in range(3)]
        assert answered == [PONG] * 3
        transport = client.transport
        assert isinstance(transport, RelayTransport)
        assert transport.pings_answered == 3


@contextmanager
def threaded_relay(directory: Path) -> Iterator[tuple[Path, threading.Event, threading.Event]]:
    """A pinging relay on a thread of its own (the test's thread blocks in user code): after the
    handshake it pings three times and sets ``first``, then sends a form, pings three more times
    and sets ``second``; each pong must come within ``WAIT``."""
    path = make_private_dir(directory) / f"pi-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o600)
    server.listen(1)
    server.settimeout(WAIT)
    first, second = threading.Event(), threading.Event()
    problems: list[BaseException] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
            with conn, conn.makefile("rb") as reader:
                conn.settimeout(WAIT)
                conn.sendall(line(PINGING))
                said = json.loads(reader.readline())
                conn.sendall(line({"type": "welcome", "version": 1, "role": said["role"]}))
                for done in (first, second):
                    if done is second:
                        conn.sendall(event("pi-agent-ask:started", STARTED))
                    for _ in range(3):
                        conn.sendall(PING_LINE)
                        assert json.loads(reader.readline()) == PONG
                    done.set()
                reader.read()  # until the client leaves (bounded by the socket timeout)
        except BaseException as exc:  # reported by the test
            problems.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path, first, second
    finally:
        server.close()
        thread.join(2 * WAIT)
        assert not problems, problems


def test_the_sync_clients_thread_answers_pings_while_user_code_blocks(tmp_path: Path) -> None:
    with (
        threaded_relay(tmp_path / "relay") as (path, first, second),
        SyncBridgeClient(RelayTransport(path), timeout=WAIT) as client,
    ):
        # Blocked inside the facade: waiting for a form, which comes only after three pongs.
        flow = client.flows().next(timeout=3 * WAIT)
        assert first.is_set()
        assert flow.flow_id == "f1"
        # Blocked in the bridge's own code (a person at input()): the pongs still go out.
        assert second.wait(3 * WAIT)


@pytest.mark.asyncio
@pytest.mark.parametrize("reconnect", [True, False])
async def test_a_dropped_connection_loses_its_pending_submit_and_says_why(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, reconnect: bool
) -> None:
    submitted: asyncio.Queue[object] = asyncio.Queue()
    pongs: asyncio.Queue[object] = asyncio.Queue()
    connections = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        hello = {**PINGING, "replaying": 1} if connections == 1 else PINGING
        if connections == 1:
            writer.write(line(hello))
            writer.write(event("pi-agent-ask:started", STARTED, replay=True))
            said = json.loads(await asyncio.wait_for(reader.readline(), WAIT))
            writer.write(line({"type": "welcome", "version": 1, "role": said["role"]}))
            await submitted.put(await read_json(reader))  # never answered: then dropped
            goodbye = {"type": "goodbye", "reason": "unresponsive", "message": "no pong"}
            writer.write(line(goodbye))
            await writer.drain()
            return  # (the fake closes the connection)
        await greet(reader, writer, hello)  # the form is gone: nothing replayed
        writer.write(PING_LINE)  # its pong shows the new connection is in use
        await pongs.put(await read_json(reader))
        await hold(reader)

    caplog.set_level(logging.INFO, logger="pi_ask_sdk.relay")
    async with fake_relay(tmp_path, handler) as path:
        transport = RelayTransport(path, reconnect=reconnect)
        async with BridgeClient(transport) as client:
            events = client.events()
            [flow] = client.open_flows.values()
            ticket = await client.submit(flow, choose(flow, "a"))
            await asyncio.wait_for(submitted.get(), WAIT)
            outcome = await client.await_result(ticket, timeout=WAIT)
            assert isinstance(outcome, SubmitLost)
            reason: Literal["session_ended", "disconnected"] = (
                "session_ended" if reconnect else "disconnected"
            )
            assert outcome.reason == reason
            assert not outcome.acknowledged
            started = await events.next(timeout=WAIT)
            assert started.kind == "started"
            ended = await events.next(timeout=WAIT)
            assert ended == SessionEnded(reason)
            assert list(client.open_flows) == []
            if reconnect:  # alive again: it serves on, on a new connection
                assert await asyncio.wait_for(pongs.get(), WAIT) == PONG
                assert transport.connections == 2
                assert list(client.open_flows) == []  # nothing was replayed
    [warning] = [r for r in caplog.records if "dropped this connection" in r.getMessage()]
    assert "unresponsive" in warning.getMessage()
    if not reconnect:  # the reason it gave up says so
        assert "the relay dropped the connection (unresponsive)" in caplog.text


@contextmanager
def dropping_relay(directory: Path) -> Iterator[tuple[Path, threading.Event, threading.Event]]:
    """A relay on a thread of its own that replays one form, then, once ``drop`` is set, says
    goodbye (``unresponsive``) and closes the connection (setting ``dropped``) while the
    client's loop is blocked, as the real relay drops a frozen answerer. It takes the client's
    reconnection and holds it."""
    path = make_private_dir(directory) / f"pi-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(path))
    path.chmod(0o600)
    server.listen(1)
    server.settimeout(WAIT)
    drop, dropped, finished = threading.Event(), threading.Event(), threading.Event()
    problems: list[BaseException] = []

    def serve() -> None:
        try:
            conn, _ = server.accept()
            with conn:
                conn.sendall(line({**HELLO, "socket": str(path), "replaying": 1}))
                conn.sendall(event("pi-agent-ask:started", STARTED, replay=True))
                assert drop.wait(WAIT)
                goodbye = {"type": "goodbye", "reason": "unresponsive", "message": "no pong"}
                conn.sendall(line(goodbye))
            dropped.set()
            again, _ = server.accept()  # the client reconnects: it is still open
            with again:
                again.sendall(line({**HELLO, "socket": str(path)}))
                finished.wait(WAIT)  # (the client's loop may be blocked by the test's end)
        except BaseException as exc:  # reported by the test
            problems.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield path, drop, dropped
    finally:
        finished.set()
        server.close()
        thread.join(2 * WAIT)
        assert not problems, problems


@pytest.mark.asyncio
async def test_a_late_submit_after_the_relay_dropped_the_client_says_what_the_events_say(
    tmp_path: Path,
) -> None:
    with dropping_relay(tmp_path / "relay") as (path, drop, dropped):
        transport = RelayTransport(path)
        async with BridgeClient(transport) as client:
            events = client.events()
            [flow] = client.open_flows.values()
            drop.set()
            # The client is frozen while the relay drops it (its event loop blocked here) ...
            assert dropped.wait(WAIT)
            # ... and then submits twice before it reads what the relay said: the first write
            # finds the connection gone, the second submit a connection that is closing.
            first, second = await asyncio.gather(
                client.respond(flow, choose(flow, "a"), timeout=WAIT),
                client.respond(flow, choose(flow, "a"), timeout=WAIT),
            )
            assert isinstance(first, SubmitLost)
            assert first.reason == "session_ended"
            assert second == SubmitNotSent(flow.flow_id, "session_ended")
            assert (await events.next(timeout=WAIT)).kind == "started"
            assert await events.next(timeout=WAIT) == SessionEnded("session_ended")
            assert client.is_open  # not disconnected: it reconnects, and serves on

            async def reconnected() -> None:
                while transport.connections < 2:  # (no event tells of a reconnection)
                    await asyncio.sleep(0.01)

            await asyncio.wait_for(reconnected(), WAIT)
            assert transport.is_connected
