"""``RelayTransport``: a ``BridgeClient`` transport to a real Pi through the relay extension.

The relay (``pi_ask_sdk/relay/pi-ask-relay.ts``, loaded with ``pi -e "$(pi-ask relay-path)"``)
listens on a private Unix socket ``<relay dir>/pi-<pid>.sock`` and speaks JSON lines (wire
protocol 1, see the relay's README):

* relay -> client: ``hello`` (first line), ``event`` (``channel``, ``data``, ``replay``),
  ``session_end`` (then EOF), ``error`` (a reply to bad client input);
* client -> relay: ``{"type":"emit","channel":"pi-agent-ask:submit","data":...}``.

Lines are split on ``b"\\n"`` only (JSON strings may hold U+2028/U+2029) and bounded in length.
Envelopes decode straight into typed Structs; an event's ``data`` is kept as ``msgspec.Raw`` and
decoded into its channel's wire Struct, or, when it does not fit, into plain JSON so that the
client judges it (and logs why it is skipped).

After ``session_end`` the listener hears ``ended("session_ended")``, nothing more is read from
that connection, and the transport reconnects at once with bounded exponential backoff: Pi
listens again when the next session starts, and the forms the new connection replays restore
the client's view. A connection lost without ``session_end`` (or cut short during its replay)
is retried the same way; once Pi is gone or the retries run out, the listener hears
``ended("disconnected")`` and nothing more. "Pi is gone" is read from Pi's pid only when the
hello came from the relay's own socket at our path; through a forwarded socket (``ssh -L``) the
pid is another machine's, and only the connection tells.

Text: a lone UTF-16 surrogate, which Pi's ``JSON.stringify`` writes as an escape such as
``"\\ud83d"``, is decoded as U+FFFD (``replace_lone_surrogates``), the one decode rule for
relay input. A ``submit-result`` the relay marks ``"own": false`` answers another connection's
submit and is not delivered (unless ``foreign_results=True``).

Trust model: only the same OS user, only locally. The directory must be a real directory owned
by this uid with no group/other permission bits, and the socket must be a socket owned by this
uid with mode 0600 (the relay's own rules); anything else raises ``UnsafeRelayPath``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import socket
import stat
import tempfile
from collections.abc import Callable, Container, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Final, Literal

import msgspec

from pi_ask_core import (
    COMPLETED,
    STARTED,
    SUBMIT_RESULT,
    CompletedEvent,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
)
from pi_ask_sdk.errors import ConnectionLost, TransportUnavailable

from .base import TransportListener

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "MAX_SOCKET_PATH",
    "PROTOCOL",
    "AmbiguousRelay",
    "NoRelayFound",
    "RelayConnectError",
    "RelayError",
    "RelayHandshakeError",
    "RelayHello",
    "RelayInfo",
    "RelayPathTooLong",
    "RelayTransport",
    "UnsafeRelayPath",
    "check_relay_dir",
    "check_relay_socket",
    "discover",
    "discover_relays",
    "pid_alive",
    "relay_dir",
    "relay_extension_path",
    "replace_lone_surrogates",
    "resolve_relay",
]

log: Final = logging.getLogger("pi_ask_sdk.relay")

PROTOCOL: Final = 1
"""The relay wire protocol this transport speaks (``hello.protocol`` must equal it)."""

DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""Longest relay -> client line accepted; longer ones are logged and discarded."""

MAX_SOCKET_PATH: Final = 107
"""Longest Unix socket path in bytes (``sun_path`` is 108 bytes with its terminating NUL)."""

_SOCKET_RE: Final = re.compile(r"^pi-(\d+)\.sock$")
_FORWARD_RE: Final = re.compile(r"^pi-(?!\d+\.sock$).+\.sock$")
"""A forwarded relay socket (``ssh -L``): ``pi-<label>.sock`` where the label is not a pid."""
_EMIT_PREFIX: Final = b'{"type":"emit","channel":"pi-agent-ask:submit","data":'
_HIGH_WATER: Final = 4 * 1024 * 1024


# --- errors ------------------------------------------------------------------------------------


class RelayError(TransportUnavailable):
    """Base of the relay transport's errors (code ``transport_unavailable``)."""


