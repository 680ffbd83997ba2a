"""Hostile input for ``FlowHost``: lone surrogates, non-finite numbers, deep nesting.

Whatever a submit holds, the host answers it with exactly one ``submit-result`` and never raises;
every payload it emits encodes to valid UTF-8 JSON; a flow changes state only together with its
``completed`` event.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    FlowHost,
    InvalidForm,
    LocalEventBus,
    SubmitAck,
    SubmitRefused,
    SubmitRejection,
)
from tests.spec_examples import EXAMPLES

FORM_D = EXAMPLES["forms"]["D"]
FLOW = "tool:call-D"

# Text with every kind of code point, lone surrogates (U+D800-U+DFFF) included.
odd_text = st.one_of(
    st.text(st.characters(codec=None, categories=None), max_size=6),
    st.sampled_from(["\ud83d", "\ude00", "a\ud83d\ude00b", "\udfff\ud800", "\u2028", "\x00"]),
)
odd_numbers = st.sampled_from([float("nan"), float("inf"), float("-inf"), -0.0, 1e308, 2**70])
scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), odd_numbers, odd_text)


# Deeper than any recursion guard: Python's limit, and the C limit that msgspec's encoder
# meets on 3.12+ (10,000 levels on 3.13, which the Python limit times 3 does not reach).
TOO_DEEP = 100_000


def nested(depth: int, leaf: object) -> object:
    value = leaf
    for i in range(depth):
        value = [value] if i % 2 else {"k": value}
    return value


class Deep:
    """A placeholder for a deeply nested value (Hypothesis cannot print the value itself)."""

    def __init__(self, depth: int, leaf: object) -> None:
        self.depth, self.leaf = depth, leaf

    def __repr__(self) -> str:
        return f"Deep({self.depth}, {self.leaf!r})"


def real(value: object) -> object:
    """``value`` with each ``Deep`` placeholder built."""
    if isinstance(value, Deep):
        return nested(value.depth, value.leaf)
    if isinstance(value, dict):
        return {k: real(v) for k, v in value.items()}
    if isinstance(value, list):
        return [real(v) for v in value]
    return value


deep_values = st.builds(
    Deep,
    st.sampled_from([10, sys.getrecursionlimit() // 2, sys.getrecursionlimit() * 2, 50_000]),
    scalars,
)
values = st.recursive(
    st.one_of(scalars, deep_values),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(odd_text, children, max_size=3)
    ),
    max_leaves=12,
)
option_values = st.sampled_from(["fast", "safe", "small", "tests", "docs", "code"])
answers = st.dictionaries(
    st.sampled_from(["goal", "constraints", "scope", "nope"]),
    st.fixed_dictionaries(
        {},
        optional={
            "values": st.one_of(st.lists(option_values, max_size=2, unique=True), values),
            "customText": st.one_of(odd_text, values),
            "note": st.one_of(odd_text, values),
            "optionNotes": st.one_of(st.dictionaries(option_values, odd_text), values),
        },
    ),
    max_size=3,
)
submits = st.one_of(
    st.fixed_dictionaries(
        {
            "version": st.one_of(st.just(1), odd_numbers, values),
            "requestId": st.one_of(odd_text.filter(bool), values),
            "flowId": st.one_of(st.just(FLOW), odd_text, values),
            "response": st.one_of(
                st.fixed_dictionaries(
                    {
                        "kind": st.sampled_from(["answer", "cancel"]),
                        "answers": st.one_of(answers, values),
                    },
                    optional={"mode": st.one_of(st.sampled_from(["submit", "elaborate"]), values)},
                ),
                values,
            ),
        }
    ),
    values,
)


def _host() -> tuple[FlowHost, list[tuple[str, Any]]]:
    bus = LocalEventBus()
    events: list[tuple[str, Any]] = []

    def recorder(channel: str) -> Callable[[object], None]:
        return lambda data: events.append((channel, data))

    for channel in (STARTED, COMPLETED, SUBMIT_RESULT):
        bus.on(channel, recorder(channel))
    host = FlowHost(bus)
    host.start(FORM_D["params"], tool_call_id=FORM_D["toolCallId"])
    events.clear()
    return host, events


@settings(max_examples=500, deadline=None, suppress_health_check=list(HealthCheck))
@given(submits)
def test_any_submit_gets_exactly_one_result_and_never_raises(payload: object) -> None:
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    payload = real(payload)
    host.bus.emit(SUBMIT, payload)  # LocalEventBus would log a raise: assert on the outcome
    results = [d for c, d in events if c == SUBMIT_RESULT]
    completed = [d for c, d in events if c == COMPLETED]
    assert len(results) == 1, events
    result = results[0]
    assert isinstance(result, (SubmitAck, SubmitRejection))
    # Everything emitted is valid UTF-8 JSON (no lone surrogate survives).
    for _, data in events:
        msgspec.json.encode(data).decode("utf-8")
    if isinstance(result, SubmitAck):
        assert len(completed) == 1
        assert handle.state == "completed"
        assert host.get(FLOW) is None
        assert handle.result is not None
    else:
        assert completed == []
        assert handle.is_open
        assert host.get(FLOW) is handle


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(submits)
def test_resolve_submit_never_raises(payload: object) -> None:
    host, _ = _host()
    assert isinstance(host.resolve_submit(real(payload)), (SubmitAck, SubmitRejection))


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    st.one_of(
        values,
        st.fixed_dictionaries(
            {
                "questions": st.lists(
                    st.fixed_dictionaries(
                        {
                            "id": odd_text,
                            "prompt": odd_text,
                            "options": st.lists(
                                st.fixed_dictionaries(
                                    {"value": odd_text, "label": odd_text},
                                    optional={"description": st.one_of(odd_text, values)},
                                ),
                                max_size=3,
                            ),
                        },
                        optional={"label": st.one_of(odd_text, values)},
                    ),
                    max_size=3,
                )
            },
            optional={"title": st.one_of(odd_text, values)},
        ),
    )
)
def test_any_form_input_opens_a_form_or_raises_invalid_form(params: object) -> None:
    bus = LocalEventBus()
    started: list[object] = []
    bus.on(STARTED, started.append)
    host = FlowHost(bus)
    try:
        handle = host.start(real(params), tool_call_id="t")
    except InvalidForm as error:
        assert error.issues
        assert started == []
        return
    assert len(started) == 1
    msgspec.json.encode(started[0]).decode("utf-8")
    assert handle.cancel() is not None
    assert handle.state == "completed"


# --- the regressions, one by one ----------------------------------------------------------------


def _submit(answers: object, rid: str = "r1") -> dict[str, object]:
    return {
        "version": 1,
        "requestId": rid,
        "flowId": FLOW,
        "response": {"kind": "answer", "answers": answers},
    }


def test_lone_surrogate_in_custom_text_completes_with_replacement() -> None:
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    host.bus.emit(SUBMIT, _submit({"goal": {"customText": "go \ud83d fast \ud83d\ude00"}}))
    assert [c for c, _ in events] == [COMPLETED, SUBMIT_RESULT]
    assert isinstance(events[1][1], SubmitAck)
    assert handle.state == "completed"
    assert host.get(FLOW) is None
    result = handle.result
    assert result is not None
    goal = msgspec.to_builtins(result)["answers"]["goal"]
    assert goal["customText"] == "go \ufffd fast \U0001f600"


def test_lone_surrogate_in_request_id_is_echoed_as_replacement() -> None:
    host, events = _host()
    host.bus.emit(SUBMIT, {**_submit({}), "requestId": "id\udc00"})
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert result.request_id == "id\ufffd"
    msgspec.json.encode(result)


def test_lone_surrogate_in_form_title_is_replaced_before_started() -> None:
    bus = LocalEventBus()
    started: list[Any] = []
    bus.on(STARTED, started.append)
    handle = FlowHost(bus).start({**FORM_D["params"], "title": "Plan \ud83d"}, tool_call_id="x")
    assert handle.title == "Plan \ufffd"
    assert msgspec.json.decode(msgspec.json.encode(started[0]))["title"] == "Plan \ufffd"


def test_a_deep_value_where_a_text_is_read_is_refused_for_its_type() -> None:
    # As the reference: customText must be a string; how deep the array is does not matter.
    host, events = _host()
    deep = nested(TOO_DEEP, "x")
    host.bus.emit(SUBMIT, _submit({"goal": {"customText": deep}}))
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert isinstance(result, SubmitRejection)
    assert result.error == "invalid_answer"
    assert "customText" in result.message
    assert result.request_id == "r1"
    assert host.get(FLOW) is not None


def test_values_nested_beyond_the_recursion_limit_are_refused_for_their_type() -> None:
    host, events = _host()
    host.bus.emit(SUBMIT, _submit({"goal": {"values": nested(TOO_DEEP, "x")}}))
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert isinstance(result, SubmitRejection)
    assert result.error == "invalid_answer"
    assert "must be an array of option value strings" in result.message
    msgspec.json.encode(result)
    assert host.get(FLOW) is not None


def test_a_deep_value_in_a_key_the_rules_ignore_does_not_stop_a_valid_answer() -> None:
    # The reference never reads an unknown key, however deep its value.
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    answer = {"goal": {"values": [handle.questions[0].options[0].value]}}
    host.bus.emit(SUBMIT, {**_submit(answer), "extra": nested(TOO_DEEP, "x")})
    assert [c for c, _ in events] == [COMPLETED, SUBMIT_RESULT]
    assert isinstance(events[1][1], SubmitAck)
    assert handle.state == "completed"


def test_a_lone_surrogate_in_an_id_beside_a_deep_ignored_value_is_echoed_cleaned() -> None:
    # The ids are cleaned as they are echoed: the deep value the rules ignore is never copied.
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    host.bus.emit(SUBMIT, {**_submit({}), "requestId": "r\ud800", "extra": nested(TOO_DEEP, 1)})
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert isinstance(result, SubmitAck)
    assert result.request_id == "r\ufffd"
    assert handle.state == "completed"


def test_a_text_to_clean_beside_a_deep_ignored_value_is_recorded_cleaned() -> None:
    # Nothing is copied to clean it: the accepted text is cleaned as it is recorded.
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    answer = {"goal": {"customText": "go \ud800"}}
    response = {"kind": "answer", "answers": answer, "extra": nested(TOO_DEEP, 1)}
    host.bus.emit(SUBMIT, {**_submit({}), "requestId": "r\ud800", "response": response})
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert isinstance(result, SubmitAck)
    assert result.request_id == "r\ufffd"
    assert handle.result is not None
    assert msgspec.to_builtins(handle.result)["answers"]["goal"]["customText"] == "go \ufffd"


def test_form_nested_beyond_the_recursion_limit_is_an_invalid_form() -> None:
    with pytest.raises(InvalidForm) as raised:
        FlowHost(LocalEventBus()).start({"questions": nested(TOO_DEEP, 1)})
    assert raised.value.kind == "schema_error"


def test_local_answer_nested_too_deeply_is_refused_and_the_flow_stays_open() -> None:
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    with pytest.raises(SubmitRefused):
        handle.answer({"goal": {"customText": nested(TOO_DEEP, "x")}})
    assert handle.is_open
    assert events == []


def test_lone_surrogates_in_a_mapping_that_is_not_a_dict_are_replaced_too() -> None:
    # msgspec encodes dicts only: a MappingProxyType from a Python caller takes the slow path,
    # which must clean it as it cleans a dict (before, the acknowledgement kept "\ud800" and the
    # valid answer was refused as "cannot be recorded").
    host, events = _host()
    proxy = MappingProxyType
    answers = proxy({"goal": proxy({"customText": "go \ud800"})})
    response = proxy({"kind": "answer", "answers": answers})
    host.bus.emit(SUBMIT, proxy({**_submit({}), "requestId": "id\ud800", "response": response}))
    assert [c for c, _ in events] == [COMPLETED, SUBMIT_RESULT]
    ack = events[1][1]
    assert isinstance(ack, SubmitAck)
    assert ack.request_id == "id\ufffd"
    for _, data in events:
        msgspec.json.encode(data).decode("utf-8")
    result = msgspec.to_builtins(events[0][1])["result"]
    assert result["answers"]["goal"]["customText"] == "go \ufffd"


class Text(str):
    """A Python caller's ``str`` subclass (msgspec cannot encode one)."""


