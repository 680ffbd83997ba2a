"""``pi-ask watch``: live events from every running relay, as text or JSON lines.

One ``RelayTransport`` per running Pi; relays that appear later are picked up by polling the
relay directory (there is no event for a new socket). Watching sends nothing.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Callable
from pathlib import Path

import msgspec

from pi_ask_core import (
    COMPLETED,
    STARTED,
    CompletedEvent,
    PiAskError,
    Skipped,
    StartedEvent,
    decode_event,
)
from pi_ask_core.events import DecodedEvent
from pi_ask_sdk.forms import FlowId, FlowView
from pi_ask_sdk.outcomes import FlowCompleted
from pi_ask_sdk.transports.base import EndReason
from pi_ask_sdk.transports.relay import RelayTransport, discover_relays, relay_dir

from .render import render_completed, render_flow
from .text import clean, echo, json_line

__all__ = ["EventPrinter", "describe", "shown", "watch"]

Write = Callable[[str], None]


class EventPrinter:
    """A ``TransportListener`` that prints what one relay delivers."""

    def __init__(
        self, pid: int, write: Write, *, as_json: bool, broken: asyncio.Event | None = None
    ) -> None:
        self.pid = pid
        self._out = write
        self._json = as_json
        self._broken = broken

    def _write(self, text: str) -> None:
        try:
            self._out(text)
        except BrokenPipeError:
            # Nobody reads any more (`pi-ask watch | head`): tell watch() to stop.
            if self._broken is None:
                raise
            self._broken.set()

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        event = decode_event(channel, data)
        try:
            if self._json:
                payload = shown(event)
                line = {"pid": self.pid, "channel": channel, "replay": replay, "data": payload}
                self._write(json_line(line))
                return
            self._write(f"[pi {self.pid}] " + describe(channel, event, replay))
        except (RecursionError, ValueError, TypeError) as error:
            # A payload nested too deeply to print: say so, and keep watching.
            why = f"payload not printable ({type(error).__name__})"
            if self._json:
                self._write(json_line({"pid": self.pid, "channel": channel, "error": why}))
            else:
                self._write(f"[pi {self.pid}] {clean(channel)}: {why}")

    def ended(self, reason: EndReason) -> None:
        if self._json:
            self._write(json.dumps({"pid": self.pid, "ended": reason}))
        else:
            self._write(f"[pi {self.pid}] {reason.replace('_', ' ')}")


def shown(event: DecodedEvent | Skipped) -> object:
    """What was received, as plain JSON (a skipped payload as it came)."""
    return event.payload if isinstance(event, Skipped) else msgspec.to_builtins(event)


def describe(channel: str, event: DecodedEvent | Skipped, replay: bool) -> str:
    if isinstance(event, StartedEvent):
        return render_flow(FlowView.from_started(event, replay=replay))
    if isinstance(event, CompletedEvent):
        return render_completed(
            FlowCompleted(
                flow_id=FlowId(event.flow_id),
                tool_call_id=None,
                source=event.source,
                result=event.result,
                completed_at=event.completed_at,
            )
        )
    if (
        isinstance(event, Skipped)
        and event.reason in ("malformed", "bad_version")
        and channel in (STARTED, COMPLETED)
    ):
        return f"{clean(channel)}: malformed payload ({clean(event.detail)})"
    return f"{clean(channel)}: {clean(json_line(shown(event)))}"


async def watch(
    write: Write = echo,
    *,
    as_json: bool = False,
    directory: Path | None = None,
    poll: float = 1.0,
    duration: float | None = None,
) -> int:
    """Print events from every relay until cancelled (or for ``duration`` seconds, or until
    the output is closed: ``BrokenPipeError``)."""
    watching: dict[Path, RelayTransport] = {}
    broken = asyncio.Event()
    loop = asyncio.get_running_loop()
    deadline = None if duration is None else loop.time() + duration
    how = ""
    if directory is None:
        directory = relay_dir()
        explicit = os.environ.get("PI_ASK_RELAY_DIR")
        how = "PI_ASK_RELAY_DIR; " if explicit else "the default relay directory; "
    if not as_json:
        write(f"watching relays in {clean(str(directory))} ({how}Ctrl-C stops)")
    try:
        while deadline is None or loop.time() < deadline:
            for info in discover_relays(directory, known=watching):
                if info.path in watching:
                    continue
                transport = RelayTransport(path=info.path, foreign_results=True, role="observer")
                try:
                    printer = EventPrinter(info.pid, write, as_json=as_json, broken=broken)
                    await transport.open(printer)
                except (OSError, PiAskError) as error:
                    message = {"pid": info.pid, "error": f"cannot connect: {error}"}
                    write(json_line(message) if as_json else f"[pi {info.pid}] {message['error']}")
                    continue
                watching[info.path] = transport
            for path, transport in list(watching.items()):
                if not transport.is_connected and not path.exists():
                    del watching[path]
                    await transport.close()
            wait = poll if deadline is None else min(poll, deadline - loop.time())
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(broken.wait(), max(wait, 0))
            if broken.is_set():
                raise BrokenPipeError(32, "the output was closed")
    finally:
        for transport in watching.values():
            with contextlib.suppress(Exception):
                await transport.close()
    return 0
