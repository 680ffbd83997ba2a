"""examples/fleet_bridge.py over a real nats-server: one bridge answers the forms of two hosts,
each behind its own forwarder, by its rules, and cancels explicitly what they do not cover.

Runs in the tox env ``fleet`` (nats-py and nats-server); tests/examples/conftest.py leaves it
uncollected where nats-py is not installed.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType

import pytest
import pytest_asyncio

from pi_ask_core import COMPLETED, FlowHandle
from pi_ask_sdk.cli.demo import DEMO_FORM
from pi_ask_sdk.fleet import NatsOptions
from pi_ask_sdk.testing.nats_server import NatsServer, free_port
from tests.fleet.conftest import Host, nats_server
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
        assert {q: a.values for q, a in result.answers.items()} == {
            "deploy": ["window"],
            "notify": ["oncall", "release-channel"],
            "migration": ["online"],
        }
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
