"""examples/fleet_bridge.py: its handler on a ``FakeFleet`` (no server: what a bridge author's
own tests do, docs/fleet.md, Testing a bridge), then over a real nats-server: one bridge answers
the forms of two hosts, each behind its own forwarder, by its rules, and cancels explicitly what
they do not cover; Ctrl-C stops it with 130.

Runs in the tox env ``fleet`` (nats-py and nats-server); tests/examples/conftest.py leaves it
uncollected where nats-py is not installed.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import msgspec
import pytest
import pytest_asyncio

from pi_ask_core import COMPLETED, AskParams, FlowHandle
from pi_ask_sdk.cli.demo import DEMO_FORM
from pi_ask_sdk.fleet import NatsOptions
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing.fleet import FakeFleet
from pi_ask_sdk.testing.nats_server import NatsServer, free_port
from tests.fleet.conftest import Host, nats_server
from tests.fleet.kit import ForwarderProcess
from tests.relay.fake_relay import FakeRelay

from .test_examples import EXAMPLES, RELEASE, load

__all__ = ["nats_server"]  # the fixture, shared with tests/fleet

WAIT = 30.0


@pytest.fixture(scope="module")
def fleet_bridge() -> ModuleType:
    sys.path.insert(0, str(EXAMPLES))  # as `python examples/fleet_bridge.py` has it
    try:
        return load("fleet_bridge")
    finally:
        sys.path.remove(str(EXAMPLES))


DEMO = msgspec.convert(DEMO_FORM, AskParams)  # the form `pi-ask try` opens
RELEASE_ANSWERS = {
    "deploy": ["window"],
    "notify": ["oncall", "release-channel"],
    "migration": ["online"],
}


@pytest.mark.asyncio
async def test_the_handler_answers_each_fake_pi_by_its_rules_without_a_server(
    fleet_bridge: ModuleType,
) -> None:
    fleet = FakeFleet()
    first = fleet.add_pi("build-1", 101)
    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(serve(fleet_bridge.handler, fleet, stop=stop))
    try:
        release = first.open(DEMO, tool_call_id="release")
        # A Pi that comes up later, on another host, is served too.
        second = fleet.add_pi("build-2", 202)
        unknown = second.open(RELEASE, tool_call_id="not-covered")
        answered = await fleet.completed("build-1", 101, release, timeout=WAIT)
        refused = await fleet.completed("build-2", 202, unknown, timeout=WAIT)
    finally:
        stop.set()
        await asyncio.wait_for(serving, WAIT)
    assert not answered.cancelled
    assert {q: a.values for q, a in answered.answers.items()} == RELEASE_ANSWERS
    # A form the rules do not cover is cancelled explicitly, never guessed.
    assert refused.cancelled
    # Each was answered by the bridge's submit (one each), not by the Pi's own user.
    assert [s["flowId"] for s in first.submits] == [release.flow_id]
    assert [s["flowId"] for s in second.submits] == [unknown.flow_id]


@pytest.mark.asyncio
async def test_a_fake_pi_that_exits_and_comes_back_is_served_again(
    fleet_bridge: ModuleType,
) -> None:
    fleet = FakeFleet(order="ack_first")
    pi = fleet.add_pi("vm", 7)
    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(serve(fleet_bridge.handler, fleet, stop=stop))
    try:
        first = pi.open(DEMO, tool_call_id="one")
        assert not (await fleet.completed("vm", 7, first, timeout=WAIT)).cancelled
        fleet.remove_pi("vm", 7)
        assert fleet.pis == []
        again = fleet.add_pi("vm", 7)
        second = again.open(DEMO, tool_call_id="two")
        result = await fleet.completed("vm", 7, second, timeout=WAIT)
    finally:
        stop.set()
        await asyncio.wait_for(serving, WAIT)
    assert {q: a.values for q, a in result.answers.items()} == RELEASE_ANSWERS


@pytest_asyncio.fixture
async def hosts(tmp_path: Path, nats_server: NatsServer) -> AsyncIterator[list[Host]]:
    made = [Host(tmp_path / name, nats_server.url, name) for name in ("build-1", "build-2")]
    for host in made:
        host.directory.mkdir(mode=0o700)
    yield made
    for host in made:
        await host.close()


async def completed(relay: FakeRelay, handle: FlowHandle) -> None:
    """Until ``handle``'s form completed at its host (bounded)."""
    done = asyncio.Event()
    unsubscribe = relay.bus.on(COMPLETED, lambda _: done.set() if not handle.is_open else None)
    try:
        if handle.is_open:
            await asyncio.wait_for(done.wait(), WAIT)
    finally:
        unsubscribe()


