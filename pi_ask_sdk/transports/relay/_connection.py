"""One socket connection to a relay: line framing, envelope decoding, the handshake state."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Final, Protocol, cast

import msgspec

from pi_ask_core import SUBMIT_RESULT, Skipped, decode_event

from ._wire import (
    PING,
    PONG_LINE,
    PROTOCOL,
    Envelope,
    ErrorLine,
    EventLine,
    GoodbyeLine,
    PingLine,
    RelayHello,
    RelayRole,
    SessionEndLine,
    WelcomeLine,
    decode_envelope,
    encode_client_hello,
)
from .errors import RelayHandshakeError

log: Final = logging.getLogger("pi_ask_sdk.relay")


def _retrieve(future: asyncio.Future[RelayHello]) -> None:
    """Mark a failed handshake as seen (its error is raised by ``_connect`` or moot)."""
    if not future.cancelled():
        future.exception()


_READ_SIZE: Final = 256 * 1024
"""Bytes one socket read may fill (asyncio's own per-read size)."""


class _Owner(Protocol):
    """What a connection hands its messages to (``RelayTransport``)."""

    _foreign_results: bool
    _raw_events: bool

    def _deliver(self, conn: RelayProtocol, channel: str, data: object, replay: bool) -> None: ...

    def _session_end(self, conn: RelayProtocol, reason: str) -> None: ...

    def _connection_lost(self, conn: RelayProtocol) -> None: ...

    def _ping_answered(self, conn: RelayProtocol) -> None: ...


class RelayProtocol(asyncio.BufferedProtocol):
    """One socket connection: frames lines, decodes envelopes, hands them to the transport.

    A ``BufferedProtocol``: the socket is read into one buffer kept for the connection, because
    with a plain ``Protocol`` asyncio allocates a fresh read-sized ``bytes`` for every read and
    shrinks it, which an allocator that serves blocks that big with ``mmap`` turns into system
    calls and a page fault on every message (the relay round trip: bench/README.md)."""

    def __init__(
        self, owner: _Owner, path: Path, max_line: int, role: RelayRole = "answerer"
    ) -> None:
        self.owner = owner
        self.path = path
        self.role: RelayRole = role
        # The relay's reply to our hello (None until it came; a relay without client hellos
        # gets none, and the connection is then ready without one).
        self.welcome: str | None = None
        self.max_line = max_line
        self.read_buffer = memoryview(bytearray(_READ_SIZE))
        self.buffer = bytearray()
        self.discarding = False
        self.transport: asyncio.Transport | None = None
        self.hello: asyncio.Future[RelayHello] = asyncio.get_running_loop().create_future()
        self.hello.add_done_callback(_retrieve)
        # Resolved once the hello and the replays it announces have arrived.
        self.ready: asyncio.Future[RelayHello] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(_retrieve)
        self.session_end: str | None = None
        # The reason the relay gave when it dropped us (its last line), else None.
        self.goodbye: str | None = None
        self.lost = False
        self.writable: asyncio.Event = asyncio.Event()
        self.writable.set()
        # what arrives after hello, before the transport adopts this connection (the replays)
        self.queued: list[EventLine | SessionEndLine] | None = []

    def adopt(self) -> None:
        """Start handing messages to the owner, first those that came with the hello."""
        queued, self.queued = self.queued, None
        for envelope in queued or ():
            self._dispatch(envelope)

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport, but not always an ``asyncio.Transport`` instance: uvloop's are not.
        self.transport = cast("asyncio.Transport", transport)

    def get_buffer(self, sizehint: int) -> memoryview:
        return self.read_buffer

    def buffer_updated(self, nbytes: int) -> None:
        # a copy of what was read (small, as a message is): the buffer is refilled next read
        self.data_received(self.read_buffer[:nbytes].tobytes())

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        start = 0
        end = len(data)
        while start < end and not self.lost:
            nl = data.find(b"\n", start)
            stop = end if nl < 0 else nl
            if self.discarding:
                if nl >= 0:
                    self.discarding = False
            elif len(buffer) + (stop - start) > self.max_line:
                buffer.clear()
                log.warning(
                    "pi_ask_sdk.relay: discarded a line longer than %d bytes from %s",
                    self.max_line,
                    self.path,
                )
                self.discarding = nl < 0
            elif nl < 0:
                buffer += data[start:end]
            elif buffer:
                buffer += data[start:nl]
                line = bytes(buffer)
                buffer.clear()
                self._line(line)
            else:
                self._line(data[start:nl])
            if nl < 0:
                break
            start = nl + 1

    def eof_received(self) -> bool | None:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if self.lost:
            return
        self.lost = True
        self.writable.set()
        if not self.hello.done():
            problem = "the connection closed before hello" if exc is None else str(exc)
            self.hello.set_exception(RelayHandshakeError(self.path, problem))
        if not self.ready.done():
            problem = "the connection closed during the replay" if exc is None else str(exc)
            self.ready.set_exception(RelayHandshakeError(self.path, problem))
        if self.queued is None:
            self.owner._connection_lost(self)

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    # framing

    def _line(self, line: bytes) -> None:
        if self.session_end is not None:
            return  # the session is over: nothing after its session_end counts
        if not line or line.isspace():  # (strip() would copy the line)
            return
        try:
            envelope = decode_envelope(line)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
            if not self.hello.done():  # the first line must be the hello: no use waiting
                why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
                self._refuse(f"its hello does not decode: {why}")
                return
            log.warning(
                "pi_ask_sdk.relay: skipped an undecodable line (%d bytes) from %s: %s",
                len(line),
                self.path,
                "nested too deeply" if isinstance(exc, RecursionError) else exc,
            )
            return
        if type(envelope) is EventLine and self.queued is None:
            # The common case first: an event once the connection is adopted (adopted means
            # after the hello), in as few steps as possible: this runs for every verdict.
            self._event(envelope)
        elif not self.hello.done():
            self._greeting(envelope)
        elif isinstance(envelope, PingLine):
            # Answered here, in the reader: a bridge whose own code is slow (a person thinking,
            # a handler awaiting) is alive; only a stopped or blocked event loop is silent.
            transport = self.transport
            if transport is not None and not transport.is_closing():
                transport.write(PONG_LINE)
                self.owner._ping_answered(self)
        elif isinstance(envelope, GoodbyeLine):
            self.goodbye = envelope.reason
            log.warning(
                "pi_ask_sdk.relay: relay %s dropped this connection (%s): %s",
                self.path,
                envelope.reason,
                envelope.message,
            )
        elif isinstance(envelope, WelcomeLine):
            self.welcome = envelope.role
            self._check_ready()
        elif isinstance(envelope, ErrorLine):
            log.warning(
                "pi_ask_sdk.relay: relay %s refused a message: %s: %s",
                self.path,
                envelope.code,
                envelope.message,
            )
        elif isinstance(envelope, RelayHello):
            log.warning("pi_ask_sdk.relay: ignored a second hello from %s", self.path)
        elif self.queued is not None:
            if isinstance(envelope, SessionEndLine):
                self.session_end = envelope.reason
            self.queued.append(envelope)
            self._check_ready()
        else:
            if isinstance(envelope, SessionEndLine):
                self.session_end = envelope.reason
            self._dispatch(envelope)

    def _dispatch(self, envelope: EventLine | SessionEndLine) -> None:
        if isinstance(envelope, EventLine):
            self._event(envelope)
        elif isinstance(envelope, SessionEndLine):
            self.owner._session_end(self, envelope.reason)

    def _event(self, envelope: EventLine) -> None:
        channel = envelope.channel
        if envelope.own is False and channel == SUBMIT_RESULT and not self.owner._foreign_results:
            return  # the verdict on another connection's submit (it may share our ids)
        if self.owner._raw_events:
            self.owner._deliver(self, channel, envelope.data, envelope.replay)
            return
        data = decode_event(channel, envelope.data)
        if type(data) is Skipped and data.reason == "not_json":
            log.warning("pi_ask_sdk.relay: skipped an event with bad data: %s", data.detail)
            return
        self.owner._deliver(self, channel, data, envelope.replay)

    def _greeting(self, envelope: Envelope) -> None:
        if not isinstance(envelope, RelayHello):
            problem = f"the first message is {type(envelope).__struct_config__.tag}, not hello"
        elif envelope.protocol != PROTOCOL:
            problem = f"it speaks protocol {envelope.protocol}, this client speaks {PROTOCOL}"
        else:
            self.hello.set_result(envelope)
            if envelope.client_hello >= 1 and self.transport is not None:
                # Say what we do; ``ready`` waits for the relay's welcome, so once ``open()``
                # returns the relay counts us (an answerer makes a headless Pi open its forms).
                self.transport.write(encode_client_hello(self.role, pong=envelope.ping >= PING))
            self._check_ready()
            return
        self._refuse(problem)

    def _refuse(self, problem: str) -> None:
        """The greeting is not one we speak: ``open()`` fails with ``problem`` (not retried)."""
        error = RelayHandshakeError(self.path, problem, retryable=False)
        self.hello.set_exception(error)
        self.ready.set_exception(error)
        self.close()

    def _check_ready(self) -> None:
        if self.ready.done() or not self.hello.done() or self.hello.exception() is not None:
            return
        hello = self.hello.result()
        queued = self.queued or []
        replays = sum(1 for e in queued if isinstance(e, EventLine) and e.replay)
        ended = any(isinstance(e, SessionEndLine) for e in queued)
        welcomed = hello.client_hello < 1 or self.welcome is not None
        if (replays >= hello.replaying and welcomed) or ended:
            self.ready.set_result(hello)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        """Close at once, dropping unsent data (nothing more is owed to an ended session)."""
        if self.transport is not None:
            self.transport.abort()
