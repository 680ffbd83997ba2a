"""The fleet attacked: bursts, MB-sized forms and submits, lone surrogates, a consumer that
would sit on a host's submits. Real nats-server (default max_payload: 1 MiB)."""

from __future__ import annotations

import asyncio
import base64
import json
import logging
import os
from collections import Counter

import pytest

from pi_ask_sdk import BridgeClient, FlowView, SubmitAccepted, SubmitRejected
from pi_ask_sdk.fleet import Fleet, FleetPayloadTooLarge, FleetPi
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import AskParams, unchecked_answer, yes_no_params

from .conftest import Host
from .kit import all_done, submits_per_request, yes


@pytest.mark.asyncio
async def test_a_burst_of_forms_on_three_pis_is_answered_once_each(
    host: Host, fleet: Fleet
) -> None:
    """300 forms opened at once over three Pis; one serve() bridge answers all."""
    relays = [await host.start_pi() for _ in range(3)]
    await host.start_forwarder()
    for relay in relays:
        await fleet.wait_pi("h1", relay.pid)
    accepted: Counter[tuple[int, str]] = Counter()  # (pid, flow id): ids repeat across Pis
    done = asyncio.Event()

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        async def answer(flow: FlowView) -> None:
            outcome = await client.respond(flow, yes(flow), timeout=60)
            if isinstance(outcome, SubmitAccepted):
                accepted[(pi.pid, flow.flow_id)] += 1
            if sum(accepted.values()) == 300:
                done.set()

        tasks = set()
        async for flow in client.flows():
            task = asyncio.create_task(answer(flow))
            tasks.add(task)
            task.add_done_callback(tasks.discard)

    stop = asyncio.Event()
    serving = asyncio.create_task(serve(handler, fleet, stop=stop))
    handles = [relay.open_form(yes_no_params(), f"b-{n}") for n in range(100) for relay in relays]
    await all_done(handles, 120)
    await asyncio.wait_for(done.wait(), 60)
    assert set(accepted.values()) == {1}
    assert len(accepted) == 300
    for relay in relays:
        assert set(submits_per_request(relay).values()) == {1}
    stop.set()
    await asyncio.wait_for(serving, 10)


def big_form(text: str) -> AskParams:
    params = yes_no_params()
    params["questions"][0]["prompt"] = text
    return params


@pytest.mark.asyncio
async def test_a_3_mb_form_travels_compressed(host: Host, fleet: Fleet) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    prompt = "Deploy this change set? " * 130_000  # ~3 MB of text, compresses well
    handle = relay.open_form(big_form(prompt), "big")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flow = await client.flows().next(timeout=30)
        assert str(flow.question("deploy").prompt) == prompt.strip()  # (the host trims it)
        assert isinstance(await client.respond(flow, yes(flow), timeout=30), SubmitAccepted)
    assert handle.state == "completed"


@pytest.mark.asyncio
async def test_a_form_too_big_even_compressed_is_reported_not_lost(
    host: Host, fleet: Fleet, caplog: pytest.LogCaptureFixture
) -> None:
    """1.5 MB of random text: over max_payload even compressed. The bridges are told (an
    error naming the form on the pi_ask_sdk.fleet logger), the form stays open in Pi, and the
    forms after it pass."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    noise = base64.b64encode(os.urandom(1_100_000)).decode()
    with caplog.at_level(logging.ERROR, logger="pi_ask_sdk.fleet"):
        async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
            flows = client.flows()
            huge = relay.open_form(big_form(noise), "huge")
            after = relay.open_form(yes_no_params(), "after")
            flow = await flows.next(timeout=30)
            assert flow.tool_call_id == "after"  # the huge one never arrives as a form...
            assert isinstance(await client.respond(flow, yes(flow), timeout=30), SubmitAccepted)
        # ...but it is reported, by the forwarder and by the bridge's transport
        reported = [r.getMessage() for r in caplog.records if huge.flow_id in r.getMessage()]
        assert any("max_payload" in text for text in reported), reported
    assert huge.is_open
    assert after.state == "completed"
    # a late bridge is told too (the marker is the form's last word in the stream)
    caplog.clear()
    with caplog.at_level(logging.ERROR, logger="pi_ask_sdk.fleet"):
        async with BridgeClient(fleet.transport("h1", relay.pid)) as late:
            assert huge.flow_id not in late.open_flows
        assert any(huge.flow_id in r.getMessage() for r in caplog.records)


@pytest.mark.asyncio
async def test_a_submit_too_big_is_a_typed_error_and_nothing_is_sent(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "s")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flow = await client.flows().next(timeout=10)
        noise = base64.b64encode(os.urandom(1_100_000)).decode()
        with pytest.raises(FleetPayloadTooLarge) as raised:
            await client.respond(flow, unchecked_answer(flow, {"deploy": [noise]}), timeout=10)
        assert raised.value.limit == 1024 * 1024
        assert raised.value.code == "payload_too_large"
        # the form is still open, and a normal answer still goes through
        assert isinstance(await client.respond(flow, yes(flow), timeout=10), SubmitAccepted)
    assert handle.state == "completed"
    assert len(submits_per_request(relay)) == 1


@pytest.mark.asyncio
async def test_lone_surrogates_reach_the_bridge_as_replacement_characters(
    host: Host, fleet: Fleet
) -> None:
    """A started event whose title holds a lone surrogate (as Pi's JSON.stringify writes one),
    and a submit whose value holds one: nothing crashes; the text arrives as U+FFFD and the
    host judges the submit (a typed rejection)."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        flows = client.flows()
        handle = relay.open_form(yes_no_params(), "real")
        real = await flows.next(timeout=10)
        started = handle.started_event()
        assert started is not None
        odd = json.loads(json.dumps({"type": "event", "channel": "pi-agent-ask:started"}))
        payload = json.loads(relay_json(started))
        payload["flowId"] = "odd-flow"
        payload["title"] = "half an emoji: \\ud83d!"
        line = json.dumps({**odd, "data": payload, "replay": False}).replace("\\\\ud83d", "\\ud83d")
        relay.send_line(line.encode() + b"\n")
        flow = await flows.next(timeout=10)
        assert flow.flow_id == "odd-flow"
        assert str(flow.title) == "half an emoji: \ufffd!"
        outcome = await client.respond(real, unchecked_answer(real, {"deploy": ["\ud83d"]}))
        assert isinstance(outcome, SubmitRejected)
        assert outcome.error == "invalid_answer"
        assert isinstance(await client.respond(real, yes(real), timeout=10), SubmitAccepted)


def relay_json(started: object) -> str:
    import msgspec

    return msgspec.json.encode(started).decode()
