"""Finding a relay: its directory, the same-user checks, live Pis' sockets, the extension file."""

from __future__ import annotations

import logging
import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable, Container, Mapping
from importlib import resources
from pathlib import Path
from typing import Final

from ._relay_info import RelayInfo
from .errors import (
    MAX_SOCKET_PATH,
    AmbiguousRelay,
    NoRelayFound,
    RelayError,
    RelayPathMissing,
    RelayPathNotSocket,
    UnsafeRelayPath,
)

log: Final = logging.getLogger("pi_ask_sdk.relay")

_SOCKET_RE: Final = re.compile(r"^pi-(\d+)\.sock$")
_FORWARD_RE: Final = re.compile(r"^pi-(?!\d+\.sock$).+\.sock$")
"""A forwarded relay socket (``ssh -L``): ``pi-<label>.sock`` where the label is not a pid."""


def local_socket_pid(name: str) -> int | None:
    """The pid in ``name``, a local relay socket's file name (``pi-<pid>.sock``, a name in a
    relay directory, not a path); None for other names."""
    match = _SOCKET_RE.match(name)
    return None if match is None else int(match.group(1))


_BOUND_RE: Final = re.compile(r"^\.pi-(\d+)\.new$")
"""The name a relay binds before it listens; renamed to ``pi-<pid>.sock`` once it accepts."""


def listening_socket_path(bound: Path) -> Path | None:
    """The local relay socket served by a listening socket bound at ``bound`` (the path
    ``/proc/net/unix`` shows), or None if it is no relay's. The relay binds ``.pi-<pid>.new``
    and renames it to ``pi-<pid>.sock`` once it listens, so that the socket's name appears only
    when it accepts; the kernel keeps the name it was bound to."""
    match = _BOUND_RE.match(bound.name)
    if match is not None:
        return bound.with_name(f"pi-{match.group(1)}.sock")
    return bound if local_socket_pid(bound.name) is not None else None


def is_forwarded_name(name: str) -> bool:
    """Whether ``name`` (a name in a relay directory, not a path) is a forwarded relay
    socket's: ``pi-<label>.sock``, the label not a pid (where ``ssh -L`` forwards a remote Pi's
    relay to)."""
    return _FORWARD_RE.match(name) is not None


def relay_dir(env: Mapping[str, str] | None = None) -> Path:
    """``$PI_ASK_RELAY_DIR``, else ``$XDG_RUNTIME_DIR/pi-ask``, else ``<tmpdir>/pi-ask-<uid>``.

    The same rule as the relay; ``<tmpdir>`` is ``$TMPDIR`` else ``/tmp`` (node's ``os.tmpdir``).
    """
    env = os.environ if env is None else env
    explicit = env.get("PI_ASK_RELAY_DIR")
    if explicit:
        return Path(os.path.abspath(explicit))
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "pi-ask"
    tmp = env.get("TMPDIR") or env.get("TMP") or env.get("TEMP") or tempfile.gettempdir()
    if len(tmp) > 1 and tmp.endswith("/"):
        tmp = tmp[:-1]  # node's os.tmpdir() strips one trailing slash
    return Path(tmp) / f"pi-ask-{os.getuid()}"


def check_relay_dir(directory: Path) -> None:
    """Raise ``UnsafeRelayPath`` unless ``directory`` is a real directory owned by this uid
    with no group/other permission bits (``RelayPathMissing``, a ``FileNotFoundError`` too, if
    it does not exist)."""
    _check_private(
        directory,
        directory,
        stat.S_ISDIR,
        "it is not a directory (symlinks are refused)",
        _dir_mode_advice,
        _PRIVATE_DIR,
    )


_PRIVATE_DIR: Final = (
    "point PI_ASK_RELAY_DIR at a private directory of your own instead (mkdir -m 700 DIR), "
    "the same for Pi and its clients"
)


def _dir_mode_advice(mode: int) -> str:
    # A shared directory (/tmp: sticky, anyone may write) must not be made private: chmod 700
    # on it would break every other user of it.
    if mode & (stat.S_ISVTX | stat.S_IWOTH):
        return f"it is a shared directory; {_PRIVATE_DIR}"
    return "it must grant no group/other permission (chmod 700)"


