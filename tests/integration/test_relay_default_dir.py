"""Zero configuration end to end: no ``PI_ASK_RELAY_DIR`` anywhere.

A real Pi with the relay picks its default socket directory (``$XDG_RUNTIME_DIR/pi-ask``, else
``<tmpdir>/pi-ask-<uid>``), and a bridge started with the same environment finds it by itself:
``BridgeClient.connect()`` (discovery at once) and ``RelayTransport()`` (discovery on open).
Each Pi gets its own ``HOME``, ``TMPDIR`` and ``XDG_RUNTIME_DIR`` under pytest's temporary
directory, and the test process's environment is patched to match, so neither side ever looks
at the real user's directories (checked too).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.transports.relay import RelayTransport, relay_dir
from tests.integration.pi_process import (
    TIMEOUT,
    PiEnv,
    PiProcess,
    choose,
    make_private_dir,
    next_flow,
    single_question,
)

pytestmark = pytest.mark.pi

_DIR_VARIABLES = ("PI_ASK_RELAY_DIR", "XDG_RUNTIME_DIR", "TMPDIR", "TMP", "TEMP")


class DefaultDirPi(PiProcess):
    """A Pi whose environment names no relay directory, so the relay picks its default."""

    def environment(self) -> dict[str, str]:
        env = super().environment()
        del env["PI_ASK_RELAY_DIR"]
        return env


def _real_default_dir() -> Path:
    """Where a bridge of the real user would look without configuration (must stay untouched)."""
    return relay_dir({k: v for k, v in os.environ.items() if k != "PI_ASK_RELAY_DIR"})


@pytest.fixture
def isolated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A short private base directory (socket paths must stay under 108 bytes)."""
    return make_private_dir(tmp_path_factory.mktemp("zc"))


def start_pi(
    env: PiEnv, base: Path, expected_dir: Path, xdg: Path | None, monkeypatch: pytest.MonkeyPatch
) -> DefaultDirPi:
    """Start Pi without PI_ASK_RELAY_DIR; give this process the same directory variables."""
    tmp = make_private_dir(base / "tmp")
    extra = {} if xdg is None else {"XDG_RUNTIME_DIR": str(make_private_dir(xdg))}
    # relay_dir is where the harness looks for the socket: the directory the rule predicts.
    pi = DefaultDirPi(env, base, shared_tmp=tmp, relay_dir=expected_dir, extra_env=extra)
    for name in _DIR_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("TMPDIR", str(tmp))
    if xdg is not None:
        monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    pi.start()
    assert "PI_ASK_RELAY_DIR" not in pi.environment()
    return pi


async def answer_through_discovery(pi: PiProcess) -> None:
    """Both zero-argument ways of connecting find this Pi and carry a form's answer."""
    for label, client in (
        ("BridgeClient.connect()", BridgeClient.connect()),
        ("RelayTransport()", BridgeClient(RelayTransport())),
    ):
        async with client:
            flows = client.flows()
            flow_id = pi.open_form(single_question())
            flow = await next_flow(flows, flow_id)
            outcome = await client.respond(flow, choose(flow, "b"), timeout=TIMEOUT)
            assert isinstance(outcome, SubmitAccepted), (label, outcome)
            transport = client.transport
            assert isinstance(transport, RelayTransport)
            assert transport.path == pi.socket_path, label


def check_private(expected_dir: Path, pi: PiProcess) -> None:
    assert stat.S_IMODE(os.lstat(expected_dir).st_mode) == 0o700
    assert stat.S_IMODE(os.lstat(pi.socket_path).st_mode) == 0o600
    assert relay_dir() == expected_dir  # the bridge's rule agrees with the relay's


@pytest.mark.asyncio
@pytest.mark.parametrize("with_xdg", [True, False], ids=["xdg-runtime-dir", "tmpdir"])
async def test_relay_and_bridge_meet_in_the_default_directory(
    pi_installation: PiEnv,
    isolated: Path,
    monkeypatch: pytest.MonkeyPatch,
    with_xdg: bool,
) -> None:
    real = _real_default_dir()
    if with_xdg:
        xdg: Path | None = isolated / "xdg"
        expected = isolated / "xdg" / "pi-ask"
    else:
        xdg = None
        expected = isolated / "tmp" / f"pi-ask-{os.getuid()}"
    pi = start_pi(pi_installation, isolated, expected, xdg, monkeypatch)
    try:
        pi.wait_socket()
        check_private(expected, pi)
        await answer_through_discovery(pi)
        assert not (real / pi.socket_path.name).exists(), "the real user's directory was used"
        assert pi.open_flow_ids() == []
    finally:
        pi.stop()
    assert not pi.socket_path.exists()  # the relay removes its socket when Pi quits
