"""``check_transport()``: the ``Transport`` contract, checked against a live host.

Exported from ``pi_ask_sdk.testing``. Give it a factory for fresh (unopened) transports to one
host and a way to open a form on that host; it runs every check in order and returns their
names, or raises ``TransportCheckFailed`` naming the first that failed and why. Every wait is
bounded by ``timeout``; nothing sleeps.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Final

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    AnswerResponse,
    CompletedEvent,
    RemoteAnswer,
    Skipped,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    decode_event,
)
from pi_ask_core.events import DecodedEvent
from pi_ask_sdk.errors import ConnectionLost
from pi_ask_sdk.transports.base import EndReason, Transport

from ._params import AskParams
from .errors import TransportCheckFailed

__all__ = ["CHECKS", "check_transport"]

CHECKS: Final = (
    "open",
    "started",
    "one_decoded_form",
    "replay",
    "rejected_submit",
    "unknown_flow",
    "accepted_submit",
    "close",
)
"""The checks ``check_transport`` runs, in order."""

_Item = tuple[str, "DecodedEvent | Skipped | EndReason", bool]


class _Recorder:
    """A ``TransportListener`` that decodes what it hears and queues it on the loop."""

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()
        self._queue: asyncio.Queue[_Item] = asyncio.Queue()
        self.undecodable: list[Skipped] = []

    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        event = decode_event(channel, data)
        if isinstance(event, Skipped) and channel != SUBMIT:
            self.undecodable.append(event)
        self._put((channel, event, replay))

    def ended(self, reason: EndReason) -> None:
        self._put(("ended", reason, False))

    def _put(self, item: _Item) -> None:
        if threading.get_ident() == self._thread:
            self._queue.put_nowait(item)
        else:  # the contract lets a transport call from any thread
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def pending(self) -> list[_Item]:
        items = []
        while not self._queue.empty():
            items.append(self._queue.get_nowait())
        return items

    async def expect(
        self, check: str, what: str, match: Callable[[_Item], bool], timeout: float
    ) -> _Item:
        """The first item that ``match``es (others are dropped), within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TransportCheckFailed(check, f"no {what} within {timeout:g} s")
            try:
                item = await asyncio.wait_for(self._queue.get(), remaining)
            except asyncio.TimeoutError:
                raise TransportCheckFailed(check, f"no {what} within {timeout:g} s") from None
            if item[0] == "ended":
                raise TransportCheckFailed(check, f"the transport ended ({item[1]}) before {what}")
            if match(item):
                return item


def _started(tool_call_id: str, *, replay: bool) -> Callable[[_Item], bool]:
    def match(item: _Item) -> bool:
        channel, event, is_replay = item
        return (
            channel == STARTED
            and isinstance(event, StartedEvent)
            and event.tool_call_id == tool_call_id
            and is_replay == replay
        )

    return match


def _result(request_id: str) -> Callable[[_Item], bool]:
    def match(item: _Item) -> bool:
        channel, event, _ = item
        return (
            channel == SUBMIT_RESULT
            and isinstance(event, (SubmitAck, SubmitRejection))
            and (event.request_id == request_id)
        )

    return match


def _submit(request_id: str, flow_id: str, question_id: str, value: str) -> SubmitEvent:
    answers = {question_id: RemoteAnswer(values=[value])}
    return SubmitEvent(
        request_id=request_id, flow_id=flow_id, response=AnswerResponse(answers=answers)
    )


async def _maybe_await(value: object) -> None:
    if inspect.isawaitable(value):
        await value


