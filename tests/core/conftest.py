from __future__ import annotations

from collections.abc import Iterator
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
def recorder() -> Iterator[Recorder]:
    bus = LocalEventBus()
    rec = Recorder(bus)
    for channel in CHANNELS:
        bus.on(channel, lambda data, channel=channel: rec.events.append(
            (channel, msgspec.to_builtins(data))))
    yield rec


@pytest.fixture
def host(recorder: Recorder) -> FlowHost:
    return FlowHost(recorder.bus)
