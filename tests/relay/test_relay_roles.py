"""The client hello: a RelayTransport says whether it answers forms, when the relay asks.

A relay that announces ``clientHello`` gets ``{"type":"hello","version":1,"role":...}`` after its
greeting, and ``open()`` returns once it replied ``welcome`` (so the relay already counts the
client when a headless Pi asks it for a provider). An older relay gets nothing.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.transports.relay import RelayHandshakeError, RelayRole, RelayTransport

from .test_relay_handshake import HELLO, STARTED, Recorder, fake_relay, hold, line


@pytest.mark.asyncio
@pytest.mark.parametrize("role", ["answerer", "observer"])
async def test_the_client_says_its_role_and_waits_for_the_welcome(
    tmp_path: Path, role: RelayRole
) -> None:
    said: asyncio.Queue[dict[str, object]] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(
            line({**HELLO, "clientHello": 1, "answering": 2, "observing": 3, "replaying": 1})
        )
        replay = {
            "type": "event",
            "channel": "pi-agent-ask:started",
            "data": STARTED,
            "replay": True,
        }
        writer.write(line(replay))
        hello = json.loads(await asyncio.wait_for(reader.readline(), 2))
        await said.put(hello)
        writer.write(line({"type": "welcome", "version": 1, "role": hello["role"]}))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        transport = RelayTransport(path, role=role)
        assert transport.role == role
        recorder = Recorder()
        await transport.open(recorder)
        try:
            assert said.get_nowait() == {"type": "hello", "version": 1, "role": role}
            assert transport.hello is not None
            assert (transport.hello.client_hello, transport.hello.answering) == (1, 2)
            assert transport.hello.observing == 3
            assert (await recorder.next())[0] == "pi-agent-ask:started"  # the replay
        finally:
            await transport.close()


@pytest.mark.asyncio
async def test_an_older_relay_gets_no_client_hello(tmp_path: Path) -> None:
    received: asyncio.Queue[bytes] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line(HELLO))
        await received.put(await asyncio.wait_for(reader.read(), 2))  # until the client leaves

    async with fake_relay(tmp_path, handler) as path:
        transport = RelayTransport(path)
        await transport.open(Recorder())
        assert transport.hello is not None
        assert transport.hello.client_hello == 0
        await transport.close()
        assert await asyncio.wait_for(received.get(), 2) == b""  # it sent nothing at all


@pytest.mark.asyncio
async def test_a_relay_that_never_welcomes_fails_the_handshake(tmp_path: Path) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line({**HELLO, "clientHello": 1}))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        with pytest.raises(RelayHandshakeError, match="no hello"):
            await RelayTransport(path, hello_timeout=0.2).open(Recorder())


def test_a_role_is_answerer_or_observer() -> None:
    with pytest.raises(ValueError, match="role"):
        RelayTransport("/nonexistent.sock", role="watcher")  # type: ignore[arg-type]


def test_observer_mode_needs_the_default_factory() -> None:
    with pytest.raises(ValueError, match="observer"):
        BridgeClient.connect(lambda: RelayTransport("/x.sock"), observer=True)


@pytest.mark.asyncio
async def test_a_role_set_during_the_handshake_is_said_once_connected(tmp_path: Path) -> None:
    # The forwarder of a fleet turns answerer when a bridge appears, which may be while one
    # of its relay connections is still waiting for the welcome: the relay must hear it.
    said: asyncio.Queue[dict[str, object]] = asyncio.Queue()
    welcome = asyncio.Event()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line({**HELLO, "clientHello": 1}))
        first = json.loads(await asyncio.wait_for(reader.readline(), 2))
        await said.put(first)
        await asyncio.wait_for(welcome.wait(), 2)  # the client changes its role meanwhile
        writer.write(line({"type": "welcome", "version": 1, "role": first["role"]}))
        await said.put(json.loads(await asyncio.wait_for(reader.readline(), 2)))
        writer.write(line({"type": "welcome", "version": 1, "role": "answerer"}))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        transport = RelayTransport(path, role="observer")
        opening = asyncio.get_running_loop().create_task(transport.open(Recorder()))
        assert (await asyncio.wait_for(said.get(), 2))["role"] == "observer"
        transport.set_role("answerer")  # connected, not yet welcomed
        welcome.set()
        await asyncio.wait_for(opening, 2)
        try:
            assert await asyncio.wait_for(said.get(), 2) == {
                "type": "hello",
                "version": 1,
                "role": "answerer",
            }
            assert transport.role == "answerer"
        finally:
            await transport.close()
