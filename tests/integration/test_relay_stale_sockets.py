"""The relay removes the sockets of dead Pis when it starts, and never a live one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from tests.integration.pi_process import PiEnv, make_private_dir, running_pi

pytestmark = pytest.mark.pi


def socket_file(path: Path) -> socket.socket:
    """A real Unix socket file at ``path`` (kept listening by the returned socket)."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.bind(str(path))
    sock.listen()
    path.chmod(0o600)
    return sock


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=30)
    return child.pid


def test_stale_sockets_go_and_live_ones_stay(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    relays = make_private_dir(tmp_path / "relays")
    stale = relays / f"pi-{dead_pid()}.sock"
    live = relays / f"pi-{os.getpid()}.sock"  # this test process: alive
    other = relays / "notes.txt"
    stale_sock, live_sock = socket_file(stale), socket_file(live)
    stale_sock.close()  # the file stays behind, as after a crash
    other.write_text("not a relay socket", encoding="utf-8")
    try:
        with running_pi(
            pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, relay_dir=relays
        ) as pi:
            assert pi.socket_path.exists()
            assert not stale.exists()
            assert live.exists()
            assert other.exists()
    finally:
        live_sock.close()
