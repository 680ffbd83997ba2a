"""Real sessions under uvloop, the event loop many production services run: the in-process
transport and RelayTransport against the Python test relay (a real Unix socket).

uvloop's transports are not ``asyncio.Transport`` instances, its timer handles not
``asyncio.TimerHandle`` ones, and it orders I/O callbacks its own way; each test opens a form,
answers it with an explicit value and checks the outcome, all on a uvloop loop
(``tests/on_uvloop.py``). The fleet's run is tests/fleet/test_uvloop_fleet.py.
"""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("uvloop", reason="uvloop is in the test extra (not on Windows)")

from pi_ask_sdk import Answer, AnswerBuilder, BridgeClient, FlowView, SubmitAccepted
from pi_ask_sdk.forms import F
from pi_ask_sdk.testing import CHECKS, AskParams, FakeHost, check_transport, yes_no_params
from pi_ask_sdk.transports.relay import RelayTransport
from tests.on_uvloop import run_on_uvloop
from tests.relay.fake_relay import FakeRelay

T = 5.0
"""Bound of each wait; the whole of a test is bounded by ``run_on_uvloop``'s timeout."""


def answer_no(flow: FlowView[F]) -> Answer[F]:
    question = flow.question("deploy")
    return AnswerBuilder(flow).select(question, question.value("no")).build()


def test_a_form_is_answered_over_the_in_process_transport() -> None:
    host = FakeHost()

    async def main() -> SubmitAccepted:
        async with host.client() as client:
            flows = client.flows()
            host.open(yes_no_params(), tool_call_id="call-1")
            flow = await flows.next(timeout=T)
            outcome = await client.respond(flow, answer_no(flow), timeout=T)
        assert isinstance(outcome, SubmitAccepted)
        return outcome

    outcome = run_on_uvloop(main, 30)
    assert outcome.completion.result.answers["deploy"].values == ["no"]
    assert not outcome.completion.result.cancelled


def _relay_answered(relay: FakeRelay) -> dict[str, object]:
    [submit] = [m for m in relay.received if m.get("type") == "emit"]
    response: dict[str, object] = submit["data"]["response"]
    return response


def test_a_form_is_answered_over_the_relay(tmp_path: Path) -> None:
    """The connect that failed under uvloop (an ``isinstance(transport, asyncio.Transport)``
    check in ``connection_made``), with the client hello and welcome the real relay speaks."""
    received: list[dict[str, object]] = []

    async def main() -> SubmitAccepted:
        relay = FakeRelay(tmp_path / "relays")
        relay.roles = True
        await relay.start()
        try:
            async with BridgeClient(RelayTransport(relay.path)) as client:
                await relay.wait_answerers(1, T)
                flows = client.flows()
                relay.open_form(yes_no_params(), "call-1")
                flow = await flows.next(timeout=T)
                outcome = await client.respond(flow, answer_no(flow), timeout=T)
            received.append(_relay_answered(relay))
        finally:
            await relay.stop()
        assert isinstance(outcome, SubmitAccepted)
        return outcome

    outcome = run_on_uvloop(main, 30)
    assert outcome.completion.result.answers["deploy"].values == ["no"]
    assert received == [
        {"kind": "answer", "mode": "submit", "answers": {"deploy": {"values": ["no"]}}}
    ]


def test_a_form_bigger_than_one_socket_read_arrives_whole_over_the_relay(tmp_path: Path) -> None:
    """The relay's reader is a ``BufferedProtocol`` with a 256 KiB buffer: a 700 KB line comes
    in several reads, which uvloop hands over in its own sizes."""
    prompt = "Deploy " + "x" * 700_000 + "?"

    async def main() -> tuple[str, SubmitAccepted]:
        relay = FakeRelay(tmp_path / "relays")
        await relay.start()
        try:
            async with BridgeClient(RelayTransport(relay.path)) as client:
                flows = client.flows()
                relay.open_form(yes_no_params(prompt=prompt), "big")
                flow = await flows.next(timeout=T)
                outcome = await client.respond(flow, answer_no(flow), timeout=T)
        finally:
            await relay.stop()
        assert isinstance(outcome, SubmitAccepted)
        return str(flow.question("deploy").prompt), outcome

    got, outcome = run_on_uvloop(main, 30)
    assert got == prompt
    assert outcome.completion.result.answers["deploy"].values == ["no"]


def test_the_relay_reconnects_to_a_new_session_and_answers_its_form(tmp_path: Path) -> None:
    """A session end drops the connection (``abort``) and the transport reconnects: the form
    the old session left open is gone, the new session's form is answered."""

    async def main() -> tuple[list[str], SubmitAccepted]:
        relay = FakeRelay(tmp_path / "relays")
        await relay.start()
        try:
            transport = RelayTransport(relay.path, backoff_initial=0.01)
            async with BridgeClient(transport) as client:
                flows = client.flows()
                relay.open_form(yes_no_params(), "old")
                old = await flows.next(timeout=T)
                await relay.end_session("new")
                relay.open_form(yes_no_params(), "new")
                seen = [old.tool_call_id or ""]
                flow = await flows.next(timeout=T)
                seen.append(flow.tool_call_id or "")
                outcome = await client.respond(flow, answer_no(flow), timeout=T)
                assert transport.connections == 2
        finally:
            await relay.stop()
        assert isinstance(outcome, SubmitAccepted)
        return seen, outcome

    seen, outcome = run_on_uvloop(main, 30)
    assert seen == ["old", "new"]
    assert outcome.completion.result.answers["deploy"].values == ["no"]


def test_the_relay_transport_passes_every_contract_check(tmp_path: Path) -> None:
    async def main() -> list[str]:
        relay = FakeRelay(tmp_path / "relays")
        await relay.start()

        def open_form(params: AskParams, tool_call_id: str) -> None:
            relay.open_form(params, tool_call_id)

        try:
            return await check_transport(lambda: RelayTransport(relay.path), open_form, timeout=T)
        finally:
            await relay.stop()

    assert run_on_uvloop(main, 60) == list(CHECKS)