class NoRelayFound(RelayError):
    """No running Pi has a relay socket in the directory (or the requested one is missing)."""

    def __init__(self, directory: Path, detail: str = "") -> None:
        self.directory = directory
        super().__init__(
            f"No running Pi with the pi-ask relay found in {directory}"
            f"{': ' + detail if detail else ''}. Start Pi with "
            '`pi -e "$(pi-ask relay-path)"` (and the pi-agent-ask extension), or set '
            "PI_ASK_RELAY_DIR to the directory it uses."
        )


class AmbiguousRelay(RelayError):
    """Several Pis run a relay; the caller must pick one by pid or path."""

    def __init__(self, relays: tuple[RelayInfo, ...]) -> None:
        self.relays = relays
        listing = ", ".join(
            f"forwarded ({r.path})" if r.forwarded else f"pid {r.pid} ({r.path})" for r in relays
        )
        super().__init__(
            f"{len(relays)} Pi processes run the pi-ask relay: {listing}. "
            "Choose one with RelayTransport(pid=...) or RelayTransport(path=...)."
        )


class UnsafeRelayPath(RelayError):
    """The relay directory or socket breaks the same-user rules; nothing was connected."""

    def __init__(self, path: Path, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"Refusing relay path {path}: {problem}.")


class RelayHandshakeError(RelayError):
    """The socket did not greet with a valid protocol-1 ``hello`` (and its replays) in time.

    ``retryable`` is true when the connection was merely cut short or slow (a reconnect may
    succeed while Pi lives), false when the relay is not one this client can speak to.
    """

    def __init__(self, path: Path, problem: str, *, retryable: bool = True) -> None:
        self.path = path
        self.problem = problem
        self.retryable = retryable
        super().__init__(f"Relay at {path}: {problem}.")


class RelayPathTooLong(RelayError):
    """The socket path is longer than a Unix socket path may be (107 bytes on Linux)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        size = len(os.fsencode(path))
        super().__init__(
            f"The relay socket path {path} is {size} bytes, longer than the {MAX_SOCKET_PATH} "
            "bytes a Unix socket path may have. Set PI_ASK_RELAY_DIR to a shorter directory "
            "(the same for Pi and for this client)."
        )


class RelayConnectError(RelayError):
    """Connecting to the relay socket failed (``errno`` and the OS's reason kept)."""

    def __init__(self, path: Path, error: OSError) -> None:
        self.path = path
        self.errno = error.errno
        self.strerror = error.strerror or str(error)
        super().__init__(f"Cannot connect to the relay socket {path}: {self.strerror}.")


# --- wire envelopes ----------------------------------------------------------------------------


class RelayHello(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="hello"):
    """The relay's greeting: Pi's pid and cwd, Pi's version, the socket path."""

    protocol: int
    pid: int
    cwd: str = ""
    pi_version: str = msgspec.field(default="unknown", name="piVersion")
    socket: str = ""
    replaying: int = 0
    """How many replayed forms follow the hello (``open()`` returns once they all arrived)."""
    session_id: str = msgspec.field(default="", name="sessionId")
    """Names the Pi session behind the socket (new after ``/new``, ``/resume``, ...); it means
    the same through a forwarded socket, where Pi's pid means nothing on this machine."""


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="event"):
    channel: str
    data: msgspec.Raw
    replay: bool = False
    own: bool | None = None
    """On a ``submit-result``: whether this connection emitted the submit it answers (absent
    when the relay cannot tell, e.g. a submit emitted inside Pi)."""


class _SessionEnd(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="session_end"):
    reason: str = "unknown"


class _Error(msgspec.Struct, frozen=True, kw_only=True, tag_field="type", tag="error"):
    code: str = "unknown"
    message: str = ""


_Envelope = RelayHello | _Event | _SessionEnd | _Error

_ENVELOPE: Final = msgspec.json.Decoder(_Envelope)
_STARTED: Final = msgspec.json.Decoder(StartedEvent)
_COMPLETED: Final = msgspec.json.Decoder(CompletedEvent)
_ACK: Final = msgspec.json.Decoder(SubmitAck)
_REJECTION: Final = msgspec.json.Decoder(SubmitRejection)
_ENCODER: Final = msgspec.json.Encoder()


