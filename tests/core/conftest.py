from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field

import msgspec
import pytest

from pi_ask_core import CHANNELS, FlowHost, LocalEventBus


@dataclass
class Recorder:
    """Every payload on the bus, as (channel, wire JSON)."""

    bus: LocalEventBus
    events: list[tuple[str, object]] = field(default_factory=list)

    def take(self) -> list[tuple[str, object]]:
        taken, self.events = self.events, []
        return taken


@pytest.fixture
def recorder() -> Recorder:
    bus = LocalEventBus()
    rec = Recorder(bus)

    def recording(channel: str) -> Callable[[object], None]:
        def record(data: object) -> None:
            # A value with no JSON form (a test may send anything) is kept as it is.
            with contextlib.suppress(TypeError, ValueError):
                data = msgspec.to_builtins(data)
            rec.events.append((channel, data))

        return record

    for channel in CHANNELS:
        bus.on(channel, recording(channel))
    return rec


@pytest.fixture
def host(recorder: Recorder) -> FlowHost:
    return FlowHost(recorder.bus)
