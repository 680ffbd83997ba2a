"""A real sshd on 127.0.0.1 that forwards a real Pi's relay socket (``ssh -L``).

The sshd runs with a throwaway config, host key and user key in a private temporary directory,
listens on loopback only, and allows nothing but local forwarding for the key it made (no
shell, no remote forwards).
Outside CI a missing sshd or Pi skips these tests with the command that installs them
(`bash scripts/install-sshd.sh`, `bash scripts/install-pi.sh`, or `tox -e ssh`); with
``CI=true`` they must run.
"""

from __future__ import annotations

import getpass
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.integration.conftest import (  # noqa: F401  (fixtures, re-exported for this folder)
    fresh_pi,
    pi_installation,
    shared_tmp,
)
from tests.integration.pi_process import make_private_dir, unavailable

SSHD = Path("/usr/sbin/sshd")
WAIT = 10.0


def _wait(what: str, ready: Callable[[], bool], proc: subprocess.Popen[bytes]) -> None:
    """Poll ``ready()`` (no event announces a listening port or a socket file), bounded."""
    deadline = time.monotonic() + WAIT
    while not ready():
        if proc.poll() is not None:
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise RuntimeError(f"{what}: the process exited ({proc.returncode}): {err}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what}: not ready after {WAIT:g} s")
        time.sleep(0.01)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
    for stream in (proc.stdout, proc.stderr, proc.stdin):
        if stream is not None:
            stream.close()


@dataclass
class Sshd:
    """A running test sshd: connect with ``key`` as ``user`` to 127.0.0.1:``port``."""

    directory: Path
    port: int
    key: Path
    user: str

    def ssh_command(self, *args: str) -> list[str]:
        return [
            "ssh",
            "-F",
            "none",
            "-i",
            str(self.key),
            "-p",
            str(self.port),
            "-o",
            "BatchMode=yes",
            "-o",
            "IdentitiesOnly=yes",
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            f"UserKnownHostsFile={self.directory / 'known_hosts'}",
            *args,
            f"{self.user}@127.0.0.1",
        ]

    @contextmanager
    def forward(self, local: Path, remote: Path) -> Iterator[Path]:
        """``ssh -N -L local:remote``; yields ``local`` once it exists (ssh listens on it)."""
        command = self.ssh_command(
            "-N",
            "-o",
            "ExitOnForwardFailure=yes",
            "-o",
            "StreamLocalBindMask=0177",
            "-o",
            "StreamLocalBindUnlink=yes",
            "-L",
            f"{local}:{remote}",
        )
        proc = subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        try:
            _wait(f"ssh -L {local}", local.exists, proc)
            yield local
        finally:
            _stop(proc)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _listening(port: int) -> Callable[[], bool]:
    def ready() -> bool:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return True
        except OSError:
            return False

    return ready


@pytest.fixture
def sshd(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sshd]:
    if not SSHD.is_file() or shutil.which("ssh") is None or shutil.which("ssh-keygen") is None:
        unavailable("sshd is not installed: run `bash scripts/install-sshd.sh` or `tox -e ssh`")
    directory = make_private_dir(tmp_path_factory.mktemp("sshd"))
    for name in ("host_key", "id_ed25519"):
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(directory / name)],
            check=True,
            timeout=30,
        )
    authorized = directory / "authorized_keys"
    # Only forwarding: no shell, no agent, no X11, no pty.
    options = "restrict,port-forwarding"
    authorized.write_text(f"{options} {(directory / 'id_ed25519.pub').read_text()}")
    authorized.chmod(0o600)
    port = _free_port()
    config = directory / "sshd_config"
    config.write_text(
        "\n".join(
            [
                "ListenAddress 127.0.0.1",
                f"Port {port}",
                f"HostKey {directory / 'host_key'}",
                f"PidFile {directory / 'sshd.pid'}",
                f"AuthorizedKeysFile {authorized}",
                f"AllowUsers {getpass.getuser()}",
                "PubkeyAuthentication yes",
                "PasswordAuthentication no",
                "KbdInteractiveAuthentication no",
                "UsePAM no",
                "StrictModes no",
                "PermitRootLogin prohibit-password",
                "AllowStreamLocalForwarding local",
                # sshd checks a socket path against the same permission set as TCP targets:
                # with TCP forwarding off, every Unix-socket forward is denied too.
                "AllowTcpForwarding local",
                "PermitListen none",
                "GatewayPorts no",
                "X11Forwarding no",
                "PermitTTY no",
                "LogLevel ERROR",
                "",
            ]
        )
    )
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)  # its privilege separation dir
    proc = subprocess.Popen(
        [str(SSHD), "-D", "-e", "-f", str(config)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        _wait(f"sshd on 127.0.0.1:{port}", _listening(port), proc)
        yield Sshd(directory, port, directory / "id_ed25519", getpass.getuser())
    finally:
        _stop(proc)
