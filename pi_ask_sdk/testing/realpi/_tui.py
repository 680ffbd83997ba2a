"""``PiTui``: Pi's interactive terminal UI under a pseudo-terminal, driven by keystrokes."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import signal
import struct
import subprocess
import termios
import threading
import time
from pathlib import Path
from typing import Literal

from typing_extensions import Unpack

from pi_ask_sdk.testing.errors import PiFailed

from ._install import PiEnv
from ._process import WAIT, PiProcess
from ._running import PiOptions

__all__ = ["PiTui"]

# Terminal control sequences (CSI, OSC), removed from what the screen shows.
_CONTROL = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-_]")


class PiTui(PiProcess):
    """Pi in its interactive TUI (``mode == "tui"``) under a pseudo-terminal, with the relay and
    the stand-in host, as a person runs it. In the TUI the host opens its forms directly (no
    external-UI negotiation): a bridge sees them whoever is connected. Background calls
    (``background: true``) return a receipt at once and their forms open one at a time.

    ``type(text)`` types into Pi's editor, ``enter()`` sends it, ``wait_screen(text)`` waits
    until Pi wrote ``text`` (``screen()`` is everything it wrote, control sequences removed).
    There are no RPC records here: ``prompt``/``request`` and the methods built on them do not
    work; use the relay (``client()``) and the stand-in server (``result()``).
    """

    mode: Literal["rpc", "tui"] = "tui"

    def __init__(
        self,
        env: PiEnv,
        workdir: Path,
        *,
        columns: int = 160,
        rows: int = 48,
        **options: Unpack[PiOptions],
    ) -> None:
        super().__init__(env, workdir, **options)
        self._size = (rows, columns)
        self._master: int | None = None
        self._output = bytearray()

    def command_line(self) -> list[str]:
        """Pi's command line for the TUI (``PiProcess``'s without ``--mode rpc``)."""
        args = super().command_line()
        at = args.index("--mode")
        return args[:at] + args[at + 2 :]

    def _launch(self) -> None:
        master, slave = pty.openpty()
        rows, columns = self._size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        try:
            self.proc = subprocess.Popen(
                self.command_line(),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=self.workdir,
                env={**self.environment(), "TERM": "xterm-256color"},
                start_new_session=True,  # the pty is its controlling terminal
            )
        except OSError:
            os.close(master)
            raise
        finally:
            os.close(slave)
        self._master = master
        thread = threading.Thread(target=self._read_pty, daemon=True)
        thread.start()
        self._threads.append(thread)

    def _read_pty(self) -> None:
        master = self._master
        assert master is not None
        while True:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: Pi closed the terminal
                break
            if not chunk:
                break
            with self._cond:
                self._output += chunk
                self._cond.notify_all()
        proc = self.proc
        if proc is not None:
            proc.wait()
        self.exited.set()
        with self._cond:
            self._cond.notify_all()

    def screen(self) -> str:
        """Everything Pi wrote to its terminal so far, without control sequences."""
        with self._cond:
            raw = bytes(self._output)
        return _CONTROL.sub(b"", raw).decode("utf-8", "replace")

    def wait_screen(self, text: str, *, count: int = 1, timeout: float = WAIT) -> str:
        """Wait until ``text`` appeared ``count`` times on the screen; returns the screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if screen.count(text) >= count:
                return screen
            with self._cond:
                left = deadline - time.monotonic()
                if left <= 0 or self.exited.is_set():
                    break
                self._cond.wait(min(left, 0.5))
        why = "exited" if self.exited.is_set() else f"did not show {text!r} in {timeout:g} s"
        raise PiFailed(f"Pi's TUI {why}; screen tail:\n{screen[-2000:]}")

    def type(self, text: str) -> None:
        """Type ``text`` into the focused input (no Enter)."""
        assert self._master is not None
        os.write(self._master, text.encode())

    def enter(self) -> None:
        """Press Enter."""
        self.type("\r")

    def stop(self, timeout: float = 5.0) -> int | None:
        """Ends Pi (SIGTERM, then SIGKILL) and closes the terminal. Idempotent."""
        proc = self.proc
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout)
        master, self._master = self._master, None
        if master is not None:
            os.close(master)
        for thread in self._threads:
            thread.join(timeout)
        self._stop_standin()
        return None if proc is None else proc.returncode