def test_str_subclass_ids_and_texts_are_echoed_as_plain_text() -> None:
    # Judged on a plain copy: the acknowledgement and the result hold plain str only.
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    value = handle.questions[0].options[0].value
    answer = {Text(handle.questions[0].id): {"values": [Text(value)], "note": Text("why")}}
    host.bus.emit(SUBMIT, {**_submit(answer), "requestId": Text("r9"), "flowId": Text(FLOW)})
    assert [c for c, _ in events] == [COMPLETED, SUBMIT_RESULT]
    ack = events[1][1]
    assert isinstance(ack, SubmitAck)
    assert (type(ack.request_id), type(ack.flow_id)) == (str, str)
    for _, data in events:
        msgspec.json.encode(data)


def test_a_str_subclass_flow_id_alone_is_echoed_as_the_flows_own_id() -> None:
    host, events = _host()
    handle = host.get(FLOW)
    assert handle is not None
    answer = {handle.questions[0].id: {"values": [handle.questions[0].options[0].value]}}
    host.bus.emit(SUBMIT, {**_submit(answer), "flowId": Text(FLOW)})
    ack = events[-1][1]
    assert isinstance(ack, SubmitAck)
    assert type(ack.flow_id) is str
    msgspec.json.encode(ack)


def test_a_mapping_that_cannot_be_read_whole_is_still_answered() -> None:
    # Its lone surrogate asks for a cleaned copy, which cannot be made (items() raises): it is
    # judged as it is, and what is emitted is cleaned.
    class Stubborn(dict[str, object]):
        def items(self) -> Any:
            raise RuntimeError("no")

    host, events = _host()
    host.bus.emit(SUBMIT, Stubborn({**_submit({"nope": {}}), "requestId": "r\ud800"}))
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert isinstance(result, SubmitRejection)
    assert (result.error, result.request_id) == ("invalid_answer", "r\ufffd")
    assert host.get(FLOW) is not None


