"""Typed Structs on the bus are taken as they are, but only when they fit their channel."""

from __future__ import annotations

import logging

import msgspec
import pytest

from pi_ask_core import COMPLETED, STARTED, StartedEvent
from pi_ask_sdk.testing import FakeHost, yes_no_params

from .conftest import TIMEOUT


@pytest.mark.asyncio
async def test_structs_of_another_version_or_channel_are_skipped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    host = FakeHost()
    async with host.client() as client:
        events = client.events()
        handle = host.open(yes_no_params(), tool_call_id="real")
        started = handle.started_event()
        assert started is not None
        with caplog.at_level(logging.DEBUG, logger="pi_ask_sdk"):
            host.emit_raw(STARTED, msgspec.structs.replace(started, version=2, flow_id="v2"))
            host.emit_raw(COMPLETED, msgspec.structs.replace(started, flow_id="wrong-channel"))
        host.open(yes_no_params(), tool_call_id="after")
        seen = [await events.next(timeout=TIMEOUT) for _ in range(2)]
    assert [e.flow.flow_id for e in seen if e.kind == "started"] == ["tool:real", "tool:after"]
    assert "version" in caplog.text
    assert "malformed" in caplog.text
    assert isinstance(started, StartedEvent)
