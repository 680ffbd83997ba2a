"""``decode_event``: every form a payload comes in ends as one typed value, and bad input is a
``Skipped`` naming why, never an exception."""

from __future__ import annotations

import json

import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    CompletedEvent,
    Skipped,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    decode_event,
)
from pi_ask_core.protocol import LEGACY_CHANNEL_PREFIX

STARTED_JSON: dict[str, object] = {
    "version": 1,
    "flowId": "tool:x",
    "toolCallId": "x",
    "source": "tool",
    "questions": [
        {
            "id": "q",
            "label": "Q",
            "prompt": "?",
            "type": "single",
            "required": False,
            "options": [{"value": "a", "label": "A"}],
        }
    ],
    "createdAt": 1,
}
COMPLETED_JSON: dict[str, object] = {
    "version": 1,
    "flowId": "tool:x",
    "source": "tool",
    "result": {"cancelled": True, "mode": "submit", "questions": [], "answers": {}},
    "completedAt": 2,
}
ACK_JSON: dict[str, object] = {"version": 1, "requestId": "r", "flowId": "f", "ok": True}
REJECTION_JSON: dict[str, object] = {
    **ACK_JSON,
    "ok": False,
    "error": "invalid_answer",
    "message": "m",
}
SUBMIT_JSON: dict[str, object] = {
    "version": 1,
    "requestId": "r",
    "flowId": "f",
    "response": {"kind": "cancel"},
}
CASES: list[tuple[str, dict[str, object], type]] = [
    (STARTED, STARTED_JSON, StartedEvent),
    (COMPLETED, COMPLETED_JSON, CompletedEvent),
    (SUBMIT_RESULT, ACK_JSON, SubmitAck),
    (SUBMIT_RESULT, REJECTION_JSON, SubmitRejection),
    (SUBMIT, SUBMIT_JSON, SubmitEvent),
]


def forms_of(payload: dict[str, object]) -> list[object]:
    text = json.dumps(payload).encode()
    return [payload, text, bytearray(text), memoryview(text), msgspec.Raw(text)]


@pytest.mark.parametrize(("channel", "payload", "kind"), CASES)
def test_each_form_of_a_payload_decodes_to_its_struct(
    channel: str, payload: dict[str, object], kind: type
) -> None:
    decoded = [decode_event(channel, raw) for raw in forms_of(payload)]
    assert all(type(event) is kind for event in decoded)
    assert all(msgspec.to_builtins(event) == payload for event in decoded)
    # A decoded event, given again, is taken as it is (it is not decoded twice).
    assert decode_event(channel, decoded[0]) is decoded[0]


@pytest.mark.parametrize("version", [1, 1.0])
@pytest.mark.parametrize(("channel", "payload", "kind"), CASES)
def test_version_is_the_number_one(
    channel: str, payload: dict[str, object], kind: type, version: object
) -> None:
    for raw in forms_of({**payload, "version": version}):
        event = decode_event(channel, raw)
        assert type(event) is kind
        assert not isinstance(event, Skipped)
        assert type(event.version) is int


@pytest.mark.parametrize("version", [True, 2, "1", None, 0.5, [1]])
@pytest.mark.parametrize(("channel", "payload", "kind"), CASES)
def test_any_other_version_is_skipped(
    channel: str, payload: dict[str, object], kind: type, version: object
) -> None:
    for raw in forms_of({**payload, "version": version}):
        event = decode_event(channel, raw)
        assert isinstance(event, Skipped)
        assert event.reason == "bad_version"
        assert event.payload == {**payload, "version": version}
    missing = {k: v for k, v in payload.items() if k != "version"}
    event = decode_event(channel, missing)
    assert isinstance(event, Skipped)
    assert (event.reason, event.detail) == (
        "bad_version",
        "version must be the number 1, got missing",
    )


def test_a_struct_on_the_wrong_channel_or_of_another_version_is_skipped() -> None:
    started = decode_event(STARTED, STARTED_JSON)
    assert isinstance(started, StartedEvent)
    wrong = decode_event(COMPLETED, started)
    assert isinstance(wrong, Skipped)
    assert wrong.reason == "malformed"
    v2 = decode_event(STARTED, msgspec.structs.replace(started, version=2))
    assert isinstance(v2, Skipped)
    assert v2.reason == "bad_version"


class _MyAck(SubmitAck, frozen=True, kw_only=True):
    """A subclass of a wire Struct, as a Python host of one's own might emit."""


class _MyStarted(StartedEvent, frozen=True, kw_only=True):
    pass


class _JsonBytes(bytes):
    pass


def test_struct_subclasses_and_json_text_subclasses_decode_like_their_base() -> None:
    # The exact Structs take a shortcut by type; a subclass takes the general path to the
    # same answer, and a bytes subclass is still JSON text.
    ack = _MyAck(request_id="r", flow_id="f")
    assert decode_event(SUBMIT_RESULT, ack) is ack
    started = _MyStarted(**msgspec.structs.asdict(msgspec.convert(STARTED_JSON, StartedEvent)))
    assert decode_event(STARTED, started) is started
    old = msgspec.structs.replace(started, version=2)
    assert getattr(decode_event(STARTED, old), "reason", None) == "bad_version"
    for channel, payload, kind in CASES:
        event = decode_event(channel, _JsonBytes(json.dumps(payload).encode()))
        assert type(event) is kind
        assert msgspec.to_builtins(event) == payload


@pytest.mark.parametrize(
    ("channel", "raw", "reason"),
    [
        ("pi-agent-ask:other", STARTED_JSON, "unknown_channel"),
        (LEGACY_CHANNEL_PREFIX + "started", STARTED_JSON, "legacy_channel"),
        (STARTED, b"{not json", "not_json"),
        (STARTED, b"[" * 100_000 + b"]" * 100_000, "not_json"),
        (STARTED, [1, 2], "not_an_object"),
        (STARTED, b'"text"', "not_an_object"),
        (STARTED, {**STARTED_JSON, "questions": "nope"}, "malformed"),
        (SUBMIT_RESULT, {**ACK_JSON, "ok": "yes"}, "malformed"),
        (COMPLETED, {"version": 1}, "malformed"),
    ],
)
def test_bad_payloads_are_skipped_with_the_reason(channel: str, raw: object, reason: str) -> None:
    event = decode_event(channel, raw)
    assert isinstance(event, Skipped)
    assert (event.channel, event.reason) == (channel, reason)
    assert event.detail


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    max_leaves=20,
)


@given(
    channel=st.sampled_from([STARTED, COMPLETED, SUBMIT, SUBMIT_RESULT, "x"]),
    value=json_values,
    as_text=st.booleans(),
)
def test_decode_event_never_raises(channel: str, value: object, as_text: bool) -> None:
    raw = msgspec.json.encode(value) if as_text else value
    event = decode_event(channel, raw)
    assert isinstance(
        event,
        (Skipped, StartedEvent, CompletedEvent, SubmitAck, SubmitRejection, SubmitEvent),
    )