async def check_transport(
    make_transport: Callable[[], Transport],
    open_form: Callable[[AskParams, str], object],
    *,
    timeout: float = 5.0,
    prefix: str = "check",
) -> list[str]:
    """Check the ``Transport`` contract on transports from ``make_transport`` (each call: a
    fresh, unopened transport to the same host); ``open_form(params, tool_call_id)`` opens a
    form on that host (it may return an awaitable, which is awaited). Returns ``CHECKS`` as a
    list once all passed; raises ``TransportCheckFailed`` for the first that failed.

    What is checked: ``open`` returns without ending; a form opened afterwards arrives as a live
    ``started``; every host payload decodes to its wire Struct (``decode_event``); a transport
    opened while the form is open replays it (``replay=True``); a submit the host refuses comes
    back as its ``submit-result`` with the same ``requestId`` and ``flowId``, as does one for an
    unknown flow; an accepted submit gets its ``submit-result`` and the flow's ``completed``
    (either order); after ``close`` nothing more is delivered, ``send`` raises
    ``ConnectionLost`` and ``close`` may be called again. ``tool_call_id``s start with
    ``prefix``; the host must answer in ``timeout`` seconds.
    """
    passed: list[str] = []
    first = make_transport()
    listener = _Recorder()
    try:
        await asyncio.wait_for(first.open(listener), timeout)
    except asyncio.TimeoutError:
        raise TransportCheckFailed("open", f"open() did not return within {timeout:g} s") from None
    second: Transport | None = None
    try:
        ended = [item for item in listener.pending() if item[0] == "ended"]
        if ended:
            raise TransportCheckFailed("open", f"the transport ended ({ended[0][1]}) at open")
        passed.append("open")

        call_id = f"{prefix}-live"
        params: AskParams = {
            "title": "check_transport",
            "questions": [
                {
                    "id": "deploy",
                    "prompt": "Deploy?",
                    "type": "single",
                    "options": [{"value": "yes"}, {"value": "no"}],
                }
            ],
        }
        await _maybe_await(open_form(params, call_id))
        _, event, _ = await listener.expect(
            "started",
            f'a live started event for tool call "{call_id}"',
            _started(call_id, replay=False),
            timeout,
        )
        assert isinstance(event, StartedEvent)
        flow_id = event.flow_id
        passed.append("started")

        if listener.undecodable:
            bad = listener.undecodable[0]
            raise TransportCheckFailed(
                "one_decoded_form", f"a {bad.channel} payload did not decode: {bad.detail}"
            )
        passed.append("one_decoded_form")

        second = make_transport()
        watcher = _Recorder()
        await asyncio.wait_for(second.open(watcher), timeout)
        await watcher.expect(
            "replay",
            f'the replay of the open form "{flow_id}" to a new transport',
            _started(call_id, replay=True),
            timeout,
        )
        passed.append("replay")

        rid = f"{prefix}-refused"
        await first.send(_submit(rid, flow_id, "deploy", "no-such-value"))
        _, verdict, _ = await listener.expect(
            "rejected_submit", f'the submit-result for "{rid}"', _result(rid), timeout
        )
        if not isinstance(verdict, SubmitRejection) or verdict.error != "invalid_answer":
            raise TransportCheckFailed(
                "rejected_submit", f"expected an invalid_answer rejection, got {verdict!r}"
            )
        if verdict.flow_id != flow_id:
            raise TransportCheckFailed(
                "rejected_submit", f"the verdict names flow {verdict.flow_id!r}, not {flow_id!r}"
            )
        passed.append("rejected_submit")

        rid = f"{prefix}-unknown"
        await first.send(_submit(rid, f"{prefix}:no-such-flow", "deploy", "yes"))
        _, verdict, _ = await listener.expect(
            "unknown_flow", f'the submit-result for "{rid}"', _result(rid), timeout
        )
        if not isinstance(verdict, SubmitRejection) or verdict.error != "flow_not_found":
            raise TransportCheckFailed(
                "unknown_flow", f"expected a flow_not_found rejection, got {verdict!r}"
            )
        passed.append("unknown_flow")

        rid = f"{prefix}-accepted"
        await first.send(_submit(rid, flow_id, "deploy", "yes"))
        seen: set[str] = set()

        def ack_or_completed(item: _Item) -> bool:
            channel, event, _ = item
            if _result(rid)(item):
                seen.add("ack" if isinstance(event, SubmitAck) else f"refused: {event!r}")
            elif (
                channel == COMPLETED
                and isinstance(event, CompletedEvent)
                and event.flow_id == flow_id
            ):
                seen.add("completed")
            return len(seen) == 2 or any(s.startswith("refused") for s in seen)

        await listener.expect(
            "accepted_submit",
            f'the acceptance of "{rid}" and the completion of "{flow_id}"',
            ack_or_completed,
            timeout,
        )
        if seen != {"ack", "completed"}:
            raise TransportCheckFailed("accepted_submit", f"expected an acceptance, saw {seen}")
        passed.append("accepted_submit")

        await first.close()
        await first.close()  # idempotent
        listener.pending()  # what was in flight before close() does not count
        after = f"{prefix}-after-close"
        await _maybe_await(open_form(params, after))
        # The still-open transport hears the new form: had the closed one delivered it, it
        # would be queued by now on a same-process host, and is checked for right after.
        await watcher.expect(
            "close",
            f'the form "{after}" on the still open transport',
            _started(after, replay=False),
            timeout,
        )
        late = [item for item in listener.pending() if item[0] != "ended"]
        if late:
            raise TransportCheckFailed("close", f"a closed transport delivered {late[0][0]}")
        try:
            await first.send(_submit(f"{prefix}-closed", flow_id, "deploy", "yes"))
        except ConnectionLost:
            pass
        else:
            raise TransportCheckFailed("close", "send() after close() did not raise ConnectionLost")
        passed.append("close")
    finally:
        await first.close()
        if second is not None:
            await second.close()
    return passed
