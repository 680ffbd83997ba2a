"""Flow lifecycle (spec §3 and examples L1-L6) through FlowHost and its handles."""

from __future__ import annotations

import gc
import weakref
from collections.abc import Callable
from typing import Any

import msgspec
import pytest

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    AnswerResponse,
    CancelResponse,
    FlowHost,
    HostClosed,
    RemoteAnswer,
    SubmitEvent,
    SubmitRefused,
)
from tests.spec_examples import EXAMPLES

from .conftest import Recorder

FORM_A = EXAMPLES["forms"]["A"]["params"]
FORM_D = EXAMPLES["forms"]["D"]["params"]
LIFECYCLE = EXAMPLES["lifecycle"]


class ManualScheduler:
    """Collects deferred callbacks (the reference's microtask) to run them when the test says."""

    def __init__(self) -> None:
        self.pending: list[Callable[[], None]] = []

    def __call__(self, callback: Callable[[], None]) -> None:
        self.pending.append(callback)

    def run(self) -> None:
        pending, self.pending = self.pending, []
        for callback in pending:
            callback()


def channels(events: list[tuple[str, object]]) -> list[str]:
    return [channel for channel, _ in events]


def submit(flow_id: str, response: dict[str, Any], request_id: str = "r") -> dict[str, Any]:
    return {"version": 1, "requestId": request_id, "flowId": flow_id, "response": response}


def test_l1_early_submit_completes_and_started_is_never_emitted(recorder: Recorder) -> None:
    scheduler = ManualScheduler()
    host = FlowHost(recorder.bus, schedule=scheduler)
    handle = host.start(FORM_A, tool_call_id="call-A")
    assert recorder.take() == []  # started is deferred
    step = LIFECYCLE["L1"]
    recorder.bus.emit(SUBMIT, step[0]["data"])
    scheduler.run()
    events = recorder.take()
    assert channels(events) == [SUBMIT, COMPLETED, SUBMIT_RESULT]
    completed = events[1][1]
    assert isinstance(completed, dict)
    assert completed["result"]["answers"] == step[1]["resultAnswers"]
    assert events[2][1] == step[2]["data"]
    assert handle.state == "completed"


def test_l2_disposed_flow_emits_no_completed_and_later_submit_is_flow_not_found(
    recorder: Recorder, host: FlowHost
) -> None:
    handle = host.start(FORM_A, tool_call_id="call-A")
    handle.dispose()
    step = LIFECYCLE["L2"]
    recorder.bus.emit(SUBMIT, step[1]["data"])
    events = recorder.take()
    assert channels(events) == [STARTED, SUBMIT, SUBMIT_RESULT]
    ack = events[2][1]
    assert isinstance(ack, dict)
    assert {k: v for k, v in ack.items() if k != "message"} == {
        k: v for k, v in step[2]["data"].items() if k != "message"
    }
    assert handle.result is None
    assert handle.state == "disposed"


def test_a_disposed_call_returns_the_cores_cancelled_result_without_completed(
    recorder: Recorder, host: FlowHost
) -> None:
    handle = host.start(FORM_D, tool_call_id="call-D")
    question = handle.questions[0]
    typed = {question.id: {"values": [question.options[0].value]}}
    handle.set_local_answers(typed)
    assert handle.tool_result is None  # open: the call has no result yet
    aborted = handle.abort_result()
    assert aborted.cancelled is True
    assert aborted.answers[question.id].values == [question.options[0].value]  # A16
    assert handle.is_open  # asking changes nothing
    handle.dispose()  # its UI went away: no completed
    assert COMPLETED not in channels(recorder.take())
    assert handle.result is None
    assert handle.tool_result == aborted


def test_an_aborted_call_completes_cancelled_with_the_local_answers(
    recorder: Recorder, host: FlowHost
) -> None:
    # Measured on the real extension (TUI and external UI alike): Pi's abort emits completed.
    handle = host.start(FORM_D, tool_call_id="call-D")
    question = handle.questions[0]
    handle.set_local_answers({question.id: {"values": [question.options[0].value]}})
    expected = handle.abort_result()
    recorder.take()
    assert handle.abort() == expected
    events = recorder.take()
    assert channels(events) == [COMPLETED]
    completed = events[0][1]
    assert isinstance(completed, dict)
    assert completed["result"] == msgspec.to_builtins(expected)
    assert handle.state == "completed"
    assert handle.tool_result == expected
    assert handle.abort() == expected  # again: nothing more is emitted
    assert recorder.take() == []


def test_a_completed_flow_returns_its_result_to_the_tool(host: FlowHost) -> None:
    handle = host.start(FORM_A, tool_call_id="call-A")
    result = handle.cancel()
    assert handle.tool_result == result


