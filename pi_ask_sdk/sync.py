"""``SyncBridgeClient``: the ``BridgeClient`` for code that is not async (desktop apps, WSGI).

The async client runs on a private event loop in a daemon thread; each call is handed to it and
waited for with a bound, so a blocking caller can never hang forever. Results and errors are the
async client's own (``respond`` / ``await_result`` return ``SubmitOutcome``, a closed union that
includes ``SubmitTimedOut`` and ``SubmitLost``), plus ``WaitTimeout`` when the loop itself does
not answer in time for anything else.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Coroutine, Iterator, Mapping
from types import TracebackType
from typing import Final, Generic, TypeVar

from typing_extensions import Self

from .client import DEFAULT_TIMEOUT, BridgeClient, ClientStream
from .errors import (
    ClientNotOpen,
    ConnectionLost,
    FlowAlreadyCompleted,
    InvalidUse,
    WaitTimeout,
)
from .forms import F, FlowId, FlowView
from .outcomes import (
    BridgeEvent,
    RespondOutcome,
    SubmitNotSent,
    SubmitOutcome,
    SubmitTicket,
    SubmitTimedOut,
)
from .responses import Response, UncheckedAnswer
from .transports.base import Transport, TransportFactory

__all__ = ["SyncBridgeClient", "SyncClientStream"]

T = TypeVar("T")

_GRACE: Final = 5.0
"""Extra seconds the calling thread allows the loop beyond an operation's own timeout."""

_SLICE: Final = 1.0
"""Iteration waits in slices this long, so no single cross-thread wait is unbounded."""


class SyncClientStream(Generic[T]):
    """A blocking view of a ``ClientStream``: ``next(timeout=...)`` returns the next item, and
    ``for item in stream:`` iterates until the stream ends (the client closed or the connection
    was lost for good). ``idle_timeout`` (seconds) makes the iteration raise ``WaitTimeout``
    when nothing arrives for that long; without it the loop waits for the next item as long as
    the stream lives, in bounded slices (Ctrl-C is honoured between them).

    Made by ``SyncBridgeClient.flows()`` and ``events()``.
    """

    def __init__(
        self, owner: SyncBridgeClient, stream: ClientStream[T], *, idle_timeout: float | None = None
    ) -> None:
        self._owner = owner
        self._stream = stream
        self._idle_timeout = idle_timeout

    def next(self, *, timeout: float) -> T:
        """The next item.

        Args:
            timeout: Seconds to wait for it.

        Raises:
            WaitTimeout: No item came within ``timeout`` (the stream goes on).
            ConnectionLost: The stream has ended.
            ClientNotOpen: The client is closed.
        """
        return self._owner._run(self._stream.next(timeout=timeout), timeout + _GRACE, "an item")

    def __iter__(self) -> Iterator[T]:
        return self

    def __next__(self) -> T:
        waited = 0.0
        while True:
            step = _SLICE
            if self._idle_timeout is not None:
                step = min(step, self._idle_timeout - waited)
                if step <= 0:
                    raise WaitTimeout("the next item of the stream", self._idle_timeout)
            try:
                return self.next(timeout=step)
            except WaitTimeout:
                waited += step
            except ConnectionLost:
                raise StopIteration from None

    def close(self) -> None:
        """End the stream: nothing more is buffered, and iteration stops."""
        self._owner._run(self._stream.aclose(), _GRACE, "the stream to close")


