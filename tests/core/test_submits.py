"""Submit checks (spec §4) beyond the worked examples."""

from __future__ import annotations

from collections.abc import Sequence
from types import MappingProxyType
from typing import Any

import msgspec
import pytest

from pi_ask_core import FlowHost, SubmitAck, SubmitRejection
from pi_ask_core.answers import (
    AnswerProblem,
    Envelope,
    QuestionIndex,
    SubmitError,
    check_values,
    parse_envelope,
)
from pi_ask_core.protocol import OptionTarget
from tests.spec_examples import EXAMPLES

from .conftest import Recorder


@pytest.fixture
def form_b(host: FlowHost) -> FlowHost:
    spec = EXAMPLES["forms"]["B"]
    host.start(spec["params"], tool_call_id=spec["toolCallId"])
    return host


def envelope(response: object, **overrides: object) -> dict[str, Any]:
    return {
        "version": 1,
        "requestId": "r",
        "flowId": "tool:call-B",
        "response": response,
        **overrides,
    }


def answer(**entry: object) -> dict[str, Any]:
    return {"kind": "answer", "answers": {"frameworks": entry}}


@pytest.mark.parametrize("version", [1, 1.0])
def test_version_one_as_int_or_float_is_accepted(form_b: FlowHost, version: object) -> None:
    ack = form_b.resolve_submit(envelope(answer(values=["vue"]), version=version))
    assert isinstance(ack, SubmitAck)


@pytest.mark.parametrize("version", [True, "1", 2, None, 1.5])
def test_other_versions_are_invalid_requests(form_b: FlowHost, version: object) -> None:
    ack = form_b.resolve_submit(envelope(answer(values=["vue"]), version=version))
    assert isinstance(ack, SubmitRejection)
    assert ack.error == "invalid_request"
    assert form_b.get("tool:call-B") is not None


def test_option_notes_follow_javascript_key_order(form_b: FlowHost, recorder: Recorder) -> None:
    host = form_b
    spec = {
        "questions": [
            {
                "id": "q",
                "prompt": "p",
                "type": "multi",
                "options": [
                    {"value": "b", "label": "B"},
                    {"value": "10", "label": "Ten"},
                    {"value": "2", "label": "Two"},
                ],
            }
        ]
    }
    handle = host.start(spec, tool_call_id="call-N")
    ack = host.resolve_submit(
        {
            "version": 1,
            "requestId": "r",
            "flowId": "tool:call-N",
            "response": {
                "kind": "answer",
                "mode": "elaborate",
                "answers": {
                    "q": {
                        "values": ["b", "10", "2"],
                        "optionNotes": {"b": "nb", "10": "n10", "2": "n2"},
                    }
                },
            },
        }
    )
    assert isinstance(ack, SubmitAck)
    result = handle.result
    assert result is not None
    answer_ = result.answers["q"]
    assert answer_.values == ["b", "10", "2"]  # selection order as sent
    assert isinstance(answer_.option_notes, dict)
    assert list(answer_.option_notes) == ["2", "10", "b"]  # integer-like keys first
    assert result.elaboration
    targets = [item.target for item in result.elaboration.items]
    assert [t.option_value for t in targets if isinstance(t, OptionTarget)] == ["2", "10", "b"]


@pytest.mark.parametrize(
    ("ids", "js_order"),
    [
        (["b", "10", "a", "2"], ["2", "10", "b", "a"]),
        (["b", "-1", "01", "a"], ["b", "-1", "01", "a"]),  # not array indices: form order
        (["b", "a"], ["b", "a"]),
    ],
)
def test_continuation_objects_follow_javascript_key_order(
    host: FlowHost, ids: list[str], js_order: list[str]
) -> None:
    questions = [
        {"id": qid, "prompt": "p", "options": [{"value": "x", "label": "X"}]} for qid in ids
    ]
    handle = host.start({"questions": questions}, tool_call_id="call-K")
    answers: dict[str, dict[str, object]] = {qid: {"values": ["x"]} for qid in ids}
    answers[ids[-1]] = {"note": "why?"}
    result = handle.answer(answers, mode="elaborate")
    assert result.continuation
    assert list(result.continuation.question_states) == js_order
    assert list(result.continuation.preserved_answers) == [q for q in js_order if q != ids[-1]]
    assert result.continuation.affected_question_ids == [ids[-1]]