def test_l3_after_close_submits_get_no_acknowledgement(recorder: Recorder, host: FlowHost) -> None:
    handle = host.start(FORM_A, tool_call_id="call-A")
    host.close()
    recorder.bus.emit(SUBMIT, submit("tool:call-A", {"kind": "cancel"}))
    assert channels(recorder.take()) == LIFECYCLE["L3"]
    assert handle.state == "disposed"
    assert host.is_closed
    assert recorder.bus.listener_count(SUBMIT) == 1  # only the recorder is left
    with pytest.raises(HostClosed):
        host.start(FORM_A)


def test_l4_dispose_in_the_same_turn_emits_nothing(recorder: Recorder) -> None:
    scheduler = ManualScheduler()
    host = FlowHost(recorder.bus, schedule=scheduler)
    host.start(FORM_A, tool_call_id="call-A").dispose()
    scheduler.run()
    assert recorder.take() == LIFECYCLE["L4"]


def test_l5_duplicate_flow_ids_the_older_disposal_removes_the_shared_entry(
    recorder: Recorder, host: FlowHost
) -> None:
    older = host.start(FORM_A, tool_call_id="call-A")
    newer = host.start(FORM_A, tool_call_id="call-A", source="ask:resume")
    assert host.get("tool:call-A") is newer
    older.dispose()
    recorder.bus.emit(SUBMIT, submit("tool:call-A", {"kind": "cancel"}))
    events = recorder.take()
    assert [(c, p.get("source")) for c, p in events if isinstance(p, dict) and c == STARTED] == [
        (e["channel"], e["source"]) for e in LIFECYCLE["L5"][:2]
    ]
    ack = events[-1][1]
    assert isinstance(ack, dict)
    assert ack["error"] == "flow_not_found"
    assert newer.is_open  # unreachable, as in the reference
    host.close()
    assert newer.state == "disposed"


def test_a_replaced_flow_is_not_kept_by_the_host_once_its_caller_drops_it(
    recorder: Recorder, host: FlowHost
) -> None:
    # Replaced flows are reachable only through their handles (spec L5): the host must not keep
    # every one forever (a session that re-asks under one tool call id would grow without end).
    refs = [weakref.ref(host.start(FORM_A, tool_call_id="call-A")) for _ in range(3)]
    gc.collect()
    assert [ref() is None for ref in refs] == [True, True, False]
    assert host.get("tool:call-A") is refs[-1]()
    assert host.active_flows == (refs[-1](),)


def test_a_replaced_flow_still_held_is_disposed_on_close_in_start_order(
    recorder: Recorder, host: FlowHost
) -> None:
    ended: list[str] = []
    older = host.start(FORM_A, tool_call_id="call-A")
    other = host.start(FORM_D, tool_call_id="call-D")
    newer = host.start(FORM_A, tool_call_id="call-A", source="ask:resume")
    for handle in (older, other, newer):
        handle.add_done_callback(lambda done: ended.append(f"{done.source} {done.flow_id}"))
    host.close()
    assert ended == ["tool tool:call-A", "tool tool:call-D", "ask:resume tool:call-A"]
    assert older.state == other.state == newer.state == "disposed"


def test_l6_cancel_reports_the_hosts_local_answers(recorder: Recorder, host: FlowHost) -> None:
    handle = host.start(FORM_D, tool_call_id="call-D")
    handle.set_local_answers(
        {"goal": {"values": ["fast"], "note": "typed locally"}, "extra": {"values": []}}
    )
    recorder.bus.emit(SUBMIT, submit("tool:call-D", {"kind": "cancel"}))
    completed = recorder.take()[2][1]
    assert isinstance(completed, dict)
    assert completed["result"] == LIFECYCLE["L6"][0]


def test_headless_cancel_has_no_answers(recorder: Recorder, host: FlowHost) -> None:
    handle = host.start(FORM_D, tool_call_id="call-D")
    result = handle.cancel()
    assert result.cancelled
    assert result.answers == {}
    assert result.mode == "submit"


def test_local_complete_validates_like_a_submit_and_keeps_the_flow_open(
    recorder: Recorder, host: FlowHost
) -> None:
    handle = host.start(FORM_A, tool_call_id="call-A")
    recorder.take()
    with pytest.raises(SubmitRefused) as refused:
        handle.complete({"kind": "answer", "answers": {"decision": {"values": ["Yes"]}}})
    assert refused.value.code == "invalid_answer"
    assert '"Yes"' in refused.value.message
    assert handle.is_open
    assert recorder.take() == []
    result = handle.complete(
        AnswerResponse(answers={"decision": RemoteAnswer(values=["no"])}, mode="submit")
    )
    assert result.answers["decision"].indices == [2]
    assert channels(recorder.take()) == [COMPLETED]
    with pytest.raises(SubmitRefused) as again:
        handle.complete(CancelResponse())
    assert again.value.code == "flow_not_found"


