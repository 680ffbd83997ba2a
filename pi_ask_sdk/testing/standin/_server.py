"""``StandinServer``: listens for the stand-in extension, one session per Pi session."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import tempfile
import threading
import time
from pathlib import Path

from pi_ask_core import CompletedEvent
from pi_ask_sdk.errors import InvalidUse
from pi_ask_sdk.testing.errors import StandinError, StandinInUse, StandinPathTooLong
from pi_ask_sdk.transports.relay import MAX_SOCKET_PATH

from ._link import ENV_SOCKET, LINE_LIMIT, check_private_dir, decode_line, same_user
from ._session import StandinSession

__all__ = ["StandinServer"]

_log = logging.getLogger("pi_ask_sdk.testing.standin")


class StandinServer:
    """Listens for the stand-in extension; one ``StandinSession`` (and ``FlowHost``) per session.

    ``socket_path`` defaults to ``standin.sock`` in a fresh private directory. Use as an
    async context manager, or ``await start()`` / ``await close()``. ``environment()`` is what
    Pi's environment needs. Every ``completed`` event of every session is kept in ``completed``
    (in order; ``completed_by`` holds the session of each).

    ``start()`` raises ``StandinPathTooLong`` for a path a Unix socket cannot have and
    ``StandinInUse`` while another server answers at ``socket_path``; a socket there that
    nothing answers at (a stale one) is replaced.
    """

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        present_single_as_multi: bool = False,
    ) -> None:
        self._requested = Path(socket_path) if socket_path is not None else None
        self._own_dir: Path | None = None
        self.present_single_as_multi = present_single_as_multi
        self.sessions: list[StandinSession] = []
        self.completed: list[CompletedEvent] = []
        self.completed_by: list[StandinSession] = []
        self._server: asyncio.AbstractServer | None = None
        self._path: Path | None = None
        self._cond = threading.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def path(self) -> Path:
        """The socket's path.

        Raises:
            InvalidUse: The server is not started.
        """
        if self._path is None:
            raise InvalidUse("read the path", "the stand-in server is not started")
        return self._path

    def environment(self) -> dict[str, str]:
        """The variable that turns the extension on: ``{"PI_ASK_STANDIN_SOCKET": path}``."""
        return {ENV_SOCKET: str(self.path)}

    async def start(self) -> StandinServer:
        """Listen on the socket (``async with`` does it).

        Raises:
            StandinPathTooLong: The path is too long for a Unix socket.
            StandinInUse: Another live server listens there.
            StandinError: The socket cannot be made there (the OS's reason in the message).
        """
        if self._requested is None:
            base = os.environ.get("XDG_RUNTIME_DIR") or None
            self._own_dir = Path(tempfile.mkdtemp(prefix="pi-ask-standin-", dir=base))
            path = self._own_dir / "standin.sock"
        else:
            path = self._requested
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        if len(os.fsencode(path)) > MAX_SOCKET_PATH:
            self._remove_own_dir()
            raise StandinPathTooLong(path)
        check_private_dir(path.parent)
        if path.is_socket():
            await _replace_stale(path)
        try:
            self._server = await asyncio.start_unix_server(
                self._serve, path=str(path), limit=LINE_LIMIT
            )
            path.chmod(0o600)
        except OSError as error:
            if self._server is not None:
                self._server.close()
                self._server = None
            self._remove_own_dir()
            raise StandinError(
                path, f"The stand-in server cannot listen at {path}: {error.strerror or error}."
            ) from error
        self._path = path
        return self

    async def close(self) -> None:
        """Stop listening, end every session (their flows disposed) and remove the socket."""
        server, self._server = self._server, None
        if server is not None:
            server.close()
        for task in list(self._tasks):
            task.cancel()
        for task in list(self._tasks):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
        if server is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), 5)
        if self._path is not None:
            with contextlib.suppress(FileNotFoundError):
                self._path.unlink()
        self._remove_own_dir()

    def _remove_own_dir(self) -> None:
        if self._own_dir is not None:
            with contextlib.suppress(OSError):
                self._own_dir.rmdir()

    async def __aenter__(self) -> StandinServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        session = StandinSession(self, writer)
        try:
            if not same_user(writer):
                _log.warning("stand-in: refused a peer of another uid")
                return
            while True:
                try:
                    line = await reader.readuntil(b"\n")
                except asyncio.IncompleteReadError:
                    return
                try:
                    message = decode_line(line)
                except (ValueError, RecursionError):
                    _log.warning("stand-in link: undecodable line skipped")
                    continue
                try:
                    session.handle(message)
                except Exception:  # a bug here must not take the other forms down
                    _log.exception("stand-in: handling %.80r failed", line)
                await writer.drain()
        except (ConnectionError, asyncio.LimitOverrunError, ValueError):
            return
        except asyncio.CancelledError:
            # close() cancels the link: end quietly. Left to propagate, Python 3.11's
            # start_unix_server logs a cancelled handler as "Exception in callback".
            return
        finally:
            session.closed()
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    # --- what its sessions tell it (the ``SessionOwner`` seam of ``StandinSession``) ---

    def session_started(self, session: StandinSession) -> None:
        """A session said hello: it joins ``sessions``."""
        with self._cond:
            self.sessions.append(session)
            self._cond.notify_all()

    def session_completed(self, session: StandinSession, event: CompletedEvent) -> None:
        """A flow of ``session`` completed: kept in ``completed`` (and ``completed_by``)."""
        with self._cond:
            self.completed.append(event)
            self.completed_by.append(session)
            self._cond.notify_all()

    def wait_completed(
        self, flow_id: str, *, timeout: float, pid: int | None = None, since: int = 0
    ) -> CompletedEvent:
        """The ``completed`` event of ``flow_id`` (thread-safe; ``TimeoutError`` at the deadline).

        Flow ids repeat (``tool:<toolCallId>`` in another session, another Pi, a later call with
        the same id), so narrow it down: ``pid`` takes only the sessions of that Pi process,
        ``since`` only events from that index of ``completed`` on (its length when the flow
        was opened). Call it from another thread than the server's loop (``StandinThread``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            index = since
            while True:
                while index < len(self.completed):
                    event, session = self.completed[index], self.completed_by[index]
                    index += 1
                    if event.flow_id == flow_id and (pid is None or session.pid == pid):
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    where = "" if pid is None else f" in Pi {pid}"
                    raise TimeoutError(f"flow {flow_id} did not complete{where} in {timeout:g} s")
                self._cond.wait(left)


async def _replace_stale(path: Path) -> None:
    """Remove the socket at ``path`` if nothing answers there; ``StandinInUse`` if a server
    does (the relay's rule: never take a live server's socket away)."""
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.setblocking(False)
    try:
        await asyncio.wait_for(asyncio.get_running_loop().sock_connect(probe, str(path)), 1.0)
    except (ConnectionRefusedError, FileNotFoundError):
        with contextlib.suppress(FileNotFoundError):
            path.unlink()  # stale: its server is gone
        return
    except (OSError, asyncio.TimeoutError):
        pass  # a full backlog or a stopped server: still someone's, not ours to take
    finally:
        probe.close()
    raise StandinInUse(path)
