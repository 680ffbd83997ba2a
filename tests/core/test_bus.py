"""LocalEventBus behaves like pi.events: synchronous, ordered, isolated handler errors."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from pi_ask_core import LocalEventBus


def test_handlers_run_in_subscription_order_with_the_same_object() -> None:
    bus = LocalEventBus()
    seen: list[tuple[str, object]] = []
    bus.on("c", lambda d: seen.append(("first", d)))
    bus.on("c", lambda d: seen.append(("second", d)))
    bus.on("other", lambda d: seen.append(("other", d)))
    payload = {"x": 1}
    bus.emit("c", payload)
    assert seen == [("first", payload), ("second", payload)]
    assert seen[0][1] is seen[1][1] is payload


def test_a_raising_handler_is_logged_and_the_rest_still_run(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = LocalEventBus()
    seen: list[object] = []

    def broken(data: object) -> None:
        raise ValueError("boom")

    bus.on("c", broken)
    bus.on("c", seen.append)
    with caplog.at_level(logging.ERROR, logger="pi_ask_core.bus"):
        bus.emit("c", 1)
    assert seen == [1]
    assert "boom" in caplog.text
    assert "c" in caplog.records[0].getMessage()


def test_unsubscribe_removes_only_its_own_subscription_and_is_idempotent() -> None:
    bus = LocalEventBus()
    seen: list[object] = []
    off_first = bus.on("c", seen.append)
    bus.on("c", seen.append)
    off_first()
    off_first()
    bus.emit("c", 1)
    assert seen == [1]
    assert bus.listener_count("c") == 1


def test_subscriptions_changed_during_an_emit_apply_from_the_next_emit() -> None:
    bus = LocalEventBus()
    seen: list[str] = []

    def add_more(data: object) -> None:
        seen.append("a")
        bus.on("c", lambda d: seen.append("late"))

    off = bus.on("c", add_more)
    bus.emit("c", None)
    off()
    bus.emit("c", None)
    assert seen == ["a", "late"]


def test_unsubscribing_one_of_several_keeps_the_others_in_order() -> None:
    bus = LocalEventBus()
    seen: list[object] = []

    def tag(name: str) -> Callable[[object], None]:
        return lambda data: seen.append(name)

    offs = [bus.on("c", tag(name)) for name in ("a", "b", "c")]
    same = bus.on("c", seen.append)
    off_same = bus.on("c", seen.append)
    offs[1]()
    off_same()
    bus.emit("c", "x")
    assert seen == ["a", "c", "x"]
    for off in (offs[0], offs[2], same, offs[1]):
        off()
    assert bus.listener_count("c") == 0
    bus.emit("c", "y")
    assert seen == ["a", "c", "x"]
    bus.on("c", seen.append)
    bus.emit("c", "z")
    assert seen == ["a", "c", "x", "z"]
