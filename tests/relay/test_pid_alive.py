"""``pid_alive``: a Pi that is exiting or already reaped is gone (issue 21: a killed Pi is a
disconnect, never a session end it did not send). ``/proc/<pid>/stat`` is faked here: a real
process is inside ``exit()`` only for microseconds."""

from __future__ import annotations

import builtins
import io
import os
from typing import Any

import pytest

from pi_ask_sdk.transports.relay import pid_alive

PF_EXITING = 0x4


def fake_stat(monkeypatch: pytest.MonkeyPatch, content: bytes | Exception) -> None:
    real_open = builtins.open

    def opener(file: Any, *args: Any, **kwargs: Any) -> Any:
        if file == f"/proc/{os.getpid()}/stat":
            if isinstance(content, Exception):
                raise content
            return io.BytesIO(content)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", opener)


def stat_line(state: str, flags: int) -> bytes:
    return f"{os.getpid()} (node (x)) {state} 1 1 1 0 -1 {flags} 0 0".encode()


def test_a_running_process_is_alive(monkeypatch: pytest.MonkeyPatch) -> None:
    assert pid_alive(os.getpid())
    fake_stat(monkeypatch, stat_line("S", 0x400100))
    assert pid_alive(os.getpid())


@pytest.mark.parametrize(
    ("state", "flags"), [("R", 0x400100 | PF_EXITING), ("Z", 0x400100), ("X", 0)]
)
def test_an_exiting_or_dead_process_is_gone(
    monkeypatch: pytest.MonkeyPatch, state: str, flags: int
) -> None:
    fake_stat(monkeypatch, stat_line(state, flags))
    assert not pid_alive(os.getpid())


def test_a_process_reaped_between_the_checks_is_gone(monkeypatch: pytest.MonkeyPatch) -> None:
    fake_stat(monkeypatch, FileNotFoundError(2, "No such file or directory"))
    assert not pid_alive(os.getpid())


def test_no_pid_is_never_alive() -> None:
    assert not pid_alive(0)
    assert not pid_alive(-1)


@pytest.mark.parametrize("pid", [2**31, 2**63, 10**30])
def test_a_pid_no_process_can_have_is_not_alive(pid: int) -> None:
    assert not pid_alive(pid)  # (os.kill raised OverflowError)
