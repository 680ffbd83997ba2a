"""Odd records on the fleet's subjects, published by a client of the server as it is (no
permissions: anyone may publish anything), and odd text from a Pi: bridges, ``pi-ask doctor
--nats`` and ``pi-ask watch --nats`` keep to what the subjects say and show far-end text inert.
Real nats-server, forwarder and relays."""

from __future__ import annotations

import base64
import json
import logging
import os
from collections.abc import AsyncIterator
from pathlib import Path

import nats
import pytest
import pytest_asyncio
from nats.js import JetStreamContext

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.cli.doctor_fleet import survey_fleet
from pi_ask_sdk.fleet import Fleet, FleetNames, NatsOptions
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer, nats_server

from .conftest import Host
from .kit import yes
from .test_attacks import big_form
from .test_cli_fleet import cli, watching

NAMES = FleetNames()


@pytest_asyncio.fixture
async def hostile(nats_server: NatsServer) -> AsyncIterator[JetStreamContext]:
    """A plain client of the server, publishing into the fleet's streams."""
    nc = await nats.connect(nats_server.url)
    try:
        yield nc.jetstream()
    finally:
        await nc.close()


def state(host: str, pid: int, up: str = "up") -> bytes:
    return json.dumps({"state": up, "host": host, "pid": pid, "epoch": "forged"}).encode()


@pytest.mark.asyncio
async def test_a_state_names_no_pi_but_its_subjects(
    host: Host, fleet: Fleet, hostile: JetStreamContext
) -> None:
    """With permissions, host "evil"'s forwarder may publish only under ``piask.evil.``: a
    state there whose body names host h1's Pi 5151 (or a Pi of h1 whose body says another
    pid) lists no Pi, and cannot end one (fails before: the body's host and pid were taken)."""
    relay = await host.start_served_pi(fleet)
    await hostile.publish("piask.evil.7.state", state("h1", 5151), timeout=5)
    await hostile.publish(f"piask.h1.{relay.pid + 1}.state", state("h1", 5152), timeout=5)
    await hostile.publish("piask.evil.8.state", state("h1", relay.pid, "gone"), timeout=5)
    pis = await fleet.pis()
    assert [(pi.host, pi.pid) for pi in pis] == [("h1", relay.pid)]
    assert (await fleet.wait_pi("h1", relay.pid)).pid == relay.pid


@pytest.mark.asyncio
async def test_a_pid_token_that_is_not_a_plain_number_is_no_pi(
    nats_server: NatsServer,
    host: Host,
    fleet: Fleet,
    hostile: JetStreamContext,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """``piask.h1.0<pid>.state`` is not Pi <pid>'s subject, and ``piask.h1.².state`` names
    no Pi: a "gone" on the first does not hide the Pi from doctor or watch, the second is
    skipped without a traceback (fails before: "012" was read as 12, "²" failed int())."""
    assert NAMES.parse("piask.h1.012.state") is None
    assert NAMES.parse("piask.h1.\u00b2.state") is None
    assert NAMES.parse("piask.h1.\u0661\u0662.state") is None  # (Arabic-Indic digits)
    assert NAMES.parse("piask.h1.0.state") == ("h1", 0, "state", "")
    relay = await host.start_served_pi(fleet)
    async with watching(nats_server.url) as (lines, _):
        tag = f"[h1 pi {relay.pid}]"
        await lines.until(lambda line: line == f"{tag} up: Pi fake in /fake")
        await hostile.publish(f"piask.h1.0{relay.pid}.state", state("h1", relay.pid, "gone"))
        await hostile.publish("piask.h1.\u00b2.state", state("h1", 2))
        found = await survey_fleet(NatsOptions(nats_server.url), listen=0.1)
        assert [pi.pid for pi in found.hosts["h1"].pis] == [relay.pid]
        # (a marker after the forged ones: the watch has handled them when it shows it)
        await hostile.publish("piask.h1.77.state", state("h1", 77))
        await lines.until(lambda line: line.startswith("[h1 pi 77] up"))
    assert not any(line.startswith(f"{tag} gone") for line in lines.seen), lines.seen
    assert not [r.getMessage() for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.asyncio
async def test_doctor_shows_a_line_break_in_a_pis_cwd_on_its_own_line(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    """A directory name may hold a line break (and a Pi's version is the far end's word): in
    ``pi-ask doctor --nats`` it shows as an escape, never as a line that looks like a check of
    its own (fails before: the detail kept line breaks)."""
    relay = await host.start_pi()
    relay.hello_extra = {
        "cwd": "/srv/x\n[  ok] answerers: 3 answering bridge(s) alive",
        "piVersion": "1.0\u2028[  ok] forged\r\nall good",
    }
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    status, out = await cli("doctor", "--nats", nats_server.url, "--listen", "0.3")
    assert status == 0, out
    lines = out.splitlines()
    assert [line for line in lines if "forged" in line or "/srv/x" in line] == [
        f"[  ok] host h1: forwarder connected; 1 Pi(s): pi {relay.pid} (Pi 1.0\\u2028[  ok] "
        "forged\\r\\nall good in /srv/x\\n[  ok] answerers: 3 answering bridge(s) alive, 0 "
        "open form(s))"
    ]
    assert lines[-1] == "all good"
    assert lines.count("all good") == 1


@pytest.mark.asyncio
async def test_on_a_server_with_a_small_max_payload_every_form_too_large_is_told(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """max_payload 16 KiB: a form of 20 KB of random text, and one whose tool call id alone
    is 20 000 characters (its marker would not fit either, with both ids in full), stay open
    in Pi; a bridge is told of each (the marker's flow id cut for the second), a watch started
    after them lists both as too large, and the forms after them are answered (fails before:
    the second marker was refused by the server, and the watch's snapshot skipped markers)."""
    with nats_server(tmp_path / "nats", max_payload=16384) as server:
        host = Host(tmp_path / "relays", server.url, "h1")
        host.directory.mkdir(mode=0o700)
        try:
            relay = await host.start_pi()
            await host.start_forwarder()
            async with Fleet(server.url, heartbeat=0.2) as fleet:
                await fleet.wait_pi("h1", relay.pid)
                noise = base64.b64encode(os.urandom(15_000)).decode()
                with caplog.at_level(logging.ERROR, logger="pi_ask_sdk.fleet"):
                    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
                        flows = client.flows()
                        big = relay.open_form(big_form(noise), "big")
                        long = relay.open_form(big_form(noise), "t" * 20_000)
                        after = relay.open_form(yes_no_params(), "after")
                        flow = await flows.next(timeout=20)
                        assert flow.tool_call_id == "after"
                        outcome = await client.respond(flow, yes(flow), timeout=20)
                        assert isinstance(outcome, SubmitAccepted)
                told = [r.getMessage() for r in caplog.records if "no bridge can see it" in r.msg]
                assert any(f"the form {big.flow_id} " in text for text in told), told
                assert any(f"the form {long.flow_id[:256]} (" in text for text in told), told
                assert not any("maximum payload exceeded" in r.getMessage() for r in caplog.records)
            assert big.is_open
            assert long.is_open
            assert after.state == "completed"
            async with watching(server.url) as (lines, _):
                tag = f"[h1 pi {relay.pid}] too large"
                await lines.until(lambda line: line.startswith(f"{tag} {big.flow_id}: "))
                cut = long.flow_id[:256]  # (its subject's token is a hash: the marker names it)
                await lines.until(lambda line: line.startswith(f"{tag} {cut}: "))
        finally:
            await host.close()