class SyncBridgeClient:
    """``with SyncBridgeClient(transport) as client: flow = client.flows().next(timeout=60)``.

    ``timeout`` bounds start-up, shutdown and sending a submit. Objects returned (views,
    tickets, outcomes) are immutable and safe to use from any thread. The client runs a
    ``BridgeClient`` on an event loop in a thread of its own; its methods must not be called
    from that thread (``InvalidUse``).

    Args:
        transport: How to reach the host (as for ``BridgeClient``).
        timeout: Seconds allowed for start-up, shutdown, a stream to be made and a submit to
            be sent (``WaitTimeout`` past it).
        request_id_prefix: The start of every request id the client makes up.
        completed_memory: How many finished flow ids to remember (at least 1).

    Raises:
        InvalidArgument: ``request_id_prefix`` is empty or ``completed_memory`` is below 1.
    """

    def __init__(
        self,
        transport: Transport,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        request_id_prefix: str = "bridge",
        completed_memory: int = 1024,
    ) -> None:
        self._timeout = timeout
        self._client = BridgeClient(
            transport, request_id_prefix=request_id_prefix, completed_memory=completed_memory
        )
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def connect(
        cls,
        factory: TransportFactory | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        request_id_prefix: str = "bridge",
        completed_memory: int = 1024,
    ) -> SyncBridgeClient:
        """A client for a running Pi: ``with SyncBridgeClient.connect() as client:``.

        Like ``BridgeClient.connect``: without ``factory`` it finds the relay of the one running
        Pi (``pi_ask_sdk.transports.relay.discover``) and raises ``TransportUnavailable`` (e.g.
        ``NoRelayFound``, ``AmbiguousRelay``) at once when there is none or several.

        Args:
            factory: Makes the transport; by default the relay's ``discover``.
            timeout: As for the constructor.
            request_id_prefix: The start of every request id the client makes up.
            completed_memory: How many finished flow ids to remember.

        Raises:
            TransportUnavailable: No transport can be made (``NoRelayFound``, ...).
        """
        transport = BridgeClient.connect(factory).transport
        return cls(
            transport,
            timeout=timeout,
            request_id_prefix=request_id_prefix,
            completed_memory=completed_memory,
        )

    @property
    def client(self) -> BridgeClient:
        """The async client (only to be used on its own loop)."""
        return self._client

    def start(self) -> None:
        """Start the loop thread and open the client (bounded by ``timeout``); ``with`` does it.

        Raises:
            ClientNotOpen: The client was started before.
            WaitTimeout: The client did not open within ``timeout``.
            TransportUnavailable: The transport could not connect.
        """
        if self._loop is not None:
            raise ClientNotOpen("start a SyncBridgeClient twice")
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="pi-ask-sdk-loop", daemon=True)
        self._loop, self._thread = loop, thread
        thread.start()
        try:
            self._run(self._client.open(), self._timeout, "the client to open")
        except BaseException:
            self._stop_loop()
            raise

    def close(self) -> None:
        """Close the client (failing pending waits) and stop the loop thread."""
        if self._loop is None or self._loop.is_closed():
            return
        try:
            self._run(self._client.close(), self._timeout, "the client to close")
        finally:
            self._stop_loop()

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def open_flows(self) -> Mapping[FlowId, FlowView]:
        """A snapshot of the forms open now."""

        async def snapshot() -> dict[FlowId, FlowView]:
            return dict(self._client.open_flows)

        return self._run(snapshot(), self._timeout, "the open flows")

    def flows(self, *, idle_timeout: float | None = None) -> SyncClientStream[FlowView]:
        """Started forms (open now, then new ones): ``for flow in client.flows():``.

        Args:
            idle_timeout: Seconds of silence after which iterating raises ``WaitTimeout``;
                ``None`` waits as long as the stream lives.

        Raises:
            ClientNotOpen: The client is not started, or closed.
            ConnectionLost: The connection is gone for good.
        """

        async def make() -> ClientStream[FlowView]:
            return self._client.flows()

        stream = self._run(make(), self._timeout, "a flow stream")
        return SyncClientStream(self, stream, idle_timeout=idle_timeout)

    def events(self, *, idle_timeout: float | None = None) -> SyncClientStream[BridgeEvent]:
        """Every ``FlowStarted | FlowCompleted | SessionEnded``: ``for event in ...:``.

        Args:
            idle_timeout: Seconds of silence after which iterating raises ``WaitTimeout``;
                ``None`` waits as long as the stream lives.

        Raises:
            ClientNotOpen: The client is not started, or closed.
            ConnectionLost: The connection is gone for good.
        """

        async def make() -> ClientStream[BridgeEvent]:
            return self._client.events()

        stream = self._run(make(), self._timeout, "an event stream")
        return SyncClientStream(self, stream, idle_timeout=idle_timeout)

    def submit(
        self,
        flow: FlowView[F],
        response: Response[F] | UncheckedAnswer[F],
        *,
        request_id: str | None = None,
    ) -> SubmitTicket:
        """As ``BridgeClient.submit``: send ``response`` for ``flow``, return the ticket.

        Raises:
            FlowMismatch: ``response``, or a piece of it, belongs to another flow.
            FlowAlreadyAnswered: This client's submit for the flow was accepted.
            FlowAlreadyCompleted: The flow completed.
            ConnectionLost: The flow was dropped with its session, or the connection is gone.
            InvalidRequestId: ``request_id`` is empty, in use for another flow, or not UTF-8
                safe.
            ClientNotOpen: The client is not started, or closed.
            WaitTimeout: The submit was not sent within ``timeout`` (its fate is unknown).
        """
        return self._run(
            self._client.submit(flow, response, request_id=request_id),
            self._timeout,
            "the submit to be sent",
        )

    def await_result(
        self, ticket: SubmitTicket, *, timeout: float = DEFAULT_TIMEOUT
    ) -> SubmitOutcome:
        """As ``BridgeClient.await_result``; a loop that does not answer in time is
        ``SubmitTimedOut`` too (the submit's fate is unknown).

        Raises:
            UnknownTicket: ``ticket`` is another client's.
        """
        try:
            return self._run(
                self._client.await_result(ticket, timeout=timeout),
                timeout + _GRACE,
                "the submit result",
            )
        except WaitTimeout:
            return SubmitTimedOut(ticket, timeout)

    def respond(
        self,
        flow: FlowView[F],
        response: Response[F] | UncheckedAnswer[F],
        *,
        timeout: float = DEFAULT_TIMEOUT,
        request_id: str | None = None,
    ) -> RespondOutcome:
        """As ``BridgeClient.respond``: every outcome is a value.

        Raises:
            FlowMismatch: ``response``, or a piece of it, belongs to another flow.
            FlowAlreadyAnswered: This client's submit for the flow was accepted.
            InvalidRequestId: ``request_id`` is empty, in use for another flow, or not UTF-8
                safe.
            ClientNotOpen: The client is not started, or closed.
            WaitTimeout: The submit was not sent within ``timeout`` (its fate is unknown).
        """
        try:
            ticket = self.submit(flow, response, request_id=request_id)
        except ConnectionLost as lost:
            return SubmitNotSent(flow.flow_id, lost.reason)
        except FlowAlreadyCompleted:
            return SubmitNotSent(flow.flow_id, "flow_completed")
        return self.await_result(ticket, timeout=timeout)

    def _run(self, coro: Coroutine[object, object, T], timeout: float, what: str) -> T:
        loop = self._loop
        if loop is None or loop.is_closed():
            coro.close()
            raise ClientNotOpen(f"wait for {what}")
        if self._thread is threading.current_thread():
            coro.close()
            raise InvalidUse(
                f"wait for {what}",
                "SyncBridgeClient must not be called from its own loop thread (a callback of "
                "the client's loop would wait for itself).",
            )
        future = asyncio.run_coroutine_threadsafe(coro, loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            if future.done():  # the operation's own timeout (e.g. WaitTimeout of a stream)
                raise
            future.cancel()
            raise WaitTimeout(what, timeout) from None
        except KeyboardInterrupt:
            future.cancel()  # nobody waits any more: an item must stay queued, not be taken
            raise

    def _stop_loop(self) -> None:
        loop, thread = self._loop, self._thread
        if loop is None or loop.is_closed():
            return
        loop.call_soon_threadsafe(loop.stop)
        if thread is not None:
            thread.join(self._timeout)
        if thread is None or not thread.is_alive():
            loop.close()
