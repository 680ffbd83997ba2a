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
import threading
import uuid
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from types import MappingProxyType, TracebackType
from typing import Final, Generic, Literal, TypeAlias, TypeVar, cast

from typing_extensions import Self

from pi_ask_core import (
    SUBMIT,
    CompletedEvent,
    Skipped,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    SubmitResultEvent,
    UnsetType,
    decode_event,
)

from .errors import (
    ClientNotOpen,
    ConnectionLost,
    ConnectionLostReason,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    FlowMismatch,
    InvalidRequestId,
    TransportUnavailable,
    UnknownTicket,
    WaitTimeout,
)
from .forms import FlowId, FlowView
from .outcomes import (
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    PendingSubmit,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
)
from .responses import Response
from .transports.base import EndReason, Transport, TransportFactory

__all__ = ["DEFAULT_TIMEOUT", "BridgeClient", "ClientStream"]

log: Final = logging.getLogger("pi_ask_sdk")

DEFAULT_TIMEOUT: Final = 30.0
"""Seconds ``await_result`` waits by default; a host whose session ended never answers."""

_RELAY_MODULE: Final = "pi_ask_sdk.transports.relay"

T = TypeVar("T")
_Closed: TypeAlias = PendingSubmit | Literal["completed", "session_ended"]
"""Why a flow cannot take a submit: accepted (waiting for ``completed``), completed, or gone."""


class _StreamEnd:
    __slots__ = ("reason",)

    def __init__(self, reason: ConnectionLostReason) -> None:
        self.reason: ConnectionLostReason = reason


class ClientStream(Generic[T]):
    """An async iterator over what the client receives from the moment it was made.

    It starts with the forms open at that moment, then follows live events. It ends when the
    client closes or the connection is lost (``async for`` stops; ``next`` raises
    ``ConnectionLost``). Undelivered items are buffered; ``aclose()`` (or dropping the stream)
    stops buffering.
    """

    def __init__(self, owner: weakref.WeakSet[ClientStream[T]], first: list[T]) -> None:
        self._owner = owner
        self._queue: asyncio.Queue[T | _StreamEnd] = asyncio.Queue()
        self._ended: _StreamEnd | None = None
        for item in first:
            self._queue.put_nowait(item)
        owner.add(self)

    def _push(self, item: T | _StreamEnd) -> None:
        if self._ended is None:
            self._queue.put_nowait(item)
            if isinstance(item, _StreamEnd):
                self._ended = item
                self._owner.discard(self)

    def __aiter__(self) -> Self:
        return self

    async def __anext__(self) -> T:
        if self._ended is not None and self._queue.empty():
            raise StopAsyncIteration
        item = await self._queue.get()
        if isinstance(item, _StreamEnd):
            raise StopAsyncIteration
        return item

    async def next(self, *, timeout: float) -> T:
        """The next item, waiting at most ``timeout`` seconds (``WaitTimeout`` after that)."""
        if not self._queue.empty():
            # Ready now: no timer. (On 3.12+ wait_for schedules one even for a ready item, and
            # a loop that never idles keeps every cancelled timer until it next runs.)
            item = self._queue.get_nowait()
            if not isinstance(item, _StreamEnd):
                return item
            raise ConnectionLost(item.reason, "the stream has ended")
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except asyncio.TimeoutError:
            raise WaitTimeout("the next item of the stream", timeout) from None
        except StopAsyncIteration:
            reason = self._ended.reason if self._ended is not None else "closed"
            raise ConnectionLost(reason, "the stream has ended") from None

    async def aclose(self) -> None:
        self._push(_StreamEnd("closed"))

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()


class _Listener:
    """The ``TransportListener`` a client gives its transport (kept off the public API)."""

    __slots__ = ("_client",)

    def __init__(self, client: BridgeClient) -> None:
        self._client = client

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        self._client._receive(channel, data, replay)

    def ended(self, reason: EndReason) -> None:
        self._client._end(reason)


