"""The host's screens of a submit: a dict subclass envelope is judged as the dict, and the
"does it encode" check answers as encoding does."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_ask_core import COMPLETED, FlowHost, LocalEventBus

# --- a submit envelope as a dict or as a dict subclass ------------------------------------------
# A Python caller may hand the host a dict subclass: it must get the same acknowledgement and the
# same completion as the plain dict (the host reads every envelope with parse_envelope).

_ANSWER_FORM = {
    "questions": [
        {
            "id": "q",
            "prompt": "p",
            "type": "multi",
            "options": [{"value": "a"}, {"value": "b"}],
        }
    ]
}
_ABSENT: Any = object()
envelope_fields = {
    "version": st.sampled_from([1, 1.0, True, 2, "1", None, _ABSENT]),
    "requestId": st.sampled_from(["r", "", " ", 7, None, "\ud83d", _ABSENT]),
    "flowId": st.sampled_from(["tool:a", "tool:b", "", 3, None, _ABSENT]),
    "response": st.sampled_from(
        [
            {"kind": "cancel"},
            {"kind": "answer", "answers": {"q": {"values": ["a", "b"], "note": "n"}}},
            {"kind": "answer", "mode": "elaborate", "answers": {"q": {"note": "why"}}},
            {"kind": "answer", "answers": {"q": {"values": ["x"]}}},
            {"kind": "answer", "answers": {"q": {"values": ["a", "a"]}}},
            {"kind": "answer"},
            {"kind": "nope"},
            {"kind": None},
            {},
            [],
            None,
            "answer",
            _ABSENT,
        ]
    ),
    "extra": st.sampled_from([_ABSENT, None, [[]], {"k": "v"}]),
}
envelopes = st.fixed_dictionaries({key: value for key, value in envelope_fields.items()}).map(
    lambda fields: {k: v for k, v in fields.items() if v is not _ABSENT}
)


class _DictSubclass(dict[str, Any]):
    pass


def _outcome(
    view: Callable[[dict[str, Any]], object], data: dict[str, Any]
) -> tuple[object, object]:
    bus = LocalEventBus()
    completed: list[object] = []
    bus.on(COMPLETED, completed.append)
    host = FlowHost(bus, clock=lambda: 0)
    host.start(_ANSWER_FORM, tool_call_id="a")
    ack = host.resolve_submit(view(data))
    return msgspec.to_builtins(ack), msgspec.to_builtins(completed)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(data=envelopes)
def test_a_dict_subclass_envelope_gets_the_dict_verdict(data: dict[str, Any]) -> None:
    assert _outcome(lambda d: d, data) == _outcome(_DictSubclass, data)


def test_a_well_formed_dict_subclass_submit_is_accepted_like_the_dict() -> None:
    data = {"version": 1, "requestId": "r", "flowId": "tool:a", "response": {"kind": "cancel"}}
    ack, completed = _outcome(lambda d: d, data)
    assert ack == {"version": 1, "requestId": "r", "flowId": "tool:a", "ok": True}
    assert _outcome(_DictSubclass, data) == (ack, completed)


# --- the "does it encode" check -----------------------------------------------------------------


def test_the_encode_check_answers_as_encode_does() -> None:
    from pi_ask_core._clean import clean_copy

    value = {"a": ["x", 1, True, None]}
    assert clean_copy(value) == (value, True)
    assert clean_copy(value)[0] is value  # proven clean: no copy
    assert clean_copy({"a": "\ud83d"}) == ({"a": "\ufffd"}, False)  # a lone surrogate
    thing = object()
    assert clean_copy({"a": thing}) == ({"a": thing}, False)