@pytest.mark.asyncio
async def test_one_bridge_answers_every_hosts_forms_by_its_rules(
    fleet_bridge: ModuleType, nats_server: NatsServer, hosts: list[Host]
) -> None:
    relays = [await host.start_pi() for host in hosts]
    for host in hosts:
        await host.start_forwarder()
    stop = asyncio.Event()
    bridge = asyncio.get_running_loop().create_task(
        fleet_bridge.run(NatsOptions(nats_server.url), stop)
    )
    try:
        # Headless Pis open forms only while an answering bridge is alive: the forwarders
        # say so to their relays once they hear its heartbeat.
        for host in hosts:
            assert host.forwarder is not None
            await host.forwarder.wait_role("answerer", WAIT)
        release = [relay.open_form(DEMO_FORM, f"release-{n}") for n, relay in enumerate(relays)]
        unknown = relays[1].open_form(RELEASE, "not-covered")
        for relay, handle in [*zip(relays, release, strict=True), (relays[1], unknown)]:
            await completed(relay, handle)
    finally:
        stop.set()
        await asyncio.wait_for(bridge, WAIT)
    for handle in release:
        result = handle.result
        assert result is not None
        assert not result.cancelled
        assert {q: a.values for q, a in result.answers.items()} == RELEASE_ANSWERS
    # A form the rules do not cover is cancelled explicitly, never guessed.
    assert unknown.result is not None
    assert unknown.result.cancelled
    # The bridge left: the forwarders stop telling their relays someone answers.
    for host in hosts:
        assert host.forwarder is not None
        await host.forwarder.wait_role("observer", WAIT)


def test_without_a_server_it_says_why_and_exits_3(
    fleet_bridge: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    assert fleet_bridge.main([url]) == 3
    err = capsys.readouterr().err
    assert err.startswith(f"fleet_bridge: The fleet at {url} is unavailable: nothing answers")
    assert "Traceback" not in err


def test_it_runs_copied_alone(tmp_path: Path) -> None:
    """Its docstring says "copy this file alone": copied into a directory with no other
    example beside it (nothing of examples/ on the path), it runs (here without a server: it
    says why, exit 3) and imports nothing but pi_ask_sdk and the standard library."""
    copy = tmp_path / "fleet_bridge.py"
    shutil.copyfile(EXAMPLES / "fleet_bridge.py", copy)
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    root = str(EXAMPLES.parent)  # (for pi_ask_sdk when it runs from a checkout)
    path = os.pathsep.join(p for p in [os.environ.get("PYTHONPATH", ""), root] if p)
    done = subprocess.run(
        [sys.executable, str(copy), url],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": path},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith(f"fleet_bridge: The fleet at {url} is unavailable"), done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.asyncio
async def test_ctrl_c_stops_it_with_130_and_no_traceback(
    tmp_path: Path, nats_server: NatsServer
) -> None:
    bridge = ForwarderProcess(nats_server.url, "unused", tmp_path)  # (its process kit)
    bridge.args = [sys.executable, str(EXAMPLES / "fleet_bridge.py"), nats_server.url]
    bridge.start()
    try:
        await bridge.wait_log("answering every host's forms through")
        status = await asyncio.to_thread(bridge.interrupt)
    except (asyncio.TimeoutError, subprocess.TimeoutExpired):
        bridge.kill()
        raise
    assert status == 130, bridge.log
    assert not any("Traceback" in line for line in bridge.log), bridge.log
