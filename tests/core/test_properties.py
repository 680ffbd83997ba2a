"""Property tests: arbitrary JSON thrown at the host and at the form parser."""

from __future__ import annotations

from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_ask_core import (
    COMPLETED,
    SUBMIT,
    SUBMIT_RESULT,
    AskResult,
    CompletedEvent,
    FlowHost,
    InvalidForm,
    LocalEventBus,
)
from pi_ask_core.forms import parse_form
from pi_ask_core.js import JS_WHITESPACE
from tests.spec_examples import EXAMPLES

FORM_D = EXAMPLES["forms"]["D"]
CODES = {"invalid_request", "flow_not_found", "invalid_answer"}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**53), max_value=2**53),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.sampled_from(["", " ", "1", "0", "answer", "cancel", "submit", "elaborate", "fast", "goal"]),
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
question_ids = st.sampled_from(["goal", "constraints", "scope", "extra", "nope", "0", ""])
option_values = st.sampled_from(["fast", "safe", "small", "tests", "docs", "code", "none", "Fast"])
remote_answers = st.fixed_dictionaries(
    {},
    optional={
        "values": st.one_of(st.lists(option_values, max_size=3), json_values),
        "customText": st.one_of(st.text(max_size=5), json_values),
        "note": st.one_of(st.text(max_size=5), json_values),
        "optionNotes": st.one_of(st.dictionaries(option_values, st.text(max_size=4)), json_values),
    },
)
responses = st.one_of(
    st.fixed_dictionaries(
        {
            "kind": st.sampled_from(["answer", "cancel", "Answer", ""]),
            "answers": st.one_of(
                st.dictionaries(question_ids, remote_answers, max_size=4), json_values
            ),
        },
        optional={"mode": st.one_of(st.sampled_from(["submit", "elaborate"]), json_values)},
    ),
    json_values,
)
envelopes = st.one_of(
    st.fixed_dictionaries(
        {
            "version": st.one_of(st.just(1), st.just(1.0), json_values),
            "requestId": st.one_of(st.text(min_size=1, max_size=5), json_values),
            "flowId": st.one_of(st.just("tool:call-D"), json_values),
            "response": responses,
        }
    ),
    json_values,
)


def _host() -> tuple[FlowHost, list[tuple[str, Any]]]:
    bus = LocalEventBus()
    events: list[tuple[str, Any]] = []
    bus.on(COMPLETED, lambda d: events.append((COMPLETED, d)))
    bus.on(SUBMIT_RESULT, lambda d: events.append((SUBMIT_RESULT, d)))
    host = FlowHost(bus)
    host.start(FORM_D["params"], tool_call_id=FORM_D["toolCallId"])
    return host, events


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(envelopes)
def test_any_json_submit_gets_exactly_one_known_answer(payload: object) -> None:
    host, events = _host()
    handle = host.get("tool:call-D")
    assert handle is not None
    questions_before = msgspec.to_builtins(handle.questions)
    host.bus.emit(SUBMIT, payload)
    acks = [d for c, d in events if c == SUBMIT_RESULT]
    assert len(acks) == 1
    ack = msgspec.to_builtins(acks[0])
    assert set(ack) <= {"version", "requestId", "flowId", "ok", "error", "message"}
    completed = [d for c, d in events if c == COMPLETED]
    if ack["ok"]:
        assert len(completed) == 1
        assert not handle.is_open
        # An accepted result round-trips through the wire types and JSON.
        encoded = msgspec.json.encode(completed[0])
        assert msgspec.json.decode(encoded, type=CompletedEvent) == completed[0]
        result = completed[0].result
        assert msgspec.json.decode(msgspec.json.encode(result), type=AskResult) == result
    else:
        assert ack["error"] in CODES
        assert isinstance(ack["message"], str)
        assert ack["message"]
        assert completed == []
        assert handle.is_open
        assert host.get("tool:call-D") is handle
        assert msgspec.to_builtins(handle.questions) == questions_before
    # Echoed ids are the request's strings, or "" (spec A8).
    if isinstance(payload, dict):
        for key in ("requestId", "flowId"):
            sent = payload.get(key)
            assert ack[key] == (sent if isinstance(sent, str) else "")


@settings(max_examples=200)
@given(
    st.dictionaries(
        question_ids,
        st.fixed_dictionaries({"values": st.lists(option_values, max_size=2, unique=True)}),
        max_size=4,
    )
)
def test_labels_are_never_accepted_where_values_are(answers: dict[str, Any]) -> None:
    host, events = _host()
    handle = host.get("tool:call-D")
    assert handle is not None
    labels = {o.label: o.value for q in handle.questions for o in q.options}
    host.bus.emit(
        SUBMIT,
        {
            "version": 1,
            "requestId": "r",
            "flowId": "tool:call-D",
            "response": {"kind": "answer", "answers": answers},
        },
    )
    ack = next(d for c, d in events if c == SUBMIT_RESULT)
    sent = [v for a in answers.values() for v in a["values"]]
    if ack.ok:
        # Every accepted value is an option value of its question, never a bare label.
        for qid, answer in answers.items():
            question = next(q for q in handle.questions if q.id == qid)
            assert set(answer["values"]) <= {o.value for o in question.options}
    if "Fast" in sent:  # "Fast" is the label of value "fast"
        assert "Fast" in labels
        assert not ack.ok


@settings(max_examples=200)
@given(json_values)
def test_any_json_value_as_form_input_is_a_form_or_invalid_form(params: object) -> None:
    try:
        form = parse_form(params)
    except InvalidForm as error:
        assert error.issues
        assert all(issue.path for issue in error.issues)
        assert (error.result is None) == (error.kind == "schema_error")
    else:
        assert form.questions


option_inputs = st.fixed_dictionaries(
    {"value": st.text(max_size=4)},
    optional={
        "label": st.one_of(st.text(max_size=4), json_values),
        "description": st.text(max_size=3),
        "preview": st.text(alphabet=JS_WHITESPACE + "ab", max_size=3),
        "recommended": st.booleans(),
    },
)
form_inputs = st.fixed_dictionaries(
    {
        "questions": st.lists(
            st.fixed_dictionaries(
                {
                    "id": st.text(max_size=3),
                    "prompt": st.text(max_size=3),
                    "options": st.lists(option_inputs, max_size=3),
                },
                optional={
                    "type": st.sampled_from(["single", "multi", "preview", "grid"]),
                    "required": st.booleans(),
                    "label": st.text(max_size=3),
                },
            ),
            max_size=3,
        )
    },
    optional={"title": st.text(max_size=4)},
)


@settings(max_examples=300)
@given(form_inputs)
def test_forms_that_validate_open_and_can_be_answered(params: dict[str, Any]) -> None:
    bus = LocalEventBus()
    acks: list[Any] = []
    bus.on(SUBMIT_RESULT, acks.append)
    host = FlowHost(bus)
    try:
        handle = host.start(params, tool_call_id="t")
    except InvalidForm as error:
        assert error.issues
        return
    first = handle.questions[0]
    event = {
        "version": 1,
        "requestId": "r",
        "flowId": handle.flow_id,
        "response": {"kind": "answer", "answers": {first.id: {"values": [first.options[0].value]}}},
    }
    bus.emit(SUBMIT, event)
    assert acks[-1].ok is True
    result = handle.result
    assert result is not None
    assert result.answers[first.id].values == [first.options[0].value]
    assert result.answers[first.id].indices == [1]
