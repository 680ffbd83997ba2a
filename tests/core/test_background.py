"""The TUI's background question queue (spec §3.1): forms open one at a time, first in first
out; a queued call's receipt and a finished form's answer as the model reads them."""

from __future__ import annotations

import msgspec

from pi_ask_core.background import (
    BackgroundAnswer,
    BackgroundQueue,
    QueuedReceipt,
    answer_starts_turn,
    background_answer_text,
    queued_text,
)
from pi_ask_core.forms import parse_form
from pi_ask_core.results import build_result

FORM = {
    "title": "Setup",
    "questions": [{"id": "q", "prompt": "Which?", "options": [{"value": "a"}, {"value": "b"}]}],
}


def test_forms_open_one_at_a_time_first_in_first_out() -> None:
    queue: BackgroundQueue[str] = BackgroundQueue()
    assert queue.next() is None
    queue.enqueue("c1", "first", ["q"])
    queue.enqueue("c2", "second", ["q"])
    assert queue.next() == ("c1", "first")
    assert queue.open_request == "c1"
    assert queue.next() is None  # c1 is open: c2 waits
    queue.enqueue("c3", "third", ["q"])
    queue.finished("c2")  # not the open one: nothing changes
    assert queue.next() is None
    queue.finished("c1")
    assert queue.next() == ("c2", "second")
    queue.finished("c2")
    assert queue.next() == ("c3", "third")
    queue.finished("c3")
    assert queue.next() is None
    assert queue.pending == 0


def test_the_receipt_counts_the_unfinished_forms_this_one_included() -> None:
    queue: BackgroundQueue[None] = BackgroundQueue()
    first = queue.enqueue("c1", None, ["q", "r"])
    assert first == QueuedReceipt(request_id="c1", question_ids=["q", "r"], pending_requests=1)
    queue.next()  # c1 opens: still pending
    assert queue.enqueue("c2", None, ["q"]).pending_requests == 2
    queue.finished("c1")
    assert queue.enqueue("c3", None, ["q"]).pending_requests == 2


def test_a_request_id_seen_before_is_not_queued_again() -> None:
    queue: BackgroundQueue[str] = BackgroundQueue()
    queue.enqueue("c1", "first", ["q"])
    assert queue.enqueue("c1", "again", ["q"]).pending_requests == 1
    assert queue.next() == ("c1", "first")
    queue.finished("c1")
    assert queue.enqueue("c1", "later", ["q"]).pending_requests == 0
    assert queue.next() is None


def test_clear_forgets_the_waiting_and_the_open_form() -> None:
    queue: BackgroundQueue[None] = BackgroundQueue()
    queue.enqueue("c1", None, ["q"])
    queue.enqueue("c2", None, ["q"])
    queue.next()
    queue.clear()
    assert (queue.pending, queue.open_request, queue.next()) == (0, None, None)


def test_the_receipt_on_the_wire_and_as_the_model_reads_it() -> None:
    receipt = QueuedReceipt(request_id="call_7", question_ids=["q"], pending_requests=2)
    assert msgspec.to_builtins(receipt) == {
        "status": "queued",
        "requestId": "call_7",
        "questionIds": ["q"],
        "pendingRequests": 2,
    }
    assert queued_text(receipt) == (
        "Queued ask_user [call_7]. 2 form(s) pending. This is not an answer. "
        "Continue independent work; call wait_for_answers when answers are needed."
    )


def test_an_answer_wakes_the_agent_and_a_cancel_is_only_context() -> None:
    form = parse_form(FORM)
    answered = build_result(form, {})
    cancelled = build_result(form, {}, cancelled=True)
    assert answer_starts_turn(BackgroundAnswer(request_id="c", result=answered))
    assert not answer_starts_turn(BackgroundAnswer(request_id="c", result=cancelled))
    assert answer_starts_turn(BackgroundAnswer(request_id="c", error="gone"))


def test_the_answer_text_names_the_request_and_the_title() -> None:
    cancelled = build_result(parse_form(FORM), {}, cancelled=True)
    text = background_answer_text(BackgroundAnswer(request_id="c1", result=cancelled))
    header, body = text.split("\n", 1)
    assert header == "Background answer [c1] — Setup:"
    assert msgspec.json.decode(body) == msgspec.to_builtins(cancelled)
    failed = background_answer_text(BackgroundAnswer(request_id="c2", error="no file"))
    assert failed == "Background answer [c2]:\nQuestion form failed: no file"
