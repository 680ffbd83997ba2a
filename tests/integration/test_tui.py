"""Pi's interactive TUI under a pseudo-terminal: the host opens its forms directly (no
external-UI negotiation), so a bridge sees and answers them whoever else is connected; a
bridge's cancel ends the agent's turn; background forms open one at a time."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_ask_sdk.testing.realpi import PiTui
from tests.integration.pi_process import PiEnv, single_question
from tests.integration.test_standin import RawRelay

pytestmark = pytest.mark.pi

STARTUP = 20.0
"""Bound for the TUI's first screen (a cold start under a shared CPU)."""


@pytest.fixture
def tui(pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path) -> Iterator[PiTui]:
    with PiTui(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp) as pi:
        pi.wait_socket(timeout=STARTUP)
        pi.wait_screen("pi-ask-standin.ts", timeout=STARTUP)  # the startup screen lists it
        yield pi


def ask(pi: PiTui, call_id: str, *, background: bool = False) -> None:
    """The user types the scripted model's cue; the model then calls ask_user."""
    params = {**single_question(), "background": True} if background else single_question()
    text = f"CALL ask_user#{call_id} {json.dumps(params)}"
    pi.type(text)
    pi.wait_screen(f"ask_user#{call_id}")  # the editor shows it: now send it
    pi.enter()


def answer(bridge: RawRelay, call_id: str, value: str) -> None:
    """The bridge sees the form start and answers it."""
    channel, started = bridge.event()
    assert (channel, started["flowId"], started["toolCallId"]) == (
        "pi-agent-ask:started",
        f"tool:{call_id}",
        call_id,
    )
    submit(bridge, call_id, value)


def submit(bridge: RawRelay, call_id: str, value: str) -> None:
    """The bridge answers the open form of ``call_id``: it completes."""
    bridge.submit({
        "version": 1, "requestId": f"r-{call_id}", "flowId": f"tool:{call_id}",
        "response": {"kind": "answer", "answers": {"q": {"values": [value]}}},
    })  # fmt: skip
    channel, done = bridge.event()
    assert (channel, done["flowId"]) == ("pi-agent-ask:completed", f"tool:{call_id}")
    channel, ack = bridge.event()
    assert (channel, ack["ok"]) == ("pi-agent-ask:submit-result", True)


def test_in_the_tui_forms_open_for_an_observer_and_answers_reach_the_model(
    tui: PiTui,
) -> None:
    assert tui.mode == "tui"
    assert tui.standin is not None
    # Only an observer is connected: in the TUI nothing waits for an answerer.
    bridge = RawRelay(tui.socket_path, role="observer")
    try:
        ask(tui, "tui-1")
        if tui.env.flavour == "legacy":
            # Pi 0.74 gives extensions no run mode: a host cannot tell its TUI and negotiates
            # there too (as the real pi-agent-ask would), so an observer alone gets no form.
            screen = tui.wait_screen("TOOL RESULT ask_user")
            assert '"cancelled":true' in screen.replace(" ", "")
            bridge.close()
            bridge = RawRelay(tui.socket_path)  # an answerer
            ask(tui, "tui-1b")
            answer(bridge, "tui-1b", "b")
            event = tui.standin.server.wait_completed("tool:tui-1b", timeout=10)
            tui.wait_screen("TOOL RESULT ask_user", count=2)
        else:
            answer(bridge, "tui-1", "b")
            event = tui.standin.server.wait_completed("tool:tui-1", timeout=10)
            tui.wait_screen("TOOL RESULT ask_user")  # the model received the answer
    finally:
        bridge.close()
    assert event.result.answers["q"].values == ["b"]


def test_in_the_tui_a_bridge_cancel_ends_the_agents_turn(tui: PiTui) -> None:
    bridge = RawRelay(tui.socket_path)
    try:
        ask(tui, "tui-2")
        assert bridge.event()[0] == "pi-agent-ask:started"
        bridge.submit({
            "version": 1, "requestId": "r2", "flowId": "tool:tui-2",
            "response": {"kind": "cancel"},
        })  # fmt: skip
        channel, done = bridge.event()
        assert (channel, done["result"]["cancelled"]) == ("pi-agent-ask:completed", True)
        channel, ack = bridge.event()
        assert (channel, ack["ok"]) == ("pi-agent-ask:submit-result", True)
    finally:
        bridge.close()
    # The turn was aborted: the model never got the tool result. The next message is
    # answered (the session goes on), and still no tool result reached the model.
    tui.type("hello after the cancel")
    tui.wait_screen("hello after the cancel")
    tui.enter()
    screen = tui.wait_screen("ECHO: hello after the cancel")
    assert "TOOL RESULT ask_user" not in screen


def test_in_the_tui_background_forms_open_one_at_a_time_and_outlive_an_aborted_turn(
    tui: PiTui,
) -> None:
    bridge = RawRelay(tui.socket_path)
    if tui.env.flavour == "legacy":
        # Pi 0.74 gives extensions no run mode, so the host cannot know it is in the TUI: a
        # background call gets the non-interactive result at once and opens no form.
        try:
            ask(tui, "bg-1", background=True)
            screen = tui.wait_screen("TOOL RESULT ask_user")
            assert '"cancelled":true' in screen.split("TOOL RESULT ask_user", 1)[1]
            assert "Queued ask_user" not in screen
            ask(tui, "fg")
            answer(bridge, "fg", "a")  # the first event the bridge sees is the foreground form
        finally:
            bridge.close()
        completed = tui.standin.server.completed if tui.standin is not None else []
        assert [event.flow_id for event in completed] == ["tool:fg"]
        return
    try:
        # Each call returns its receipt at once (the turn ends); only the first form opens.
        ask(tui, "bg-1", background=True)
        tui.wait_screen("TOOL RESULT ask_user: Queued ask_user [bg-1]. 1 form(s) pending.")
        channel, started = bridge.event()
        assert (channel, started["flowId"]) == ("pi-agent-ask:started", "tool:bg-1")
        ask(tui, "bg-2", background=True)
        tui.wait_screen("TOOL RESULT ask_user: Queued ask_user [bg-2]. 2 form(s) pending.")
        # A foreground form opens beside them; the bridge's cancel aborts the agent's turn,
        # which the background form does not belong to: it stays open.
        ask(tui, "fg")
        channel, started = bridge.event()
        assert (channel, started["flowId"]) == ("pi-agent-ask:started", "tool:fg")
        bridge.submit({
            "version": 1, "requestId": "r-fg", "flowId": "tool:fg",
            "response": {"kind": "cancel"},
        })  # fmt: skip
        channel, done = bridge.event()
        assert (channel, done["flowId"]) == ("pi-agent-ask:completed", "tool:fg")
        assert bridge.event()[0] == "pi-agent-ask:submit-result"
        # bg-2 opens only once bg-1 ended: bg-1's completion comes first, then bg-2's start.
        submit(bridge, "bg-1", "b")
        channel, started = bridge.event()
        assert (channel, started["flowId"]) == ("pi-agent-ask:started", "tool:bg-2")
        tui.wait_screen("ECHO: Background answer [bg-1]")  # the answer reached the model
        submit(bridge, "bg-2", "a")
        tui.wait_screen("ECHO: Background answer [bg-2]")
    finally:
        bridge.close()
    completed = tui.standin.server.completed if tui.standin is not None else []
    assert [event.flow_id for event in completed] == ["tool:fg", "tool:bg-1", "tool:bg-2"]