def test_python_callers_may_send_mappings_tuples_and_odd_keys(form_b: FlowHost) -> None:
    ack = form_b.resolve_submit(
        MappingProxyType(envelope(MappingProxyType(answer(values=("react", "vue")))))
    )
    assert isinstance(ack, SubmitAck)


def test_non_string_keys_are_unknown_ids(host: FlowHost) -> None:
    spec = EXAMPLES["forms"]["B"]
    host.start(spec["params"], tool_call_id=spec["toolCallId"])
    ack = host.resolve_submit(envelope({"kind": "answer", "answers": {1: {}}}))
    assert isinstance(ack, SubmitRejection)
    assert ack.error == "invalid_answer"
    ack = host.resolve_submit(envelope(answer(optionNotes={3: "x"})))
    assert isinstance(ack, SubmitRejection)
    assert ack.error == "invalid_answer"
    ack = host.resolve_submit(envelope(answer(values=["vue"], optionNotes={3: " "})))
    assert isinstance(ack, SubmitAck)  # blank notes are dropped whatever their key


def test_messages_name_the_offending_question_and_value(form_b: FlowHost) -> None:
    ack = form_b.resolve_submit(envelope(answer(values=["Vue"])))
    assert isinstance(ack, SubmitRejection)
    assert '"Vue"' in ack.message
    assert '"frameworks"' in ack.message
    assert '"vue"' in ack.message  # says what would have been valid


ENVELOPE_REFUSALS: list[object] = [
    "not an object",
    None,
    [{"version": 1}],
    envelope({"kind": "cancel"}, version=2),
    envelope({"kind": "cancel"}, version="1"),
    {"requestId": 7, "flowId": "tool:call-B", "response": {"kind": "cancel"}},
    envelope({"kind": "cancel"}, requestId=""),
    envelope({"kind": "cancel"}, flowId=99),
    {"version": 1, "requestId": "r", "flowId": "tool:call-B"},
    envelope({"kind": "approve"}),
    envelope([]),
    envelope({"kind": "cancel"}, requestId="r\u00e9", version=None),
    envelope({"kind": "cancel"}, requestId="r\ud800", flowId=None),
]


@pytest.mark.parametrize("data", ENVELOPE_REFUSALS)
def test_parse_envelope_refuses_as_the_host_does(form_b: FlowHost, data: object) -> None:
    # The host takes the envelope's refusal as its submit-result; parse_envelope still gives
    # the SubmitError of the same refusal.
    error = parse_envelope(data)
    ack = form_b.resolve_submit(data)
    assert type(error) is SubmitError
    assert type(ack) is SubmitRejection
    assert (ack.error, ack.message) == (error.code, error.message)
    assert (ack.request_id, ack.flow_id) == (
        error.request_id.replace("\ud800", "\ufffd"),
        error.flow_id,
    )
    msgspec.json.encode(ack)
    assert form_b.get("tool:call-B") is not None


def test_parse_envelope_passes_a_valid_envelope() -> None:
    response = {"kind": "answer", "answers": {}}
    assert parse_envelope(envelope(response)) == Envelope("r", "tool:call-B", "answer", response)


class _Text(str):
    """A str subclass, as the SDK's option values are (msgspec does not encode one as is)."""


@pytest.mark.parametrize(
    ("values", "shown"),
    [
        (["vue", "vue"], '["vue","vue"]'),
        ((_Text("vue"), _Text("vue")), '["vue","vue"]'),
        (["v\ud800", "v\ud800"], "an array"),
        (["x" * 50, "x" * 50], '["' + "x" * 50 + '","' + "x" * 22 + "..."),
    ],
)
def test_duplicate_values_are_shown_as_their_text(values: Sequence[str], shown: str) -> None:
    problem = check_values("frameworks", values, QuestionIndex.of("frameworks", "multi", {}))
    assert problem == AnswerProblem(
        f'values for question "frameworks" must be unique, got {shown}.', "duplicate_value"
    )
