"""Helpers for tests that interrupt a child process as Ctrl-C would (SIGINT).

A child inherits an ignored SIGINT across exec (``trap '' INT`` before pytest, a CI runner or a
``nohup`` that ignores it): Python then never raises ``KeyboardInterrupt`` in it, and a test of
Ctrl-C would wait for nothing. Every test that sends SIGINT starts its child with
``preexec_fn=default_sigint``, as a terminal's foreground job has it.
"""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

__all__ = ["default_sigint", "is_gone"]


def default_sigint() -> None:
    """``preexec_fn`` of a child that must take SIGINT as Ctrl-C (the default disposition)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def is_gone(pid: int) -> bool:
    """No process ``pid`` runs any more (a zombie waiting to be reaped counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):
        # "pid (comm) S ...": the state follows the last parenthesis
        stat = Path(f"/proc/{pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")
    return False
