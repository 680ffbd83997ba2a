"""``pi-ask doctor``: finds node, Pi and running relays, and says exactly what is wrong.

Besides the relay directory this shell uses, it looks at the running Pi processes of this user
(``processes.py``, Linux ``/proc``): the Unix sockets each one listens on tell where
its relay really is, so a Pi whose relay listens in another directory (a different
``PI_ASK_RELAY_DIR``, ``XDG_RUNTIME_DIR`` or ``TMPDIR``, e.g. under ``sudo`` or a sandbox) and a
Pi running without the relay are both named, with what to type. A relay forwarded into the
directory with ``ssh -L`` (``pi-<label>.sock``) is checked too.
"""

from __future__ import annotations

import asyncio
import os
import re
import shutil
import stat
import subprocess
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Final, Literal

from pi_ask_core import PiAskError
from pi_ask_sdk.transports.relay import (
    MAX_SOCKET_PATH,
    NoRelayFound,
    RelayHello,
    RelayPathTooLong,
    RelayTransport,
    check_relay_dir,
    check_relay_socket,
    is_forwarded_name,
    local_socket_pid,
    pid_alive,
    relay_dir,
    relay_extension_path,
)

from .processes import PiProcessInfo, find_pi_processes
from .text import clean, json_line

__all__ = ["Check", "doctor", "run_checks"]

Status = Literal["ok", "warn", "fail"]


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
    # An observer: the doctor never makes a headless Pi's form wait for it.
    transport = RelayTransport(path=path, reconnect=False, hello_timeout=2.0, role="observer")

    class _Quiet:
        def message(self, channel: str, data: object, *, replay: bool = False) -> None:
            pass

        def ended(self, reason: Literal["session_ended", "disconnected"]) -> None:
            pass

    try:
        await transport.open(_Quiet())
        hello = transport.hello
        assert hello is not None
        about = f"Pi {hello.pi_version} (pid {hello.pid}) in {hello.cwd}, protocol {hello.protocol}"
        return f"{about}; {_liveness(hello)}; {_clients(hello)}"
    finally:
        await transport.close()


def _liveness(hello: RelayHello) -> str:
    """How the relay tells that an answering client is gone (a stopped bridge)."""
    if hello.ping < 1:
        return "no liveness pings (an answering client counts while it is connected)"
    return (
        f"answering clients pinged every {hello.ping_ms / 1000:g} s, dropped after "
        f"{hello.ping_timeout_ms / 1000:g} s of silence"
    )


def _clients(hello: RelayHello) -> str:
    """Who else is connected, by role (what decides whether a headless Pi opens its forms)."""
    if hello.client_hello < 1:
        return (
            "clients: not counted (an older relay without client hellos; a headless Pi "
            "opens no form through it)"
        )
    return f"clients: {hello.answering} answering, {hello.observing} observing" + (
        "" if hello.answering else " (a headless Pi answers its forms with the fallback)"
    )


def _socket_checks(directory: Path) -> list[Check]:
    checks: list[Check] = []
    try:
        names = sorted(os.listdir(directory))
    except OSError as error:
        return [Check("fail", "relay directory", f"cannot list {directory}: {error.strerror}")]
    sockets = [(name, pid) for name in names if (pid := local_socket_pid(name)) is not None]
    forwarded = [name for name in names if is_forwarded_name(name)]
    if not sockets and not forwarded:
        return [Check("warn", "relays", f"no Pi with the relay is running ({directory} is empty)")]
    for name in forwarded:  # a relay forwarded here with ssh -L (docs/relay.md): no local pid
        checks.append(_relay_check(directory / name, absent="warn"))
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
        checks.append(_relay_check(path, f"pid {pid} is alive but: "))
    return checks


def _relay_check(path: Path, failing: str = "", *, absent: Status = "fail") -> Check:
    """The socket at ``path`` passes the same-user rules and a relay greets on it. ``absent``
    is the status when nothing listens on it (a forwarded socket whose ssh has exited is
    skipped by discovery: a warning, not a failure)."""
    what = f"relay {path.name}"
    try:
        check_relay_socket(path)
    except PiAskError as error:
        return Check("fail", what, str(error))
    try:
        return Check("ok", what, asyncio.run(_hello(path)))
    except NoRelayFound as error:  # nothing listens on it
        return Check(absent, what, f"{failing}{error}")
    except (OSError, PiAskError, AssertionError) as error:
        return Check("fail", what, f"{failing}{error}")


