"""Sessions, exits, discovery and the same-user rules, each on a Pi of its own."""

from __future__ import annotations

import os
import signal
import socket
import time
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient, ConnectionLost, SubmitAccepted, SubmitLost
from pi_ask_sdk.transports.relay import (
    AmbiguousRelay,
    NoRelayFound,
    RelayTransport,
    UnsafeRelayPath,
    check_relay_dir,
    check_relay_socket,
    discover,
    discover_relays,
)
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    make_private_dir,
    next_event,
    next_flow,
    running_pi,
    single_question,
)

pytestmark = pytest.mark.pi


@pytest.mark.asyncio
async def test_new_session_ends_forms_then_reconnects_and_replays(fresh_pi: PiProcess) -> None:
    async with fresh_pi.client() as client:
        transport = client.transport
        assert isinstance(transport, RelayTransport)
        flows, events = client.flows(), client.events()
        before = fresh_pi.open_form(single_question())
        old = await next_flow(flows, before)

        # Both calls block the loop, so the form opened in the new session is open before the
        # client can reconnect: the new connection replays it.
        fresh_pi.new_session()
        after = fresh_pi.open_form(single_question(), tool_call_id="after-new")

        ended = await next_event(events, "session_ended")
        assert ended.kind == "session_ended"
        assert ended.reason == "session_ended"
        new = await next_flow(flows, after)
        assert new.replay
        assert new.tool_call_id == "after-new"
        assert list(client.open_flows) == [after]
        assert transport.connections == 2
        assert transport.is_connected

        with pytest.raises(ConnectionLost) as lost:
            await client.submit(old, choose(old, "a"))
        assert lost.value.reason == "session_ended"
        outcome = await client.respond(new, choose(new, "b"), timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)

        # live events keep flowing on the new connection
        live = fresh_pi.open_form(single_question())
        view = await next_flow(flows, live)
        assert not view.replay


@pytest.mark.asyncio
async def test_pi_quitting_ends_the_client(fresh_pi: PiProcess) -> None:
    async with fresh_pi.client() as client:
        flows, events = client.flows(), client.events()
        flow = await next_flow(flows, fresh_pi.open_form(single_question()))
        fresh_pi.stop()  # closes stdin: session_shutdown "quit", then Pi exits
        first = await next_event(events, "session_ended")
        assert first.kind == "session_ended"
        assert first.reason == "session_ended"
        second = await next_event(events, "session_ended")
        assert second.kind == "session_ended"
        assert second.reason == "disconnected"
        with pytest.raises(ConnectionLost):
            await flows.next(timeout=TIMEOUT)
        with pytest.raises(ConnectionLost) as lost:
            await client.submit(flow, choose(flow, "a"))
        assert lost.value.reason == "disconnected"


@pytest.mark.asyncio
async def test_pi_dying_fails_a_pending_await_result(fresh_pi: PiProcess) -> None:
    async with fresh_pi.client() as client:
        flows, events = client.flows(), client.events()
        flow = await next_flow(flows, fresh_pi.open_form(single_question()))
        fresh_pi.kill(signal.SIGSTOP)  # Pi cannot acknowledge ...
        ticket = await client.submit(flow, choose(flow, "a"))
        fresh_pi.kill(signal.SIGKILL)  # ... and never will
        started = time.monotonic()
        lost = await client.await_result(ticket, timeout=TIMEOUT)
        assert isinstance(lost, SubmitLost)
        # a killed Pi sent no session end: the transport sees it exiting when the socket drops
        assert lost.reason == "disconnected"
        assert time.monotonic() - started < TIMEOUT / 2
        ended = await next_event(events, "session_ended")
        assert ended.kind == "session_ended"
        assert ended.reason == "disconnected"
        transport = client.transport
        assert isinstance(transport, RelayTransport)
        assert not transport.is_connected


@pytest.mark.asyncio
async def test_discovery_one_none_or_several(
    pi_installation: PiEnv,
    shared_tmp: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    relays = tmp_path / "r"
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(relays))
    with pytest.raises(NoRelayFound) as none:
        BridgeClient.connect()
    assert str(relays) in str(none.value)
    with running_pi(pi_installation, tmp_path / "a", shared_tmp=shared_tmp, relay_dir=relays) as a:
        assert [r.pid for r in discover_relays()] == [a.pid]
        async with BridgeClient.connect() as client:
            flow = await next_flow(client.flows(), a.open_form(single_question()))
            outcome = await client.respond(flow, choose(flow, "a"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted)
        with running_pi(
            pi_installation, tmp_path / "b", shared_tmp=shared_tmp, relay_dir=relays
        ) as b:
            assert [r.pid for r in discover_relays()] == sorted([a.pid, b.pid])
            with pytest.raises(AmbiguousRelay) as several:
                BridgeClient.connect()
            assert f"pid {a.pid}" in str(several.value)
            assert f"pid {b.pid}" in str(several.value)
            assert {r.pid for r in several.value.relays} == {a.pid, b.pid}
            async with BridgeClient(discover(pid=b.pid)) as client:
                transport = client.transport
                assert isinstance(transport, RelayTransport)
                assert transport.hello is not None
                assert transport.hello.pid == b.pid
        with pytest.raises(NoRelayFound):
            discover(pid=b.pid)  # b has exited


@pytest.mark.asyncio
async def test_group_readable_directory_is_refused_by_relay_and_client(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    loose = make_private_dir(tmp_path / "loose", 0o750)
    pi = PiProcess(pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=loose)
    with pi:
        assert pi.request({"type": "get_state"})["success"] is True  # Pi runs without a relay
        assert not pi.socket_path.exists()
        pi.stop()
        assert any("relay disabled" in line and str(loose) in line for line in pi.stderr_lines)
    with pytest.raises(UnsafeRelayPath) as refused:
        check_relay_dir(loose)
    assert refused.value.path == loose
    assert "750" in str(refused.value)
    with pytest.raises(UnsafeRelayPath):
        discover_relays(loose)
    with pytest.raises(UnsafeRelayPath):
        await RelayTransport(loose / "pi-1.sock").open(_NoListener())

    # a socket with group/other bits in a private directory is refused as well
    private = make_private_dir(tmp_path / "p")
    path = private / f"pi-{os.getpid()}.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        server.listen()
        path.chmod(0o660)
        with pytest.raises(UnsafeRelayPath) as loose_socket:
            check_relay_socket(path)
        assert "0600" in str(loose_socket.value)
        with pytest.raises(UnsafeRelayPath):
            await RelayTransport(path, hello_timeout=0.5).open(_NoListener())
        # a symlinked directory is no directory
        link = tmp_path / "link"
        link.symlink_to(private)
        with pytest.raises(UnsafeRelayPath):
            check_relay_dir(link)
    finally:
        server.close()


class _NoListener:
    def message(self, channel: str, data: object, *, replay: bool = False) -> None:
        raise AssertionError("no message expected")

    def ended(self, reason: str) -> None:
        raise AssertionError("no end expected")


def test_pi_env_reports_the_flavour(pi_installation: PiEnv) -> None:
    expected = "0.74.2" if pi_installation.flavour == "legacy" else "1.6.0"
    assert pi_installation.version == expected
    assert Path(pi_installation.node).is_file()
