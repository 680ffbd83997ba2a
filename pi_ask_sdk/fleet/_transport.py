"""``NatsTransport``: one Pi process of the fleet, reached through NATS JetStream."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections import OrderedDict
from typing import Final, Literal, Protocol

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.aio.subscription import Subscription
from nats.js import JetStreamContext

from pi_ask_core import COMPLETED, STARTED, SUBMIT_RESULT, SubmitEvent
from pi_ask_sdk.errors import ConnectionLost, InvalidUse
from pi_ask_sdk.transports.base import TransportListener

from .connection import max_payload
from .delivery import NOT_SENT, encode_submit
from .errors import FleetPiNotFound, FleetUnavailable
from .follow import Follower
from .protocol import (
    STATE_DECODER,
    TOO_LARGE_DECODER,
    FleetNames,
    Header,
    JsCode,
    PiState,
    decode_body,
    encode_body,
)

log: Final = logging.getLogger("pi_ask_sdk.fleet")

_Phase = Literal["new", "snapshot", "live", "ended", "closed"]
_REPLIES_KEPT: Final = 4096
"""Submits whose reply is still awaited after ``send`` returned (a late verdict is delivered)."""


class FleetConnection(Protocol):
    """What a ``NatsTransport`` needs of its fleet connection (``Fleet`` is one)."""

    idle_heartbeat: float

    @property
    def nc(self) -> Client:
        """The NATS connection."""
        ...

    @property
    def js(self) -> JetStreamContext:
        """Its JetStream context."""
        ...

    @property
    def names(self) -> FleetNames:
        """The fleet's subject, stream and consumer names."""
        ...

    @property
    def url(self) -> str:
        """The NATS server's URL."""
        ...

    @property
    def group(self) -> str | None:
        """The bridge's replica group, or None."""
        ...

    async def open(self) -> None:
        """Connect (a transport that owns its connection opens it)."""
        ...

    async def close(self) -> None:
        """Disconnect."""
        ...

    def forwarder_alive(self, host: str) -> bool:
        """Whether ``host``'s forwarder heartbeats (``Fleet.forwarder_alive``)."""
        ...

    async def wait_forwarder(self, host: str, timeout: float) -> bool:
        """Whether it does now or within ``timeout`` s (``Fleet.wait_forwarder``)."""
        ...

    async def next_forwarder_beat(self, host: str, timeout: float) -> bool:
        """Whether it heartbeats again within ``timeout`` s (``Fleet.next_forwarder_beat``)."""
        ...

    def owns(self, flow_subject: str) -> bool:
        """Whether this bridge shows that form (its replica group's choice: ``Fleet.owns``)."""
        ...

    def _attach(self, transport: NatsTransport) -> None: ...

    def _detach(self, transport: NatsTransport) -> None: ...


