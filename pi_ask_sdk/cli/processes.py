"""The running Pi processes of this user, as ``pi-ask doctor`` sees them (Linux ``/proc``).

Pi names its process ``pi``. The Unix sockets a Pi listens on (its ``fd/`` links matched with
``/proc/net/unix``) tell where its relay really is; its environment tells which relay directory
it would use.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pi_ask_sdk.transports.relay import listening_socket_path, pid_alive, relay_dir

__all__ = ["PiProcessInfo", "find_pi_processes"]


@dataclass(frozen=True)
class PiProcessInfo:
    """A running Pi of this user: the relay sockets it listens on, and the relay directory its
    environment selects (``None`` when its environment cannot be read)."""

    pid: int
    relay_sockets: tuple[Path, ...] = ()
    relay_dir: Path | None = None


def _listening_unix_sockets(proc: Path) -> dict[str, Path]:
    """Inode -> path of every listening Unix socket with a path (``/proc/net/unix``)."""
    found: dict[str, Path] = {}
    try:
        lines = (proc / "net" / "unix").read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return found
    for line in lines[1:]:
        # Num RefCount Protocol Flags Type St Inode Path; flag 0x10000 is __SO_ACCEPTCON.
        parts = line.split(maxsplit=7)
        if len(parts) == 8 and int(parts[3], 16) & 0x10000:
            found[parts[6]] = Path(parts[7])
    return found


def _is_pi(entry: Path) -> bool:
    try:
        comm = (entry / "comm").read_text(encoding="utf-8", errors="replace").strip()
        argv = (entry / "cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    if comm == "pi" or os.path.basename(argv[0]) == b"pi":
        return True  # Pi sets its process title to "pi"
    return any(b"pi-coding-agent" in arg and arg.endswith(b"cli.js") for arg in argv[1:3])


def _environment(entry: Path) -> dict[str, str] | None:
    try:
        raw = (entry / "environ").read_bytes()
    except OSError:
        return None
    pairs = (item.split(b"=", 1) for item in raw.split(b"\0") if b"=" in item)
    return {
        key.decode("utf-8", "replace"): value.decode("utf-8", "replace") for key, value in pairs
    }


def find_pi_processes(proc: Path = Path("/proc")) -> list[PiProcessInfo] | None:
    """This user's running Pi processes (``None`` where there is no ``/proc`` to read)."""
    if not (proc / "self").exists():
        return None
    listening = _listening_unix_sockets(proc)
    uid, me = os.getuid(), os.getpid()
    found: list[PiProcessInfo] = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) == me:
            continue
        try:
            if entry.stat().st_uid != uid or not _is_pi(entry):
                continue
            links = [os.readlink(fd) for fd in (entry / "fd").iterdir()]
        except OSError:
            continue  # gone meanwhile, or not ours to read
        pid = int(entry.name)
        if not pid_alive(pid):
            continue
        sockets = tuple(
            path
            for link in links
            if link.startswith("socket:[")
            and (bound := listening.get(link[8:-1])) is not None
            and (path := listening_socket_path(bound)) is not None
        )
        env = _environment(entry)
        found.append(PiProcessInfo(pid, sockets, None if env is None else relay_dir(env)))
    return sorted(found, key=lambda info: info.pid)