# A JSON string escape of a UTF-16 surrogate pair, a lone surrogate, or an escaped backslash (so
# that the text after it is never mistaken for an escape).
_SURROGATE_ESCAPE: Final = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _replace_surrogate(match: re.Match[bytes]) -> bytes:
    escape = match.group()
    return escape if len(escape) != 6 or escape == b"\\\\" else b"\\ufffd"


def replace_lone_surrogates(line: bytes) -> bytes:
    """``line`` with each ``\\uD800``-``\\uDFFF`` escape that is not half of a pair replaced by
    ``\\ufffd`` (U+FFFD). JavaScript's ``JSON.stringify`` writes a lone surrogate that way; it
    is not valid Unicode, so Python (and msgspec) cannot hold it."""
    return _SURROGATE_ESCAPE.sub(_replace_surrogate, line)


def _decode_data(channel: str, raw: msgspec.Raw) -> object:
    """The channel's wire Struct, else plain JSON (the client judges and logs it)."""
    try:
        if channel == SUBMIT_RESULT:
            try:
                return _ACK.decode(raw)
            except msgspec.ValidationError:
                return _REJECTION.decode(raw)
        if channel == STARTED:
            return _STARTED.decode(raw)
        if channel == COMPLETED:
            return _COMPLETED.decode(raw)
    except msgspec.ValidationError:
        pass
    return msgspec.json.decode(raw)


