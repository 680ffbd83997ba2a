"""Two forwarder faults a user meets, with ``pi-ask forward`` in its own process: one SIGKILLed
while its Pi has a form open (``pi-ask doctor --nats`` must fail that host, never say "all
good"), and a second forwarder started for a host that has one (it says so in one line and
stops; the first one goes on)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from pi_ask_sdk.cli.doctor_fleet import fleet_checks, survey_fleet
from pi_ask_sdk.fleet import Fleet, NatsOptions
from pi_ask_sdk.testing.nats_server import NatsServer
from tests.interrupts import default_sigint

from .conftest import Host
from .kit import ROOT, ForwarderProcess
from .test_cli_fleet import FORM, cli

WAIT = 30.0  # past the forwarder timeout (10 s), with room on a loaded machine


@pytest.mark.asyncio
async def test_doctor_fails_a_pi_with_an_open_form_whose_forwarder_was_sigkilled(
    nats_server: NatsServer, host: Host
) -> None:
    relay = await host.start_pi()
    forwarder = ForwarderProcess(nats_server.url, host.host_id, host.directory)
    forwarder.start()
    try:
        await forwarder.wait_log(f"taking the submits of host {host.host_id}")
        async with Fleet(nats_server.url, role="observer") as fleet:
            await fleet.wait_pi(host.host_id, relay.pid)
        relay.open_form(FORM, "waiting")  # the Pi waits for an answer behind this forwarder
        options = NatsOptions(nats_server.url)

        async def doctor_sees(status: str, open_forms: int) -> str:
            """Until doctor's check of the host has ``status`` with the form (bounded)."""
            while True:
                found = await survey_fleet(options, listen=0.1)
                checks = {check.what: check for check in fleet_checks(found)}
                check = checks.get(f"host {host.host_id}")
                forms = f"{open_forms} open form(s)"
                if check is not None and check.status == status and forms in check.detail:
                    return check.detail

        await asyncio.wait_for(doctor_sees("ok", 1), WAIT)
        forwarder.kill()  # SIGKILL: no goodbye, its last heartbeat stays until it expires
        detail = await asyncio.wait_for(doctor_sees("fail", 1), WAIT)
    finally:
        forwarder.kill()
    assert detail.startswith("its forwarder is not connected; 1 Pi(s) shown up cannot be ")
    assert f"pi {relay.pid} (Pi fake in " in detail
    status, text = await cli("doctor", "--nats", nats_server.url, "--listen", "0.1")
    assert status == 1, text
    assert "all good" not in text
    assert text.rstrip().endswith("problem(s) found")


@pytest.mark.asyncio
async def test_a_second_forwarder_for_a_host_says_so_in_one_line_and_stops(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    directory = tmp_path / "relays"
    directory.mkdir(mode=0o700)
    first = ForwarderProcess(nats_server.url, "vm", directory)
    first.start()
    try:
        await first.wait_log("taking the submits of host vm")
        assert first.process is not None
        first_pid = first.process.pid

        def second() -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                first.args,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env={**os.environ, "PYTHONPATH": str(ROOT)},
                preexec_fn=default_sigint,
                text=True,
                timeout=WAIT,  # (the lease waits 60 s for a holder that never beats again)
            )

        done = await asyncio.to_thread(second)
        # The first forwarder goes on, untouched.
        assert first.process is not None
        assert first.process.poll() is None
    finally:
        first.stop()
    lines = done.stderr.splitlines()
    assert done.returncode == 3, lines
    assert len(lines) == 2, lines  # its banner, then the one line: no JetStream error
    assert lines[0].startswith(f"pi-ask forward: host vm -> {nats_server.url}")
    assert re.fullmatch(
        rf"pi-ask forward: host 'vm' already has a forwarder \(pid {first_pid} on machine "
        rf"{re.escape(socket.gethostname())}, last beat \d+\.\d s ago\); this one stops",
        lines[1],
    ), lines


@pytest.mark.asyncio
async def test_doctor_counts_answering_bridges_only_as_observers_never_heartbeat(
    nats_server: NatsServer, host: Host
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    async with (
        Fleet(nats_server.url, role="observer") as observer,
        Fleet(nats_server.url, heartbeat=0.2) as answerer,
    ):
        await observer.wait_pi(host.host_id, relay.pid)
        status, out = await cli("doctor", "--nats", nats_server.url, "--json")
    assert status == 0, out
    fleet = json.loads(out)["fleet"]
    assert fleet["answerers"] == [answerer.bridge_id]
    assert "observers" not in fleet  # (no count that nothing could ever fill)
