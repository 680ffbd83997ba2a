"""``StandinServer``: listens for the stand-in extension, one session per Pi session."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import tempfile
import threading
import time
from pathlib import Path

from pi_ask_core import CompletedEvent

from ._link import ENV_SOCKET, LINE_LIMIT, check_private_dir, decode_line, same_user
from ._session import StandinSession

__all__ = ["StandinServer"]

_log = logging.getLogger("pi_ask_sdk.standin")


class StandinServer:
    """Listens for the stand-in extension; one ``StandinSession`` (and ``FlowHost``) per session.

    ``socket_path`` defaults to ``pi-ask-standin.sock`` in a fresh private directory. Use as an
    async context manager, or ``await start()`` / ``await close()``. ``environment()`` is what
    Pi's environment needs. Every ``completed`` event of every session is kept in ``completed``.
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
        self._server: asyncio.AbstractServer | None = None
        self._path: Path | None = None
        self._cond = threading.Condition()
        self._tasks: set[asyncio.Task[None]] = set()

    @property
    def path(self) -> Path:
        if self._path is None:
            raise RuntimeError("the stand-in server is not started")
        return self._path

    def environment(self) -> dict[str, str]:
        """The variable that turns the extension on: ``{"PI_ASK_STANDIN_SOCKET": path}``."""
        return {ENV_SOCKET: str(self.path)}

    async def start(self) -> StandinServer:
        if self._requested is None:
            base = os.environ.get("XDG_RUNTIME_DIR") or None
            self._own_dir = Path(tempfile.mkdtemp(prefix="pi-ask-standin-", dir=base))
            path = self._own_dir / "standin.sock"
        else:
            path = self._requested
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        check_private_dir(path.parent)
        with contextlib.suppress(FileNotFoundError):
            if path.is_socket():
                path.unlink()
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(path), limit=LINE_LIMIT
        )
        path.chmod(0o600)
        self._path = path
        return self

    async def close(self) -> None:
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
        finally:
            session.closed()
            writer.close()
            if task is not None:
                self._tasks.discard(task)

    def _session_started(self, session: StandinSession) -> None:
        with self._cond:
            self.sessions.append(session)
            self._cond.notify_all()

    def _record(self, event: CompletedEvent) -> None:
        with self._cond:
            self.completed.append(event)
            self._cond.notify_all()

    def wait_completed(self, flow_id: str, *, timeout: float) -> CompletedEvent:
        """The ``completed`` event of ``flow_id`` (thread-safe; ``TimeoutError`` at the deadline).

        Call it from another thread than the server's loop (``StandinThread``)."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for event in self.completed:
                    if event.flow_id == flow_id:
                        return event
                left = deadline - time.monotonic()
                if left <= 0:
                    raise TimeoutError(f"flow {flow_id} did not complete in {timeout:g} s")
                self._cond.wait(left)