# --- text that is not valid is compared as its cleaned copy --------------------------------------

PAIR = "\ud83d\ude00"  # a surrogate pair kept as two code points (a Python literal of JS text)
EMOJI = "\U0001f600"


def _emoji_host() -> tuple[FlowHost, list[tuple[str, Any]]]:
    bus = LocalEventBus()
    events: list[tuple[str, Any]] = []

    def recorder(channel: str) -> Callable[[object], None]:
        return lambda data: events.append((channel, data))

    for channel in (COMPLETED, SUBMIT_RESULT):
        bus.on(channel, recorder(channel))
    host = FlowHost(bus)
    option = {"value": EMOJI, "label": "Smile"}
    questions = [{"id": f"q{EMOJI}", "prompt": "p", "type": "multi", "options": [option]}]
    host.start({"questions": questions}, tool_call_id=EMOJI)
    return host, events


def _emoji_submit(answer: object, flow_id: str = f"tool:{EMOJI}") -> dict[str, object]:
    response = {"kind": "answer", "answers": answer}
    return {"version": 1, "requestId": "r", "flowId": flow_id, "response": response}


def test_a_pair_kept_as_two_code_points_matches_the_flow_question_and_option() -> None:
    host, events = _emoji_host()
    answer = {f"q{PAIR}": {"values": [PAIR], "optionNotes": {PAIR: "why"}}}
    host.bus.emit(SUBMIT, _emoji_submit(answer, flow_id=f"tool:{PAIR}"))
    assert [c for c, _ in events] == [COMPLETED, SUBMIT_RESULT]
    assert isinstance(events[1][1], SubmitAck)
    result = msgspec.to_builtins(events[0][1])["result"]
    assert result["answers"][f"q{EMOJI}"]["values"] == [EMOJI]
    assert result["answers"][f"q{EMOJI}"]["optionNotes"] == {EMOJI: "why"}


def test_values_told_apart_only_by_text_that_is_not_valid_are_one_value() -> None:
    host, events = _emoji_host()
    host.bus.emit(SUBMIT, _emoji_submit({f"q{EMOJI}": {"values": [PAIR, EMOJI]}}))
    (result,) = [d for c, d in events if c == SUBMIT_RESULT]
    assert isinstance(result, SubmitRejection)
    assert result.error == "invalid_answer"
    assert "must be unique" in result.message
    assert host.get(f"tool:{EMOJI}") is not None
