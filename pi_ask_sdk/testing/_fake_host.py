"""``FakeHost``: a Pi stand-in in the test's own process, a real ``FlowHost`` on a
``LocalEventBus`` that records every payload on the four channels (re-exported by
``pi_ask_sdk.testing``)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, cast

import msgspec

from pi_ask_core import (
    CHANNELS,
    COMPLETED,
    SUBMIT,
    SUBMIT_RESULT,
    AskResult,
    FlowHandle,
    FlowHost,
    LocalEventBus,
    Skipped,
    decode_event,
)
from pi_ask_core import AskParams as AskParamsStruct
from pi_ask_core.bus import Handler, Unsubscribe
from pi_ask_core.protocol import FlowSource
from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.errors import InvalidArgument
from pi_ask_sdk.forms import F, FlowId
from pi_ask_sdk.responses import Answer, Cancel, Response, check_pieces
from pi_ask_sdk.serialise import JsonValue
from pi_ask_sdk.sync import SyncBridgeClient
from pi_ask_sdk.transports.base import TransportListener
from pi_ask_sdk.transports.memory import MemoryTransport

from ._params import AskParams

if TYPE_CHECKING:
    from pi_ask_wire import CompletedEvent as CompletedJSON
    from pi_ask_wire import SubmitEvent as SubmitJSON
    from pi_ask_wire import SubmitResultEvent as SubmitResultJSON

__all__ = ["AckOrder", "FakeHost", "RecordedEvent"]

AckOrder = Literal["completed_first", "ack_first"]
"""The order in which a ``FakeHost`` sends an accepted submit's two events: ``completed`` then
``submit-result`` (as the real extension does), or the acknowledgement first."""


@dataclass(frozen=True, slots=True)
class RecordedEvent:
    """One payload seen on the bus, as decoded JSON (``msgspec.to_builtins``)."""

    channel: str
    data: JsonValue


class _HostBus:
    """The bus as the fake's ``FlowHost`` sees it: reorders ``completed`` after the
    ``submit-result`` of the submit that caused it when the order is ``ack_first``."""

    __slots__ = ("_bus", "_deferred", "_fake", "_in_submit")

    def __init__(self, bus: LocalEventBus, fake: FakeHost) -> None:
        self._bus = bus
        self._fake = fake
        self._in_submit = 0
        self._deferred: list[object] = []

    def on(self, channel: str, handler: Handler) -> Unsubscribe:
        if channel != SUBMIT:
            return self._bus.on(channel, handler)

        def on_submit(data: object) -> None:
            self._in_submit += 1
            try:
                handler(data)
            finally:
                self._in_submit -= 1
                self._flush()

        return self._bus.on(channel, on_submit)

    def emit(self, channel: str, data: object) -> None:
        if channel == COMPLETED and self._in_submit and self._fake.order == "ack_first":
            self._deferred.append(data)
            return
        self._bus.emit(channel, data)
        if channel == SUBMIT_RESULT:
            self._flush()

    def _flush(self) -> None:
        deferred, self._deferred = self._deferred, []
        for data in deferred:
            self._bus.emit(COMPLETED, data)


class FakeHost:
    """A Pi stand-in: opens forms, answers submits, lets its own user answer, ends sessions.

    ``record=False`` (or ``max_records``) keeps long runs from accumulating records.

    Args:
        order: Which of ``completed`` and ``submit-result`` an accepted remote submit emits
            first: ``"completed_first"`` (the reference order) or ``"ack_first"``.
        present_single_as_multi: Present single-choice questions as multi (the host option).
        record: Record every payload on the four channels (``events``, ``recorded``...).
        max_records: Keep only the latest this many records (``None``: all).
    """

    def __init__(
        self,
        *,
        order: AckOrder = "completed_first",
        present_single_as_multi: bool = False,
        record: bool = True,
        max_records: int | None = None,
    ) -> None:
        self.order: AckOrder = order
        self.bus = LocalEventBus()
        self._present_single_as_multi = present_single_as_multi
        self._records: deque[RecordedEvent] = deque(maxlen=max_records)
        self._transports: list[MemoryTransport] = []
        if record:
            for channel in CHANNELS:
                self.bus.on(channel, self._recorder(channel))
        self._host = self._new_host()

    def _new_host(self) -> FlowHost:
        return FlowHost(
            _HostBus(self.bus, self), present_single_as_multi=self._present_single_as_multi
        )

    def _recorder(self, channel: str) -> Callable[[object], None]:
        def record(data: object) -> None:
            self._records.append(RecordedEvent(channel, msgspec.to_builtins(data)))

        return record

    # --- the host side ---

    @property
    def host(self) -> FlowHost:
        """The ``FlowHost`` of the current session."""
        return self._host

    @property
    def session_ended(self) -> bool:
        """Whether the current session ended (``end_session`` and no ``new_session`` since)."""
        return self._host.is_closed

    def open(
        self,
        params: AskParams | AskParamsStruct,
        *,
        tool_call_id: str | None = None,
        source: FlowSource = "tool",
    ) -> FlowHandle:
        """Open a form (``started`` is emitted before this returns). Input the host refuses
        raises ``pi_ask_core.InvalidForm``; to try untyped input, use ``fake.host.start``.

        Args:
            params: The ``ask_user`` input (``yes_no_params`` makes a small one).
            tool_call_id: The tool call's id; the flow id is then ``tool:<id>``.
            source: ``"tool"``, or ``"ask:resume"`` for a form reopened to resume.

        Raises:
            InvalidForm: The host refuses the input.
            HostClosed: The session ended (``new_session`` starts another).
        """
        return self._host.start(params, tool_call_id=tool_call_id, source=source)

    def flow(self, flow_id: str) -> FlowHandle:
        """The open flow with this id.

        Raises:
            InvalidArgument: No flow with that id is open.
        """
        handle = self._host.get(flow_id)
        if handle is None:
            raise InvalidArgument("FakeHost.flow", "flow_id", "the id of an open flow", flow_id)
        return handle

    def answer(self, flow: FlowHandle | str, response: Response[F]) -> AskResult:
        """The host's own user answers (or cancels) locally; emits ``completed``. A response,
        or a piece of one, taken from another flow raises ``FlowMismatch``;
        ``FlowHandle.complete`` takes a raw response instead.

        Args:
            flow: The flow (its handle, or its flow id).
            response: An ``Answer`` built from the flow's view, or a ``Cancel``.

        Raises:
            FlowMismatch: ``response``, or a piece of it, belongs to another flow.
            SubmitRefused: The host refuses the response, or the flow is not open.
            InvalidArgument: No flow with that id is open, or ``response`` is neither an
                ``Answer`` nor a ``Cancel``.
        """
        handle = self.flow(flow) if isinstance(flow, str) else flow
        if not isinstance(response, (Answer, Cancel)):
            raise InvalidArgument(
                "FakeHost.answer",
                "response",
                "an Answer or a Cancel",
                response,
                message=f"FakeHost.answer() takes an Answer or a Cancel, not "
                f"{type(response).__name__}; use the FlowHandle's complete() for a raw response",
            )
        check_pieces(FlowId(handle.flow_id), response)
        return handle.complete(response.to_wire())

    def cancel(self, flow: FlowHandle | str) -> AskResult:
        """The host's own user cancels (Escape); emits ``completed`` with ``cancelled``."""
        handle = self.flow(flow) if isinstance(flow, str) else flow
        return handle.cancel()

    def dispose(self, flow: FlowHandle | str) -> None:
        """The form goes away without ``completed`` (UI closed or aborted)."""
        handle = self.flow(flow) if isinstance(flow, str) else flow
        handle.dispose()

    def end_session(self) -> None:
        """Session shutdown: open forms vanish without ``completed``, later submits get no
        acknowledgement, and connected clients are told (as the relay would tell them)."""
        self._host.close()
        for transport in self._transports:
            transport.end_session()

    def new_session(self) -> None:
        """Start a fresh session on the same bus (after ``end_session``)."""
        if not self._host.is_closed:
            self.end_session()
        self._host = self._new_host()

    def disconnect(self) -> None:
        """Drop every client connection (the host itself keeps running)."""
        transports, self._transports = self._transports, []
        for transport in transports:
            transport.disconnect()

    def emit_raw(self, channel: str, data: object) -> None:
        """Put any payload on the bus, e.g. a malformed or foreign one."""
        self.bus.emit(channel, data)

    # --- connecting bridges ---

    def transport(self) -> MemoryTransport:
        """A transport to this host; forms open when its client connects are replayed."""
        transport = _FakeTransport(self.bus, self)
        self._transports.append(transport)
        return transport

    def client(
        self, *, request_id_prefix: str = "bridge", completed_memory: int = 1024
    ) -> BridgeClient:
        """A (not yet opened) ``BridgeClient``: ``async with host.client() as client``."""
        return BridgeClient(
            self.transport(),
            request_id_prefix=request_id_prefix,
            completed_memory=completed_memory,
        )

    def sync_client(self, *, timeout: float = 5.0) -> SyncBridgeClient:
        """A (not yet started) ``SyncBridgeClient``: ``with host.sync_client() as client``."""
        return SyncBridgeClient(self.transport(), timeout=timeout)

    # --- assertions ---

    @property
    def events(self) -> tuple[RecordedEvent, ...]:
        """Every recorded payload, on any channel, oldest first."""
        return tuple(self._records)

    def recorded(self, channel: str) -> list[JsonValue]:
        """The payloads seen on ``channel`` (decoded JSON), oldest first."""
        return [event.data for event in self._records if event.channel == channel]

    def _wellformed(self, channel: str) -> list[JsonValue]:
        # What the core decodes as the channel's payload; a malformed one put on the bus with
        # emit_raw stays in recorded() only (these are typed, and would otherwise lie).
        return [
            data
            for data in self.recorded(channel)
            if type(decode_event(channel, data)) is not Skipped
        ]

    @property
    def submits(self) -> list[SubmitJSON]:
        """The well-formed submits, oldest first (everything: ``recorded(SUBMIT)``)."""
        return cast("list[SubmitJSON]", self._wellformed(SUBMIT))

    @property
    def acks(self) -> list[SubmitResultJSON]:
        """The well-formed ``submit-result`` payloads, oldest first."""
        return cast("list[SubmitResultJSON]", self._wellformed(SUBMIT_RESULT))

    @property
    def completions(self) -> list[CompletedJSON]:
        """The well-formed ``completed`` payloads, oldest first."""
        return cast("list[CompletedJSON]", self._wellformed(COMPLETED))

    def clear_records(self) -> None:
        """Forget every record so far."""
        self._records.clear()


class _FakeTransport(MemoryTransport):
    """A memory transport that always replays the fake's *current* session."""

    __slots__ = ("_fake",)

    def __init__(self, bus: LocalEventBus, fake: FakeHost) -> None:
        super().__init__(bus, fake.host)
        self._fake = fake

    async def open(self, listener: TransportListener) -> None:
        self._host = self._fake.host
        await super().open(listener)
