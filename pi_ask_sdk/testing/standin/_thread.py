"""``StandinThread``: a ``StandinServer`` on an event loop of its own thread."""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Iterator
from pathlib import Path

from ._server import StandinServer

__all__ = ["StandinThread", "running_standin"]


class StandinThread:
    """A ``StandinServer`` on an event loop of its own thread, for synchronous code and tests
    whose own loop may block. A context manager; ``server`` is the running server."""

    def __init__(
        self,
        socket_path: str | os.PathLike[str] | None = None,
        *,
        present_single_as_multi: bool = False,
    ) -> None:
        self.server = StandinServer(socket_path, present_single_as_multi=present_single_as_multi)
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(
            target=self._loop.run_forever, name="pi-ask-standin", daemon=True
        )

    def start(self) -> StandinThread:
        """Start the loop and the server; the server's ``StandinError`` is raised here (and
        the loop's thread is gone again)."""
        self._thread.start()
        try:
            asyncio.run_coroutine_threadsafe(self.server.start(), self._loop).result(30)
        except BaseException:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)
            self._loop.close()
            raise
        return self

    def stop(self) -> None:
        """Close the server and stop the loop's thread (bounded waits). Idempotent."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self.server.close(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()

    def __enter__(self) -> StandinThread:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def path(self) -> Path:
        """The server's socket path."""
        return self.server.path

    def environment(self) -> dict[str, str]:
        """What Pi's environment needs: ``{"PI_ASK_STANDIN_SOCKET": path}``."""
        return self.server.environment()


@contextlib.contextmanager
def running_standin(*, present_single_as_multi: bool = False) -> Iterator[StandinThread]:
    """``with running_standin() as standin: ...``: a ``StandinThread``, always stopped."""
    with StandinThread(present_single_as_multi=present_single_as_multi) as standin:
        yield standin
