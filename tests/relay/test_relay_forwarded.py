"""Forwarded relay sockets (``ssh -L``), on a Python relay: Pi's pid means nothing on this
machine, so liveness comes from the connection, and discovery lists ``pi-<label>.sock``."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.transports.relay import RelayTransport, discover_relays, resolve_relay

from .fake_relay import FakeRelay
from .test_relay_transport import FORM, T, dead_pid


@pytest.mark.asyncio
async def test_a_forwarded_socket_survives_a_session_end_though_its_pid_is_not_here(
    tmp_path: Path,
) -> None:
    # The relay's pid is dead here and its socket path is another machine's.
    relay = FakeRelay(tmp_path / "fwd", pid=dead_pid(), name="pi-buildbox.sock")
    relay.hello_extra = {"socket": "/elsewhere/pi-ask/pi-4242.sock", "sessionId": "s1"}
    await relay.start()
    try:
        transport = RelayTransport(relay.path)
        async with BridgeClient(transport) as client:
            assert transport.hello is not None
            assert transport.hello.session_id == "s1"
            events = client.events()
            relay.hello_extra["sessionId"] = "s2"
            await relay.end_session("new")
            assert (await events.next(timeout=T)).kind == "session_ended"
            relay.open_form(FORM, "after")
            started = await events.next(timeout=T)
            assert started.kind == "started"
            assert started.flow.flow_id == "tool:after"
            assert transport.is_connected
            assert transport.connections == 2
            assert transport.hello.session_id == "s2"
    finally:
        await relay.stop()


@pytest.mark.asyncio
async def test_discovery_lists_live_forwards_and_skips_stale_ones(tmp_path: Path) -> None:
    directory = tmp_path / "relays"
    live = FakeRelay(directory, name="pi-buildbox.sock")
    await live.start()
    try:
        stale = socket.socket(socket.AF_UNIX)
        stale.bind(str(directory / "pi-gone.sock"))  # its ssh exited: nothing listens
        stale.close()
        os.chmod(directory / "pi-gone.sock", 0o600)
        found = discover_relays(directory)
        assert [(r.path.name, r.forwarded, r.pid) for r in found] == [("pi-buildbox.sock", True, 0)]
        assert resolve_relay(directory=directory).path == live.path
        assert resolve_relay(path=live.path).forwarded
    finally:
        await live.stop()