# --- discovery ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RelayInfo:
    """A relay socket of a live Pi process.

    ``forwarded`` marks a socket that forwards to a relay elsewhere (``ssh -L``), named
    ``pi-<label>.sock``: its ``pid`` is 0 (unknown here) until a hello tells it.
    """

    pid: int
    path: Path
    forwarded: bool = False


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
    with no group/other permission bits (``FileNotFoundError`` if it does not exist)."""
    _check_private(
        directory,
        stat.S_ISDIR,
        "it is not a directory (symlinks are refused)",
        "it must grant no group/other permission (chmod 700)",
    )


def check_relay_socket(path: Path) -> None:
    """Raise ``UnsafeRelayPath`` unless ``path`` is a socket owned by this uid with mode 0600
    (``FileNotFoundError`` if it does not exist). Checks its directory first."""
    check_relay_dir(path.parent)
    _check_private(path, stat.S_ISSOCK, "it is not a Unix socket", "a relay socket must be 0600")


def _check_private(
    path: Path, is_kind: Callable[[int], bool], wrong_kind: str, wrong_mode: str
) -> None:
    """``path`` (not followed if a link) is of the expected kind, ours, and private."""
    st = os.lstat(path)
    if not is_kind(st.st_mode):
        raise UnsafeRelayPath(path, wrong_kind)
    uid = os.getuid()
    if st.st_uid != uid:
        raise UnsafeRelayPath(path, f"it is owned by uid {st.st_uid}, not by this uid {uid}")
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o077:
        raise UnsafeRelayPath(path, f"its mode is {mode:o}; {wrong_mode}")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists (and is not a zombie waiting to be reaped)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[-1].split()
        return not fields or fields[0] not in (b"Z", b"X")
    except OSError:
        return True  # no /proc (not Linux): kill() said it exists


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
    found: list[RelayInfo] = []
    forwarded: list[RelayInfo] = []
    for name in names:
        match = _SOCKET_RE.match(name)
        if match is not None:
            pid = int(match.group(1))
            if pid_alive(pid):
                found.append(RelayInfo(pid, directory / name))
        elif _FORWARD_RE.match(name) and (directory / name in known or _accepts(directory / name)):
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
        match = _SOCKET_RE.match(sock.name)
        if match is not None:
            return RelayInfo(int(match.group(1)), sock)
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


def discover(
    *, pid: int | None = None, path: str | os.PathLike[str] | None = None
) -> RelayTransport:
    """A ``RelayTransport`` for the one running Pi (or the one chosen); what
    ``BridgeClient.connect()`` uses. Raises the ``resolve_relay`` errors at once."""
    return RelayTransport(resolve_relay(pid=pid, path=path).path)


def relay_extension_path() -> Path:
    """Absolute path of the shipped relay extension, for ``pi -e <path>``."""
    found = resources.files("pi_ask_sdk") / "relay" / "pi-ask-relay.ts"
    if not isinstance(found, Path) or not found.is_file():
        raise RelayError(
            f"The relay extension is not a file on disk ({found}); install pi-ask-sdk unzipped."
        )
    return found.resolve()


# --- the transport -----------------------------------------------------------------------------


def _retrieve(future: asyncio.Future[RelayHello]) -> None:
    """Mark a failed handshake as seen (its error is raised by ``_connect`` or moot)."""
    if not future.cancelled():
        future.exception()


class _Protocol(asyncio.Protocol):
    """One socket connection: frames lines, decodes envelopes, hands them to the transport."""

    def __init__(self, owner: RelayTransport, path: Path, max_line: int) -> None:
        self.owner = owner
        self.path = path
        self.max_line = max_line
        self.buffer = bytearray()
        self.discarding = False
        self.transport: asyncio.Transport | None = None
        self.hello: asyncio.Future[RelayHello] = asyncio.get_running_loop().create_future()
        self.hello.add_done_callback(_retrieve)
        # Resolved once the hello and the replays it announces have arrived.
        self.ready: asyncio.Future[RelayHello] = asyncio.get_running_loop().create_future()
        self.ready.add_done_callback(_retrieve)
        self.session_end: str | None = None
        self.lost = False
        self.writable: asyncio.Event = asyncio.Event()
        self.writable.set()
        # what arrives after hello, before the transport adopts this connection (the replays)
        self.queued: list[_Event | _SessionEnd] | None = []

    def adopt(self) -> None:
        """Start handing messages to the owner, first those that came with the hello."""
        queued, self.queued = self.queued, None
        for envelope in queued or ():
            self._dispatch(envelope)

    # asyncio callbacks

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        buffer = self.buffer
        start = 0
        end = len(data)
        while start < end and not self.lost:
            nl = data.find(b"\n", start)
            stop = end if nl < 0 else nl
            if self.discarding:
                if nl >= 0:
                    self.discarding = False
            elif len(buffer) + (stop - start) > self.max_line:
                buffer.clear()
                log.warning(
                    "pi_ask_sdk.relay: discarded a line longer than %d bytes from %s",
                    self.max_line,
                    self.path,
                )
                self.discarding = nl < 0
            elif nl < 0:
                buffer += data[start:end]
            elif buffer:
                buffer += data[start:nl]
                line = bytes(buffer)
                buffer.clear()
                self._line(line)
            else:
                self._line(data[start:nl])
            if nl < 0:
                break
            start = nl + 1

    def eof_received(self) -> bool | None:
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        if self.lost:
            return
        self.lost = True
        self.writable.set()
        if not self.hello.done():
            problem = "the connection closed before hello" if exc is None else str(exc)
            self.hello.set_exception(RelayHandshakeError(self.path, problem))
        if not self.ready.done():
            problem = "the connection closed during the replay" if exc is None else str(exc)
            self.ready.set_exception(RelayHandshakeError(self.path, problem))
        if self.queued is None:
            self.owner._connection_lost(self)

    def pause_writing(self) -> None:
        self.writable.clear()

    def resume_writing(self) -> None:
        self.writable.set()

    # framing

    def _line(self, line: bytes) -> None:
        if self.session_end is not None:
            return  # the session is over: nothing after its session_end counts
        if not line.strip():
            return
        try:
            envelope = _decode_envelope(line)
        except (msgspec.ValidationError, msgspec.DecodeError, RecursionError) as exc:
            log.warning(
                "pi_ask_sdk.relay: skipped an undecodable line (%d bytes) from %s: %s",
                len(line),
                self.path,
                "nested too deeply" if isinstance(exc, RecursionError) else exc,
            )
            return
        if not self.hello.done():
            self._greeting(envelope)
        elif isinstance(envelope, _Error):
            log.warning(
                "pi_ask_sdk.relay: relay %s refused a message: %s: %s",
                self.path,
                envelope.code,
                envelope.message,
            )
        elif isinstance(envelope, RelayHello):
            log.warning("pi_ask_sdk.relay: ignored a second hello from %s", self.path)
        elif self.queued is not None:
            if isinstance(envelope, _SessionEnd):
                self.session_end = envelope.reason
            self.queued.append(envelope)
            self._check_ready()
        else:
            if isinstance(envelope, _SessionEnd):
                self.session_end = envelope.reason
            self._dispatch(envelope)

    def _dispatch(self, envelope: _Event | _SessionEnd) -> None:
        if isinstance(envelope, _Event):
            if (
                envelope.own is False
                and envelope.channel == SUBMIT_RESULT
                and not self.owner._foreign_results
            ):
                return  # the verdict on another connection's submit (it may share our ids)
            try:
                data = _decode_data(envelope.channel, envelope.data)
            except (msgspec.DecodeError, RecursionError) as exc:
                log.warning("pi_ask_sdk.relay: skipped an event with bad data: %s", exc)
                return
            self.owner._deliver(self, envelope.channel, data, envelope.replay)
        elif isinstance(envelope, _SessionEnd):
            self.owner._session_end(self, envelope.reason)

    def _greeting(self, envelope: _Envelope) -> None:
        if not isinstance(envelope, RelayHello):
            problem = (
                f"the first message is {type(envelope).__name__.strip('_').lower()}, not hello"
            )
        elif envelope.protocol != PROTOCOL:
            problem = f"it speaks protocol {envelope.protocol}, this client speaks {PROTOCOL}"
        else:
            self.hello.set_result(envelope)
            self._check_ready()
            return
        error = RelayHandshakeError(self.path, problem, retryable=False)
        self.hello.set_exception(error)
        self.ready.set_exception(error)
        self.close()

    def _check_ready(self) -> None:
        if self.ready.done() or not self.hello.done() or self.hello.exception() is not None:
            return
        hello = self.hello.result()
        queued = self.queued or []
        replays = sum(1 for e in queued if isinstance(e, _Event) and e.replay)
        ended = any(isinstance(e, _SessionEnd) for e in queued)
        if replays >= hello.replaying or ended:
            self.ready.set_result(hello)

    def close(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.close()

    def abort(self) -> None:
        """Close at once, dropping unsent data (nothing more is owed to an ended session)."""
        if self.transport is not None:
            self.transport.abort()


def _decode_envelope(line: bytes) -> _Envelope:
    try:
        return _ENVELOPE.decode(line)
    except msgspec.DecodeError:
        repaired = replace_lone_surrogates(line)
        if repaired == line:
            raise
        return _ENVELOPE.decode(repaired)


_State = Literal["new", "connected", "reconnecting", "closed"]


class RelayTransport:
    """A ``Transport`` over the relay socket of one Pi process.

    Give ``path`` (a socket), or ``pid`` (its socket in ``directory``, default ``relay_dir()``),
    or neither to use the only running Pi (resolved in ``open``). ``hello_timeout`` bounds the
    wait for the greeting and its replays, and for a relay that stops reading our submits.
    After a session end or a lost connection the transport retries with backoff from
    ``backoff_initial`` doubling to ``backoff_max`` for at most ``reconnect_timeout`` seconds
    (``reconnect=False``: report ``disconnected`` at once).

    A ``submit-result`` the relay marks as the answer to another connection's submit is not
    delivered (two bridges may use the same ``requestId``), unless ``foreign_results=True``
    (for a watcher that shows every verdict and resolves no waiter from them).
    """

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        pid: int | None = None,
        directory: Path | None = None,
        hello_timeout: float = 5.0,
        reconnect: bool = True,
        reconnect_timeout: float = 10.0,
        backoff_initial: float = 0.02,
        backoff_max: float = 1.0,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        foreign_results: bool = False,
    ) -> None:
        self._path_arg = path
        self._foreign_results = foreign_results
        self._pid_arg = pid
        self._directory = directory
        self._hello_timeout = hello_timeout
        self._reconnect_enabled = reconnect
        self._reconnect_timeout = reconnect_timeout
        self._backoff_initial = backoff_initial
        self._backoff_max = backoff_max
        self._max_line = max_line_bytes
        self._state: _State = "new"
        self._listener: TransportListener | None = None
        self._conn: _Protocol | None = None
        self._info: RelayInfo | None = None
        self._hello: RelayHello | None = None
        self._task: asyncio.Task[None] | None = None
        self._connections = 0

    # --- introspection ---

    @property
    def path(self) -> Path | None:
        """The socket path (known once resolved)."""
        return None if self._info is None else self._info.path

    @property
    def hello(self) -> RelayHello | None:
        """The greeting of the current (or last) connection."""
        return self._hello

    @property
    def is_connected(self) -> bool:
        return self._state == "connected"

    @property
    def connections(self) -> int:
        """How many connections were made (1 + successful reconnects)."""
        return self._connections

    # --- Transport ---

    async def open(self, listener: TransportListener) -> None:
        if self._state != "new":
            raise RuntimeError("RelayTransport can be opened once")
        self._info = resolve_relay(
            pid=self._pid_arg, path=self._path_arg, directory=self._directory
        )
        self._listener = listener
        try:
            await self._connect()
        except BaseException:
            self._state = "closed"
            self._listener = None
            raise

    async def send(self, payload: SubmitEvent) -> None:
        conn = self._conn
        if self._state != "connected" or conn is None or conn.transport is None:
            reason: Literal["session_ended", "disconnected"] = (
                "session_ended" if self._state == "reconnecting" else "disconnected"
            )
            raise ConnectionLost(reason, "not connected to the Pi relay")
        if not conn.writable.is_set():
            # The relay is not reading: wait for it, bounded, rather than queue without limit.
            try:
                await asyncio.wait_for(conn.writable.wait(), self._hello_timeout)
            except asyncio.TimeoutError:
                raise ConnectionLost(
                    "disconnected",
                    f"the relay has not read our data for {self._hello_timeout:g} s",
                ) from None
            if conn.lost:
                raise ConnectionLost("disconnected", "the relay connection closed")
        transport = conn.transport
        if transport.is_closing():
            raise ConnectionLost("disconnected", "the relay connection is closing")
        try:
            body = _ENCODER.encode(payload)
        except UnicodeEncodeError:
            # A lone surrogate (text decoded with "surrogateescape", say): sent as a \\udXXX
            # escape, as JavaScript writes one; the host judges it.
            builtins = msgspec.to_builtins(payload)
            body = json.dumps(builtins, ensure_ascii=True, separators=(",", ":")).encode()
        transport.write(_EMIT_PREFIX + body + b"}\n")

    async def close(self) -> None:
        if self._state == "closed":
            return
        self._state = "closed"
        self._listener = None
        task, self._task = self._task, None
        if task is not None and task is not asyncio.current_task():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    # --- connecting ---

    async def _connect(self) -> None:
        """One connection attempt: socket checks, connect, bounded wait for a valid hello."""
        info = self._info
        assert info is not None
        if len(os.fsencode(info.path)) > MAX_SOCKET_PATH:
            raise RelayPathTooLong(info.path)
        await self._check_socket(info.path)
        loop = asyncio.get_running_loop()
        made: list[_Protocol] = []

        async def handshake() -> RelayHello:
            try:
                _, conn = await loop.create_unix_connection(
                    lambda: _Protocol(self, info.path, self._max_line), str(info.path)
                )
            except (ConnectionRefusedError, FileNotFoundError):
                raise NoRelayFound(
                    info.path.parent,
                    f"{info.path.name} refuses connections (a stale socket: its Pi has exited "
                    "or its session is restarting)",
                ) from None
            except OSError as exc:
                raise RelayConnectError(info.path, exc) from None
            made.append(conn)
            return await conn.ready  # the hello, once the replays it announced arrived

        try:
            hello = await asyncio.wait_for(handshake(), self._hello_timeout)
        except asyncio.TimeoutError:
            for conn in made:
                conn.close()
            raise RelayHandshakeError(
                info.path, f"no hello (with its replays) within {self._hello_timeout:g} s"
            ) from None
        except BaseException:
            for conn in made:
                conn.close()
            raise
        conn = made[0]
        if info.pid and hello.pid != info.pid:
            conn.close()
            raise RelayHandshakeError(
                info.path, f"hello names pid {hello.pid}, not {info.pid}", retryable=False
            )
        if not info.pid:
            self._info = RelayInfo(hello.pid, info.path, forwarded=info.forwarded)
        if self._state == "closed":
            conn.close()
            return
        self._hello = hello
        self._conn = conn
        self._state = "connected"
        self._connections += 1
        log.debug("pi_ask_sdk.relay: connected to Pi %d at %s", hello.pid, info.path)
        conn.adopt()  # replays (and a session_end that came with them) reach the listener now
        if conn.lost:
            self._connection_lost(conn)

    async def _check_socket(self, path: Path) -> None:
        """``check_relay_socket``, allowing the relay a moment between listen and chmod 0600."""
        deadline = asyncio.get_running_loop().time() + 0.5
        while True:
            try:
                check_relay_socket(path)
                return
            except FileNotFoundError:
                raise NoRelayFound(path.parent, f"{path.name} does not exist") from None
            except UnsafeRelayPath as exc:
                if exc.path != path or asyncio.get_running_loop().time() > deadline:
                    raise
            await asyncio.sleep(0.01)  # bounded poll: no event tells that chmod ran

    # --- callbacks from the protocol ---

    def _deliver(self, conn: _Protocol, channel: str, data: object, replay: bool) -> None:
        listener = self._listener
        if listener is not None and conn is self._conn:
            listener.message(channel, data, replay=replay)

    def _session_end(self, conn: _Protocol, reason: str) -> None:
        if conn is not self._conn or self._state != "connected":
            return
        log.info("pi_ask_sdk.relay: Pi session ended (%s)", reason)
        self._state = "reconnecting"
        listener = self._listener
        if listener is not None:
            listener.ended("session_ended")
        # The session is over whether or not the relay closes the socket: reconnect at once.
        conn.abort()

    def _local_pid(self) -> int:
        """Pi's pid when it means something here: the hello came straight from the relay's own
        socket at our path. Through a forward (``ssh -L``) it is 0: liveness is then learned
        from the connection itself (reconnecting), never from this machine's process table."""
        info, hello = self._info, self._hello
        if info is None or hello is None or info.forwarded:
            return 0
        if hello.socket != str(info.path) or hello.pid != info.pid:
            return 0
        return hello.pid

    def _connection_lost(self, conn: _Protocol) -> None:
        if conn is not self._conn or self._state == "closed":
            return
        self._conn = None
        pid = self._local_pid()
        alive = pid_alive(pid) if pid else True
        if not alive or not self._reconnect_enabled:
            why = "Pi has exited" if not alive else "the connection closed"
            self._give_up(why if conn.session_end is None else f"{why} (session ended)")
            return
        if conn.session_end is None:
            # lost without a goodbye (the relay dropped us): the view may be stale, and the
            # forms the next connection replays restore it
            self._state = "reconnecting"
            listener = self._listener
            if listener is not None:
                listener.ended("session_ended")
        self._task = asyncio.get_running_loop().create_task(self._reconnect_loop())

    async def _reconnect_loop(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self._reconnect_timeout
        delay = self._backoff_initial
        info = self._info
        assert info is not None
        last = "no attempt"
        local_pid = self._local_pid()
        while self._state == "reconnecting":
            if local_pid and not pid_alive(local_pid):
                last = f"Pi (pid {local_pid}) has exited"
                break
            try:
                await self._connect()
                if self.is_connected:
                    self._task = None
                    return
            except (OSError, RelayError) as exc:
                last = str(exc)
                if isinstance(exc, (UnsafeRelayPath, RelayPathTooLong)) or (
                    isinstance(exc, RelayHandshakeError) and not exc.retryable
                ):
                    break
                # A handshake cut short (e.g. during a big replay) is retried while Pi lives.
            if loop.time() + delay > deadline:
                last = f"gave up after {self._reconnect_timeout:g} s ({last})"
                break
            await asyncio.sleep(delay)  # backoff between attempts
            delay = min(delay * 2, self._backoff_max)
        self._task = None
        if self._state == "reconnecting":
            self._give_up(last)

    def _give_up(self, why: str) -> None:
        log.info("pi_ask_sdk.relay: disconnected from the Pi relay: %s", why)
        listener = self._listener
        self._state = "closed"
        self._listener = None
        self._conn = None
        if listener is not None:
            listener.ended("disconnected")
