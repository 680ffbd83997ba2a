"""``pi-ask doctor``: finds node, Pi and running relays, and says exactly what is wrong."""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pi_ask_core import PiAskError
from pi_ask_sdk.transports.relay import (
    RelayTransport,
    check_relay_dir,
    check_relay_socket,
    pid_alive,
    relay_dir,
    relay_extension_path,
)

__all__ = ["Check", "run_checks"]

Status = Literal["ok", "warn", "fail"]
_SOCKET = re.compile(r"^pi-(\d+)\.sock$")


@dataclass(frozen=True)
class Check:
    status: Status
    what: str
    detail: str


def _version(command: list[str]) -> str | None:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=20, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip().splitlines()
    return text[0] if done.returncode == 0 and text else None


def _node_checks() -> list[Check]:
    node = shutil.which("node")
    if node is None:
        return [Check("fail", "node", "not found on PATH; Pi needs Node.js (>= 22.19 for Pi 1.6)")]
    version = _version([node, "--version"]) or "unknown"
    checks = [Check("ok", "node", f"{node} {version}")]
    match = re.match(r"v(\d+)\.(\d+)", version)
    if match and (int(match.group(1)), int(match.group(2))) < (22, 19):
        checks.append(
            Check("warn", "node version", f"{version} runs Pi 0.74.x; Pi 1.6 needs node >= 22.19")
        )
    pi = shutil.which("pi")
    if pi is None:
        checks.append(
            Check(
                "warn",
                "pi",
                "no `pi` on PATH (npm i -g @earendil-works/"
                "pi-coding-agent); fine if you start Pi another way",
            )
        )
    else:
        checks.append(Check("ok", "pi", f"{pi} {_version([pi, '--version']) or ''}".strip()))
    return checks


def _relay_extension_check() -> Check:
    try:
        path = relay_extension_path()
    except PiAskError as error:
        return Check("fail", "relay extension", str(error))
    return Check("ok", "relay extension", f'{path} (load it: pi -e "{path}")')


async def _hello(path: Path) -> str:
    transport = RelayTransport(path=path, reconnect=False, hello_timeout=2.0)

    class _Quiet:
        def message(self, channel: str, data: object, *, replay: bool = False) -> None:
            pass

        def ended(self, reason: Literal["session_ended", "disconnected"]) -> None:
            pass

    try:
        await transport.open(_Quiet())
        hello = transport.hello
        assert hello is not None
        return f"Pi {hello.pi_version} (pid {hello.pid}) in {hello.cwd}, protocol {hello.protocol}"
    finally:
        await transport.close()


def _socket_checks(directory: Path) -> list[Check]:
    checks: list[Check] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError as error:
        return [Check("fail", "relay directory", f"cannot list {directory}: {error.strerror}")]
    sockets = [(name, int(m.group(1))) for name in names if (m := _SOCKET.match(name))]
    if not sockets:
        return [Check("warn", "relays", f"no Pi with the relay is running ({directory} is empty)")]
    for name, pid in sockets:
        path = directory / name
        if not pid_alive(pid):
            checks.append(
                Check(
                    "warn",
                    f"relay {name}",
                    f"stale: pid {pid} is gone (the next relay start removes it)",
                )
            )
            continue
        try:
            check_relay_socket(path)
        except PiAskError as error:
            checks.append(Check("fail", f"relay {name}", str(error)))
            continue
        try:
            checks.append(Check("ok", f"relay {name}", asyncio.run(_hello(path))))
        except (OSError, PiAskError, AssertionError) as error:
            checks.append(Check("fail", f"relay {name}", f"pid {pid} is alive but: {error}"))
    return checks


def run_checks(directory: Path | None = None) -> list[Check]:
    """Every check, in the order a person fixes things."""
    checks = _node_checks()
    checks.append(_relay_extension_check())
    directory = relay_dir() if directory is None else directory
    try:
        check_relay_dir(directory)
    except FileNotFoundError:
        checks.append(
            Check(
                "warn",
                "relay directory",
                f"{directory} does not exist yet (the relay creates it, mode 0700)",
            )
        )
        return checks
    except PiAskError as error:
        checks.append(Check("fail", "relay directory", str(error)))
        return checks
    mode = stat.S_IMODE(os.stat(directory).st_mode)
    checks.append(Check("ok", "relay directory", f"{directory} (mode {mode:o}, yours)"))
    checks.extend(_socket_checks(directory))
    return checks


def doctor(write: Callable[[str], None] = print, directory: Path | None = None) -> int:
    """Print the checks; exit status 1 when any failed."""
    checks = run_checks(directory)
    for check in checks:
        write(f"[{check.status:>4}] {check.what}: {check.detail}")
    failed = sum(check.status == "fail" for check in checks)
    write("all good" if not failed else f"{failed} problem(s) found")
    return 1 if failed else 0
