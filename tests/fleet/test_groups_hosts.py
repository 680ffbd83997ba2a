"""A replica group whose replicas answer for different hosts (``Fleet(hosts=[...],
group=...)``), on a real nats-server: ``serve(handler, fleet)`` serves only a replica's own
hosts, so a form must go to a replica that answers for its host. Every form is counted at its
host: answered exactly once (lost 0, doubled 0). Every wait is bounded."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_ask_core import FlowHandle
from pi_ask_sdk.fleet import Fleet
from pi_ask_sdk.fleet.groups import owner
from pi_ask_sdk.fleet.protocol import FleetNames
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .kit import Retrying, all_done, serving
from .test_groups import GROUP, Answered, hosts_with_a_pi, only_relay


@pytest.mark.asyncio
async def test_a_host_only_some_replicas_answer_for_has_its_forms_shown_to_one_of_those(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    """Replica "ra" answers for hosts h0 and h1, replica "rb" (same group) for h0 only. A form
    of h1 that hashing over the whole group gives to "rb" must still be shown to "ra": "rb"
    never serves h1's Pi (its forwarder does not count it), so nobody else will. Every form of
    both hosts is answered once; h1's all by "ra"."""
    h0, h1 = await hosts_with_a_pi(tmp_path, nats_server.url, 2)
    relays = [only_relay(h0), only_relay(h1)]
    answered = Answered(relays)
    names = FleetNames()
    try:
        async with (
            Fleet(
                nats_server.url, group=GROUP, hosts=["h0", "h1"], heartbeat=0.2, bridge_id="ra"
            ) as ra,
            Fleet(nats_server.url, group=GROUP, hosts=["h0"], heartbeat=0.2, bridge_id="rb") as rb,
        ):
            assert await ra.wait_group(2, 10) == ("ra", "rb")
            assert await rb.wait_group(2, 10) == ("ra", "rb")
            group = [
                Retrying("ra", waits=lambda flow: False),
                Retrying("rb", waits=lambda flow: False),
            ]
            async with serving((group[0], ra), (group[1], rb)):
                handles: list[FlowHandle] = []
                of_rb = 0  # h1's forms that hashing over the whole group gives to "rb"
                n = 0
                while of_rb < 4:
                    handle = relays[1].open_form(yes_no_params(), f"h1-{n}")
                    handles.append(handle)
                    subject = names.flow("h1", relays[1].pid, handle.flow_id)
                    of_rb += owner(subject, ["ra", "rb"]) == "rb"
                    n += 1
                handles += [relays[0].open_form(yes_no_params(), f"h0-{n}") for n in range(8)]
                await all_done(handles, 15)
                assert {f: k for f, k in answered.ok.items() if k != 1} == {}  # doubled 0
                assert set(answered.ok) == {h.flow_id for h in handles}  # lost 0
                assert not any(
                    (h.tool_call_id or "").startswith("h1-") and h.flow_id in group[1].shown
                    for h in handles
                )  # "rb" never saw a form of h1
                assert group[0].shown & group[1].shown == set()  # each form shown once
    finally:
        for host in (h0, h1):
            await host.close()