def check_relay_socket(path: Path) -> None:
    """Raise ``UnsafeRelayPath`` unless ``path`` is a socket owned by this uid with mode 0600
    (``RelayPathMissing``, a ``FileNotFoundError`` too, if it does not exist). A path that is
    no socket at all is ``RelayPathNotSocket``, told first; then its directory is checked."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        pass  # missing, or not to be inspected: said below, after the directory's checks
    else:
        if not stat.S_ISSOCK(mode):
            raise RelayPathNotSocket(path, _kind(mode))
    check_relay_dir(path.parent)
    _check_private(
        path, path.parent, stat.S_ISSOCK, "it is not a Unix socket", "a relay socket must be 0600"
    )


def _kind(mode: int) -> str:
    for is_kind, name in (
        (stat.S_ISREG, "regular file"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISCHR, "character device"),
        (stat.S_ISBLK, "block device"),
    ):
        if is_kind(mode):
            return name
    return "file of another kind"


def _check_private(
    path: Path,
    directory: Path,
    is_kind: Callable[[int], bool],
    wrong_kind: str,
    wrong_mode: str | Callable[[int], str],
    not_ours: str = "",
) -> None:
    """``path`` (not followed if a link) is of the expected kind, ours, and private."""
    try:
        st = os.lstat(path)
    except FileNotFoundError as exc:
        raise RelayPathMissing(path, directory) from exc
    except OSError as exc:
        raise UnsafeRelayPath(path, f"it cannot be inspected ({exc.strerror or exc})") from exc
    if not is_kind(st.st_mode):
        raise UnsafeRelayPath(path, wrong_kind)
    uid = os.getuid()
    if st.st_uid != uid:
        owner = f"it is owned by uid {st.st_uid}, not by this uid {uid}"
        raise UnsafeRelayPath(path, f"{owner}; {not_ours}" if not_ours else owner)
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        advice = wrong_mode if isinstance(wrong_mode, str) else wrong_mode(mode)
        raise UnsafeRelayPath(path, f"its mode is {mode:o}; {advice}")


_PF_EXITING: Final = 0x4
"""Linux's per-task flag for a process inside ``exit()`` (``/proc/<pid>/stat``, field 9)."""


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists and is not exiting (nor a zombie to be reaped).

    A process that is exiting counts as gone: a killed Pi closes its sockets while it exits,
    before it becomes a zombie, so a client that sees its connection drop must already find it
    gone (else it would report a session end that Pi never sent)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, OverflowError):  # (Overflow: beyond pid_t, no process has it)
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[-1].split()
    except (FileNotFoundError, ProcessLookupError):
        # reaped since kill() (its parent waited for it), unless there is no /proc at all
        return not os.path.isdir("/proc/self")
    except OSError:
        return True  # kill() said it exists
    if not fields or fields[0] in (b"Z", b"X"):
        return not fields
    try:
        return not int(fields[6]) & _PF_EXITING  # set before the exiting process's files close
    except (IndexError, ValueError):
        return True


def discover_relays(
    directory: Path | None = None, *, known: Container[Path] = ()
) -> list[RelayInfo]:
    """Relay sockets of live Pi processes in ``directory`` (default ``relay_dir()``): local
    ones (``pi-<pid>.sock`` of a live pid) by pid, then forwarded ones by name.

    A forwarded socket (``pi-<label>.sock``, label not a number, e.g. made by ``ssh -L``) is
    listed when it passes the same-user rules and accepts a connection (a forward whose
    ``ssh`` is gone refuses it). A poller passes the forwards it is connected to as ``known``:
    they are listed without a probe connection (each probe costs the far relay a hello and its
    replays). Raises ``UnsafeRelayPath`` when the directory breaks the same-user rules; a
    directory that does not exist has no relays.
    """
    directory = relay_dir() if directory is None else directory
    try:
        check_relay_dir(directory)
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise UnsafeRelayPath(directory, f"it cannot be listed ({exc.strerror or exc})") from exc
    found: list[RelayInfo] = []
    forwarded: list[RelayInfo] = []
    for name in names:
        pid = local_socket_pid(name)
        if pid is not None:
            if pid_alive(pid):
                found.append(RelayInfo(pid, directory / name))
        elif is_forwarded_name(name) and (directory / name in known or _accepts(directory / name)):
            forwarded.append(RelayInfo(0, directory / name, forwarded=True))
    found.sort(key=lambda info: info.pid)
    forwarded.sort(key=lambda info: info.path.name)
    return found + forwarded


def _accepts(path: Path) -> bool:
    """Whether ``path`` is a private socket of ours that accepts a connection (then closed)."""
    try:
        check_relay_socket(path)
    except (OSError, UnsafeRelayPath) as exc:
        log.debug("pi_ask_sdk.relay: skipped %s: %s", path, exc)
        return False
    if len(os.fsencode(path)) > MAX_SOCKET_PATH:
        return False
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        probe.settimeout(1.0)
        probe.connect(str(path))
    except OSError:
        return False  # refused: nothing listens (e.g. its ssh has exited)
    finally:
        probe.close()
    return True


def resolve_relay(
    *,
    pid: int | None = None,
    path: str | os.PathLike[str] | None = None,
    directory: Path | None = None,
) -> RelayInfo:
    """The relay to connect to: by ``path``, by ``pid``, or the only one running.

    Raises ``NoRelayFound`` (none, or the requested one is not there), ``AmbiguousRelay``
    (several and no choice made; it names them) or ``UnsafeRelayPath``.
    """
    if path is not None:
        sock = Path(os.path.abspath(path))
        local_pid = local_socket_pid(sock.name)
        if local_pid is not None:
            return RelayInfo(local_pid, sock)
        return RelayInfo(0, sock, forwarded=True)
    directory = relay_dir() if directory is None else directory
    if pid is not None:
        sock = directory / f"pi-{pid}.sock"
        if not pid_alive(pid):
            raise NoRelayFound(directory, f"no process with pid {pid}")
        return RelayInfo(pid, sock)
    relays = discover_relays(directory)
    if not relays:
        raise NoRelayFound(directory)
    if len(relays) > 1:
        raise AmbiguousRelay(tuple(relays))
    return relays[0]


def relay_extension_path() -> Path:
    """Absolute path of the shipped relay extension, for ``pi -e <path>``."""
    found = resources.files("pi_ask_sdk.transports.relay") / "pi-ask-relay.ts"
    if not isinstance(found, Path) or not found.is_file():
        raise RelayError(
            f"The relay extension is not a file on disk ({found}); install pi-ask-sdk unzipped."
        )
    return found.resolve()
