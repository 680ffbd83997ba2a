"""decode_event with a channel constant is typed by that channel."""

from __future__ import annotations

from typing_extensions import assert_type

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT_RESULT,
    CompletedEvent,
    Skipped,
    StartedEvent,
    SubmitAck,
    SubmitRejection,
    decode_event,
)
from pi_ask_core.events import DecodedEvent


def channels(raw: bytes, channel: str) -> None:
    assert_type(decode_event(STARTED, raw), StartedEvent | Skipped)
    assert_type(decode_event(COMPLETED, raw), CompletedEvent | Skipped)
    assert_type(decode_event(SUBMIT_RESULT, raw), SubmitAck | SubmitRejection | Skipped)
    assert_type(decode_event(channel, raw), DecodedEvent | Skipped)
    event = decode_event(STARTED, raw)
    if not isinstance(event, Skipped):
        print(event.questions, event.flow_id)
