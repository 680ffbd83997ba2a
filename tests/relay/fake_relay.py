"""A relay server in Python, speaking the relay's wire protocol 1 over a real Unix socket.

Behind it sits a real ``pi_ask_core.FlowHost`` on a ``LocalEventBus``, so submits are resolved
as the extension does. It lets the RelayTransport's own behaviour (framing, replay, session
end, reconnect, bad lines) be tested fast and on every Python; the real relay and a real Pi are
exercised by tests/integration.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import socket
from pathlib import Path
from typing import Any

import msgspec

from pi_ask_core import (
    CHANNELS,
    SUBMIT,
    SUBMIT_RESULT,
    CompletedEvent,
    FlowHandle,
    FlowHost,
    LocalEventBus,
    StartedEvent,
    decode_event,
)

MAX_LINE_BYTES = 1024 * 1024  # pi-ask-relay.ts

_LONE = re.compile("[\ud800-\udfff]")


def js_json(value: object) -> bytes:
    """``value`` as the relay writes it (``JSON.stringify``): compact, raw UTF-8 (U+2028/U+2029
    stay unescaped inside strings), and a lone surrogate as a ``\\udXXX`` escape."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _LONE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode()


class FakeRelay:
    def __init__(self, directory: Path, *, pid: int | None = None, name: str | None = None) -> None:
        self.directory = directory
        self.pid = os.getpid() if pid is None else pid
        self.path = directory / (name or f"pi-{self.pid}.sock")
        self.bus = LocalEventBus()
        self.host = FlowHost(self.bus)
        self.writers: list[asyncio.StreamWriter] = []
        self.received: list[Any] = []
        self.hello_extra: dict[str, object] = {}
        self.split_replays = False  # send each replay in its own write, after a pause
        self.cut_replays = 0  # this many connections are closed after their first replay
        self.roles = False  # announce the client hello, welcome it, count the answerers
        self.hold: asyncio.Event | None = None  # submits wait for it to be set (a slow Pi)
        # Mark each submit-result "own" for the connection that emitted its submit (false for
        # the others, and for all once that connection is gone), as the real relay does.
        self.own_marks = False
        self._owners: dict[tuple[object, object], list[asyncio.StreamWriter | None]] = {}
        self._held: set[asyncio.Task[None]] = set()
        self._held_keys: dict[asyncio.Task[None], tuple[object, object]] = {}
        self._received_changed = asyncio.Event()
        self.role_of: dict[asyncio.StreamWriter, str] = {}
        self._role_changed = asyncio.Event()
        self._server: asyncio.AbstractServer | None = None
        self._open: dict[str, object] = {}
        self._connected = asyncio.Event()
        for channel in CHANNELS:
            if channel != SUBMIT:
                self.bus.on(channel, self._forward(channel))

    async def start(self) -> None:
        self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        os.chmod(self.directory, 0o700)
        # As the real relay: bound under another name, made private, renamed into place once
        # it listens (a client never finds the socket refusing, nor with another mode).
        bound = self.path.with_name(f".{self.path.stem}.new")
        with contextlib.suppress(FileNotFoundError):
            bound.unlink()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind(str(bound))
        os.chmod(bound, 0o600)
        # Lines up to the real relay's MAX_LINE_BYTES (1 MiB), not asyncio's 64 KiB.
        self._server = await asyncio.start_unix_server(
            self._serve, sock=sock, limit=MAX_LINE_BYTES + 1
        )
        os.rename(bound, self.path)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
            for writer in self.writers:
                writer.close()
            self.writers.clear()
            await asyncio.wait_for(self._server.wait_closed(), 5)
            self._server = None
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()

    async def wait_connected(self, count: int = 1, timeout: float = 5.0) -> None:
        async def enough() -> None:
            while len(self.writers) < count:
                self._connected.clear()
                await self._connected.wait()

        await asyncio.wait_for(enough(), timeout)

    async def wait_submits(self, count: int, timeout: float = 5.0) -> None:
        """Until at least ``count`` submits were received (held ones included)."""

        async def enough() -> None:
            while sum(1 for m in self.received if m.get("type") == "emit") < count:
                self._received_changed.clear()
                await self._received_changed.wait()

        await asyncio.wait_for(enough(), timeout)

    @property
    def answerers(self) -> int:
        """Connected clients whose latest hello said "answerer" (with ``roles``)."""
        return sum(1 for role in self.role_of.values() if role == "answerer")

    async def wait_answerers(self, count: int, timeout: float = 5.0) -> None:
        """Until exactly ``count`` connected clients answer (with ``roles``)."""

        async def enough() -> None:
            while self.answerers != count:
                self._role_changed.clear()
                await self._role_changed.wait()

        await asyncio.wait_for(enough(), timeout)

    async def drop_held(self) -> None:
        """Forget the held submits: Pi never applies them (lost with their connection)."""
        held, self._held = list(self._held), set()
        for task in held:
            task.cancel()
            key = self._held_keys.pop(task, None)
            if key is not None and self._owners.get(key):
                self._owners[key].pop()  # never read by the relay: no verdict owed to anyone
        for task in held:
            with contextlib.suppress(asyncio.CancelledError):
                await task

    def open_form(self, params: object, tool_call_id: str) -> FlowHandle:
        return self.host.start(params, tool_call_id=tool_call_id)

    def send_line(self, line: bytes) -> None:
        for writer in self.writers:
            writer.write(line)

    async def end_session_and_close(self, reason: str = "quit") -> None:
        """session_end to every client, then stop listening (as a Pi that quits)."""
        self.send_line(json.dumps({"type": "session_end", "reason": reason}).encode() + b"\n")
        for writer in self.writers:
            await writer.drain()
        self.host.close()
        self._open.clear()
        await self.stop()

    async def end_session(self, reason: str = "new") -> None:
        """session_end to every client, close, then listen again with a fresh host."""
        await self.end_session_and_close(reason)
        self.host = FlowHost(self.bus)
        await self.start()

    def _forward(self, channel: str) -> Any:
        def forward(data: object) -> None:
            decoded = decode_event(channel, data)
            payload = msgspec.to_builtins(data)
            if isinstance(decoded, StartedEvent):
                self._open[decoded.flow_id] = payload
            elif isinstance(decoded, CompletedEvent):
                self._open.pop(decoded.flow_id, None)
            event = {"type": "event", "channel": channel, "data": payload, "replay": False}
            waiting = None
            if self.own_marks and channel == SUBMIT_RESULT and isinstance(payload, dict):
                waiting = self._owners.get((payload.get("requestId"), payload.get("flowId")))
            if waiting:
                owner = waiting.pop(0)
                for writer in self.writers:
                    marked = {**event, "own": writer is owner}
                    writer.write(js_json(marked) + b"\n")
                return
            self.send_line(js_json(event) + b"\n")

        return forward

    def _forget_held(self, task: asyncio.Task[None]) -> None:
        self._held_keys.pop(task, None)

    async def _emit_held(self, hold: asyncio.Event, data: object) -> None:
        await hold.wait()
        self.bus.emit(SUBMIT, data)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        hello = {
            "type": "hello",
            "protocol": 1,
            "pid": self.pid,
            "cwd": "/fake",
            "piVersion": "fake",
            "socket": str(self.path),
            "replaying": len(self._open),
            **({"clientHello": 1} if self.roles else {}),
            **self.hello_extra,
        }
        writer.write(json.dumps(hello).encode() + b"\n")
        for payload in list(self._open.values()):
            if self.split_replays:
                await writer.drain()
                await asyncio.sleep(0.05)  # a slow replay: the client must wait for it
            event = {
                "type": "event",
                "channel": "pi-agent-ask:started",
                "data": payload,
                "replay": True,
            }
            writer.write(js_json(event) + b"\n")
            if self.cut_replays:
                self.cut_replays -= 1
                await writer.drain()
                writer.close()
                return
        self.writers.append(writer)
        self._connected.set()
        try:
            while line := await reader.readline():
                message = json.loads(line)
                self.received.append(message)
                self._received_changed.set()
                if message.get("type") == "emit" and message.get("channel") == SUBMIT:
                    if self.own_marks and isinstance(message.get("data"), dict):
                        data = message["data"]
                        key = (data.get("requestId"), data.get("flowId"))
                        self._owners.setdefault(key, []).append(writer)
                    if self.hold is not None and not self.hold.is_set():
                        task = asyncio.get_running_loop().create_task(
                            self._emit_held(self.hold, message["data"])
                        )
                        self._held.add(task)
                        task.add_done_callback(self._held.discard)
                        data = message["data"]
                        if isinstance(data, dict):
                            self._held_keys[task] = (data.get("requestId"), data.get("flowId"))
                            task.add_done_callback(self._forget_held)
                    else:
                        self.bus.emit(SUBMIT, message["data"])
                elif message.get("type") == "hello" and self.roles:
                    self.role_of[writer] = message["role"]
                    welcome = {"type": "welcome", "version": 1, "role": message["role"]}
                    writer.write(json.dumps(welcome).encode() + b"\n")
                    self._role_changed.set()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            if writer in self.writers:
                self.writers.remove(writer)
            for waiting in self._owners.values():  # its verdicts are no one's own now
                waiting[:] = [None if w is writer else w for w in waiting]
            if self.role_of.pop(writer, None) is not None:
                self._role_changed.set()
            # Close our side too: Server.wait_closed() waits for every transport to close.
            writer.close()
