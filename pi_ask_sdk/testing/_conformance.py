"""``check_transport()``: the ``Transport`` contract, checked against a live host.

Exported from ``pi_ask_sdk.testing``. Give it a factory for fresh (unopened) transports to one
host and a way to open a form on that host; it runs every check in order and returns their
names, or raises ``TransportCheckFailed`` naming the first that failed and why. Every wait is
bounded by ``timeout``; nothing sleeps.

One function per check, each named in ``_TABLE``, which the runner walks in order; a check that
fails raises ``_Failed`` with what went wrong, and the runner names the check.
"""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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

_Item = tuple[str, "DecodedEvent | Skipped | EndReason", bool]


class _Failed(Exception):
    """A check failed: the runner names the check in the ``TransportCheckFailed`` it raises."""


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

    async def expect(self, what: str, match: Callable[[_Item], bool], timeout: float) -> _Item:
        """The first item that ``match``es (others are dropped), within ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise _Failed(f"no {what} within {timeout:g} s")
            try:
                item = await asyncio.wait_for(self._queue.get(), remaining)
            except asyncio.TimeoutError:
                raise _Failed(f"no {what} within {timeout:g} s") from None
            if item[0] == "ended":
                raise _Failed(f"the transport ended ({item[1]}) before {what}")
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


def _params() -> AskParams:
    """The form the checks open (a fresh dict each time: ``open_form`` is the caller's code):
    one single-choice question ``deploy``, values yes / no."""
    return {
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


@dataclass
class _Run:
    """What the checks share, each check adding what the later ones use: the transport under
    test and what it heard, the live form, and a second transport that saw its replay."""

    make_transport: Callable[[], Transport]
    open_form: Callable[[AskParams, str], object]
    timeout: float
    prefix: str
    first: Transport
    listener: _Recorder
    call_id: str = ""
    flow_id: str = ""
    second: Transport | None = None
    watcher: _Recorder | None = None

    async def open_form_now(self, tool_call_id: str) -> None:
        opened = self.open_form(_params(), tool_call_id)
        if inspect.isawaitable(opened):
            await opened

    async def verdict(self, request_id: str) -> DecodedEvent | Skipped | EndReason:
        """The ``submit-result`` the first transport hears for ``request_id``."""
        what = f'the submit-result for "{request_id}"'
        _, event, _ = await self.listener.expect(what, _result(request_id), self.timeout)
        return event


# --- the checks, in the order of CHECKS ----------------------------------------------------------


async def _open(run: _Run) -> None:
    """``open`` returns in time and the transport does not end at once."""
    try:
        await asyncio.wait_for(run.first.open(run.listener), run.timeout)
    except asyncio.TimeoutError:
        raise _Failed(f"open() did not return within {run.timeout:g} s") from None
    ended = [item for item in run.listener.pending() if item[0] == "ended"]
    if ended:
        raise _Failed(f"the transport ended ({ended[0][1]}) at open")


async def _started_live(run: _Run) -> None:
    """A form opened after ``open`` arrives as a live ``started``."""
    run.call_id = f"{run.prefix}-live"
    await run.open_form_now(run.call_id)
    _, event, _ = await run.listener.expect(
        f'a live started event for tool call "{run.call_id}"',
        _started(run.call_id, replay=False),
        run.timeout,
    )
    assert isinstance(event, StartedEvent)  # (what _started matches)
    run.flow_id = event.flow_id


async def _one_decoded_form(run: _Run) -> None:
    """Every host payload heard so far decodes to its wire Struct."""
    if run.listener.undecodable:
        bad = run.listener.undecodable[0]
        raise _Failed(f"a {bad.channel} payload did not decode: {bad.detail}")


async def _replay(run: _Run) -> None:
    """A transport opened while the form is open replays it (``replay=True``)."""
    run.second = run.make_transport()
    run.watcher = _Recorder()
    try:
        await asyncio.wait_for(run.second.open(run.watcher), run.timeout)
    except asyncio.TimeoutError:
        raise _Failed(
            f"a second transport's open() did not return within {run.timeout:g} s"
        ) from None
    await run.watcher.expect(
        f'the replay of the open form "{run.flow_id}" to a new transport',
        _started(run.call_id, replay=True),
        run.timeout,
    )


async def _rejected_submit(run: _Run) -> None:
    """A submit the host refuses comes back as its ``submit-result``, naming the flow."""
    rid = f"{run.prefix}-refused"
    await run.first.send(_submit(rid, run.flow_id, "deploy", "no-such-value"))
    verdict = await run.verdict(rid)
    if not isinstance(verdict, SubmitRejection) or verdict.error != "invalid_answer":
        raise _Failed(f"expected an invalid_answer rejection, got {verdict!r}")
    if verdict.flow_id != run.flow_id:
        raise _Failed(f"the verdict names flow {verdict.flow_id!r}, not {run.flow_id!r}")


async def _unknown_flow(run: _Run) -> None:
    """A submit for a flow the host does not have comes back as ``flow_not_found``."""
    rid = f"{run.prefix}-unknown"
    await run.first.send(_submit(rid, f"{run.prefix}:no-such-flow", "deploy", "yes"))
    verdict = await run.verdict(rid)
    if not isinstance(verdict, SubmitRejection) or verdict.error != "flow_not_found":
        raise _Failed(f"expected a flow_not_found rejection, got {verdict!r}")


async def _accepted_submit(run: _Run) -> None:
    """An accepted submit gets its ``submit-result`` and the flow's ``completed``, in either
    order."""
    rid = f"{run.prefix}-accepted"
    await run.first.send(_submit(rid, run.flow_id, "deploy", "yes"))
    seen: set[str] = set()

    def ack_or_completed(item: _Item) -> bool:
        channel, event, _ = item
        if _result(rid)(item):
            seen.add("ack" if isinstance(event, SubmitAck) else f"refused: {event!r}")
        elif (
            channel == COMPLETED
            and isinstance(event, CompletedEvent)
            and event.flow_id == run.flow_id
        ):
            seen.add("completed")
        return len(seen) == 2 or any(s.startswith("refused") for s in seen)

    await run.listener.expect(
        f'the acceptance of "{rid}" and the completion of "{run.flow_id}"',
        ack_or_completed,
        run.timeout,
    )
    if seen != {"ack", "completed"}:
        raise _Failed(f"expected an acceptance, saw {seen}")


async def _close(run: _Run) -> None:
    """After ``close`` nothing more is delivered, ``send`` raises ``ConnectionLost``, and
    ``close`` may be called again."""
    assert run.watcher is not None  # (the replay check opened it)
    await run.first.close()
    await run.first.close()  # idempotent
    run.listener.pending()  # what was in flight before close() does not count
    after = f"{run.prefix}-after-close"
    await run.open_form_now(after)
    # The still-open transport hears the new form: had the closed one delivered it, it would
    # be queued by now on a same-process host, and is checked for right after.
    await run.watcher.expect(
        f'the form "{after}" on the still open transport',
        _started(after, replay=False),
        run.timeout,
    )
    late = [item for item in run.listener.pending() if item[0] != "ended"]
    if late:
        raise _Failed(f"a closed transport delivered {late[0][0]}")
    try:
        await run.first.send(_submit(f"{run.prefix}-closed", run.flow_id, "deploy", "yes"))
    except ConnectionLost:
        return
    raise _Failed("send() after close() did not raise ConnectionLost")


_TABLE: Final[tuple[tuple[str, Callable[[_Run], Awaitable[None]]], ...]] = (
    ("open", _open),
    ("started", _started_live),
    ("one_decoded_form", _one_decoded_form),
    ("replay", _replay),
    ("rejected_submit", _rejected_submit),
    ("unknown_flow", _unknown_flow),
    ("accepted_submit", _accepted_submit),
    ("close", _close),
)
"""Every check by its name, in the order they run: each builds on what the earlier ones left
in the ``_Run`` (the live form, the second transport)."""

CHECKS: Final[tuple[str, ...]] = tuple(name for name, _ in _TABLE)
"""The checks ``check_transport`` runs, in order."""


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
    list once all passed.

    What is checked (``CHECKS`` names each): ``open`` returns without ending; a form opened
    afterwards arrives as a live ``started``; every host payload decodes to its wire Struct
    (``decode_event``); a transport opened while the form is open replays it (``replay=True``);
    a submit the host refuses comes back as its ``submit-result`` with the same ``requestId``
    and ``flowId``, as does one for an unknown flow; an accepted submit gets its
    ``submit-result`` and the flow's ``completed`` (either order); after ``close`` nothing more
    is delivered, ``send`` raises ``ConnectionLost`` and ``close`` may be called again.
    ``tool_call_id``s start with ``prefix``.

    Args:
        make_transport: Makes a fresh, unopened transport to the host (called twice).
        open_form: Opens a form on the host: ``open_form(params, tool_call_id)``.
        timeout: How long the host and the transport have for each step, in seconds.
        prefix: The start of every ``tool_call_id`` and request id the checks use.

    Raises:
        TransportCheckFailed: A check failed; its ``check`` names it, its message says why.
    """
    run = _Run(make_transport, open_form, timeout, prefix, make_transport(), _Recorder())
    passed: list[str] = []
    try:
        for name, check in _TABLE:
            try:
                await check(run)
            except _Failed as failed:
                raise TransportCheckFailed(name, str(failed)) from None
            passed.append(name)
    finally:
        await run.first.close()
        if run.second is not None:
            await run.second.close()
    return passed
