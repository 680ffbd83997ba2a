"""``RelayTransport``: connect, hand events to the listener, send submits, reconnect."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from pathlib import Path
from typing import Final, Literal

from pi_ask_core import SubmitEvent
from pi_ask_sdk._tasks import within
from pi_ask_sdk.errors import ConnectionLost, InvalidArgument, InvalidUse
from pi_ask_sdk.transports.base import TransportListener

from ._connection import RelayProtocol
from ._discovery import check_relay_socket, pid_alive, resolve_relay
from ._relay_info import RelayInfo
from ._wire import (
    DEFAULT_MAX_LINE_BYTES,
    RelayHello,
    RelayRole,
    encode_client_hello,
    encode_emit,
)
from .errors import (
    MAX_SOCKET_PATH,
    NoRelayFound,
    RelayConnectError,
    RelayError,
    RelayHandshakeError,
    RelayPathTooLong,
    UnsafeRelayPath,
)

log: Final = logging.getLogger("pi_ask_sdk.relay")

_State = Literal["new", "connected", "reconnecting", "closed"]

LISTEN_WAIT: Final = 2.0
"""Seconds ``open()`` waits for a live Pi's relay socket that is missing or refuses connections:
a Pi that has just started may not listen yet (or its session is restarting)."""
_FIRST_POLL: Final = 0.005
"""Seconds before the first retry of a socket that does not accept yet (doubled each time)."""


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

    ``role`` is what the connection tells the relay in its hello: ``"answerer"`` (the default)
    answers forms, and while one is connected a headless Pi opens its forms for the relay;
    ``"observer"`` only watches and never makes a form wait (``pi-ask watch``, ``pi-ask
    doctor``). A relay older than the client hello gets no hello (``hello.client_hello == 0``).
    ``set_role`` changes it on a live connection (the relay takes a second client hello).

    ``raw_events=True`` hands the listener each event's ``data`` as the relay sent it (a
    ``msgspec.Raw`` of its JSON, lone surrogates already replaced), undecoded: for a forwarder
    that passes events on unchanged (``pi_ask_sdk.fleet``).

    Args:
        path: The relay socket to connect to.
        pid: The Pi whose socket to connect to (in ``directory``).
        directory: The relay directory (default: ``relay_dir()``).
        hello_timeout: Seconds to wait for the hello and its replays, and for a relay that
            stops reading.
        reconnect: Reconnect after a session end or a lost connection.
        reconnect_timeout: Seconds to keep retrying.
        backoff_initial: The first retry's delay, doubled on each retry.
        backoff_max: The longest delay between retries.
        max_line_bytes: The longest line accepted from the relay.
        foreign_results: Deliver the verdicts on other connections' submits too.
        role: ``"answerer"`` or ``"observer"``.
        raw_events: Deliver each event's ``data`` undecoded (``msgspec.Raw``).

    Raises:
        InvalidArgument: ``role`` is neither.
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
        role: RelayRole = "answerer",
        raw_events: bool = False,
    ) -> None:
        if role not in ("answerer", "observer"):
            raise InvalidArgument("RelayTransport", "role", '"answerer" or "observer"', role)
        self._role: RelayRole = role
        self._path_arg = path
        self._foreign_results = foreign_results
        self._raw_events = raw_events
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
        self._conn: RelayProtocol | None = None
        self._info: RelayInfo | None = None
        self._hello: RelayHello | None = None
        self._task: asyncio.Task[None] | None = None
        self._connections = 0
        self._pings_answered = 0

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
    def role(self) -> RelayRole:
        """What this connection tells the relay it does (see the class docstring)."""
        return self._role

    def set_role(self, role: RelayRole) -> None:
        """Tell the relay this connection's new role (now, if connected and the relay takes
        client hellos; every reconnect says it too). An answerer makes a headless Pi open its
        forms for the relay; dropping to observer starts the relay's grace period when no
        other answerer is connected."""
        if role not in ("answerer", "observer"):
            raise InvalidArgument(
                "RelayTransport.set_role", "role", '"answerer" or "observer"', role
            )
        if role == self._role:
            return
        self._role = role
        conn, hello = self._conn, self._hello
        if conn is None or hello is None or hello.client_hello < 1:
            return
        conn.role = role
        transport = conn.transport
        if self._state == "connected" and transport is not None and not transport.is_closing():
            transport.write(encode_client_hello(role))

    @property
    def is_connected(self) -> bool:
        """Whether a connection to the relay is up now (not while reconnecting)."""
        return self._state == "connected"

    @property
    def connections(self) -> int:
        """How many connections were made (1 + successful reconnects)."""
        return self._connections

    @property
    def pings_answered(self) -> int:
        """How many liveness pings of the relay this transport answered, over all its
        connections (the relay pings an answerer every ``hello.ping_ms``)."""
        return self._pings_answered

    # --- Transport ---

    async def open(self, listener: TransportListener) -> None:
        """Find the relay, connect, and wait for its hello and replays.

        The socket of a live Pi that is missing or refuses connections (a Pi that has just
        started, or whose session restarts) is tried again for ``LISTEN_WAIT`` (2) seconds; a
        dead Pi's is ``NoRelayFound`` at once.

        Raises:
            NoRelayFound: No running Pi with the relay (or not the one asked for, or its relay
                did not listen within ``LISTEN_WAIT`` seconds).
            AmbiguousRelay: Several Pis and none chosen.
            UnsafeRelayPath: The directory or socket breaks the same-user rules.
            RelayPathTooLong: The socket path is too long for a Unix socket.
            RelayHandshakeError: No valid hello in time.
            RelayConnectError: Connecting failed.
            RelayPathNotSocket: The path given is not a socket.
            InvalidUse: The transport was opened before.
        """
        if self._state != "new":
            raise InvalidUse("open", "RelayTransport can be opened once")
        self._info = resolve_relay(
            pid=self._pid_arg, path=self._path_arg, directory=self._directory
        )
        self._listener = listener
        try:
            await self._connect_when_listening()
        except BaseException:
            self._state = "closed"
            self._listener = None
            raise

    async def send(self, payload: SubmitEvent) -> None:
        """Write the submit to the relay (waiting, bounded, while the relay is not reading).

        A submit that cannot be written raises ``ConnectionLost`` with the reason the listener
        hears for the same loss: ``session_ended`` while the transport reconnects (its forms
        are replayed on the new connection), ``disconnected`` only once it has given up.

        Raises:
            ConnectionLost: Not connected, the connection was lost, or the relay did not read
                for ``hello_timeout`` seconds (the connection is then dropped, as lost).
        """
        conn = self._conn
        if conn is not None and self._state == "connected" and _closing(conn):
            # Lost, and asyncio has not told the protocol yet: hear it now, so that the reason
            # raised below is the one the listener hears.
            self._connection_lost(conn)
            conn = self._conn
        if self._state != "connected" or conn is None or conn.transport is None:
            raise ConnectionLost(self._loss_reason(), "not connected to the Pi relay")
        if not conn.writable.is_set():
            # The relay is not reading: wait for it, bounded, rather than queue without limit.
            try:
                await within(conn.writable.wait(), self._hello_timeout)
            except asyncio.TimeoutError:
                if conn is self._conn:  # dropped, as the relay drops a client that stalls
                    conn.abort()
                    self._connection_lost(conn)
                raise ConnectionLost(
                    self._loss_reason(),
                    f"the relay has not read our data for {self._hello_timeout:g} s",
                ) from None
            if conn is self._conn and _closing(conn):
                self._connection_lost(conn)
            if conn is not self._conn:
                raise ConnectionLost(self._loss_reason(), "the relay connection closed")
        transport = conn.transport
        assert transport is not None
        transport.write(encode_emit(payload))

    def _loss_reason(self) -> Literal["session_ended", "disconnected"]:
        """What a submit that cannot be sent now is: the session as the listener knows it
        ended (``session_ended``: reconnecting) or the connection is gone for good."""
        return "session_ended" if self._state == "reconnecting" else "disconnected"

    async def close(self) -> None:
        """Close the connection and stop reconnecting. Idempotent."""
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

    async def _connect_when_listening(self) -> None:
        """``_connect``, retried for ``LISTEN_WAIT`` seconds while the socket is missing or
        refuses connections (``NoRelayFound``), or cuts the connection before its hello (a
        retryable ``RelayHandshakeError``: a relay being replaced, as when a second copy of it
        listens), and its Pi lives. A dead Pi's socket fails at once, and so does a forwarded
        one (its pid means nothing here)."""
        info = self._info
        assert info is not None
        loop = asyncio.get_running_loop()
        deadline = loop.time() + LISTEN_WAIT
        delay = _FIRST_POLL
        while True:
            try:
                await self._connect()
                return
            except (NoRelayFound, RelayHandshakeError) as exc:
                if (
                    (isinstance(exc, RelayHandshakeError) and not exc.retryable)
                    or info.forwarded
                    or self._state == "closed"
                    or not pid_alive(info.pid)
                    or loop.time() + delay > deadline
                ):
                    raise
                if delay == _FIRST_POLL:
                    log.debug(
                        "pi_ask_sdk.relay: Pi %d runs but %s does not accept yet: trying again",
                        info.pid,
                        info.path,
                    )
            await asyncio.sleep(delay)  # bounded poll: no event tells that a socket listens
            delay = min(delay * 2, 0.1)

    async def _connect(self) -> None:
        """One connection attempt: socket checks, connect, bounded wait for a valid hello."""
        info = self._info
        assert info is not None
        if len(os.fsencode(info.path)) > MAX_SOCKET_PATH:
            raise RelayPathTooLong(info.path)
        self._check_socket(info.path, 0 if info.forwarded else info.pid)
        loop = asyncio.get_running_loop()
        made: list[RelayProtocol] = []

        async def handshake() -> RelayHello:
            try:
                _, conn = await loop.create_unix_connection(
                    lambda: RelayProtocol(self, info.path, self._max_line, self._role),
                    str(info.path),
                )
            except (ConnectionRefusedError, FileNotFoundError):
                if info.forwarded:
                    why = "forwarded: is its ssh -L still running?"
                elif pid_alive(info.pid):
                    why = f"Pi {info.pid} runs, but its relay does not listen"
                else:
                    why = "a stale socket: its Pi has exited"
                raise NoRelayFound(
                    info.path.parent, f"{info.path.name} refuses connections ({why})"
                ) from None
            except OSError as exc:
                raise RelayConnectError(info.path, exc) from None
            made.append(conn)
            return await conn.ready  # the hello, once the replays it announced arrived

        try:
            hello = await within(handshake(), self._hello_timeout)
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
        if conn.role != self._role:
            # set_role() during the handshake: the hello this connection sent says the old role.
            conn.role = self._role
            transport = conn.transport
            if hello.client_hello >= 1 and transport is not None and not transport.is_closing():
                transport.write(encode_client_hello(self._role))
        self._connections += 1
        log.debug("pi_ask_sdk.relay: connected to Pi %d at %s", hello.pid, info.path)
        conn.adopt()  # replays (and a session_end that came with them) reach the listener now
        if conn.lost:
            self._connection_lost(conn)

    def _check_socket(self, path: Path, pid: int) -> None:
        """``check_relay_socket``; a missing socket or directory is ``NoRelayFound``."""
        try:
            check_relay_socket(path)
        except FileNotFoundError:
            why = (
                f" (Pi {pid} runs, but its relay does not listen here)"
                if pid and pid_alive(pid)
                else ""
            )
            raise NoRelayFound(path.parent, f"{path.name} does not exist{why}") from None

    # --- callbacks from the protocol ---

    def _deliver(self, conn: RelayProtocol, channel: str, data: object, replay: bool) -> None:
        listener = self._listener
        if listener is not None and conn is self._conn:
            listener.message(channel, data, replay=replay)

    def _session_end(self, conn: RelayProtocol, reason: str) -> None:
        if conn is not self._conn or self._state != "connected":
            return
        log.info("pi_ask_sdk.relay: Pi session ended (%s)", reason)
        self._state = "reconnecting"
        listener = self._listener
        if listener is not None:
            listener.ended("session_ended")
        # The session is over whether or not the relay closes the socket: reconnect at once.
        conn.abort()

    def _ping_answered(self, conn: RelayProtocol) -> None:
        self._pings_answered += 1

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

    def _connection_lost(self, conn: RelayProtocol) -> None:
        if conn is not self._conn or self._state == "closed":
            return
        self._conn = None
        pid = self._local_pid()
        alive = pid_alive(pid) if pid else True
        if not alive or not self._reconnect_enabled:
            why = "Pi has exited" if not alive else "the connection closed"
            if conn.goodbye is not None:
                why = f"the relay dropped the connection ({conn.goodbye})"
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


def _closing(conn: RelayProtocol) -> bool:
    """Whether ``conn`` is lost or closing (asyncio may not have told the protocol yet)."""
    transport = conn.transport
    return conn.lost or transport is None or transport.is_closing()


def discover(
    *,
    pid: int | None = None,
    path: str | os.PathLike[str] | None = None,
    role: RelayRole = "answerer",
) -> RelayTransport:
    """A ``RelayTransport`` for the one running Pi (or the one chosen); what
    ``BridgeClient.connect()`` uses. Raises the ``resolve_relay`` errors at once."""
    return RelayTransport(resolve_relay(pid=pid, path=path).path, role=role)