def _process_checks(
    directory: Path, processes: Sequence[PiProcessInfo] | None, relays_here: bool
) -> list[Check]:
    if processes is None:
        return [Check("warn", "pi processes", "cannot list processes here (no /proc)")]
    checks: list[Check] = []
    for pi in processes:
        elsewhere = [path for path in pi.relay_sockets if path.parent != directory]
        if pi.relay_sockets and not elsewhere:
            continue  # its relay is in our directory: the relay checks cover it
        if elsewhere:
            where = elsewhere[0]
            # Another Pi (another sandbox, a CI job) is nothing wrong with this setup: a
            # warning. With no relay here it may be why nothing is found: said so first.
            none_here = "" if relays_here else " (where no relay listens)"
            checks.append(
                Check(
                    "warn",
                    f"pi {pi.pid}",
                    f"relay directory mismatch: its relay listens in {where.parent}, but this "
                    f"shell looks in {directory}{none_here}. If this is the Pi you mean to reach, "
                    f"run with PI_ASK_RELAY_DIR={where.parent} or pass --socket {where}",
                )
            )
            continue
        detail = (
            f"Pi (pid {pi.pid}) runs without the relay (it listens on no pi-*.sock socket): "
            'start Pi with pi -e "$(pi-ask relay-path)"'
        )
        if pi.relay_dir is not None and pi.relay_dir != directory:
            detail += (
                f"; its environment selects the relay directory {pi.relay_dir}, not "
                f"{directory}: set the same PI_ASK_RELAY_DIR for both"
            )
        checks.append(Check("warn", f"pi {pi.pid}", detail))
    return checks


_NOT_LISTED: Final[list[PiProcessInfo]] = []


def _largest_pid() -> int:
    """The largest pid a process here can have (Linux's pid_max, else its 64-bit default)."""
    try:
        with open("/proc/sys/kernel/pid_max", encoding="ascii") as fh:
            return max(1, int(fh.read().strip()) - 1)
    except (OSError, ValueError):
        return 4_194_303


def run_checks(
    directory: Path | None = None, processes: Sequence[PiProcessInfo] | None = _NOT_LISTED
) -> list[Check]:
    """Every check, in the order a person fixes things.

    ``processes`` are the running Pis (``find_pi_processes()`` when not given; ``None`` means
    they cannot be listed).
    """
    if processes is _NOT_LISTED:
        processes = find_pi_processes()
    checks = _node_checks()
    checks.append(_relay_extension_check())
    directory = relay_dir() if directory is None else directory
    longest = directory / f"pi-{_largest_pid()}.sock"
    if len(os.fsencode(longest)) > MAX_SOCKET_PATH:
        # (the relay would disable itself there, saying so only on Pi's stderr)
        detail = f"{RelayPathTooLong(longest)} A Pi's relay there does not listen."
        checks.append(Check("fail", "relay directory", detail))
        return checks + _process_checks(directory, processes, relays_here=False)
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
        return checks + _process_checks(directory, processes, relays_here=False)
    except PiAskError as error:
        checks.append(Check("fail", "relay directory", str(error)))
        return checks + _process_checks(directory, processes, relays_here=False)
    mode = stat.S_IMODE(os.stat(directory).st_mode)
    checks.append(Check("ok", "relay directory", f"{directory} (mode {mode:o}, yours)"))
    relay_checks = _socket_checks(directory)
    relays_here = any(check.status == "ok" for check in relay_checks)
    return checks + relay_checks + _process_checks(directory, processes, relays_here)


def doctor(
    write: Callable[[str], None] = print,
    directory: Path | None = None,
    *,
    as_json: bool = False,
    processes: Sequence[PiProcessInfo] | None = _NOT_LISTED,
    socket: Path | None = None,
) -> int:
    """Print the checks (one JSON object with ``as_json``); exit status 1 when any failed.

    With ``socket`` only that relay socket is checked (e.g. one forwarded with ``ssh -L``,
    whose Pi, node and extension are on another machine)."""
    directory = relay_dir() if directory is None else directory
    checks = [_relay_check(socket)] if socket is not None else run_checks(directory, processes)
    failed = sum(check.status == "fail" for check in checks)
    if as_json:
        where = {"socket": str(socket)} if socket is not None else {"relayDir": str(directory)}
        report = {"ok": not failed, **where, "checks": [asdict(check) for check in checks]}
        write(json_line(report, indent=2))
    else:
        for check in checks:
            # (a hello's cwd and versions come from the far end: shown inert, on one line: a line
            # break in a Pi's cwd must not start a check line of its own)
            write(f"[{check.status:>4}] {check.what}: {clean(check.detail)}")
        write("all good" if not failed else f"{failed} problem(s) found")
    return 1 if failed else 0