class BridgeClient:
    """A bridge's connection to one host, used as ``async with BridgeClient(transport) as c``.

    ``completed_memory`` bounds how many finished flow ids are remembered for refusing a second
    submit locally (older ones are refused by the host instead, as ``flow_not_found``).
    """

    def __init__(
        self,
        transport: Transport,
        *,
        request_id_prefix: str = "bridge",
        completed_memory: int = 1024,
    ) -> None:
        if not request_id_prefix:
            raise ValueError("request_id_prefix must not be empty")
        if completed_memory < 1:
            raise ValueError("completed_memory must be at least 1")
        self._transport = transport
        self._prefix = request_id_prefix
        self._memory_size = completed_memory
        self._state: Literal["new", "open", "disconnected", "closed"] = "new"
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: int | None = None
        self._open: dict[FlowId, FlowView] = {}
        self._pending: dict[str, PendingSubmit] = {}
        self._closed: OrderedDict[FlowId, _Closed] = OrderedDict()
        self._flow_streams: weakref.WeakSet[ClientStream[FlowView]] = weakref.WeakSet()
        self._event_streams: weakref.WeakSet[ClientStream[BridgeEvent]] = weakref.WeakSet()

    @classmethod
    def connect(
        cls, factory: TransportFactory | None = None, *, request_id_prefix: str = "bridge"
    ) -> BridgeClient:
        """A client for a running Pi: ``async with BridgeClient.connect() as client``.

        Without ``factory`` it uses ``pi_ask_sdk.transports.relay.discover()``, which finds the
        relay socket of a running Pi; raises ``TransportUnavailable`` when there is none.
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
            factory = cast(TransportFactory, discover)
        return cls(factory(), request_id_prefix=request_id_prefix)

    # --- lifecycle ---

    @property
    def is_open(self) -> bool:
        return self._state == "open"

    @property
    def transport(self) -> Transport:
        return self._transport

    async def open(self) -> None:
        """Connect the transport; forms it replays are open when this returns."""
        if self._state != "new":
            raise ClientNotOpen("open a client twice")
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
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
        """Started forms: those open now (including replayed ones), then each new one."""
        self._require("follow flows")
        return ClientStream(self._flow_streams, list(self._open.values()))

    def events(self) -> ClientStream[BridgeEvent]:
        """Every event as ``FlowStarted | FlowCompleted | SessionEnded``, starting with a
        ``FlowStarted`` for each form open now. Completions may come without a ``FlowStarted``."""
        self._require("follow events")
        first: list[BridgeEvent] = [FlowStarted(view) for view in self._open.values()]
        return ClientStream(self._event_streams, first)

    # --- submitting ---

    async def submit(
        self, flow: FlowView, response: Response, *, request_id: str | None = None
    ) -> SubmitTicket:
        """Send ``response`` for ``flow`` and return the ticket to ``await_result`` with.

        The waiter is armed before the submit is emitted (an in-process host acknowledges inside
        the emit). Refused locally, with nothing sent: a response built for another flow
        (``FlowMismatch``), a flow that already accepted a submit or completed
        (``FlowAlreadyAnswered`` / ``FlowAlreadyCompleted``), a flow dropped when the session
        ended (``ConnectionLost``). ``request_id`` defaults to a fresh uuid4-based id.
        """
        self._require("submit")
        flow_id = flow.flow_id
        if response.flow_id != flow_id:
            raise FlowMismatch(flow_id, response.flow_id)
        closed = self._closed.get(flow_id)
        if closed == "completed":
            raise FlowAlreadyCompleted(flow_id)
        if closed == "session_ended":
            raise ConnectionLost("session_ended", f'flow "{flow_id}" was dropped with its session')
        if isinstance(closed, PendingSubmit):
            raise FlowAlreadyAnswered(flow_id)
        rid = self._request_id(request_id)
        loop = self._loop
        assert loop is not None  # set by open(), checked by _require
        pending = PendingSubmit(self, rid, flow_id, loop.create_future())
        self._pending[rid] = pending
        ticket = SubmitTicket(rid, flow_id, response.kind, pending)
        payload = SubmitEvent(request_id=rid, flow_id=flow_id, response=response.to_wire())
        try:
            await self._transport.send(payload)
        except BaseException:
            if self._pending.get(rid) is pending:
                del self._pending[rid]
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
        """
        pending = ticket._pending
        if pending.owner is not self:
            raise UnknownTicket(ticket.request_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        if not await _settled(pending.future, timeout):
            return SubmitTimedOut(ticket, timeout)
        verdict = pending.future.result()
        if isinstance(verdict, str):
            return SubmitLost(ticket.flow_id, verdict, ticket)
        if not isinstance(verdict, SubmitAck):
            return SubmitRejected(ticket, verdict.error, verdict.message)
        if not await _settled(pending.completed, deadline - loop.time()):
            return SubmitTimedOut(ticket, timeout, acknowledged=True)
        completion = pending.completed.result()
        if isinstance(completion, str):
            return SubmitLost(ticket.flow_id, completion, ticket, acknowledged=True)
        return SubmitAccepted(ticket, completion)

    async def respond(
        self,
        flow: FlowView,
        response: Response,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        request_id: str | None = None,
    ) -> SubmitOutcome:
        """``submit`` then ``await_result``: every outcome is a value. A flow that is already
        gone (its session ended, the connection dropped, or it completed meanwhile) is
        ``SubmitLost`` with nothing sent. Raises only for programming errors: ``FlowMismatch``,
        ``FlowAlreadyAnswered`` (this client's submit was already accepted),
        ``InvalidRequestId``, ``ClientNotOpen``."""
        try:
            ticket = await self.submit(flow, response, request_id=request_id)
        except ConnectionLost as lost:
            return SubmitLost(flow.flow_id, lost.reason)
        except FlowAlreadyCompleted:
            return SubmitLost(flow.flow_id, "flow_completed")
        return await self.await_result(ticket, timeout=timeout)

    # --- internals ---

    def _require(self, action: str) -> None:
        if self._state == "disconnected":
            raise ConnectionLost("disconnected")
        if self._state != "open":
            raise ClientNotOpen(action)

    def _request_id(self, request_id: str | None) -> str:
        if request_id is None:
            return f"{self._prefix}-{uuid.uuid4().hex}"
        if not isinstance(request_id, str) or not request_id:
            raise InvalidRequestId(str(request_id), "must be a non-empty string")
        if request_id in self._pending:
            raise InvalidRequestId(request_id, "is already used by a pending submit")
        if not request_id.isascii():
            try:
                request_id.encode("utf-8")
            except UnicodeEncodeError:
                # The host echoes it with U+FFFD in place of the surrogate: it could never match.
                raise InvalidRequestId(
                    request_id, "holds a lone surrogate (the host would echo it changed)"
                ) from None
        return request_id

    def _on_loop(self) -> bool:
        return threading.get_ident() == self._thread

    def _receive(self, channel: str, data: object, replay: bool) -> None:
        if self._state != "open":
            return
        if not self._on_loop():
            self._hand_over(self._receive, channel, data, replay)
            return
        try:
            self._dispatch(channel, data, replay)
        except Exception:  # a bug of ours must not take the transport down
            log.exception("pi_ask_sdk: failed to handle a %s payload; skipped", channel)

    def _end(self, reason: EndReason) -> None:
        if self._state != "open":
            return
        if not self._on_loop():
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

    def _dispatch(self, channel: str, data: object, replay: bool) -> None:
        if channel == SUBMIT:
            return  # submits (ours or another bridge's) are the host's to judge
        event = decode_event(channel, data)
        if isinstance(event, StartedEvent):
            self._started(event, replay)
        elif isinstance(event, (SubmitAck, SubmitRejection)):
            self._acknowledged(event)
        elif isinstance(event, CompletedEvent):
            self._completed(event)
        elif isinstance(event, Skipped):
            if event.reason in ("legacy_channel", "unknown_channel"):
                log.debug("pi_ask_sdk: ignored a payload on %s (%s)", channel, event.detail)
            else:
                log.warning("pi_ask_sdk: skipped a %s payload: %s", channel, event.detail)

    def _started(self, event: StartedEvent, replay: bool) -> None:
        view = FlowView.from_started(event, replay=replay)
        flow_id = view.flow_id
        before = self._open.get(flow_id)
        self._closed.pop(flow_id, None)  # a re-announced flow id is a new form (spec §3.7)
        self._open[flow_id] = view
        if before is not None and (before.replay or replay) and before.same_form(view):
            return  # the live announcement of a form already replayed, or the reverse
        for flow_stream in list(self._flow_streams):
            flow_stream._push(view)
        self._publish(FlowStarted(view))

    def _completed(self, event: CompletedEvent) -> None:
        flow_id = FlowId(event.flow_id)
        accepted = self._closed.get(flow_id)
        if accepted == "completed" and flow_id not in self._open:
            # A flow completes once; a repeated event (a host or relay emitting it twice) is
            # not news. A re-announced flow id is a new form and clears this mark.
            log.debug("pi_ask_sdk: ignored a repeated completed event for %s", flow_id)
            return
        view = self._open.pop(flow_id, None)
        if view is None and isinstance(accepted, PendingSubmit):
            view = accepted.flow
        completion = FlowCompleted(
            flow_id=flow_id,
            tool_call_id=None if isinstance(event.tool_call_id, UnsetType) else event.tool_call_id,
            source=event.source,
            result=event.result,
            completed_at=event.completed_at,
            flow=view,
        )
        if isinstance(accepted, PendingSubmit):
            accepted.completion = completion
        for pending in self._pending.values():
            if pending.flow_id == flow_id:
                pending.completion = completion
        self._remember(flow_id, "completed")
        self._publish(completion)

    def _acknowledged(self, ack: SubmitResultEvent) -> None:
        pending = self._pending.get(ack.request_id)
        if pending is None or pending.flow_id != ack.flow_id:
            return  # another bridge's submit (acknowledgements are broadcast)
        del self._pending[ack.request_id]
        flow_id = pending.flow_id
        if isinstance(ack, SubmitAck):
            pending.flow = self._open.pop(flow_id, None)
            if self._closed.get(flow_id) != "completed":
                self._remember(flow_id, pending)
        elif ack.error == "flow_not_found":
            self._open.pop(flow_id, None)
        if not pending.future.done():
            pending.future.set_result(ack)

    def _remember(self, flow_id: FlowId, closed: _Closed) -> None:
        self._closed[flow_id] = closed
        self._closed.move_to_end(flow_id)
        while len(self._closed) > self._memory_size:
            self._closed.popitem(last=False)

    def _drop_everything(self, reason: ConnectionLostReason) -> None:
        pending, self._pending = self._pending, {}
        for waiter in pending.values():
            waiter.lose(reason)
        for closed in self._closed.values():
            if isinstance(closed, PendingSubmit):  # accepted, its completion still to come
                closed.lose(reason)
        if reason == "session_ended":
            for flow_id in self._open:
                self._remember(flow_id, "session_ended")
        self._open.clear()
        if reason != "closed":
            self._publish(SessionEnded(reason))
        if reason != "session_ended":
            end = _StreamEnd(reason)
            for flow_stream in list(self._flow_streams):
                flow_stream._push(end)
            for event_stream in list(self._event_streams):
                event_stream._push(end)

    def _publish(self, event: BridgeEvent) -> None:
        for stream in list(self._event_streams):
            stream._push(event)


async def _settled(future: asyncio.Future[T], timeout: float) -> bool:
    """Whether ``future`` is done within ``timeout`` seconds (never cancelling it)."""
    if future.done():  # ready now: no timer (see ClientStream.next)
        return True
    try:
        await asyncio.wait_for(asyncio.shield(future), max(timeout, 0.0))
    except asyncio.TimeoutError:
        return False
    return True
