"""The fleet's delivery rules attacked where a bridge could be told something false, a submit
given to Pi twice, or a submit lost without a word: each test names the interleaving it
forces, on a real nats-server. Every wait is bounded."""

from __future__ import annotations

import asyncio

import pytest

from pi_ask_sdk import BridgeClient, SubmitAccepted, SubmitRejected
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.outcomes import SubmitLost
from pi_ask_sdk.testing import unchecked_answer, yes_no_params

from .conftest import Host
from .kit import submits_per_request, yes


@pytest.mark.asyncio
async def test_a_request_id_used_again_after_a_rejection_reaches_pi(
    host: Host, fleet: Fleet
) -> None:
    """A bridge's submit is refused (``invalid_answer``: the form stays open) and it sends a
    corrected answer under the same request id, as it may (an id is taken only while its
    submit is pending; a relay sends both to Pi). Over the fleet the second submit is a new
    one too (its bytes differ): given to Pi and accepted, not answered from the ledger's
    record of the first, also across a forwarder restart."""
    relay = await host.start_pi()
    forwarder = await host.start_forwarder()
    await forwarder.wait_taking_submits(20)
    await fleet.wait_pi("h1", relay.pid)
    direct = relay.open_form(yes_no_params(), "direct")
    stored = relay.open_form(yes_no_params(), "stored")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flows = client.flows()
        views = {f.tool_call_id: f for f in [await flows.next(timeout=10) for _ in range(2)]}
        view = views["direct"]
        wrong = unchecked_answer(view, {"deploy": ["maybe"]})
        first = await client.respond(view, wrong, request_id="r-1", timeout=10)
        assert isinstance(first, SubmitRejected), first
        assert first.error == "invalid_answer"
        assert direct.is_open
        second = await client.respond(view, yes(view), request_id="r-1", timeout=10)
        assert isinstance(second, SubmitAccepted), second
        assert submits_per_request(relay)[(direct.flow_id, "r-1")] == 2
        assert direct.state == "completed"

        # Across a forwarder restart: the new one's ledger is empty, Pi judges each.
        view = views["stored"]
        for answer, expected in (
            (unchecked_answer(view, {"deploy": ["maybe"]}), SubmitRejected),
            (yes(view), SubmitAccepted),
        ):
            await host.stop_forwarder()
            forwarder = await host.start_forwarder()
            await forwarder.wait_taking_submits(20)
            outcome = await client.respond(view, answer, request_id="r-2", timeout=20)
            assert isinstance(outcome, expected), outcome
        assert submits_per_request(relay)[(stored.flow_id, "r-2")] == 2
        assert stored.state == "completed"


@pytest.mark.asyncio
async def test_a_submit_lost_with_a_relay_connection_leaves_no_route_behind(
    host: Host, fleet: Fleet
) -> None:
    """The interleaving: the forwarder gives bridge A's submit to Pi, and its relay connection
    drops before Pi applied it (the submit is lost with it); the forwarder reconnects (a new
    epoch: A's submit is SubmitLost) and the form is replayed. Bridge B answers it under the
    same request id (ids are the bridges' own: two may choose one): the verdict is B's, not
    routed to A's lost submit, so B is told SubmitAccepted."""
    relay = await host.start_served_pi(fleet, own_marks=True)
    handle = relay.open_form(yes_no_params(), "again")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as a:
        view = await a.flows().next(timeout=10)
        relay.hold = asyncio.Event()
        first = asyncio.create_task(a.respond(view, yes(view), request_id="r", timeout=20))
        await relay.wait_submits(1, 10)
        await relay.drop_held()  # lost with the connection: Pi never applies it
        await relay.stop()
        relay.hold = None
        await relay.start()  # the forwarder reconnects; the form is replayed
        lost = await asyncio.wait_for(first, 20)
        assert isinstance(lost, SubmitLost), lost
        async with BridgeClient(fleet.transport("h1", relay.pid)) as b:
            flows = b.flows()
            flow = await flows.next(timeout=10)
            assert flow.flow_id == handle.flow_id
            outcome = await b.respond(flow, yes(flow), request_id="r", timeout=10)
            assert isinstance(outcome, SubmitAccepted), outcome
    assert handle.state == "completed"
