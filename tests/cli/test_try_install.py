"""Ctrl-C during ``pi-ask try``'s first install (issue 27): ``npm ci`` and everything it started
stop at once, and its temporary directory is removed.

``npm`` here is a stand-in first on PATH that keeps writing into its directory (as ``npm ci``
does for ~30 s) and starts a child of its own (as install scripts do). ``npm ci`` runs in a
session of its own (so a terminal's Ctrl-C does not reach it half-way): before this fix it
went on for its whole run after ``pi-ask try`` had exited, and the temporary directory it kept
writing into stayed behind.
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.interrupts import default_sigint, is_gone

BOUND = 60.0
"""Upper bound of every wait here (a loaded machine starts Python slowly)."""

PROMPT = 10.0
"""How soon after Ctrl-C ``pi-ask try`` must have stopped npm and exited."""

FAKE_NPM = textwrap.dedent(
    f"""\
    #!{sys.executable}
    import os, pathlib, signal, subprocess, sys, time
    if os.environ.get("FAKE_NPM_IGNORES_TERM"):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    child = subprocess.Popen(["sleep", "300"])  # as an install script npm runs
    with open(os.environ["FAKE_NPM_FIFO"], "w") as fifo:
        fifo.write(f"{{os.getpid()}} {{child.pid}}\\n")
    modules = pathlib.Path("node_modules")
    for n in range(30000):  # ~30 s of writing into the temporary directory, as npm ci
        try:
            (modules / f"p{{n % 50}}").mkdir(parents=True, exist_ok=True)
            (modules / f"p{{n % 50}}" / f"f{{n}}.js").write_text("x")
        except OSError:  # removed under it: npm carries on regardless
            pass
        time.sleep(0.001)
    sys.exit(1)
    """
)


def started(fifo: Path) -> tuple[int, int]:
    """The pids of the fake npm and its child, once it runs (a bounded wait on the fifo)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        seen = b""
        deadline = time.monotonic() + BOUND
        while b"\n" not in seen:
            left = deadline - time.monotonic()
            assert left > 0, "the fake npm never started"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                seen += os.read(fd, 100)
        npm_pid, child_pid = seen.split()
        return int(npm_pid), int(child_pid)
    finally:
        os.close(fd)


@pytest.mark.parametrize("ignores_term", [False, True])
def test_ctrl_c_during_the_first_install_stops_npm_and_removes_its_directory(
    tmp_path: Path, ignores_term: bool
) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "npm").write_text(FAKE_NPM)
    (bin_dir / "npm").chmod(0o755)
    fifo = tmp_path / "npm-started"
    os.mkfifo(fifo)
    relays = tmp_path / "relays"
    relays.mkdir(mode=0o700)
    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "PI_ASK_PI_CACHE": str(cache),
        "PI_ASK_RELAY_DIR": str(relays),
        "FAKE_NPM_FIFO": str(fifo),
    }
    if ignores_term:
        env["FAKE_NPM_IGNORES_TERM"] = "1"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pi_ask_sdk.cli", "try"],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # a terminal's foreground job: Ctrl-C signals its group
        preexec_fn=default_sigint,
    )
    npm_pid = child_pid = 0
    try:
        npm_pid, child_pid = started(fifo)
        assert list(cache.glob(".node.new-*")), "npm runs in a temporary directory"
        interrupted = time.monotonic()
        os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in the terminal does
        out, err = proc.communicate(timeout=BOUND)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(BOUND)
        for pid in (npm_pid, child_pid):
            if pid and not is_gone(pid):
                os.kill(pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert (
        f"installing the pinned Pi (current, about 380 MB) from npm into {cache / 'node'} (once; "
        "PI_ASK_PI_CACHE moves it; Ctrl-C stops) ..."
    ) in out
    assert err.strip().endswith("pi-ask try: interrupted"), err
    assert "Traceback" not in err
    assert took < PROMPT, f"{took:.1f} s after Ctrl-C"
    assert is_gone(npm_pid), "npm ci still runs"
    assert is_gone(child_pid), "a process npm started still runs"
    assert sorted(path.name for path in cache.iterdir()) == [".node.lock"]  # no temporary dir
