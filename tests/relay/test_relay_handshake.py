"""RelayTransport against a scripted relay in this process: handshake, framing, reconnects.

No Pi needed: the fake relay listens on ``pi-<this pid>.sock`` (a live pid) in a private dir.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from pi_ask_core import CancelResponse, Skipped, StartedEvent, SubmitEvent, SubmitRejection
from pi_ask_sdk import ConnectionLost
from pi_ask_sdk.transports.relay import (
    RelayHandshakeError,
    RelayTransport,
    relay_dir,
    relay_extension_path,
)
from tests.integration.pi_process import make_private_dir

WAIT = 2.0
Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]

HELLO = {"type": "hello", "protocol": 1, "pid": os.getpid(), "cwd": "/x", "piVersion": "t"}
STARTED = {
    "version": 1,
    "flowId": "f1",
    "source": "tool",
    "title": "line\u2028separator\u2029para",
    "questions": [
        {
            "id": "q",
            "label": "Q",
            "prompt": "?",
            "type": "single",
            "required": False,
            "options": [{"value": "a", "label": "A"}],
        }
    ],
    "createdAt": 1,
}


def line(message: object) -> bytes:
    # ensure_ascii=False keeps U+2028 raw in the bytes, as node's JSON.stringify does
    return json.dumps(message, ensure_ascii=False).encode() + b"\n"


def event(channel: str, data: object, replay: bool = False) -> bytes:
    return line({"type": "event", "channel": channel, "data": data, "replay": replay})


class Recorder:
    def __init__(self) -> None:
        self.items: asyncio.Queue[tuple[str, object, bool]] = asyncio.Queue()

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        self.items.put_nowait((channel, data, replay))

    def ended(self, reason: str) -> None:
        self.items.put_nowait(("ended", reason, False))

    async def next(self) -> tuple[str, object, bool]:
        return await asyncio.wait_for(self.items.get(), WAIT)


@asynccontextmanager
async def fake_relay(tmp_path: Path, handler: Handler) -> AsyncIterator[Path]:
    directory = make_private_dir(tmp_path / "relay")
    path = directory / f"pi-{os.getpid()}.sock"

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            await handler(reader, writer)
        finally:
            writer.close()  # Server.wait_closed() waits for every connection to close

    server = await asyncio.start_unix_server(serve, str(path))
    path.chmod(0o600)
    try:
        yield path
    finally:
        server.close()
        await asyncio.wait_for(server.wait_closed(), 5 * WAIT)


async def hold(reader: asyncio.StreamReader) -> None:
    """Keep a fake connection open until the client leaves (bounded); quiet on shutdown."""
    with contextlib.suppress(asyncio.CancelledError, asyncio.TimeoutError, ConnectionError):
        await asyncio.wait_for(reader.read(), 10)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("greeting", "problem"),
    [
        ({**HELLO, "protocol": 2}, "protocol 2"),
        ({"type": "session_end", "reason": "quit"}, "the first message is session_end, not hello"),
        ({"type": "ping"}, "the first message is ping, not hello"),
        ({**HELLO, "pid": 1}, "pid 1"),
    ],
)
async def test_bad_greetings_are_refused(
    tmp_path: Path, greeting: dict[str, object], problem: str
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line(greeting))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        with pytest.raises(RelayHandshakeError) as refused:
            await RelayTransport(path).open(Recorder())
        assert problem in str(refused.value)
        assert str(path) in str(refused.value)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("greeting", "problem"),
    [
        ({**HELLO, "pingMs": 250.5}, "Expected `int`, got `float` - at `$.pingMs`"),
        ({**HELLO, "pid": "x"}, "Expected `int`, got `str` - at `$.pid`"),
        ("not json", "malformed"),
    ],
)
async def test_a_hello_that_does_not_decode_is_refused_at_once(
    tmp_path: Path, greeting: dict[str, object] | str, problem: str
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line(greeting) if isinstance(greeting, dict) else greeting.encode() + b"\n")
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        started = asyncio.get_running_loop().time()
        with pytest.raises(RelayHandshakeError) as refused:
            await RelayTransport(path, hello_timeout=20).open(Recorder())
        # (it waited out hello_timeout, then said it had no hello)
        assert asyncio.get_running_loop().time() - started < 10
        assert "its hello does not decode" in str(refused.value)
        assert problem in str(refused.value)


@pytest.mark.asyncio
async def test_a_silent_socket_times_out(tmp_path: Path) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        with pytest.raises(
            RelayHandshakeError, match=r"no hello \(with its replays\) within 0\.2 s"
        ):
            await RelayTransport(path, hello_timeout=0.2).open(Recorder())


@pytest.mark.asyncio
async def test_framing_long_lines_and_bad_lines(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(line(HELLO) + event("pi-agent-ask:started", STARTED, replay=True)[:20])
        await writer.drain()
        writer.write(event("pi-agent-ask:started", STARTED, replay=True)[20:])
        writer.write(b'{"type":"event","channel":"x","data":"' + b"y" * 3000)  # too long ...
        await writer.drain()
        writer.write(b"y" * 3000 + b'"}\n')  # ... discarded up to its newline
        writer.write(b"not json\n\n")
        writer.write(line({"type": "future_thing"}))
        writer.write(line({"type": "error", "code": "bad_json", "message": "nope"}))
        writer.write(event("pi-agent-ask:started", {**STARTED, "version": 2}))
        writer.write(
            event(
                "pi-agent-ask:submit-result",
                {
                    "version": 1,
                    "requestId": "r",
                    "flowId": "f1",
                    "ok": False,
                    "error": "invalid_answer",
                    "message": "m",
                },
            )
        )
        await hold(reader)

    caplog.set_level(logging.WARNING, logger="pi_ask_sdk.relay")
    async with fake_relay(tmp_path, handler) as path:
        recorder = Recorder()
        transport = RelayTransport(path, max_line_bytes=1000)
        await transport.open(recorder)
        try:
            channel, data, replay = await recorder.next()
            assert (channel, replay) == ("pi-agent-ask:started", True)
            assert isinstance(data, StartedEvent)
            assert data.title == STARTED["title"]
            channel, data, replay = await recorder.next()  # version 2: skipped, with the reason
            assert isinstance(data, Skipped)
            assert data.reason == "bad_version"
            assert isinstance(data.payload, dict)
            assert data.payload["version"] == 2
            channel, data, replay = await recorder.next()
            assert isinstance(data, SubmitRejection)
            assert data.error == "invalid_answer"
        finally:
            await transport.close()
    logged = "\n".join(r.getMessage() for r in caplog.records if r.name == "pi_ask_sdk.relay")
    assert "longer than 1000 bytes" in logged
    assert "undecodable line" in logged
    assert "bad_json: nope" in logged


@pytest.mark.asyncio
async def test_lost_connection_reconnects_and_replays(tmp_path: Path) -> None:
    connections = 0
    received: asyncio.Queue[bytes] = asyncio.Queue()

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections
        connections += 1
        writer.write(line(HELLO))
        if connections == 1:
            writer.close()  # dropped without session_end
            return
        writer.write(event("pi-agent-ask:started", STARTED, replay=True))
        received.put_nowait(await asyncio.wait_for(reader.readline(), 10))
        await hold(reader)

    async with fake_relay(tmp_path, handler) as path:
        recorder = Recorder()
        transport = RelayTransport(path, backoff_initial=0.01)
        await transport.open(recorder)
        try:
            assert await recorder.next() == ("ended", "session_ended", False)
            _, data, replay = await recorder.next()
            assert replay
            assert isinstance(data, StartedEvent)
            assert transport.connections == 2
            payload = SubmitEvent(request_id="r1", flow_id="f1", response=CancelResponse())
            await transport.send(payload)
            sent = json.loads(await asyncio.wait_for(received.get(), WAIT))
            assert sent == {
                "type": "emit",
                "channel": "pi-agent-ask:submit",
                "data": {
                    "version": 1,
                    "requestId": "r1",
                    "flowId": "f1",
                    "response": {"kind": "cancel"},
                },
            }
        finally:
            await transport.close()


@pytest.mark.asyncio
async def test_gives_up_when_the_socket_stays_gone(tmp_path: Path) -> None:
    served = 0

    async def handler(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal served
        served += 1
        if served > 1:
            # A relay shutting down: the reconnect may be accepted before the server closes
            # (uvloop accepts it at once), and then hears nothing.
            return
        writer.write(line(HELLO))
        writer.write(line({"type": "session_end", "reason": "new"}))
        writer.close()

    recorder = Recorder()
    transport = RelayTransport(
        tmp_path / "relay" / f"pi-{os.getpid()}.sock",
        reconnect_timeout=0.2,
        backoff_initial=0.01,
    )
    async with fake_relay(tmp_path, handler):
        await transport.open(recorder)
        assert await recorder.next() == ("ended", "session_ended", False)
        with pytest.raises(ConnectionLost) as lost:
            await transport.send(
                SubmitEvent(request_id="r", flow_id="f", response=CancelResponse())
            )
        assert lost.value.reason == "session_ended"
    # the server is gone: the retries run out
    assert await recorder.next() == ("ended", "disconnected", False)
    with pytest.raises(ConnectionLost) as lost:
        await transport.send(SubmitEvent(request_id="r", flow_id="f", response=CancelResponse()))
    assert lost.value.reason == "disconnected"
    await transport.close()


def test_relay_dir_rules(tmp_path: Path) -> None:
    assert relay_dir({"PI_ASK_RELAY_DIR": "rel/x", "XDG_RUNTIME_DIR": "/run"}) == Path(
        os.path.abspath("rel/x")
    )
    assert relay_dir({"XDG_RUNTIME_DIR": "/run/user/7"}) == Path("/run/user/7/pi-ask")
    assert relay_dir({"TMPDIR": "/t/"}) == Path(f"/t/pi-ask-{os.getuid()}")


def test_relay_extension_path_is_the_shipped_file() -> None:
    path = relay_extension_path()
    assert path.is_absolute()
    assert path.name == "pi-ask-relay.ts"
    assert "export default function piAskRelay" in path.read_text()
