"""A remote Pi over ``ssh -L``: a real sshd on 127.0.0.1 forwards a real Pi's relay socket.

The Pi runs on this machine, so its pid would be found here; the relay module's ``pid_alive``
is replaced by one that knows no such process, as on the machine the bridge really runs on.
Answering, ``new_session`` and discovery must work across the forward all the same.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import pi_ask_sdk.transports.relay._discovery as relay_discovery
import pi_ask_sdk.transports.relay._transport as relay_transport
from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.cli.doctor import doctor
from pi_ask_sdk.transports.relay import RelayTransport, discover_relays
from tests.integration.pi_process import (
    PiProcess,
    choose,
    make_private_dir,
    next_event,
    next_flow,
    single_question,
)

from .conftest import Sshd

pytestmark = pytest.mark.pi


@pytest.mark.asyncio
async def test_answering_and_new_session_work_across_an_ssh_forward(
    fresh_pi: PiProcess, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    remote_pid = fresh_pi.pid
    real_pid_alive = relay_discovery.pid_alive

    def elsewhere(pid: int) -> bool:
        # Pi's pid is another machine's: this machine has no such process.
        return False if pid == remote_pid else real_pid_alive(pid)

    monkeypatch.setattr(relay_discovery, "pid_alive", elsewhere)
    monkeypatch.setattr(relay_transport, "pid_alive", elsewhere)
    local_dir = make_private_dir(tmp_path / "fwd")
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(local_dir))
    with sshd.forward(local_dir / "pi-remote.sock", fresh_pi.socket_path) as local:
        [found] = discover_relays()
        assert found.path == local
        assert found.forwarded

        async with BridgeClient.connect() as client:  # discovery finds the forward
            transport = client.transport
            assert isinstance(transport, RelayTransport)
            assert transport.hello is not None
            assert transport.hello.pid == remote_pid
            first_session = transport.hello.session_id
            assert first_session
            flows, events = client.flows(), client.events()

            flow = await next_flow(flows, fresh_pi.open_form(single_question()))
            outcome = await client.respond(flow, choose(flow, "a"), timeout=10)
            assert isinstance(outcome, SubmitAccepted)

            fresh_pi.new_session()
            ended = await next_event(events, "session_ended")
            assert ended.kind == "session_ended"
            after = fresh_pi.open_form(single_question(), tool_call_id="after-new")
            flow = await next_flow(flows, after)
            outcome = await client.respond(flow, choose(flow, "b"), timeout=10)
            assert isinstance(outcome, SubmitAccepted)
            assert transport.is_connected
            assert transport.connections == 2
            assert transport.hello.session_id != first_session


def test_doctor_checks_the_forwarded_socket(
    fresh_pi: PiProcess, sshd: Sshd, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guide's SSH recipe, step 3: ``pi-ask doctor --socket`` on the forward's local end
    reaches the far relay's hello, whatever this machine's relay directory holds."""
    local_dir = make_private_dir(tmp_path / "fwd")
    monkeypatch.setenv("PI_ASK_RELAY_DIR", str(tmp_path / "not-here"))
    with sshd.forward(local_dir / "pi-remote.sock", fresh_pi.socket_path) as local:
        lines: list[str] = []
        assert doctor(lines.append, socket=local) == 0, lines
    assert lines[0].startswith(f"[  ok] relay pi-remote.sock: Pi {fresh_pi.env.version} ")
    assert f"(pid {fresh_pi.pid})" in lines[0]
    lines.clear()
    assert doctor(lines.append, socket=local) == 1  # the forward's ssh is gone
    assert lines[0].startswith("[fail] relay pi-remote.sock:")
