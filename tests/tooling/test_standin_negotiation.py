"""The stand-in server's external-UI negotiation (spec Appendix B), through its link.

A Python peer plays the extension: it reports whether a provider connected and how the
provider's ``open`` settled; the server (``pi_ask_core``) decides everything else. What a real Pi
sees is in tests/integration/test_headless.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from pi_ask_core.external_ui import ask_route, negotiates
from pi_ask_sdk.testing.standin import StandinServer

from .test_standin_server import FORM, Peer, peer

STARTED = "pi-agent-ask:started"
COMPLETED = "pi-agent-ask:completed"


async def negotiate(link: Peer, ref: int, call_id: str, mode: str | None = "rpc") -> None:
    await link.send(
        {"type": "tool", "ref": ref, "toolCallId": call_id, "params": FORM, "mode": mode}
    )
    assert await link.read() == {"type": "negotiate", "ref": ref}


async def provide(link: Peer, ref: int) -> dict[str, Any]:
    """A provider connected: the flow opens; returns the ``opened`` message."""
    await link.send({"type": "provider", "ref": ref, "connected": True})
    opened = await link.read()
    assert opened["type"] == "opened"
    started = await link.read()
    assert (started["type"], started["channel"]) == ("emit", STARTED)
    return opened


def test_every_mode_but_the_tui_negotiates() -> None:
    assert not negotiates("tui")
    for mode in ("rpc", "json", "print", None, ""):
        assert negotiates(mode)


@pytest.mark.asyncio
async def test_no_provider_gives_the_fallback_at_once_and_no_event() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "nobody")
        await link.send({"type": "provider", "ref": 1, "connected": False})
        result = await link.read()
        assert (result["type"], result["ref"], result["abort"]) == ("result", 1, False)
        assert result["result"]["cancelled"] is True
        assert result["result"]["answers"] == {}
        assert [q["id"] for q in result["result"]["questions"]] == ["q"]
        [session] = server.sessions
        assert session.host is not None
        assert session.host.active_flows == ()
        # nothing else was sent: the next message answers the next request
        await link.send({"type": "command", "ref": 2, "name": "list", "args": ""})
        assert (await link.read())["report"]["flowIds"] == []


@pytest.mark.asyncio
async def test_invalid_input_is_judged_before_any_negotiation() -> None:
    async with StandinServer() as server, peer(server) as link:
        await link.send({"type": "tool", "ref": 1, "params": {"questions": []}, "mode": "rpc"})
        invalid = await link.read()
        assert invalid["type"] == "result"
        assert invalid["result"]["error"]["kind"] == "invalid_input"


@pytest.mark.asyncio
async def test_a_provider_gets_the_request_and_a_submit_answers() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c1")
        opened = await provide(link, 1)
        request = opened["request"]
        assert request["version"] == 1
        assert (request["flowId"], request["toolCallId"]) == ("tool:c1", "c1")
        assert request["questions"][0]["options"][1]["label"] == "B"
        assert "title" not in request
        submit = {
            "version": 1,
            "requestId": "r1",
            "flowId": "tool:c1",
            "response": {"kind": "answer", "answers": {"q": {"values": ["b"]}}},
        }
        await link.send({"type": "submit", "data": submit})
        completed, ack, result = [await link.read() for _ in range(3)]  # the ack first
        assert completed["channel"] == COMPLETED
        assert (result["type"], result["abort"]) == ("result", False)
        assert result["result"]["answers"]["q"]["values"] == ["b"]
        assert ack["data"]["ok"] is True
        # a late settlement of the provider's open is ignored
        await link.send({"type": "provider_failed", "ref": 1, "message": "late"})
        await link.send({"type": "command", "ref": 2, "name": "list", "args": ""})
        assert (await link.read())["type"] == "report"
        assert [e.flow_id for e in server.completed] == ["tool:c1"]


@pytest.mark.asyncio
async def test_a_provider_failure_is_a_tool_error_without_completed() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c2")
        await provide(link, 1)
        await link.send({"type": "provider_failed", "ref": 1, "message": "no bridge left"})
        assert await link.read() == {"type": "error", "ref": 1, "message": "no bridge left"}
        [session] = server.sessions
        assert session.host is not None
        assert session.host.get("tool:c2") is None
        assert server.completed == []


@pytest.mark.asyncio
async def test_an_invalid_provided_response_is_a_tool_error() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c3")
        await provide(link, 1)
        await link.send({"type": "provided", "ref": 1})  # open resolved with nothing
        error = await link.read()
        assert error["type"] == "error"
        assert error["message"].startswith("External ask UI returned an invalid response: ")
        assert server.completed == []


@pytest.mark.asyncio
async def test_a_provided_answer_completes_the_flow() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c4")
        await provide(link, 1)
        response = {"kind": "answer", "answers": {"q": {"values": ["a"]}}}
        await link.send({"type": "provided", "ref": 1, "response": response})
        completed, result = await link.read(), await link.read()
        assert completed["channel"] == COMPLETED
        assert result["result"]["answers"]["q"]["values"] == ["a"]
        assert [e.flow_id for e in server.completed] == ["tool:c4"]


@pytest.mark.asyncio
async def test_a_cancel_ends_the_turn() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c5")
        await provide(link, 1)
        cancel = {
            "version": 1,
            "requestId": "r",
            "flowId": "tool:c5",
            "response": {"kind": "cancel"},
        }
        await link.send({"type": "submit", "data": cancel})
        completed, ack, result = [await link.read() for _ in range(3)]  # ack, then the abort
        assert completed["channel"] == COMPLETED
        assert (result["type"], result["abort"]) == ("result", True)
        assert result["result"]["cancelled"] is True
        assert ack["data"]["ok"] is True


@pytest.mark.asyncio
async def test_pi_aborting_during_the_negotiation_gives_the_fallback() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c6")
        await link.send({"type": "abort", "ref": 1})
        result = await link.read()
        assert (result["type"], result["result"]["cancelled"]) == ("result", True)
        await link.send({"type": "provider", "ref": 1, "connected": True})  # too late
        await link.send({"type": "command", "ref": 2, "name": "list", "args": ""})
        assert (await link.read())["report"]["flowIds"] == []


@pytest.mark.asyncio
async def test_pi_aborting_an_open_form_completes_it_cancelled() -> None:
    # The real extension completes an aborted external-UI flow as cancelled (completed emitted);
    # the extension already ended the call with the abort result, so no result follows.
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c7")
        opened = await provide(link, 1)
        await link.send({"type": "abort", "ref": 1})
        completed = await link.read()
        assert (completed["type"], completed["channel"]) == ("emit", COMPLETED)
        assert completed["data"]["flowId"] == "tool:c7"
        assert completed["data"]["result"] == opened["cancelled"]
        await link.send({"type": "command", "ref": 2, "name": "list", "args": ""})
        assert (await link.read())["report"]["flowIds"] == []


@pytest.mark.asyncio
async def test_a_call_that_failed_on_the_server_drops_its_form_without_completed() -> None:
    async with StandinServer() as server, peer(server) as link:
        await negotiate(link, 1, "c8")
        await provide(link, 1)
        await link.send({"type": "failed", "ref": 1})
        await link.send({"type": "command", "ref": 2, "name": "list", "args": ""})
        report = await link.read()  # no completed came first
        assert (report["type"], report["report"]["flowIds"]) == ("report", [])
        assert server.completed == []


def test_a_background_call_outside_the_tui_falls_back_and_in_the_tui_is_queued() -> None:
    form = {**FORM, "background": True}
    assert ask_route("rpc", form) == "fallback"
    assert ask_route("print", form) == "fallback"
    assert ask_route("tui", form) == "queue"
    assert ask_route("tui", FORM) == "open"
    assert ask_route("tui", {**FORM, "background": "yes"}) == "open"
    assert ask_route("rpc", FORM) == "negotiate"
    assert ask_route("rpc", {**FORM, "background": False}) == "negotiate"


@pytest.mark.asyncio
async def test_a_headless_background_call_gets_the_fallback_without_negotiating() -> None:
    # The real host offers no external UI for a background call: no flow, no event (§3.1).
    async with StandinServer() as server, peer(server) as link:
        params = {**FORM, "background": True}
        await link.send(
            {"type": "tool", "ref": 1, "toolCallId": "bg", "params": params, "mode": "rpc"}
        )
        result = await link.read()
        assert (result["type"], result["ref"], result["abort"]) == ("result", 1, False)
        assert result["result"]["cancelled"] is True
        assert result["result"]["answers"] == {}
        [session] = server.sessions
        assert session.host is not None
        assert session.host.active_flows == ()
