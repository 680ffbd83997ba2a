"""The stand-in server's background queue in the TUI (spec §3.1), through its link.

A Python peer plays the extension. A background call returns its receipt at once; its form
opens (``started``) only when the forms queued before it ended, and each finished form's answer
is sent for delivery to the model. What a real Pi shows is in tests/integration/test_tui.py.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from pi_ask_sdk.testing.standin import StandinServer

from .conftest import TIMEOUT
from .test_standin_server import FORM, Peer, peer

STARTED = "pi-agent-ask:started"
COMPLETED = "pi-agent-ask:completed"
SUBMIT_RESULT = "pi-agent-ask:submit-result"
BACKGROUND = {**FORM, "background": True}


async def queue(link: Peer, ref: int, call_id: str) -> dict[str, Any]:
    """A background call in the TUI: its result (the receipt) comes back at once."""
    await link.send(
        {"type": "tool", "ref": ref, "toolCallId": call_id, "params": BACKGROUND, "mode": "tui"}
    )
    result = await link.read()
    assert (result["type"], result["ref"]) == ("result", ref)
    assert result.get("abort") is not True  # a queued call never ends the turn
    return result


async def queue_open(link: Peer, ref: int, call_id: str) -> None:
    """A background call whose form opens at once (nothing else is queued)."""
    await queue(link, ref, call_id)
    await expect_event(link, STARTED, f"tool:{call_id}")


async def expect_event(link: Peer, channel: str, flow_id: str) -> dict[str, Any]:
    message = await link.read()
    assert (message["type"], message["channel"]) == ("emit", channel)
    assert message["data"]["flowId"] == flow_id
    data = message["data"]
    assert isinstance(data, dict)
    return data


def answer_of(call_id: str, value: str) -> dict[str, object]:
    return {
        "version": 1,
        "requestId": f"r-{call_id}",
        "flowId": f"tool:{call_id}",
        "response": {"kind": "answer", "answers": {"q": {"values": [value]}}},
    }


async def flow_ids(link: Peer, ref: int) -> list[str]:
    await link.send({"type": "command", "ref": ref, "name": "list", "args": ""})
    report = await link.read()
    assert report["type"] == "report"
    ids = report["report"]["flowIds"]
    assert isinstance(ids, list)
    return ids


@pytest.mark.asyncio
async def test_background_calls_return_receipts_and_their_forms_open_one_at_a_time() -> None:
    async with StandinServer() as server, peer(server) as link:
        first = await queue(link, 1, "bg1")
        assert first["result"] == {
            "status": "queued",
            "requestId": "bg1",
            "questionIds": ["q"],
            "pendingRequests": 1,
        }
        assert first["text"].startswith("Queued ask_user [bg1]. 1 form(s) pending. ")
        await expect_event(link, STARTED, "tool:bg1")
        second = await queue(link, 2, "bg2")
        assert second["result"]["pendingRequests"] == 2
        assert await flow_ids(link, 3) == ["tool:bg1"]  # bg2 waits: no started yet

        await link.send({"type": "submit", "data": answer_of("bg1", "b")})
        completed = await expect_event(link, COMPLETED, "tool:bg1")
        assert completed["result"]["answers"]["q"]["values"] == ["b"]
        ack = await link.read()  # the bridge's acknowledgement before anything goes on
        assert (ack["channel"], ack["data"]["ok"]) == (SUBMIT_RESULT, True)
        answer = await link.read()
        assert answer["type"] == "answer"
        assert answer["customType"] == "ask:background-answer"
        assert answer["triggerTurn"] is True
        assert answer["text"].startswith("Background answer [bg1]:\n")
        assert answer["details"] == {"requestId": "bg1", "result": completed["result"]}
        started = await expect_event(link, STARTED, "tool:bg2")  # now, not before
        assert started["toolCallId"] == "bg2"

        cancel = {**answer_of("bg2", "a"), "response": {"kind": "cancel"}}
        await link.send({"type": "submit", "data": cancel})
        await expect_event(link, COMPLETED, "tool:bg2")
        assert (await link.read())["channel"] == SUBMIT_RESULT
        answer = await link.read()
        assert (answer["type"], answer["triggerTurn"]) == ("answer", False)  # context only
        assert [e.flow_id for e in server.completed] == ["tool:bg1", "tool:bg2"]


@pytest.mark.asyncio
async def test_pi_aborting_the_turn_leaves_a_background_form_open() -> None:
    # The call returned its receipt; an abort of its ref (the agent's turn) reaches nothing.
    async with StandinServer() as server, peer(server) as link:
        await queue_open(link, 1, "bg")
        await link.send({"type": "abort", "ref": 1})
        assert await flow_ids(link, 2) == ["tool:bg"]
        assert server.completed == []


@pytest.mark.asyncio
async def test_a_disposed_background_form_reports_cancelled_and_the_next_opens() -> None:
    async with StandinServer() as server, peer(server) as link:
        await queue_open(link, 1, "bg1")
        await queue(link, 2, "bg2")
        await link.send({"type": "command", "ref": 3, "name": "dispose", "args": "tool:bg1"})
        answer = await link.read()  # no completed: the form went away
        assert answer["type"] == "answer"
        assert answer["details"]["result"]["cancelled"] is True
        assert (await link.read())["type"] == "report"
        await expect_event(link, STARTED, "tool:bg2")  # (started is emitted on the next tick)
        assert server.completed == []


@pytest.mark.asyncio
async def test_a_foreground_call_opens_beside_an_open_background_form() -> None:
    async with StandinServer() as server, peer(server) as link:
        await queue_open(link, 1, "bg")
        await link.send(
            {"type": "tool", "ref": 2, "toolCallId": "fg", "params": FORM, "mode": "tui"}
        )
        assert (await link.read())["type"] == "opened"
        await expect_event(link, STARTED, "tool:fg")
        assert await flow_ids(link, 3) == ["tool:bg", "tool:fg"]
        assert server.completed == []


@pytest.mark.asyncio
async def test_a_queued_form_that_no_longer_opens_is_reported_and_the_next_opens(
    tmp_path: Any,
) -> None:
    preview = tmp_path / "p.txt"
    preview.write_text("text")
    options = [{"value": "a", "previewFile": str(preview)}, {"value": "b"}]
    params = {"background": True, "questions": [{**FORM["questions"][0], "options": options}]}
    async with StandinServer() as server, peer(server) as link:
        await queue_open(link, 1, "bg1")
        await link.send(
            {"type": "tool", "ref": 2, "toolCallId": "bg2", "params": params, "mode": "tui"}
        )
        assert (await link.read())["type"] == "result"
        await queue(link, 3, "bg3")
        preview.unlink()  # bg2's preview file is gone by the time its form would open
        await link.send({"type": "command", "ref": 4, "name": "cancel", "args": "tool:bg1"})
        await expect_event(link, COMPLETED, "tool:bg1")
        assert (await link.read())["type"] == "answer"
        failed = await link.read()
        assert failed["type"] == "answer"
        assert failed["details"]["requestId"] == "bg2"
        assert "Cannot load preview file" in failed["details"]["error"]
        assert failed["text"].startswith("Background answer [bg2]:\nQuestion form failed: ")
        assert failed["triggerTurn"] is True
        assert (await link.read())["type"] == "report"
        await expect_event(link, STARTED, "tool:bg3")
        assert [e.flow_id for e in server.completed] == ["tool:bg1"]


@pytest.mark.asyncio
async def test_the_session_ending_drops_the_queue_without_completed_or_a_next_form() -> None:
    async with StandinServer() as server:
        async with peer(server) as link:
            await queue_open(link, 1, "bg1")
            await queue(link, 2, "bg2")
            [session] = server.sessions
            host = session.host
            assert host is not None
            ended = asyncio.Event()
            host.active_flows[0].add_done_callback(lambda _: ended.set())
        await asyncio.wait_for(ended.wait(), TIMEOUT)  # the link closed: bg1 went away
        assert host.active_flows == ()  # and bg2 did not open
        assert server.completed == []
