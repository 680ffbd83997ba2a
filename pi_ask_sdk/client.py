"""``BridgeClient``: follow forms, submit responses, and learn their fate.

Everything from the host side is untrusted input: payloads on unknown or legacy channels, with
a ``version`` other than 1, or that do not decode are logged (logger ``pi_ask_sdk``) and skipped,
so one bad payload never stops the well-formed ones. All state lives on the client's event loop;
a transport calling from another thread is handed over with ``call_soon_threadsafe``.

Memory stays bounded however many flows pass through: open flows are dropped when they complete
or the session ends, waiters when they are acknowledged, and the ids of finished flows (needed
to refuse a second submit locally) are kept in a fixed-size most-recent memory.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
from collections.abc import Callable, Mapping
from threading import get_ident
from types import MappingProxyType, TracebackType
from typing import Final, Literal, TypeVar, cast

from msgspec import UNSET
from typing_extensions import Self

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    CompletedEvent,
    Skipped,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    decode_event,
)
from pi_ask_core.events import DecodedEvent

from ._pending import SubmitBook
from ._streams import ClientStream, StreamEnd, StreamSet
from ._waiter import PendingSubmit
from .errors import (
    ClientNotOpen,
    ConnectionLost,
    ConnectionLostReason,
    FlowAlreadyCompleted,
    FlowMismatch,
    InvalidArgument,
    TransportUnavailable,
    UnknownTicket,
)
from .forms import F, FlowId, FlowView, display_text
from .outcomes import (
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    RespondOutcome,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
)
from .responses import Response, UncheckedAnswer, check_pieces
from .transports.base import EndReason, Transport, TransportFactory

__all__ = ["DEFAULT_TIMEOUT", "BridgeClient", "ClientStream"]

log: Final = logging.getLogger("pi_ask_sdk")

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds ``await_result`` waits by default; a host whose session ended never answers."""

_RELAY_MODULE: Final = "pi_ask_sdk.transports.relay"

T = TypeVar("T")


class _Listener:
    """The ``TransportListener`` a client gives its transport (kept off the public API)."""

    __slots__ = ("_client",)

    def __init__(self, client: BridgeClient) -> None:
        self._client = client

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        # The one receiving path: this runs for every payload the host sends.
        client = self._client
        if client._state != "open":
            return
        if get_ident() != client._thread:
            client._hand_over(self._on_loop, channel, data, replay)
            return
        try:
            # The channel's payload decoded (or found to be its exact Struct already) by the
            # core. decode_event gives that channel's own Struct or a Skipped, so the channel
            # picks the handler: every payload takes this path, and the channel already says
            # which Struct it is, so no chain of isinstance tests against the Struct classes
            # runs to find out (bench/README.md has the round trip's figures).
            event: DecodedEvent | Skipped
            if channel == STARTED:
                event = decode_event(STARTED, data)
                if type(event) is not Skipped:
                    client._started(event, replay)
                    return
            elif channel == SUBMIT_RESULT:
                event = decode_event(SUBMIT_RESULT, data)
                if type(event) is not Skipped:
                    client._book.acknowledged(event, client._open)
                    return
            elif channel == COMPLETED:
                event = decode_event(COMPLETED, data)
                if type(event) is not Skipped:
                    client._completed(event)
                    return
            elif channel == SUBMIT:
                return  # submits (ours or another bridge's) are the host's to judge
            else:
                event = decode_event(channel, data)  # a channel of no handler: a Skipped
            if type(event) is Skipped:
                if event.reason in ("legacy_channel", "unknown_channel"):
                    log.debug("pi_ask_sdk: ignored a payload on %s (%s)", channel, event.detail)
                else:
                    log.warning("pi_ask_sdk: skipped a %s payload: %s", channel, event.detail)
        except Exception:  # a bug of ours must not take the transport down
            log.exception("pi_ask_sdk: failed to handle a %s payload; skipped", channel)

    def _on_loop(self, channel: str, data: object, replay: bool) -> None:
        """``message`` again, from the client's loop thread (``_hand_over`` passes positionals)."""
        self.message(channel, data, replay=replay)

    def ended(self, reason: EndReason) -> None:
        self._client._end(reason)


