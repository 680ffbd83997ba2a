"""``NatsTransport``: one Pi process of the fleet, reached through NATS JetStream."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
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
from nats.js.api import DeliverPolicy

from pi_ask_core import COMPLETED, STARTED, SUBMIT_RESULT, SubmitEvent
from pi_ask_sdk._tasks import within
from pi_ask_sdk.errors import ConnectionLost, InvalidUse
from pi_ask_sdk.transports.base import TransportListener

from .connection import max_payload
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
_ENCODER: Final = msgspec.json.Encoder()
_DIRECT_TIMEOUT: Final = 2.0
"""How long a direct submit waits for its result before it goes through SUBMITS (marked)."""
_DELIVERED_KEPT: Final = 1024
"""Submit ids whose result was delivered, kept to drop the other copy (RESULTS keeps one)."""


def encode_submit(payload: SubmitEvent) -> bytes:
    """A submit's JSON; a lone surrogate is written as a ``\\udXXX`` escape (the host judges it),
    as the relay transport does."""
    try:
        return _ENCODER.encode(payload)
    except UnicodeEncodeError:
        return json.dumps(
            msgspec.to_builtins(payload), ensure_ascii=True, separators=(",", ":")
        ).encode()


def submit_msg_id(transport_id: str, flow_id: str, request_id: str, send: int = 0) -> str:
    """The id of one submit (its ``Nats-Msg-Id`` and ``Pi-Ask-Submit``): the same for each
    re-send of it, so JetStream stores it once within its ``duplicate_window`` and the
    forwarder gives it to Pi once; another for each ``send`` (the transport's count of its
    sends), as a submit sent again under the same request id (after its verdict) is a new
    one for the host."""
    parts = (transport_id, flow_id, request_id, str(send))
    key = "\x00".join(parts).encode("utf-8", "surrogatepass")
    return hashlib.sha256(key).hexdigest()[:40]


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

    ``send`` sends the submit to the Pi's host: while its forwarder heartbeats, as a core NATS
    request the forwarder answers with the submit-result (``send`` returns once it is in);
    else, or when no forwarder takes it, through the SUBMITS stream (de-duplicated by a
    ``Nats-Msg-Id``: ``submit_msg_id`` of this transport, flow, request id and send), waiting
    at most ``send_timeout`` seconds for the stream to store it, re-sending on a timeout. A
    direct request without an answer in 2 s goes through the stream too, marked re-sent
    (docs/fleet.md, Delivery semantics). Raises ``FleetPayloadTooLarge`` for a submit over
    the server's ``max_payload`` and ``ConnectionLost`` when it surely did not reach Pi; when
    it may have (no acknowledgement in time) it returns, and the submit's result wait decides
    (``SubmitTimedOut`` at worst: never a false "not sent").

    ``owns_fleet=True`` (what ``pi_transport`` makes) opens the fleet connection in ``open``
    and closes it in ``close``: a transport with a connection of its own, for
    ``SyncBridgeClient``, whose loop is private.
    """

    __module__ = "pi_ask_sdk.fleet"  # documented where users import it from

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
        self._flows: Follower | None = None
        self._results: Follower | None = None
        self._delivered: OrderedDict[str, None] = OrderedDict()  # submit ids with a result
        self._inbox = ""  # where the direct submits' replies come, one subject each
        self._replies: Subscription | None = None
        self._waiting: dict[str, asyncio.Future[Msg]] = {}
        self._sends = 0  # (a submit's id, and its direct request's reply subject, count them)

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
        """This transport's id: where its submit-results are published."""
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
            # Results first: a submit sent right after open() must find its result's consumer.
            self._results = Follower(
                js,
                names.results_stream,
                names.result(self._host, self._pid, self._id),
                self._on_result,
                policy=DeliverPolicy.NEW,
                idle_heartbeat=fleet.idle_heartbeat,
            )
            await self._results.start(self._open_timeout)
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
            for body in snapshot.values():  # the forms open now, as replays
                listener.message(STARTED, body, replay=True)
        except BaseException:
            await self._stop("closed")
            raise

    async def send(self, payload: SubmitEvent) -> None:
        """Send the submit to the Pi's forwarder: directly (a core NATS request it answers
        with the submit-result) while the forwarder is alive, else through SUBMITS (stored
        once, whatever the re-sends, taken when a forwarder of the host is back).

        Raises:
            ConnectionLost: Not following the Pi, the connection is closed, or the submit
                surely did not reach Pi (not stored, or the forwarder says it was not sent).
        """
        if self._phase != "live":
            raise ConnectionLost("disconnected", f"not following Pi {self._pid} on {self._host!r}")
        fleet = self._fleet
        nc = fleet.nc
        body, headers = encode_body(encode_submit(payload), "the submit", max_payload(nc))
        self._sends += 1
        submit_id = submit_msg_id(self._id, payload.flow_id, payload.request_id, self._sends)
        headers[Header.BRIDGE] = self._id
        headers[Header.SUBMIT] = submit_id
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._send_timeout
        if nc.is_connected and fleet.forwarder_alive(self._host):
            reply = await self._request(nc, body, headers, str(self._sends))
            if reply == "ambiguous":
                # It may have been taken: sent again through SUBMITS, marked, so that the
                # forwarder gives it to Pi only if it has not, and while its form is open.
                headers[Header.RESENT] = "1"
            elif reply != "not_taken":
                if (reply.headers or {}).get(Header.STATUS) is not None:
                    raise ConnectionLost(
                        "disconnected", reply.data.decode("utf-8", "replace") or "not sent"
                    )
                result = decode_body(reply)
                if result is not None:
                    self._deliver_result(submit_id, result)
                return
        headers[Header.MSG_ID] = submit_id
        await self._send_stored(body, headers, deadline)

    async def _request(
        self, nc: Client, body: bytes, headers: dict[str, str], token: str
    ) -> Msg | Literal["not_taken", "ambiguous"]:
        """A direct submit: its reply, ``"not_taken"`` when surely no forwarder took it (no
        responder, or refused before it left), ``"ambiguous"`` when no reply came in time.
        (Not ``nc.request``: its ``wait_for`` may swallow a cancellation that meets the reply,
        which left a cancelled bridge running.)"""
        reply: asyncio.Future[Msg] = asyncio.get_running_loop().create_future()
        self._waiting[token] = reply
        try:
            try:
                await nc.publish(
                    self._fleet.names.direct(self._host, self._pid),
                    body,
                    reply=f"{self._inbox}.{token}",
                    headers=headers,
                )
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                raise ConnectionLost("disconnected", "the NATS connection is closed") from None
            except (nats.errors.Error, OSError):
                return "not_taken"  # refused before it left (a full reconnect buffer)
            await asyncio.wait((reply,), timeout=min(_DIRECT_TIMEOUT, self._send_timeout))
        finally:
            del self._waiting[token]
        if not reply.done():
            reply.cancel()
            return "ambiguous"
        msg = reply.result()
        if (msg.headers or {}).get(JsCode.STATUS) == JsCode.NO_RESPONDERS:
            return "not_taken"  # (the server's answer: nobody subscribes to the subject)
        return msg

    async def _on_reply(self, msg: Msg) -> None:
        reply = self._waiting.get(msg.subject.rpartition(".")[2])
        if reply is not None and not reply.done():
            reply.set_result(msg)

    async def _send_stored(self, body: bytes, headers: dict[str, str], deadline: float) -> None:
        """Publish to SUBMITS until stored (the same ``Nats-Msg-Id`` on every re-send)."""
        fleet = self._fleet
        subject = fleet.names.submit(self._host, self._pid)
        loop = asyncio.get_running_loop()
        last = "no attempt"
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                break
            try:
                await within(  # (a cancellation is never swallowed: pi_ask_sdk._tasks)
                    fleet.js.publish(
                        subject,
                        body,
                        timeout=min(remaining, 2.0),
                        stream=fleet.names.submits_stream,
                        headers=dict(headers),
                    ),
                    remaining + 1.0,
                )
                return
            except (nats.errors.TimeoutError, asyncio.TimeoutError):
                # It may have been stored: re-send with the same id (stored once), and if no
                # answer ever comes, return: the result wait tells (SubmitTimedOut at worst).
                last = "ambiguous"
                continue
            except nats.js.errors.NoStreamResponseError:
                last = "no stream answered (is JetStream up?)"
            except (nats.errors.ConnectionClosedError, nats.errors.ConnectionDrainingError):
                raise ConnectionLost("disconnected", "the NATS connection is closed") from None
            except nats.js.errors.APIError as exc:
                raise ConnectionLost(
                    "disconnected", f"the stream refused the submit: {exc}"
                ) from None
            except (nats.errors.Error, OSError) as exc:
                last = repr(exc)
            if not self.is_connected:  # ended meanwhile
                break
            await asyncio.sleep(min(0.05, max(0.0, deadline - loop.time())))  # backoff
        if last == "ambiguous" or headers.get(Header.RESENT):
            log.warning(
                "pi_ask_sdk.fleet: no acknowledgement of a submit to Pi %d on %r within %g s; "
                "it may still arrive",
                self._pid,
                self._host,
                self._send_timeout,
            )
            return
        raise ConnectionLost("disconnected", f"the submit was not stored: {last}")

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
        for follower in (self._flows, self._results):
            if follower is not None:
                await follower.stop()
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
            listener.message(STARTED, body, replay=replay)
        elif flow_kind == "completed":
            listener.message(COMPLETED, body)
        elif flow_kind == "too_large":
            self._too_large(body)
        # "gone": the bridge learns it as the host tells it (a submit gets flow_not_found), or
        # with the new epoch that comes with it; nothing here invents a completion.

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

    def _on_result(self, msg: Msg) -> None:
        body = decode_body(msg)
        if body is not None:
            self._deliver_result((msg.headers or {}).get(Header.SUBMIT, ""), body)

    def _deliver_result(self, submit_id: str, body: bytes) -> None:
        """One submit-result per submit: its direct reply and its copy in RESULTS are one."""
        listener = self._listener
        if listener is None or self._phase != "live":
            return
        if submit_id:
            delivered = self._delivered
            if submit_id in delivered:
                return
            delivered[submit_id] = None
            if len(delivered) > _DELIVERED_KEPT:
                delivered.popitem(last=False)
        listener.message(SUBMIT_RESULT, body)
