"""One bridge serving two real Pis, and the pi-ask commands against a real Pi."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient, RespondOutcome
from pi_ask_sdk.every_pi import serve_every_pi
from pi_ask_sdk.transports.relay import RelayInfo
from tests.integration.pi_process import TIMEOUT, PiEnv, choose, running_pi, single_question

pytestmark = pytest.mark.pi


@pytest.mark.asyncio
async def test_one_bridge_serves_every_running_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    relays = tmp_path / "relays"
    outcomes: list[tuple[int, RespondOutcome]] = []
    both = asyncio.Event()

    async def pick_b(client: BridgeClient, info: RelayInfo) -> None:
        async for flow in client.flows():
            outcomes.append((info.pid, await client.respond(flow, choose(flow, "b"), timeout=5)))
            if len(outcomes) == 2:
                both.set()

    with (
        running_pi(pi_installation, tmp_path / "a", shared_tmp=shared_tmp, relay_dir=relays) as a,
        running_pi(pi_installation, tmp_path / "b", shared_tmp=shared_tmp, relay_dir=relays) as b,
    ):
        a.wait_socket()
        b.wait_socket()
        stop = asyncio.Event()
        bridge = asyncio.create_task(serve_every_pi(pick_b, directory=relays, poll=0.05, stop=stop))
        try:
            a.open_form(single_question(), tool_call_id="from-a")
            b.open_form(single_question(), tool_call_id="from-b")
            await asyncio.wait_for(both.wait(), TIMEOUT * 2)
        finally:
            stop.set()
            await asyncio.wait_for(bridge, TIMEOUT)
    assert sorted(pid for pid, _ in outcomes) == sorted([a.pid, b.pid])
    assert all(outcome.kind == "accepted" for _, outcome in outcomes)


async def run_cli(*args: str, env: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pi_ask_sdk.cli",
        *args,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.STDOUT,
    )
    out, _ = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode is not None
    return proc.returncode, out.decode()


@pytest.mark.asyncio
async def test_watch_and_doctor_see_a_real_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    relays = tmp_path / "relays"
    env = {**os.environ, "PI_ASK_RELAY_DIR": str(relays)}
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=relays
    ) as pi:
        pi.wait_socket()
        flow_id = pi.open_form(single_question(), tool_call_id="watched")
        status, report = await run_cli("doctor", env=env)
        assert f"relay pi-{pi.pid}.sock: Pi {pi_installation.version} (pid {pi.pid})" in report
        assert "[fail]" not in report
        assert status == 0, report
        status, out = await run_cli("watch", "--json", "--duration", "1.5", env=env)
        assert status == 0, out
        [event] = [json.loads(line) for line in out.splitlines()]
        assert event["pid"] == pi.pid
        assert event["replay"] is True
        assert event["data"]["flowId"] == flow_id
