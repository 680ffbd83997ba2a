"""docs/fleet.md's bridge runs as written (in its own process, as a reader would run it) and
answers the forms of every Pi of the fleet: here, one on each of two hosts."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer
from tests.doc_snippets import doc_snippets

from .conftest import Host


@pytest.mark.asyncio
async def test_the_fleet_guide_bridge_denies_deploys_on_every_host(
    host: Host, nats_server: NatsServer, tmp_path: object
) -> None:
    other = Host(host.directory.parent / "relays-b", host.url, "h2")
    other.directory.mkdir(mode=0o700)
    script = host.directory.parent / "bridge.py"
    script.write_text(doc_snippets()["fleet_1"], encoding="utf-8")
    lines: asyncio.Queue[str] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "PI_ASK_NATS": nats_server.url},
    )
    assert proc.stdout is not None
    stdout = proc.stdout

    def read() -> None:
        for raw in stdout:
            loop.call_soon_threadsafe(lines.put_nowait, raw.decode().strip())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        a = await host.start_pi()
        b = await other.start_pi()
        await host.start_forwarder()
        await other.start_forwarder()
        forms = [a.open_form(yes_no_params(), "on-a"), b.open_form(yes_no_params(), "on-b")]
        printed = {await asyncio.wait_for(lines.get(), 30) for _ in forms}
        assert printed == {
            f"h1 {a.pid} {forms[0].flow_id} accepted",
            f"h2 {b.pid} {forms[1].flow_id} accepted",
        }
        for form in forms:
            result = form.result
            assert result is not None
            assert result.answers["deploy"].values == ["no"]
    finally:
        proc.kill()
        proc.wait(10)
        reader.join(10)
        await other.close()


def test_the_fleet_guide_fake_fleet_test_passes_under_pytest(tmp_path: Path) -> None:
    """The guide's test of a handler on a ``FakeFleet`` (no server) passes as written."""
    script = tmp_path / "test_fleet_handler.py"
    script.write_text(doc_snippets()["fleet_2"], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(script)],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
