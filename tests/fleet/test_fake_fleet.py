"""``pi_ask_sdk.testing.fleet.FakeFleet``: what a bridge author's test relies on beyond the
example's (tests/examples/test_fleet_bridge.py): its Pis as a fleet hands them, typed errors for
a Pi that is not up, a form that never completes bounded."""

from __future__ import annotations

import asyncio

import pytest

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.errors import InvalidArgument
from pi_ask_sdk.fleet import FleetPi
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.fleet import FakeFleet


def test_its_pis_are_fleet_pis_and_a_pi_not_up_is_a_typed_error() -> None:
    fleet = FakeFleet()
    fleet.add_pi("ci-7", 4242, cwd="/src", pi_version="1.6.0")
    [pi] = fleet.pis
    assert (pi.host, pi.pid, pi.cwd, pi.pi_version) == ("ci-7", 4242, "/src", "1.6.0")
    assert fleet.pi_key(pi) == ("ci-7", 4242)
    with pytest.raises(InvalidArgument):
        fleet.add_pi("ci-7", 4242)  # up already
    with pytest.raises(InvalidArgument):
        fleet.pi("ci-7", 1)
    fleet.remove_pi("ci-7", 4242)
    with pytest.raises(InvalidArgument):
        fleet.pi_transport(pi)


@pytest.mark.asyncio
async def test_a_form_the_handler_leaves_open_times_out_naming_it() -> None:
    fleet = FakeFleet()
    pi = fleet.add_pi("ci-7", 4242)
    served: list[FleetPi] = []

    async def ignore(client: BridgeClient, pi: FleetPi) -> None:
        served.append(pi)
        async for _ in client.flows():
            pass

    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(serve(ignore, fleet, stop=stop))
    try:
        handle = pi.open(yes_no_params(), tool_call_id="c1")
        with pytest.raises(TimeoutError, match="tool:c1 on Pi 4242 of 'ci-7'"):
            await fleet.completed("ci-7", 4242, handle, timeout=0.2)
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
    assert served == fleet.pis  # served once, as the fleet reports it