def test_a_flow_completes_at_most_once(recorder: Recorder, host: FlowHost) -> None:
    handle = host.start(FORM_A, tool_call_id="call-A")
    done: list[str] = []
    handle.add_done_callback(lambda h: done.append(h.state))
    recorder.bus.emit(SUBMIT, submit("tool:call-A", {"kind": "cancel"}, "one"))
    recorder.bus.emit(SUBMIT, submit("tool:call-A", {"kind": "cancel"}, "two"))
    events = recorder.take()
    assert channels(events).count(COMPLETED) == 1
    acks = [p for c, p in events if c == SUBMIT_RESULT and isinstance(p, dict)]
    assert [(a["requestId"], a["ok"]) for a in acks] == [("one", True), ("two", False)]
    assert done == ["completed"]
    handle.dispose()  # disposing a completed flow does nothing
    assert handle.state == "completed"


def test_submit_struct_is_accepted_like_a_dict(recorder: Recorder, host: FlowHost) -> None:
    host.start(FORM_A, tool_call_id="call-A")
    event = SubmitEvent(
        request_id="s",
        flow_id="tool:call-A",
        response=AnswerResponse(answers={"decision": RemoteAnswer(values=["later"])}),
    )
    recorder.bus.emit(SUBMIT, event)
    events = recorder.take()
    assert channels(events) == [STARTED, SUBMIT, COMPLETED, SUBMIT_RESULT]
    assert events[-1][1] == {"version": 1, "requestId": "s", "flowId": "tool:call-A", "ok": True}


def test_listeners_cannot_change_the_hosts_form_or_result(recorder: Recorder) -> None:
    seen: list[Any] = []

    def vandal(data: object) -> None:
        seen.append(data)
        for question in getattr(data, "questions", []):
            question.options.clear()
        result = getattr(data, "result", None)
        if result is not None:
            result.answers.clear()

    recorder.bus.on(STARTED, vandal)
    recorder.bus.on(COMPLETED, vandal)
    host = FlowHost(recorder.bus)
    handle = host.start(FORM_A, tool_call_id="call-A")
    assert len(handle.questions[0].options) == 3
    recorder.bus.emit(
        SUBMIT,
        submit("tool:call-A", {"kind": "answer", "answers": {"decision": {"values": ["yes"]}}}),
    )
    assert handle.result is not None
    assert list(handle.result.answers) == ["decision"]
    assert len(seen) == 2


def test_flow_without_tool_call_id_gets_a_random_flow_id(host: FlowHost) -> None:
    first = host.start(FORM_A)
    second = host.start(FORM_A)
    assert first.flow_id.startswith("flow:")
    assert first.flow_id != second.flow_id
    assert first.tool_call_id is None


def test_started_payload_round_trips_through_json(recorder: Recorder, host: FlowHost) -> None:
    host.start(EXAMPLES["forms"]["E"]["params"], tool_call_id="call-E")
    [(_, payload)] = recorder.take()
    encoded = msgspec.json.encode(payload)
    assert b"null" not in encoded
    assert msgspec.json.decode(encoded) == payload


def test_started_event_replays_the_original_payload(recorder: Recorder) -> None:
    clock = iter(range(1000, 2000)).__next__
    scheduler = ManualScheduler()
    host = FlowHost(recorder.bus, schedule=scheduler, clock=clock)
    handle = host.start(FORM_A, tool_call_id="call-A")
    assert not handle.announced
    assert handle.started_event() is None  # not emitted yet: nothing to replay
    scheduler.run()
    [(_, emitted)] = recorder.take()
    replay = handle.started_event()
    assert replay is not None
    assert handle.created_at == 1000
    assert msgspec.to_builtins(replay) == emitted  # same createdAt, same form


def test_local_answer_takes_an_answers_map(recorder: Recorder, host: FlowHost) -> None:
    handle = host.start(FORM_D, tool_call_id="call-D")
    result = handle.answer({"goal": {"values": ["safe"], "note": "why?"}}, mode="elaborate")
    assert result.mode == "elaborate"
    assert result.answers["goal"].values == ["safe"]
    assert result.continuation is not msgspec.UNSET
    assert result.continuation.affected_question_ids == ["goal"]
    assert channels(recorder.take()) == [STARTED, COMPLETED]
