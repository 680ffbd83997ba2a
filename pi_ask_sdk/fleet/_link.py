"""One Pi process's link, both ways: its relay connection, the ordered publishing of its
events, and its bridges' submits given to Pi at most once (its own ``Ledger``)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from dataclasses import dataclass, field
from typing import Final, Protocol

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT_RESULT,
    CompletedEvent,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    decode_event,
)
from pi_ask_sdk._tasks import within
from pi_ask_sdk.errors import ConnectionLost
from pi_ask_sdk.transports.base import EndReason
from pi_ask_sdk.transports.relay import (
    FLOW_ENDED,
    RelayInfo,
    RelayRole,
    RelayTransport,
    decode_flow_ended,
)

from .connection import max_payload
from .delivery import NOT_SENT, Ledger, decode_submit, submit_key
from .errors import FleetPayloadTooLarge
from .protocol import FleetNames, FlowKind, Header, JsCode, PiState, TooLarge, encode_body

log: Final = logging.getLogger("pi_ask_sdk.fleet")
_ENCODER: Final = msgspec.json.Encoder()
_MARKER_ID: Final = 256  # characters of a flow id a too_large marker keeps when it must


class _Owner(Protocol):
    """What a link needs of its forwarder."""

    host_id: str
    names: FleetNames
    forwarder_id: str
    closing: bool
    max_queued: int
    max_queued_bytes: int

    @property
    def nc(self) -> Client: ...

    @property
    def js(self) -> JetStreamContext: ...

    @property
    def relay_role(self) -> RelayRole: ...


@dataclass(slots=True)
class Prior:
    """What the stream said about a Pi before this forwarder (re)started."""

    state: PiState | None = None
    open_flows: set[str] = field(default_factory=set)  # flow subjects whose last word is started


@dataclass(frozen=True, slots=True)
class _Publish:
    subject: str
    body: bytes
    headers: dict[str, str]
    core: bool = False  # a reply (core NATS), in order with the events: not stored


_RECOVER: Final = _Publish("", b"", {})
"""In the queue after an overflow: recover once what was before it is published."""


class PiLink:
    """One Pi, both ways: its relay's events in order on the Pi's subjects, with the Pi's state
    and epoch; bridges' submits the other way (``submit``), each given to Pi at most once and
    answered with Pi's verdict (its own ``Ledger``: ``delivery``).

    Events wait in a queue while the server is unreachable, at most ``max_queued`` messages
    and ``max_queued_bytes`` bytes (the forwarder's). On overflow the queue is dropped, never
    a form silently: the link keeps the forms open now (their started payloads, as Pi does)
    and which flow subjects the dropped messages touched; once the server takes a message
    again it publishes a new epoch (bridges: ``SessionEnded("session_ended")``, pending
    submits ``SubmitLost``), ``gone`` for each touched form not open now, and each open form
    again (as a replay)."""

    def __init__(self, forwarder: _Owner, info: RelayInfo, prior: Prior) -> None:
        self.forwarder = forwarder
        self.pid = info.pid
        self.info = info
        self.prior = prior
        self.transport = RelayTransport(info.path, raw_events=True, role=forwarder.relay_role)
        self.open_flows: dict[str, str] = {}  # flow id -> subject
        self.epoch = secrets.token_hex(6)
        self._opening = True
        self._early: list[tuple[str, object, bool] | EndReason] = []
        self._queue: asyncio.Queue[_Publish | None] = asyncio.Queue()
        self._queued_bytes = 0
        self._overflowed = False
        self._recovering = False
        self._dropped: set[str] = set()  # flow subjects whose messages an overflow dropped
        self._open_bodies: dict[str, tuple[bytes, dict[str, str]]] = {}  # subject -> started
        self.overflows = 0
        """How many times the queue overflowed (each ended in a new epoch)."""
        self.overflowed = asyncio.Event()
        """Set at the first overflow."""
        self._seq = 0
        self._ended = asyncio.Event()
        self.ledger = Ledger()
        """The submits given to this Pi (``delivery``): each at most once."""
        self.opened = asyncio.Event()
        """Set once the relay was opened (or could not be) and the Pi's state is queued."""

    # --- the listener RelayTransport calls ---

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        if self._opening:
            self._early.append((channel, data, replay))
        else:
            self._event(channel, data, replay)

    def ended(self, reason: EndReason) -> None:
        if self._opening:
            self._early.append(reason)
        else:
            self._end(reason)

    # --- running ---

    async def run(self) -> None:
        """Open the relay, publish the Pi's state and forms, follow it until it ends, then
        publish that it is gone. Returns once everything it queued is published (or the
        forwarder closes)."""
        publisher = asyncio.get_running_loop().create_task(self._publish_loop())
        try:
            try:
                await self.transport.open(self)
            except Exception as exc:
                log.info("pi_ask_sdk.fleet: cannot follow the relay of Pi %d: %s", self.pid, exc)
                self._opening = False
                self._gone_prior(f"its relay refused: {exc}")
                self.opened.set()
                return
            self._opening = False
            self._first_state()
            early, self._early = self._early, []
            for item in early:
                if isinstance(item, tuple):
                    self._event(*item)
                else:
                    self._end(item)
            self.opened.set()
            await self._ended.wait()
        finally:
            self.opened.set()
            await self.transport.close()
            self._queue.put_nowait(None)
            with contextlib.suppress(asyncio.CancelledError):
                await publisher

    def _first_state(self) -> None:
        """The epoch: kept from before when every form the stream shows open is replayed now
        (nothing happened to them in between that the bridges missed); else a new one, which
        resets the bridges' view (as a relay reconnect does)."""
        prior = self.prior
        names = self.forwarder.names
        replayed = {
            names.flow(self.forwarder.host_id, self.pid, flow_id)
            for flow_id, _ in self._early_started()
        }
        if prior.state is not None and prior.state.state == "up" and prior.open_flows <= replayed:
            self.epoch = prior.state.epoch
        self._publish_state("up")
        for subject in prior.open_flows - replayed:
            self._flow(subject, "gone", b"{}")

    def _early_started(self) -> list[tuple[str, object]]:
        started = []
        for item in self._early:
            if isinstance(item, tuple) and item[0] == STARTED:
                event = decode_event(STARTED, item[1])
                if isinstance(event, StartedEvent):
                    started.append((event.flow_id, item[1]))
        return started

    def _gone_prior(self, detail: str) -> None:
        """The relay cannot be followed: what the stream shows of this Pi is over."""
        for subject in self.prior.open_flows:
            self._flow(subject, "gone", b"{}")
        if self.prior.state is not None and self.prior.state.state == "up":
            self._publish_state("gone", detail)

    # --- events ---

    def _event(self, channel: str, data: object, replay: bool) -> None:
        fwd = self.forwarder
        body = _bytes(data)
        if channel == STARTED:
            event = decode_event(STARTED, data)
            if not isinstance(event, StartedEvent):
                log.warning("pi_ask_sdk.fleet: Pi %d: skipped a started event: %s", self.pid, event)
                return
            subject = fwd.names.flow(fwd.host_id, self.pid, event.flow_id)
            self.open_flows[event.flow_id] = subject
            try:
                self._flow(subject, "started", body, replay=replay, check=True, keep=True)
            except FleetPayloadTooLarge as exc:
                log.error("pi_ask_sdk.fleet: Pi %d: form %s: %s", self.pid, event.flow_id, exc)
                tool_call = event.tool_call_id if isinstance(event.tool_call_id, str) else None
                marker = TooLarge(
                    flow_id=event.flow_id, tool_call_id=tool_call, size=exc.size, limit=exc.limit
                )
                body = _ENCODER.encode(marker)
                if len(body) + 1024 > exc.limit:
                    # Ids near the limit in size: the marker must still fit, or no bridge is
                    # told of the form at all; its flow id is cut, enough to name it.
                    cut = msgspec.structs.replace(
                        marker, flow_id=event.flow_id[:_MARKER_ID], tool_call_id=None
                    )
                    body = _ENCODER.encode(cut)
                self._flow(subject, "too_large", body)
        elif channel == COMPLETED:
            event_c = decode_event(COMPLETED, data)
            if not isinstance(event_c, CompletedEvent):
                log.warning("pi_ask_sdk.fleet: Pi %d: skipped a completed event", self.pid)
                return
            subject = self.open_flows.pop(event_c.flow_id, "") or fwd.names.flow(
                fwd.host_id, self.pid, event_c.flow_id
            )
            try:
                self._flow(subject, "completed", body, check=True)
            except FleetPayloadTooLarge as exc:
                # The form is over; what its completion said cannot be carried: say it ended.
                log.error("pi_ask_sdk.fleet: Pi %d: %s", self.pid, exc)
                self._flow(subject, "gone", b"{}")
        elif channel == FLOW_ENDED:
            # Pi disposed the form without a completed (the relay's grace period ended its call):
            # its last word in the fleet says it ended, so that nobody lists it open.
            ended = decode_flow_ended(data)
            if ended is None:
                return
            subject = self.open_flows.pop(ended.flow_id, "")
            if subject:
                self._flow(subject, "gone", _ENCODER.encode({"reason": ended.reason}))
        elif channel == SUBMIT_RESULT:
            verdict = decode_event(SUBMIT_RESULT, data)
            if not isinstance(verdict, (SubmitAck, SubmitRejection)):
                return
            not_found = isinstance(verdict, SubmitRejection) and verdict.error == "flow_not_found"
            if not_found:
                gone = self.open_flows.pop(verdict.flow_id, "")
                if gone:  # the host has no such form: neither has the stream
                    self._flow(gone, "gone", b"{}")
            replies = self.ledger.answered(verdict.flow_id, verdict.request_id, body)
            # The requests waiting for it, then the watchers: queued with the events, so that a
            # bridge hears the verdict before the form's completed, as from a relay.
            for subject in [*replies, fwd.names.result(fwd.host_id, self.pid)] if replies else []:
                self._queue.put_nowait(_Publish(subject, body, {}, core=True))

    # --- submits (the other direction; the rules: delivery.py) ---

    async def submit(self, reply: str, body: bytes) -> None:
        """A bridge's submit for this Pi, to answer on ``reply``: given to Pi at most once
        (``Ledger``), answered with Pi's verdict, the ledger's, or ``not_sent``."""
        event = decode_submit(body)
        if not isinstance(event, SubmitEvent):
            log.warning("pi_ask_sdk.fleet: Pi %d: a submit that is not one: %s", self.pid, event)
            await self._reply([reply], f"not a submit: {event.detail}".encode(), not_sent=True)
            return
        if not self.opened.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self.opened.wait(), 10.0)
        key = submit_key(event, body)
        seen = self.ledger.take(key, reply)
        if isinstance(seen, bytes):  # a retry of an answered submit: the same verdict again
            await self._reply([reply], seen)
            return
        if seen != "new":
            return  # in flight: this request is answered with the first one's verdict
        why = ""
        if not self.transport.is_connected:
            why = f"Pi {self.pid} is not followed by its host's forwarder now"
        else:
            try:
                await self.transport.send(event)
            except ConnectionLost as exc:
                why = f"not delivered to Pi {self.pid}: {exc}"
        if why:
            log.info("pi_ask_sdk.fleet: a submit for Pi %d was not sent: %s", self.pid, why)
            await self._reply(self.ledger.unsent(key), why.encode(), not_sent=True)

    async def _reply(self, subjects: list[str], body: bytes, *, not_sent: bool = False) -> None:
        """Answer requests, in order on each of ``subjects`` (core NATS: a bridge that is gone
        hears nothing)."""
        nc = self.forwarder.nc
        headers = {Header.STATUS: NOT_SENT} if not_sent else None
        with contextlib.suppress(nats.errors.Error, OSError):
            for subject in subjects:
                await nc.publish(subject, body, headers=headers)

    def _end(self, reason: EndReason) -> None:
        if self._ended.is_set():
            return
        flows = list(self.open_flows.values())
        self.open_flows.clear()
        if reason == "session_ended":
            # The bridges' view of this Pi is reset (a new epoch); the forms the relay replays
            # on the next connection bring it back. The submits given on the old connection
            # get no verdict on the next (the relay marks it another connection's), so their
            # routes go: a later submit with the same ids must not take their place.
            self.ledger.connection_lost()
            self.epoch = secrets.token_hex(6)
            self._publish_state("up")
            for subject in flows:
                self._flow(subject, "gone", b"{}")
            return
        for subject in flows:
            self._flow(subject, "gone", b"{}")
        self._publish_state("gone", "the Pi exited or its relay closed")
        self.ledger.connection_lost()
        self._ended.set()

    # --- publishing ---

    def _publish_state(self, state: str, detail: str = "") -> None:
        fwd = self.forwarder
        hello = self.transport.hello
        record = PiState(
            state=state,
            host=fwd.host_id,
            pid=self.pid,
            epoch=self.epoch,
            forwarder=fwd.forwarder_id,
            cwd="" if hello is None else hello.cwd,
            pi_version="" if hello is None else hello.pi_version,
            session_id="" if hello is None else hello.session_id,
            detail=detail,
        )
        self._put(fwd.names.state(fwd.host_id, self.pid), _ENCODER.encode(record), {})

    def _flow(
        self,
        subject: str,
        kind: FlowKind,
        body: bytes,
        *,
        replay: bool = False,
        check: bool = False,
        keep: bool = False,
    ) -> None:
        headers: dict[str, str] = {Header.KIND: kind}
        if replay:
            headers[Header.REPLAY] = "1"
        if check:
            packed, extra = encode_body(body, f"a {kind} event", max_payload(self.forwarder.nc))
            headers.update(extra)
        else:
            packed = body
        if keep:  # an open form: what a recovery from an overflow publishes again
            self._open_bodies[subject] = (packed, {**headers, Header.REPLAY: "1"})
        else:
            self._open_bodies.pop(subject, None)
        self._put(subject, packed, headers)

    def _put(self, subject: str, body: bytes, headers: dict[str, str]) -> None:
        fwd = self.forwarder
        if self._overflowed and not self._recovering:
            self._dropped.add(subject)
            return
        if not self._recovering and (
            self._queue.qsize() >= fwd.max_queued
            or self._queued_bytes + len(body) > fwd.max_queued_bytes
        ):
            self._overflow()
            self._dropped.add(subject)
            return
        self._queued_bytes += len(body)
        self._queue.put_nowait(_Publish(subject, body, self._with_id(headers)))

    def _overflow(self) -> None:
        """Drop what waits (the server has been away too long): remember which subjects it
        touched; ``_recover`` sets things right once the server takes a message again."""
        self.overflows += 1
        self.overflowed.set()
        log.warning(
            "pi_ask_sdk.fleet: Pi %d: more than %d messages (%d bytes) wait for the NATS server: "
            "dropped; the bridges' view of this Pi is reset (a new epoch) when it is back",
            self.pid,
            self._queue.qsize(),
            self._queued_bytes,
        )
        self._overflowed = True
        while not self._queue.empty():
            item = self._queue.get_nowait()
            if item is not None:
                self._dropped.add(item.subject)
        self._queued_bytes = 0
        # Taken once the message being published now is stored: the server is back then.
        self._queue.put_nowait(_RECOVER)

    def _recover(self) -> None:
        """After an overflow, the server takes messages again: the Pi's state with a new epoch
        (or gone, if it ended meanwhile), ``gone`` for each dropped form not open now, and the
        forms open now again."""
        self._overflowed = False
        self._recovering = True  # (not bounded: the open forms are bounded by Pi's)
        try:
            self._republish()
        finally:
            self._recovering = False

    def _republish(self) -> None:
        dropped, self._dropped = self._dropped, set()
        flows = {s for s in dropped if ".flow." in s}
        if self._ended.is_set():
            for subject in sorted(flows | set(self._open_bodies)):
                self._put(subject, b"{}", {Header.KIND: "gone"})
            self._open_bodies.clear()
            self._publish_state("gone", "the Pi exited or its relay closed")
            return
        self.epoch = secrets.token_hex(6)
        self._publish_state("up")
        for subject in sorted(flows - set(self._open_bodies)):
            self._put(subject, b"{}", {Header.KIND: "gone"})
        for subject, (body, headers) in list(self._open_bodies.items()):
            self._put(subject, body, dict(headers))

    def _with_id(self, headers: dict[str, str]) -> dict[str, str]:
        # A re-send after a lost acknowledgement is stored once (the stream's duplicate window).
        self._seq += 1
        headers[Header.MSG_ID] = f"{self.forwarder.forwarder_id}.{self.pid}.{self._seq}"
        return headers

    async def _publish_loop(self) -> None:
        """One message at a time, in order, each until the stream stored it: a form's started
        can never land after its completed."""
        fwd = self.forwarder
        while True:
            item = await self._queue.get()
            if item is None:
                return
            if item is _RECOVER:  # (queued after the message the server took last)
                self._recover()
                continue
            if item.core:
                with contextlib.suppress(nats.errors.Error, OSError):
                    await fwd.nc.publish(item.subject, item.body)
                continue
            self._queued_bytes = max(0, self._queued_bytes - len(item.body))
            delay = 0.05
            while True:
                try:
                    await fwd.js.publish(
                        item.subject, item.body, timeout=2.0, headers=dict(item.headers)
                    )
                    break
                except nats.js.errors.APIError as exc:
                    if exc.err_code == JsCode.MESSAGE_TOO_LARGE or "maximum" in str(exc).lower():
                        log.error("pi_ask_sdk.fleet: %s refused: %s", item.subject, exc)
                        break  # will never fit: logged, not retried for ever
                    log.debug("pi_ask_sdk.fleet: publish to %s failed: %r", item.subject, exc)
                except nats.errors.MaxPayloadError as exc:
                    log.error("pi_ask_sdk.fleet: %s too large: %s", item.subject, exc)
                    break
                except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
                    log.debug("pi_ask_sdk.fleet: publish to %s failed: %r", item.subject, exc)
                if fwd.closing:
                    return
                await asyncio.sleep(delay)  # backoff while the server is away
                delay = min(delay * 2, 1.0)


def _bytes(data: object) -> bytes:
    if isinstance(data, msgspec.Raw):
        return bytes(data)
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    return _ENCODER.encode(data)
