"""The background question queue of a host in its TUI (spec §3.1), as host rules.

In the TUI an ``ask_user`` call with ``background: true`` does not wait for its form: the tool
returns a receipt at once (``QueuedReceipt``, "not an answer"), and the host opens the queued
forms one at a time, first in first out; the next opens when the open one ends. A queued form's
flow is ``tool:<the call's tool call id>`` like a foreground one, and its ``started`` is emitted
when it opens, not when it is queued. The form belongs to the session, not to the tool call:
aborting the agent's turn does not touch it (the call has long returned).

``BackgroundQueue`` is that decision, with no I/O: a host (the stand-in's server is one) asks it
what to open next and tells it when the open form ended; opening, answering and delivering the
answer to the model are the host's.
"""

from __future__ import annotations

from collections import deque
from typing import Generic, Literal, TypeVar

import msgspec
from msgspec import UNSET, UnsetType

from ._wire import WireStruct
from .protocol import AskResult

__all__ = [
    "ANSWER_MESSAGE",
    "BackgroundAnswer",
    "BackgroundQueue",
    "QueuedReceipt",
    "answer_starts_turn",
    "background_answer_text",
    "queued_text",
]

ANSWER_MESSAGE = "ask:background-answer"
"""The custom message type that carries a background form's answer to the model."""

T = TypeVar("T")


class QueuedReceipt(WireStruct, frozen=True, kw_only=True):
    """What a queued ``ask_user`` call returns at once (its ``details``): a receipt, not an
    answer. ``pending_requests`` counts the session's unfinished background forms, this one
    and the open one included."""

    status: Literal["queued"] = "queued"
    request_id: str
    question_ids: list[str]
    pending_requests: int


def queued_text(receipt: QueuedReceipt) -> str:
    """The text the model reads as the queued call's result."""
    return (
        f"Queued ask_user [{receipt.request_id}]. {receipt.pending_requests} form(s) pending. "
        "This is not an answer. Continue independent work; "
        "call wait_for_answers when answers are needed."
    )


class BackgroundAnswer(WireStruct, frozen=True, kw_only=True):
    """A finished background form, as the host delivers it to the model (the message's
    ``details``): its ``result``, or the ``error`` that kept it from opening."""

    request_id: str
    result: AskResult | UnsetType = UNSET
    error: str | UnsetType = UNSET


def background_answer_text(answer: BackgroundAnswer) -> str:
    """The message text that brings a finished background form to the model: a header naming
    the request (and the form's title), then the result as JSON, or why the form failed."""
    result = answer.result
    title = "" if isinstance(result, UnsetType) or result.title is UNSET else result.title
    header = f"Background answer [{answer.request_id}]{f' — {title}' if title else ''}:"
    if isinstance(result, UnsetType):
        return f"{header}\nQuestion form failed: {answer.error or 'unknown error'}"
    return f"{header}\n{msgspec.json.encode(result).decode()}"


def answer_starts_turn(answer: BackgroundAnswer) -> bool:
    """Whether delivering ``answer`` starts a turn of the agent: a cancel is only context for
    the next turn; an answer (or a form that failed) wakes the agent."""
    return isinstance(answer.result, UnsetType) or not answer.result.cancelled


class BackgroundQueue(Generic[T]):
    """A session's background forms: first in, first out, one open at a time.

    Each entry is a request id (the call's tool call id) and the host's own ``T`` (what it needs
    to open the form). ``enqueue`` takes a request (a request id seen before in this session is
    not queued again) and returns the receipt; ``next()`` hands out the request to open now,
    if nothing is open; ``finished(request_id)`` says the open form ended."""

    __slots__ = ("_open", "_seen", "_waiting")

    def __init__(self) -> None:
        self._waiting: deque[tuple[str, T]] = deque()
        self._open: str | None = None
        self._seen: set[str] = set()

    @property
    def pending(self) -> int:
        """Unfinished requests: the waiting ones and the open one."""
        return len(self._waiting) + (self._open is not None)

    @property
    def open_request(self) -> str | None:
        """The request id of the form open now, if any."""
        return self._open

    def enqueue(self, request_id: str, item: T, question_ids: list[str]) -> QueuedReceipt:
        """Queue a validated call's form (behind every unfinished one).

        Args:
            request_id: The call's request id (its tool call id); one seen before in this
                session is not queued again.
            item: What the host needs to open the form.
            question_ids: The form's question ids, for the receipt.
        """
        if request_id not in self._seen:
            self._seen.add(request_id)
            self._waiting.append((request_id, item))
        return QueuedReceipt(
            request_id=request_id, question_ids=question_ids, pending_requests=self.pending
        )

    def next(self) -> tuple[str, T] | None:
        """The request whose form opens now (it counts as open from here), or None: one is
        open already, or none waits."""
        if self._open is not None or not self._waiting:
            return None
        request_id, item = self._waiting.popleft()
        self._open = request_id
        return request_id, item

    def finished(self, request_id: str) -> None:
        """The open form of ``request_id`` ended (answered, cancelled, gone or failed to open);
        the next may open. Any other id changes nothing."""
        if self._open == request_id:
            self._open = None

    def clear(self) -> None:
        """The session ended: nothing waits and nothing is open any more."""
        self._waiting.clear()
        self._open = None
