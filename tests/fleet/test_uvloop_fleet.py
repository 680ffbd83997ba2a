"""The fleet under uvloop: a forwarder following a Python relay over a Unix socket and a
bridge's ``NatsTransport`` over a real nats-server, both on a uvloop loop
(``tests/on_uvloop.py``; the relay and in-process runs are tests/sdk/test_uvloop.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

pytest.importorskip("uvloop", reason="uvloop is in the test extra (not on Windows)")

from pi_ask_sdk import AnswerBuilder, BridgeClient, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, FleetUnavailable, NatsOptions
from pi_ask_sdk.fleet.connection import connect_nats
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_auth import make_tls
from pi_ask_sdk.testing.nats_server import NatsServer, nats_server
from tests.on_uvloop import run_on_uvloop

from .conftest import Host

T = 10.0


def test_a_form_is_answered_through_the_fleet(tmp_path: Path, nats_server: NatsServer) -> None:
    received: list[object] = []

    async def main() -> SubmitAccepted:
        host = Host(tmp_path / "relays", nats_server.url, "h1")
        host.directory.mkdir(mode=0o700)
        try:
            relay = await host.start_pi()
            forwarder = await host.start_forwarder()
            await forwarder.wait_taking_submits(T)
            async with Fleet(nats_server.url, heartbeat=0.2, idle_heartbeat=0.5) as fleet:
                await fleet.wait_pi("h1", relay.pid, timeout=T)
                async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
                    flows = client.flows()
                    relay.open_form(yes_no_params(), "call-1")
                    flow = await flows.next(timeout=T)
                    question = flow.question("deploy")
                    answer = AnswerBuilder(flow).select(question, question.value("no")).build()
                    outcome = await client.respond(flow, answer, timeout=T)
            received.extend(
                m["data"]["response"] for m in relay.received if m.get("type") == "emit"
            )
        finally:
            await host.close()
        assert isinstance(outcome, SubmitAccepted)
        return outcome

    outcome = run_on_uvloop(main, 60)
    assert outcome.completion.result.answers["deploy"].values == ["no"]
    assert received == [
        {"kind": "answer", "mode": "submit", "answers": {"deploy": {"values": ["no"]}}}
    ]


def test_over_tls_a_form_is_answered_and_a_wrong_ca_is_a_clear_fleet_unavailable(
    tmp_path: Path,
) -> None:
    """The bridge on uvloop over ``tls://`` (uvloop's own TLS transport): a form is answered;
    with another CA, ``Fleet`` and ``connect_nats`` raise the same ``FleetUnavailable`` as on
    asyncio's loop, naming the certificate check and the CA trusted."""
    tls = make_tls(tmp_path / "tls")
    other = make_tls(tmp_path / "other")
    with nats_server(tmp_path / "nats", tls=tls) as server:

        async def main() -> list[str]:
            host = Host(tmp_path / "relays", server.url, "h1")
            host.options = NatsOptions(server.url, tls_ca=str(tls.ca))
            host.directory.mkdir(mode=0o700)
            try:
                relay = await host.start_pi()
                forwarder = await host.start_forwarder()
                await forwarder.wait_taking_submits(T)
                async with Fleet(host.options, heartbeat=0.2) as fleet:
                    await fleet.wait_pi("h1", relay.pid, timeout=T)
                    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
                        flows = client.flows()
                        relay.open_form(yes_no_params(), "call-1")
                        flow = await flows.next(timeout=T)
                        question = flow.question("deploy")
                        answer = AnswerBuilder(flow).select(question, question.value("no")).build()
                        assert isinstance(
                            await client.respond(flow, answer, timeout=T), SubmitAccepted
                        )
            finally:
                await host.close()
            wrong = NatsOptions(server.url, tls_ca=str(other.ca))
            refused = []
            for attempt in (Fleet(wrong).open(), connect_nats(wrong)):
                with pytest.raises(FleetUnavailable) as caught:
                    await asyncio.wait_for(attempt, T)
                refused.append(str(caught.value))
            return refused

        refused = run_on_uvloop(main, 60)
    for message in refused:
        assert server.url in message
        assert "the server's TLS certificate is not trusted" in message, message
        assert str(other.ca) in message