class BridgeClient:
    """A bridge's connection to one host, used as ``async with BridgeClient(transport) as c``.

    ``completed_memory`` bounds how many finished flow ids are remembered for refusing a second
    submit locally (older ones are refused by the host instead, as ``flow_not_found``).

    Args:
        transport: How to reach the host (``BridgeClient.connect()`` makes one for a running
            Pi; ``MemoryTransport`` reaches a ``FlowHost`` in this process).
        request_id_prefix: The start of every request id the client makes up.
        completed_memory: How many finished flow ids to remember (at least 1).

    Raises:
        InvalidArgument: ``request_id_prefix`` is empty or ``completed_memory`` is below 1.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        request_id_prefix: str = "bridge",
        completed_memory: int = 1024,
    ) -> None:
        if not request_id_prefix:
            raise InvalidArgument(
                "BridgeClient", "request_id_prefix", "a non-empty string", request_id_prefix
            )
        if completed_memory < 1:
            raise InvalidArgument(
                "BridgeClient", "completed_memory", "at least 1", completed_memory
            )
        self._transport = transport
        self._prefix = request_id_prefix
        self._memory_size = completed_memory
        self._state: Literal["new", "open", "disconnected", "closed"] = "new"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._open: dict[FlowId, FlowView] = {}
        self._book = SubmitBook(completed_memory)
        self._flow_streams: StreamSet[FlowView] = StreamSet()
        self._event_streams: StreamSet[BridgeEvent] = StreamSet()

    @classmethod
    def connect(
        cls,
        factory: TransportFactory | None = None,
        *,
        request_id_prefix: str = "bridge",
        observer: bool = False,
    ) -> BridgeClient:
        """A client for a running Pi: ``async with BridgeClient.connect() as client``.

        Without ``factory`` it uses ``pi_ask_sdk.transports.relay.discover()``, which finds the
        relay socket of a running Pi; raises ``TransportUnavailable`` when there is none.

        The client tells the relay that it answers forms (while one such client is connected,
        a headless Pi opens its forms for the relay), unless ``observer=True``: it then only
        watches, and a headless Pi does not wait for it. (With your own ``factory``, pass
        ``RelayTransport(..., role="observer")`` instead.)

        The default factory finds the relay at once; the client connects when it is opened
        (``async with`` or ``open()``).

        Args:
            factory: Makes the transport; by default the relay's ``discover``.
            request_id_prefix: The start of every request id the client makes up.
            observer: Only watch forms, never answer them (default factory only).

        Raises:
            TransportUnavailable: No transport can be made: for the default factory
                ``NoRelayFound`` (no running Pi with the relay), ``AmbiguousRelay`` (several),
                ``UnsafeRelayPath``, or no relay transport installed.
            InvalidArgument: ``observer=True`` with a ``factory`` of your own.
        """
        if factory is None:
            try:
                module = importlib.import_module(_RELAY_MODULE)
            except ModuleNotFoundError as exc:
                if exc.name != _RELAY_MODULE:
                    raise
                raise TransportUnavailable(
                    "No relay transport is installed; pass a transport factory to connect()."
                ) from None
            discover = getattr(module, "discover", None)
            if not callable(discover):
                raise TransportUnavailable(f"{_RELAY_MODULE} has no discover() function.")
            make = cast("Callable[..., Transport]", discover)
            transport = make(role="observer") if observer else make()  # (answerer by default)
            return cls(transport, request_id_prefix=request_id_prefix)
        if observer:
            raise InvalidArgument(
                "connect",
                "observer",
                "False with a factory",
                observer,
                message="connect(): observer=True needs the default factory; pass a factory of "
                'RelayTransport(role="observer") instead.',
            )
        return cls(factory(), request_id_prefix=request_id_prefix)

    # --- lifecycle ---

    @property
    def is_open(self) -> bool:
        """Whether the client is open: opened, and neither closed nor disconnected for good."""
        return self._state == "open"

    @property
    def transport(self) -> Transport:
        """The transport the client was made with."""
        return self._transport

    async def open(self) -> None:
        """Connect the transport; forms it replays are open when this returns.

        Raises:
            ClientNotOpen: The client was opened before (a client opens once).
            TransportUnavailable: The transport could not connect (for the relay:
                ``NoRelayFound``, ``AmbiguousRelay``, ``RelayConnectError``...).
        """
        if self._state != "new":
            raise ClientNotOpen("open a client twice")
        self._loop = asyncio.get_running_loop()
        self._thread = get_ident()
        self._state = "open"
        try:
            await self._transport.open(_Listener(self))
        except BaseException:
            self._state = "closed"
            raise

    async def close(self) -> None:
        """Fail pending waits (``ConnectionLost``), end the streams, close the transport."""
        if self._state in ("new", "closed"):
            self._state = "closed"
            return
        self._drop_everything("closed")
        self._state = "closed"
        await self._transport.close()

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- reading ---

    @property
    def open_flows(self) -> Mapping[FlowId, FlowView]:
        """The forms open now (a live read-only view), in the order they started."""
        return MappingProxyType(self._open)

    def flows(self) -> ClientStream[FlowView]:
        """Started forms: those open now (including replayed ones), then each new one.

        Raises:
            ClientNotOpen: The client is not open.
            ConnectionLost: The connection is gone for good (``disconnected``).
        """
        self._require("follow flows")
        return ClientStream(self._flow_streams, list(self._open.values()))

    def events(self) -> ClientStream[BridgeEvent]:
        """Every event as ``FlowStarted | FlowCompleted | SessionEnded``, starting with a
        ``FlowStarted`` for each form open now. Completions may come without a ``FlowStarted``.

        Raises:
            ClientNotOpen: The client is not open.
            ConnectionLost: The connection is gone for good (``disconnected``).
        """
        self._require("follow events")
        first: list[BridgeEvent] = [FlowStarted(view) for view in self._open.values()]
        return ClientStream(self._event_streams, first)

    # --- submitting ---

    async def submit(
        self,
        flow: FlowView[F],
        response: Response[F] | UncheckedAnswer[F],
        *,
        request_id: str | None = None,
    ) -> SubmitTicket:
        """Send ``response`` for ``flow`` and return the ticket to ``await_result`` with.

        The waiter is armed before the submit is emitted (an in-process host acknowledges inside
        the emit). Refused locally, with nothing sent: a response, or any piece of an answer,
        taken from another flow (``FlowMismatch``), a flow that already accepted this client's
        submit or completed (``FlowAlreadyAnswered`` / ``FlowAlreadyCompleted``), a flow dropped
        when the session ended (``ConnectionLost``). ``request_id`` defaults to a fresh random
        id: ``request_id_prefix``, ``-`` and 128 bits from the OS as 32 hex digits. The request
        id of this client's submit for the same flow whose verdict has not come (it was
        ``SubmitTimedOut``) sends it again, the retry a host or a forwarder applies at most
        once; both tickets get the one verdict.

        Args:
            flow: The form the response answers (the view the client handed out).
            response: An ``Answer`` built from ``flow``, a ``Cancel``, or (tests only) an
                ``UncheckedAnswer``.
            request_id: The submit's ``requestId``; a fresh random one by default.

        Raises:
            FlowMismatch: ``response``, or a piece of it, belongs to another flow.
            FlowAlreadyAnswered: This client's submit for the flow was accepted.
            FlowAlreadyCompleted: The flow completed.
            ConnectionLost: The flow was dropped with its session, or the connection is gone.
            InvalidRequestId: ``request_id`` is empty, in use for another flow, or not UTF-8
                safe.
            ClientNotOpen: The client is not open.
        """
        ticket, fresh = self._prepare(flow, response, request_id)
        rid, flow_id = ticket.request_id, ticket.flow_id
        try:
            await self._transport.send(
                SubmitEvent(request_id=rid, flow_id=flow_id, response=response.to_wire())
            )
        except BaseException:
            if fresh:  # (a retry's waiter stays: the first send may have been applied)
                self._book.disarm(ticket._pending)
            raise
        return ticket

    async def await_result(
        self, ticket: SubmitTicket, *, timeout: float = DEFAULT_TIMEOUT
    ) -> SubmitOutcome:
        """The outcome of ``ticket``'s submit (matched by ``requestId`` and ``flowId``), as a
        value: ``SubmitAccepted`` (with the flow's completion: it waits for both the
        ``submit-result`` and ``completed``, in either order), ``SubmitRejected``,
        ``SubmitTimedOut`` after ``timeout`` seconds in all (the ticket stays valid for another
        wait) or ``SubmitLost`` when the session ended, the connection dropped or the client
        closed first. A timed-out or lost submit is never reported as an answer or a cancel.

        Raises only for a programming error: ``UnknownTicket`` for another client's ticket.

        Args:
            ticket: What ``submit`` returned.
            timeout: Seconds to wait, in all, for the verdict and the completion.

        Raises:
            UnknownTicket: ``ticket`` is another client's.
        """
        pending = ticket._pending
        if pending.owner is not self:
            raise UnknownTicket(ticket.request_id)
        outcome = _settled(ticket)
        if outcome is not None:
            return outcome
        # The waiter's loop (this client's): asyncio.get_running_loop() makes a getpid() system
        # call on each call before 3.12, once per remote round trip here.
        deadline = pending._loop.time() + timeout
        if pending.verdict is None:
            if not await pending.wait_verdict(timeout):
                return SubmitTimedOut(ticket, timeout)
            outcome = _settled(ticket)
            if outcome is not None:
                return outcome
        # Accepted; its completion is still to come.
        if not await pending.wait_ending(deadline):
            return SubmitTimedOut(ticket, timeout, acknowledged=True)
        outcome = _settled(ticket)
        assert outcome is not None
        return outcome

    async def respond(
        self,
        flow: FlowView[F],
        response: Response[F] | UncheckedAnswer[F],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        request_id: str | None = None,
    ) -> RespondOutcome:
        """``submit`` then ``await_result``: every outcome is a value. A flow that is already
        gone (its session ended, the connection dropped, or it completed meanwhile) is
        ``SubmitNotSent``. Raises only for programming errors: ``FlowMismatch``,
        ``FlowAlreadyAnswered`` (this client's own submit for the flow was accepted, before or
        after the flow completed), ``InvalidRequestId``, ``ClientNotOpen``.

        Args:
            flow: The form the response answers.
            response: An ``Answer`` built from ``flow``, a ``Cancel``, or (tests only) an
                ``UncheckedAnswer``.
            timeout: Seconds to wait, in all, for the verdict and the completion.
            request_id: The submit's ``requestId``; a fresh random one by default.

        Raises:
            FlowMismatch: ``response``, or a piece of it, belongs to another flow.
            FlowAlreadyAnswered: This client's submit for the flow was accepted.
            InvalidRequestId: ``request_id`` is empty, in use for another flow, or not UTF-8
                safe.
            ClientNotOpen: The client is not open.
        """
        try:
            ticket = await self.submit(flow, response, request_id=request_id)
        except ConnectionLost as lost:
            return SubmitNotSent(flow.flow_id, lost.reason)
        except FlowAlreadyCompleted:
            return SubmitNotSent(flow.flow_id, "flow_completed")
        # Settled inside the send (an in-process host): what await_result would return first,
        # without its coroutine. The ticket is this client's own.
        outcome = _settled(ticket)
        if outcome is not None:
            return outcome
        return await self.await_result(ticket, timeout=timeout)

    def _prepare(
        self,
        flow: FlowView[F],
        response: Response[F] | UncheckedAnswer[F],
        request_id: str | None,
    ) -> tuple[SubmitTicket, bool]:
        """The checks made before sending, and the armed waiter's ticket (True: a new waiter;
        False: a retry's, shared with the submit sent before under its request id)."""
        self._require("submit")
        flow_id = flow.flow_id
        if type(response) is UncheckedAnswer:
            if response.flow_id != flow_id:
                raise FlowMismatch(flow_id, response.flow_id)
        else:
            check_pieces(flow_id, response)
        book = self._book
        book.refuse_closed(flow_id)
        again = book.resend(request_id, flow_id)
        if again is not None:
            return SubmitTicket(again.request_id, flow_id, response.kind, again), False
        rid = book.request_id(self._prefix, request_id)
        loop = self._loop
        assert loop is not None  # set by open(), checked by _require
        pending = book.arm(self, rid, flow_id, loop)
        return SubmitTicket(rid, flow_id, response.kind, pending), True

    # --- internals ---

    def _require(self, action: str) -> None:
        if self._state == "disconnected":
            raise ConnectionLost("disconnected")
        if self._state != "open":
            raise ClientNotOpen(action)

    def _end(self, reason: EndReason) -> None:
        if self._state != "open":
            return
        if get_ident() != self._thread:
            self._hand_over(self._end, reason)
            return
        self._drop_everything(reason)
        if reason == "disconnected":
            self._state = "disconnected"

    def _hand_over(self, callback: Callable[..., None], *args: object) -> None:
        loop = self._loop
        if loop is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(callback, *args)

    def _started(self, event: StartedEvent, replay: bool) -> None:
        view = FlowView.from_started(event, replay=replay)
        flow_id = view.flow_id
        before = self._open.get(flow_id)
        self._book.closed.pop(flow_id, None)  # a re-announced flow id is a new form (spec §3.7)
        self._open[flow_id] = view
        if before is not None and (before.replay or replay) and before.same_form(view):
            return  # the live announcement of a form already replayed, or the reverse
        self._flow_streams.push(view)
        if self._event_streams:
            self._event_streams.push(FlowStarted(view))

    def _completed(self, event: CompletedEvent) -> None:
        flow_id = FlowId(event.flow_id)
        accepted = self._book.closed.get(flow_id)
        if (accepted == "completed" or accepted == "answered") and flow_id not in self._open:
            # A flow completes once; a repeated event (a host or relay emitting it twice) is
            # not news. A re-announced flow id is a new form and clears this mark.
            log.debug("pi_ask_sdk: ignored a repeated completed event for %s", flow_id)
            return
        view = self._open.pop(flow_id, None)
        if view is None and isinstance(accepted, PendingSubmit):
            view = accepted.flow
        tool_call_id = event.tool_call_id
        completion = FlowCompleted(
            flow_id,
            None if tool_call_id is UNSET else tool_call_id,
            event.source,
            event.result,
            event.completed_at,
            view,
        )
        self._book.completed(flow_id, completion)
        self._publish(completion)

    def _drop_everything(self, reason: ConnectionLostReason) -> None:
        self._book.lose_all(reason)
        if reason == "session_ended":
            for flow_id in self._open:
                self._book.remember(flow_id, "session_ended")
        self._open.clear()
        if reason != "closed":
            self._publish(SessionEnded(reason))
        if reason != "session_ended":
            end = StreamEnd(reason)
            self._flow_streams.push(end)
            self._event_streams.push(end)

    def _publish(self, event: BridgeEvent) -> None:
        if self._event_streams:
            self._event_streams.push(event)


def _settled(ticket: SubmitTicket) -> SubmitOutcome | None:
    """The outcome of ``ticket``'s submit if it is known now, else ``None``."""
    pending = ticket._pending
    verdict = pending.verdict
    if verdict is None:
        return None
    if isinstance(verdict, str):
        return SubmitLost(ticket, verdict)
    if not isinstance(verdict, SubmitAck):
        return SubmitRejected(ticket, verdict.error, display_text(verdict.message))
    completion = pending.ending
    if completion is None:
        return None
    if isinstance(completion, str):
        return SubmitLost(ticket, completion, acknowledged=True)
    return SubmitAccepted(ticket, completion)
