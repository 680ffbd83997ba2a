"""The relay's socket accepts from the moment its name appears (issue 32 §3).

The relay binds a hidden name, makes it private and renames it to ``pi-<pid>.sock`` once it
listens, and removes that name before it stops accepting; so a client that connects as soon as
it sees the socket is never refused (a socket bound under its final name refused about 2% of
such connects, in the gap between ``bind()`` and ``listen()``). Real Pi, real relay; a watcher
process of its own connects the moment each new socket appears (tests/integration/
socket_watcher.py).
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from pi_ask_sdk import BridgeClient
from pi_ask_sdk.testing.realpi import PiProcess
from pi_ask_sdk.transports.relay import NoRelayFound, RelayTransport, listening_socket_path
from tests.integration.pi_process import TIMEOUT, PiEnv

pytestmark = pytest.mark.pi

ROOT = Path(__file__).resolve().parents[2]
SESSIONS = 100
"""Pi's start and the sessions after it: each a new socket."""
BURST = 3
"""Connects made at once when a socket appears (300 in all)."""
STARTUP = 30.0
"""Bound for Pi's start, on a loaded machine (a new session takes a fraction of a second)."""


class Watcher:
    """A ``socket_watcher`` process: one line ``<ok> <refused> <missing>`` per new socket."""

    def __init__(self, path: Path) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "tests.integration.socket_watcher", str(path), str(BURST)],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def next_socket(self, timeout: float) -> tuple[int, int, int]:
        """The outcome of the connects to the next new socket (waits ``timeout`` seconds)."""
        stdout = self.process.stdout
        assert stdout is not None
        # One line at a time is awaited (the next socket comes only after it), so nothing
        # is left in the reader's buffer when select() looks at the pipe.
        ready, _, _ = select.select([stdout], [], [], timeout)
        assert ready, f"the watcher saw no new socket in {timeout:g} s"
        said = stdout.readline()
        assert said, "the watcher ended"
        ok, refused, missing = map(int, said.split())
        return ok, refused, missing

    def close(self) -> None:
        if self.process.stdin is not None:
            self.process.stdin.close()  # it stops at end of input
        try:
            self.process.wait(TIMEOUT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(TIMEOUT)
        if self.process.stdout is not None:
            self.process.stdout.close()


@contextmanager
def started_pi(pi_installation: PiEnv, shared_tmp: Path, workdir: Path) -> Iterator[PiProcess]:
    """A Pi just started: its relay may not listen yet."""
    pi = PiProcess(pi_installation, workdir, shared_tmp=shared_tmp)
    try:
        pi.start()
        yield pi
    finally:
        pi.stop()


def test_every_connect_made_as_the_socket_appears_is_accepted(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with started_pi(pi_installation, shared_tmp, tmp_path) as pi:
        watcher = Watcher(pi.socket_path)
        try:
            totals = [0, 0, 0]
            for session in range(SESSIONS):
                if session:
                    pi.new_session()  # its relay closes, and listens on a new socket
                    # in place once the new session has started, as a client told of it expects
                    assert pi.socket_path.exists()
                wait = STARTUP if session == 0 else TIMEOUT
                for i, count in enumerate(watcher.next_socket(wait)):
                    totals[i] += count
        finally:
            watcher.close()
    ok, refused, missing = totals
    assert (ok, refused, missing) == (SESSIONS * BURST, 0, 0)


@pytest.mark.asyncio
async def test_a_client_given_the_pid_of_a_pi_that_just_started_connects(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with started_pi(pi_installation, shared_tmp, tmp_path) as pi:
        deadline = time.monotonic() + TIMEOUT
        while True:  # what a script that starts Pi and connects to it does
            transport = RelayTransport(pid=pi.pid, directory=pi.relay_dir)
            try:
                async with BridgeClient(transport):
                    assert transport.hello is not None
                    assert transport.hello.pid == pi.pid
                break
            except NoRelayFound as error:
                # Pi's own start may take longer than the transport waits (LISTEN_WAIT): a
                # live Pi is then said to run, never taken for one that has exited.
                assert f"Pi {pi.pid} runs" in str(error)
                assert time.monotonic() < deadline, error


def test_the_kernel_names_the_bound_socket_the_doctor_maps_it_back(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with started_pi(pi_installation, shared_tmp, tmp_path) as pi:
        path = pi.wait_socket()
        hidden = [name for name in os.listdir(path.parent) if name.startswith(".")]
        assert hidden == []  # the bound name was renamed, not copied
        listed = Path("/proc/net/unix").read_text(encoding="utf-8").split()
        [bound] = [Path(word) for word in listed if word.startswith(str(path.parent))]
        assert bound.name == f".pi-{pi.pid}.new"
        assert listening_socket_path(bound) == path
