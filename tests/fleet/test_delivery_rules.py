"""The fleet's delivery rules attacked where a bridge could be told something false, a submit
given to Pi twice, or a submit lost without a word: each test names the interleaving it
forces, on a real nats-server. Every wait is bounded."""

from __future__ import annotations

import pytest

from pi_ask_sdk import BridgeClient, SubmitAccepted, SubmitRejected
from pi_ask_sdk.testing import unchecked_answer, yes_no_params
from pi_ask_sdk.transports.nats import Fleet

from .conftest import Host
from .kit import submits_per_request, yes


@pytest.mark.asyncio
async def test_a_request_id_used_again_after_a_rejection_reaches_pi(
    host: Host, fleet: Fleet
) -> None:
    """A bridge's submit is refused (``invalid_answer``: the form stays open) and it sends a
    corrected answer under the same request id, as it may (an id is taken only while its
    submit is pending; a relay sends both to Pi). Over the fleet the second submit is a new
    one too: given to Pi and accepted, not answered from the first one's record (the old
    rejection, or nothing), and not dropped as the first one's re-send, whether it goes
    direct or through SUBMITS."""
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

        # Through SUBMITS: no forwarder subscribed (it was stopped), so each submit is
        # stored, to be taken by the next forwarder of the host.
        view = views["stored"]
        for answer, expected in (
            (unchecked_answer(view, {"deploy": ["maybe"]}), SubmitRejected),
            (yes(view), SubmitAccepted),
        ):
            await host.stop_forwarder()
            ticket = await client.submit(view, answer, request_id="r-2")
            forwarder = await host.start_forwarder()
            outcome = await client.await_result(ticket, timeout=20)
            assert isinstance(outcome, expected), outcome
        assert submits_per_request(relay)[(stored.flow_id, "r-2")] == 2
        assert stored.state == "completed"