class NatsTransport:
    """A ``Transport`` to the Pi ``pid`` on ``host``, through a ``Fleet``'s NATS connection.

    ``open`` reads the Pi's forms that are open now (its snapshot in the FLOWS stream, delivered
    as replays) and raises ``FleetPiNotFound`` when no forwarder reports that Pi as up, or
    ``FleetUnavailable`` when the snapshot does not come within ``open_timeout`` seconds.
    Afterwards it delivers the Pi's forms live, and the submit-results of its own submits.
    ``ended("session_ended")`` when the forwarder resets the Pi's view (a session end, or a
    relay connection it lost and regained), ``ended("disconnected")`` when the Pi is gone, its
    host's forwarder is silent past ``FleetSettings.forwarder_timeout`` (then ``open`` raises
    ``FleetPiNotFound`` too), or the fleet was closed.

    ``send`` sends the submit to the Pi's host as a core NATS request to its one forwarder,
    which answers with the submit-result (``pi_ask_sdk.fleet.delivery`` draws every case): it
    waits at most ``send_timeout`` seconds for a live forwarder and for the reply (a "no
    responders" is sent again at the forwarder's next heartbeat within that time: a forwarder
    that has just taken the host beats before it takes submits). Raises
    ``FleetPayloadTooLarge`` for a submit over the server's ``max_payload`` and
    ``ConnectionLost`` (``SubmitNotSent``) when it surely did not reach Pi; when it may have (no
    reply in time) it returns, and the submit's result wait decides (``SubmitTimedOut`` at
    worst, never a false "not sent"; a reply that comes later is still delivered).

    In a replica group (``Fleet(..., group=...)``) it shows only the forms its bridge owns
    (``pi_ask_sdk.fleet.groups``): it keeps the others while they are open, and shows each
    as a replay once its group's members change so that it owns it.

    ``owns_fleet=True`` (what ``pi_transport`` makes) opens the fleet connection in ``open``
    and closes it in ``close``: a transport with a connection of its own, for
    ``SyncBridgeClient``, whose loop is private.
    """

    def __init__(
        self,
        fleet: FleetConnection,
        host: str,
        pid: int,
        *,
        open_timeout: float = 10.0,
        send_timeout: float = 5.0,
        owns_fleet: bool = False,
    ) -> None:
        self._fleet = fleet
        self._owns_fleet = owns_fleet
        self._host = host
        self._pid = pid
        self._open_timeout = open_timeout
        self._send_timeout = send_timeout
        self._id = secrets.token_hex(8)
        self._listener: TransportListener | None = None
        self._phase: _Phase = "new"
        self._state: PiState | None = None
        self._snapshot: dict[str, bytes] = {}  # flow subject -> its open started (snapshot)
        # In a replica group: the open forms another member owns (flow subject -> started),
        # and those shown to this bridge (until they end).
        self._kept: dict[str, bytes] = {}
        self._shown: set[str] = set()
        self._flows: Follower | None = None
        self._inbox = ""  # where the submits' replies come, one subject each
        self._replies: Subscription | None = None
        # reply token -> its send's future (None once send returned: a late reply is delivered)
        self._waiting: OrderedDict[str, asyncio.Future[Msg] | None] = OrderedDict()
        self._sends = 0  # (each submit's reply subject counts them)

    # --- introspection ---

    @property
    def host(self) -> str:
        """The host id of the Pi this transport follows."""
        return self._host

    @property
    def pid(self) -> int:
        """The pid of the Pi this transport follows (on its host)."""
        return self._pid

    @property
    def transport_id(self) -> str:
        """This transport's id (in its connection's log lines)."""
        return self._id

    @property
    def state(self) -> PiState | None:
        """The Pi's last state message (its cwd, Pi version, session, epoch)."""
        return self._state

    @property
    def is_connected(self) -> bool:
        """Whether the transport follows its Pi live (its snapshot delivered)."""
        return self._phase == "live"

    @property
    def is_ended(self) -> bool:
        """Whether the transport followed its Pi and stopped (ended or closed): it will not
        deliver again."""
        return self._phase in ("ended", "closed")

    # --- Transport ---

    async def open(self, listener: TransportListener) -> None:
        """Follow the Pi: its open forms (replayed) from the fleet's snapshot, then live.

        Raises:
            FleetPiNotFound: The fleet has no such Pi on that host.
            FleetUnavailable: The NATS server cannot be reached, or did not answer in time.
            InvalidUse: The transport was opened before.
        """
        if self._phase != "new":
            raise InvalidUse("open", "NatsTransport can be opened once")
        fleet = self._fleet
        if self._owns_fleet:  # its own connection, made on the loop that opens it
            await fleet.open()
        js = fleet.js
        names = fleet.names
        self._listener = listener
        self._phase = "snapshot"
        fleet._attach(self)
        try:
            self._inbox = fleet.nc.new_inbox()
            self._replies = await fleet.nc.subscribe(f"{self._inbox}.*", cb=self._on_reply)
            self._flows = Follower(
                js,
                names.flows_stream,
                names.pi(self._host, self._pid),
                self._on_flow,
                idle_heartbeat=fleet.idle_heartbeat,
            )
            try:
                await self._flows.start(self._open_timeout)
            except asyncio.TimeoutError:
                raise FleetUnavailable(
                    fleet.url,
                    f"the snapshot of Pi {self._pid} on {self._host!r} did not come "
                    f"within {self._open_timeout:g} s",
                ) from None
            except (nats.errors.Error, OSError) as exc:
                raise FleetUnavailable(
                    fleet.url, f"cannot follow Pi {self._pid} ({exc!r})"
                ) from exc
            state = self._state
            if state is None or state.state != "up":
                raise FleetPiNotFound(
                    self._host, self._pid, "" if state is None else state.detail or state.state
                )
            if not await fleet.wait_forwarder(self._host, min(self._open_timeout, 2.0)):
                raise FleetPiNotFound(
                    self._host, self._pid, "its host's forwarder is gone (no heartbeat)"
                )
            snapshot, self._snapshot = self._snapshot, {}
            self._phase = "live"
            for subject, body in snapshot.items():  # the forms open now, as replays
                self._started(listener, subject, body, replay=True)
        except BaseException:
            await self._stop("closed")
            raise

    async def send(self, payload: SubmitEvent) -> None:
        """Send the submit to the Pi's host's one forwarder, and deliver its verdict
        (``pi_ask_sdk.fleet.delivery``).

        Raises:
            ConnectionLost: Not following the Pi, the connection is closed, or the submit
                surely did not reach Pi: no forwarder of the host within ``send_timeout``, or
                the forwarder says it did not give it to Pi.
            FleetPayloadTooLarge: The submit is over the server's ``max_payload``.
        """
        if self._phase != "live":
            raise ConnectionLost("disconnected", f"not following Pi {self._pid} on {self._host!r}")
        fleet = self._fleet
        nc = fleet.nc
        body, headers = encode_body(encode_submit(payload), "the submit", max_payload(nc))
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._send_timeout
        if not await fleet.wait_forwarder(self._host, self._send_timeout):
            raise ConnectionLost(
                "disconnected",
                f"no forwarder of host {self._host!r} within {self._send_timeout:g} s: not sent",
            )
        while True:
            if self._phase != "live":  # (ended or closed while it waited for a heartbeat)
                raise ConnectionLost("disconnected", f"not following Pi {self._pid}: not sent")
            reply = await self._request(nc, body, headers, deadline)
            if reply is None:
                log.info(
                    "pi_ask_sdk.fleet: no reply from the forwarder of %r to a submit for Pi %d "
                    "within %g s; it may still come",
                    self._host,
                    self._pid,
                    self._send_timeout,
                )
                return
            if _no_responders(reply) and await fleet.next_forwarder_beat(
                self._host, deadline - loop.time()
            ):
                # Nobody received it: a forwarder that has just taken the host heartbeats
                # before it takes submits. It beat again: send again (still at most once).
                continue
            not_sent = self._not_sent(reply)
            if not_sent:
                raise ConnectionLost("disconnected", not_sent)
            self._deliver_result(reply)
            return

    async def _request(
        self, nc: Client, body: bytes, headers: dict[str, str], deadline: float
    ) -> Msg | None:
        """Publish the submit with a reply subject of its own; its reply, or None when none
        came by ``deadline`` (one that comes later is still delivered)."""
        loop = asyncio.get_running_loop()
        self._sends += 1
        token = str(self._sends)
        reply: asyncio.Future[Msg] = loop.create_future()
        self._waiting[token] = reply
        while len(self._waiting) > _REPLIES_KEPT:
            self._waiting.popitem(last=False)
        try:
            try:
                await nc.publish(
                    self._fleet.names.submit(self._host, self._pid),
                    body,
                    reply=f"{self._inbox}.{token}",
                    headers=headers or None,
                )
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                raise ConnectionLost("disconnected", "the NATS connection is closed") from None
            except (nats.errors.Error, OSError) as exc:
                # Refused before it left (a full reconnect buffer): nothing sent.
                raise ConnectionLost("disconnected", f"not sent: {exc!r}") from None
            # (asyncio.wait, not wait_for: a cancellation that meets the reply is not lost)
            await asyncio.wait((reply,), timeout=max(0.0, deadline - loop.time()))
        finally:
            if token in self._waiting:
                self._waiting[token] = None  # a late reply is still delivered
        if not reply.done():
            reply.cancel()
            return None
        self._waiting.pop(token, None)
        return reply.result()

    @staticmethod
    def _not_sent(msg: Msg) -> str:
        """Why ``msg`` (a submit's reply) says the submit was not given to Pi, or ``""``."""
        headers = msg.headers or {}
        if _no_responders(msg):
            return "no forwarder took it (it has just gone): not sent"
        if headers.get(Header.STATUS) == NOT_SENT:
            return msg.data.decode("utf-8", "replace") or "not sent"
        return ""

    async def _on_reply(self, msg: Msg) -> None:
        token = msg.subject.rpartition(".")[2]
        if token not in self._waiting:
            return
        reply = self._waiting[token]
        if reply is not None:
            if not reply.done():
                reply.set_result(msg)
            return
        del self._waiting[token]  # a late reply: its send returned, its verdict still counts
        if not self._not_sent(msg):
            self._deliver_result(msg)

    async def close(self) -> None:
        """Stop following; the listener is not called again. Idempotent."""
        await self._stop("closed")

    # --- internals ---

    async def _stop(self, phase: _Phase) -> None:
        if self._phase == "closed":
            return
        self._phase = phase
        self._listener = None
        self._fleet._detach(self)
        if self._flows is not None:
            await self._flows.stop()
        replies, self._replies = self._replies, None
        if replies is not None:
            with contextlib.suppress(nats.errors.Error, OSError):
                await replies.unsubscribe()
        if self._owns_fleet:
            self._owns_fleet = False
            await self._fleet.close()

    def _end(self, reason: Literal["session_ended", "disconnected"]) -> None:
        listener = self._listener
        if reason == "disconnected":
            self._phase = "ended"
            self._listener = None
            asyncio.get_running_loop().create_task(self._stop("ended"))
        if listener is not None:
            listener.ended(reason)

    def _forwarder_gone(self, silent: float) -> None:
        """The host's forwarder has been silent for ``silent`` seconds: nothing this transport
        shows can be answered or vouched for; the Pi is reported gone (``disconnected``)."""
        if self._phase == "live":
            log.info(
                "pi_ask_sdk.fleet: Pi %d on %r: its forwarder is silent for %g s: disconnected",
                self._pid,
                self._host,
                silent,
            )
            self._end("disconnected")

    def _fleet_closed(self) -> None:
        """The fleet's connection closed for good."""
        if self._phase in ("live", "snapshot"):
            self._end("disconnected")

    def _on_flow(self, msg: Msg) -> None:
        names = self._fleet.names
        parsed = names.parse(msg.subject)
        if parsed is None or self._phase in ("ended", "closed"):
            return
        kind = parsed[2]
        body = decode_body(msg)
        if body is None:
            return
        if kind == "state":
            self._on_state(body)
            return
        if kind != "flow":
            return
        flow_kind = (msg.headers or {}).get(Header.KIND)
        if self._phase == "snapshot":
            if flow_kind == "started":
                self._snapshot[msg.subject] = body
            else:
                self._snapshot.pop(msg.subject, None)
                if flow_kind == "too_large":
                    self._too_large(body)
            return
        listener = self._listener
        if listener is None:
            return
        if flow_kind == "started":
            replay = (msg.headers or {}).get(Header.REPLAY) == "1"
            self._started(listener, msg.subject, body, replay=replay)
            return
        self._kept.pop(msg.subject, None)
        shown = msg.subject in self._shown
        self._shown.discard(msg.subject)
        if flow_kind == "completed":
            if shown or self._fleet.group is None:
                listener.message(COMPLETED, body)
        elif flow_kind == "too_large":
            self._too_large(body)
        # "gone": the bridge learns it as the host tells it (a submit gets flow_not_found), or
        # with the new epoch that comes with it; nothing here invents a completion.

    def _started(
        self, listener: TransportListener, subject: str, body: bytes, *, replay: bool
    ) -> None:
        if self._fleet.group is None:
            listener.message(STARTED, body, replay=replay)
        elif subject in self._shown or self._fleet.owns(subject):
            self._shown.add(subject)
            listener.message(STARTED, body, replay=replay)
        else:
            self._kept[subject] = body

    def _members_changed(self) -> None:
        """The replica group's members changed: show each kept form this bridge owns now."""
        listener = self._listener
        if listener is None or self._phase != "live":
            return
        for subject in [s for s in self._kept if self._fleet.owns(s)]:
            body = self._kept.pop(subject)
            self._shown.add(subject)
            listener.message(STARTED, body, replay=True)

    def _on_state(self, body: bytes) -> None:
        try:
            state = STATE_DECODER.decode(body)
        except msgspec.DecodeError as exc:
            log.warning("pi_ask_sdk.fleet: skipped a bad state of Pi %d: %s", self._pid, exc)
            return
        before, self._state = self._state, state
        if self._phase == "snapshot":
            return
        if state.state != "up":
            self._end("disconnected")
        elif before is not None and before.epoch != state.epoch:
            self._kept.clear()  # (that session's forms are over)
            self._shown.clear()
            self._end("session_ended")

    def _too_large(self, body: bytes) -> None:
        try:
            info = TOO_LARGE_DECODER.decode(body)
        except msgspec.DecodeError:
            return
        log.error(
            "pi_ask_sdk.fleet: the form %s (tool call %s) of Pi %d on %r is %d bytes, more than "
            "the NATS server's max_payload of %d even compressed: no bridge can see it (raise "
            "max_payload in nats-server's configuration)",
            info.flow_id,
            info.tool_call_id,
            self._pid,
            self._host,
            info.size,
            info.limit,
        )

    def _deliver_result(self, msg: Msg) -> None:
        listener = self._listener
        body = decode_body(msg)
        if listener is None or self._phase != "live" or body is None:
            return
        listener.message(SUBMIT_RESULT, body)


def _no_responders(msg: Msg) -> bool:
    """Whether ``msg`` is the server's "no responders": nobody received the request."""
    return (msg.headers or {}).get(JsCode.STATUS) == JsCode.NO_RESPONDERS
