"""pi-ask doctor against real Pis: one running without the relay, and one whose relay listens
in another directory than the shell's PI_ASK_RELAY_DIR."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

import pytest

from tests.integration.pi_process import PiEnv, running_pi

pytestmark = pytest.mark.pi


async def doctor_json(relay_dir: Path) -> tuple[int, dict[str, object]]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "pi_ask_sdk.cli",
        "doctor",
        "--json",
        env={**os.environ, "PI_ASK_RELAY_DIR": str(relay_dir)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None, err
    report: dict[str, object] = json.loads(out)
    return proc.returncode, report


def check_for(report: dict[str, object], pid: int, what: str = "pi {pid}") -> dict[str, str]:
    """The one check about ``what`` (formatted with ``pid``) in a doctor report."""
    checks = report["checks"]
    assert isinstance(checks, list)
    found = [check for check in checks if check["what"] == what.format(pid=pid)]
    assert len(found) == 1, checks
    return dict(found[0])


@pytest.mark.asyncio
async def test_doctor_names_a_pi_running_without_the_relay(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    relays = tmp_path / "relays"
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=relays, relay=False
    ) as pi:
        assert pi.request({"type": "get_state"})["success"] is True  # up, titled "pi"
        _, report = await doctor_json(relays)
    check = check_for(report, pi.pid)
    assert check["status"] == "warn"
    assert f"Pi (pid {pi.pid}) runs without the relay" in check["detail"]
    assert 'pi -e "$(pi-ask relay-path)"' in check["detail"]
    assert "selects the relay directory" not in check["detail"]  # same directory as ours


@pytest.mark.asyncio
async def test_doctor_finds_a_relay_listening_in_another_directory(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=theirs
    ) as pi:
        status, report = await doctor_json(ours)
        socket = pi.socket_path
    check = check_for(report, pi.pid)
    # A warning (issue 27: it was a failure, exit 1, though such a Pi may be unrelated), which
    # says that nothing listens here: maybe why nothing is found.
    assert check["status"] == "warn"
    assert f"its relay listens in {theirs}, but this shell looks in {ours}" in check["detail"]
    assert "(where no relay listens)" in check["detail"]
    assert f"PI_ASK_RELAY_DIR={theirs}" in check["detail"]
    assert f"--socket {socket}" in check["detail"]
    checks = report["checks"]
    assert isinstance(checks, list)
    failed = [each for each in checks if each["status"] == "fail"]
    assert status == (1 if failed else 0), failed
    assert report["ok"] is (not failed)


@pytest.mark.asyncio
async def test_doctor_counts_the_answering_and_observing_clients_of_a_relay(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    from pi_ask_sdk import BridgeClient
    from pi_ask_sdk.transports.relay import RelayTransport

    relays = tmp_path / "relays"
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=relays
    ) as pi:
        _, alone = await doctor_json(relays)
        async with (
            pi.client(),
            pi.client(),
            BridgeClient(RelayTransport(pi.socket_path, role="observer")),
        ):
            _, report = await doctor_json(relays)
    # (the doctor connects as an observer and does not count itself)
    before = check_for(alone, pi.pid, "relay pi-{pid}.sock")
    assert "clients: 0 answering, 0 observing" in before["detail"]
    assert "fallback" in before["detail"]
    check = check_for(report, pi.pid, "relay pi-{pid}.sock")
    assert check["status"] == "ok"
    assert check["detail"].endswith("clients: 2 answering, 1 observing")
    # the relay's defaults, so a user whose bridge was dropped sees its limits
    assert "answering clients pinged every 5 s, dropped after 15 s of silence" in check["detail"]
