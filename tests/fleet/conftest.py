"""Fixtures of the fleet tests: a real nats-server, Python relays with live pids, a forwarder."""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import os
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
import pytest_asyncio

from pi_ask_sdk.testing.nats_server import NatsServer
from tests.relay.fake_relay import FakeRelay

if TYPE_CHECKING:
    from pi_ask_sdk.fleet import Fleet, FleetSettings, Forwarder, NatsOptions


def _ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


NEEDS = (
    "the fleet tests need nats-py and nats-server: pip install 'pi-ask-sdk[nats-test]', or run "
    "tox -e fleet (with CI=true they fail instead of skipping)"
)
HAVE_NATS = importlib.util.find_spec("nats") is not None
if not HAVE_NATS:
    # Only test_requirements.py is collected: it skips with NEEDS (fails with CI=true).
    collect_ignore_glob = ["test_[!r]*.py"]


@pytest.fixture
def nats_server(pi_ask_nats_server: NatsServer) -> NatsServer:
    """The public fixture (pi_ask_sdk.testing's pytest plugin), under a shorter name."""
    return pi_ask_nats_server


class Host:
    """One simulated host: a relay directory of Python relays, each with a live pid (a child
    process standing in for its Pi), and its forwarder."""

    def __init__(self, directory: Path, url: str, host_id: str) -> None:
        self.directory = directory
        self.url = url
        self.options: NatsOptions | str = url  # (credentials, for the permission tests)
        self.settings: FleetSettings | None = None  # (replicas, for the production tests)
        self.host_id = host_id
        self.relays: dict[int, FakeRelay] = {}
        self.pis: dict[int, subprocess.Popen[bytes]] = {}
        self.forwarder: Forwarder | None = None
        self._run: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()

    async def start_pi(self, *, roles: bool = True) -> FakeRelay:
        """A new 'Pi': a live process and a relay socket named for its pid (``roles``: its relay
        takes client hellos and counts answerers, as the real relay does)."""
        proc = subprocess.Popen(["sleep", "600"])
        relay = FakeRelay(self.directory, pid=proc.pid)
        relay.roles = roles
        await relay.start()
        self.pis[proc.pid] = proc
        self.relays[proc.pid] = relay
        return relay

    async def exit_pi(self, pid: int) -> None:
        """The Pi exits: its process dies, its relay closes."""
        proc = self.pis.pop(pid)
        proc.kill()
        proc.wait(10)
        await self.relays.pop(pid).stop()

    async def start_forwarder(
        self, *, poll: float = 0.05, setup: bool = True, max_queued: int = 10_000
    ) -> Forwarder:
        from pi_ask_sdk.fleet import Forwarder

        forwarder = Forwarder(
            self.options,
            host_id=self.host_id,
            directory=self.directory,
            settings=self.settings,
            poll=poll,
            idle_heartbeat=0.5,
            setup=setup,
            max_queued=max_queued,
        )
        await forwarder.open()
        self.forwarder = forwarder
        self._stop = asyncio.Event()
        self._run = asyncio.get_running_loop().create_task(forwarder.run(self._stop))
        return forwarder

    async def start_served_pi(self, fleet: Fleet, *, own_marks: bool = False) -> FakeRelay:
        """A new 'Pi' behind a new forwarder that takes its submits, up in ``fleet``
        (``own_marks``: its relay marks each verdict for the connection that sent the submit,
        as the real relay does)."""
        relay = await self.start_pi()
        relay.own_marks = own_marks
        forwarder = await self.start_forwarder()
        await forwarder.wait_taking_submits(20)
        await fleet.wait_pi(self.host_id, relay.pid)
        return relay

    async def stop_forwarder(self) -> None:
        self._stop.set()
        if self._run is not None:
            await asyncio.wait_for(self._run, 10)
            self._run = None
        if self.forwarder is not None:
            await asyncio.wait_for(self.forwarder.close(), 10)
            self.forwarder = None

    async def wait_followed(self, pid: int, timeout: float = 10.0) -> None:
        """Until the forwarder follows ``pid``'s relay (its relay has a client)."""
        await self.relays[pid].wait_connected(1, timeout)

    async def close(self) -> None:
        try:
            await self.stop_forwarder()
        finally:  # the Pis' processes go even when the forwarder did not stop cleanly
            for pid in list(self.pis):
                with contextlib.suppress(Exception):
                    await self.exit_pi(pid)


@pytest_asyncio.fixture
async def host(tmp_path: Path, nats_server: NatsServer) -> AsyncIterator[Host]:
    """Host "h1" with no Pi yet and no forwarder yet."""
    made = Host(tmp_path / "relays", nats_server.url, "h1")
    made.directory.mkdir(mode=0o700)
    yield made
    await made.close()


@pytest_asyncio.fixture
async def fleet(nats_server: NatsServer) -> AsyncIterator[Fleet]:
    """An answering bridge's fleet connection."""
    from pi_ask_sdk.fleet import Fleet

    async with Fleet(nats_server.url, heartbeat=0.2, idle_heartbeat=0.5) as connected:
        yield connected
