"""``Fleet``: a bridge's NATS connection to every Pi of every host; discovery and ``serve``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Final

import msgspec
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from typing_extensions import Self

from pi_ask_sdk._tasks import cancel_and_wait, within
from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.errors import FleetError, FleetUnavailable, InvalidArgument, InvalidUse
from pi_ask_sdk.transports.relay import RelayRole

from ._follow import Follower
from ._setup import (
    ENCODER,
    FORWARDER_BEAT_DECODER,
    HEARTBEAT_DECODER,
    STATE_DECODER,
    FleetSettings,
    Heartbeat,
    NatsOptions,
    PiState,
    close_nats,
    connect_nats,
    decode_body,
    ensure_streams,
)
from ._transport import NatsTransport
from .subjects import FleetNames, check_host_id

log: Final = logging.getLogger("pi_ask_sdk.fleet")

__all__ = ["Fleet", "FleetHandler", "FleetPi", "pi_transport", "serve_fleet"]


@dataclass(frozen=True, slots=True)
class FleetPi:
    """A Pi process of the fleet, as its host's forwarder reported it."""

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

    host: str
    pid: int
    cwd: str = ""
    pi_version: str = ""
    session_id: str = ""
    forwarder: str = ""

    @classmethod
    def _from_state(cls, state: PiState) -> FleetPi:
        return cls(
            state.host, state.pid, state.cwd, state.pi_version, state.session_id, state.forwarder
        )


FleetHandler = Callable[[BridgeClient, FleetPi], Awaitable[None]]
"""Serves one Pi of the fleet: typically ``async for flow in client.flows(): ...``."""


class Fleet:
    """A bridge's connection to the fleet: ``async with Fleet("nats://…") as fleet``.

    ``options`` is a URL or ``NatsOptions`` (credentials, TLS). ``role="answerer"`` (the
    default) heartbeats on ``<prefix>._bridge.<bridge_id>`` every ``heartbeat`` seconds, so the
    forwarders make headless Pis wait for this bridge's answers (``hosts``: only those hosts'
    forwarders count it; None: all); ``"observer"`` never makes a form wait. ``setup=False``
    skips creating the streams (a bridge whose NATS user may not). ``idle_heartbeat`` bounds how
    long a restarted server goes unnoticed by each consumer.

    ``transport(host, pid)`` makes a ``NatsTransport`` for one Pi; ``pis()`` lists the Pis up
    now; ``serve(handler)`` runs ``handler(client, pi)`` for every Pi, now and later.

    Forwarder liveness: a host whose forwarder has not heartbeaten for
    ``settings.forwarder_timeout`` seconds (10 s) is "forwarder gone": its Pis are left out of
    ``pis()``, its transports end (``disconnected``: pending submits ``SubmitLost``) and
    ``open`` refuses them (``FleetPiNotFound``); ``serve`` serves them again when it beats
    again (``forwarder_alive(host)``).
    Raises ``FleetUnavailable`` (from ``open``) when the server or its JetStream is unreachable.
    """

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

    def __init__(
        self,
        options: NatsOptions | str = "nats://127.0.0.1:4222",
        *,
        names: FleetNames | None = None,
        settings: FleetSettings | None = None,
        role: RelayRole = "answerer",
        hosts: list[str] | None = None,
        heartbeat: float = 1.0,
        idle_heartbeat: float = 1.0,
        setup: bool = True,
        bridge_id: str | None = None,
    ) -> None:
        if role not in ("answerer", "observer"):
            raise InvalidArgument("Fleet", "role", '"answerer" or "observer"', role)
        if not heartbeat > 0:
            raise InvalidArgument("Fleet", "heartbeat", "a number of seconds above 0", heartbeat)
        if not idle_heartbeat > 0:
            raise InvalidArgument(
                "Fleet", "idle_heartbeat", "a number of seconds above 0", idle_heartbeat
            )
        self._options = NatsOptions(url=options) if isinstance(options, str) else options
        self._names = names or FleetNames()
        self._settings = settings or FleetSettings()
        self._role: RelayRole = role
        self._hosts = None if hosts is None else [check_host_id(h) for h in hosts]
        self._heartbeat = heartbeat
        self.idle_heartbeat = idle_heartbeat
        self._setup = setup
        self._bridge_id = bridge_id or secrets.token_hex(8)
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._transports: set[NatsTransport] = set()
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._alive: dict[str, asyncio.TimerHandle] = {}  # host -> when it counts as gone
        self._liveness: Follower | None = None
        self._host_watchers: list[Callable[[str, bool], None]] = []

    # --- lifecycle ---

    async def open(self) -> None:
        """Connect, set up the streams (unless ``setup=False``), start heartbeating."""
        if self._nc is not None:
            raise InvalidUse("open", "a Fleet can be opened once")
        options = self._options
        if options.name is None:
            options = dataclasses.replace(options, name=f"pi-ask bridge {self._bridge_id}")
        nc = await connect_nats(options)
        self._nc = nc
        self._js = nc.jetstream()
        try:
            if self._setup:
                await ensure_streams(self._js, self._names, self._settings, self.url)
            await self._follow_forwarders()
            if self._role == "answerer":
                await nc.subscribe(self._names.probe, cb=self._on_probe)
                await self._beat()
                self._tasks.append(asyncio.get_running_loop().create_task(self._beat_loop()))
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Say goodbye (an answerer), end every transport (``disconnected``), disconnect."""
        if self._closed:
            return
        self._closed = True
        await cancel_and_wait(self._tasks, what="fleet's tasks")
        self._tasks.clear()
        for handle in self._alive.values():
            handle.cancel()
        if self._liveness is not None:
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._liveness.stop(), 2)
        for transport in list(self._transports):
            transport._fleet_closed()
        nc, self._nc = self._nc, None
        if nc is None:
            return
        if self._role == "answerer" and nc.is_connected:
            bye = Heartbeat(bridge=self._bridge_id, role=self._role, bye=True)
            with contextlib.suppress(nats.errors.Error, OSError):
                await nc.publish(self._names.bridge(self._bridge_id), ENCODER.encode(bye))
        await close_nats(nc)

    async def __aenter__(self) -> Self:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    # --- what transports use ---

    @property
    def nc(self) -> Client:
        """The NATS connection.

        Raises:
            FleetUnavailable: The fleet is not open.
        """
        if self._nc is None:
            raise FleetUnavailable(self.url, "the fleet is not open")
        return self._nc

    @property
    def js(self) -> JetStreamContext:
        """The JetStream context of the connection.

        Raises:
            FleetUnavailable: The fleet is not open.
        """
        if self._js is None or self._nc is None:
            raise FleetUnavailable(self.url, "the fleet is not open")
        return self._js

    @property
    def names(self) -> FleetNames:
        """The fleet's subject, stream and consumer names (its ``prefix``)."""
        return self._names

    @property
    def url(self) -> str:
        """The NATS server's URL, as it may be shown (no user info: ``NatsOptions.shown_url``)."""
        return self._options.shown_url

    @property
    def bridge_id(self) -> str:
        """This bridge's id in presence heartbeats."""
        return self._bridge_id

    @property
    def role(self) -> RelayRole:
        """``"answerer"`` (heartbeats make the forwarders open headless forms) or
        ``"observer"``."""
        return self._role

    def _attach(self, transport: NatsTransport) -> None:
        self._transports.add(transport)

    def _detach(self, transport: NatsTransport) -> None:
        self._transports.discard(transport)

    # --- forwarder liveness ---

    async def _follow_forwarders(self) -> None:
        """The forwarders' heartbeats: the FORWARDERS stream's last one per host (younger than
        ``forwarder_timeout``), then each as it comes."""
        follower = Follower(
            self.js,
            self._names.forwarders_stream,
            self._names.all_forwarders,
            self._on_forwarder_beat,
            idle_heartbeat=self.idle_heartbeat,
        )
        try:
            await follower.start(10.0)
        except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
            raise FleetUnavailable(
                self.url, f"the forwarders' heartbeats cannot be read ({exc!r})"
            ) from exc
        self._liveness = follower

    def forwarder_alive(self, host: str) -> bool:
        """Whether ``host``'s forwarder heartbeat within the last ``forwarder_timeout`` s."""
        return host in self._alive

    async def wait_forwarder(self, host: str, timeout: float) -> bool:
        """Whether ``host``'s forwarder is alive now or heartbeats within ``timeout`` seconds
        (its heartbeat and its Pis' states come through different consumers: either may be
        delivered first)."""
        if self.forwarder_alive(host):
            return True
        heard = asyncio.get_running_loop().create_future()

        def on_host(changed: str, alive: bool) -> None:
            if alive and changed == host and not heard.done():
                heard.set_result(True)

        self._host_watchers.append(on_host)
        try:
            return bool(await within(heard, timeout))
        except asyncio.TimeoutError:
            return False
        finally:
            self._host_watchers.remove(on_host)

    def _on_forwarder_beat(self, msg: Msg) -> None:
        try:
            beat = FORWARDER_BEAT_DECODER.decode(msg.data)
            host = check_host_id(beat.host)
        except (msgspec.DecodeError, InvalidArgument):
            log.warning("pi_ask_sdk.fleet: skipped a bad forwarder heartbeat on %s", msg.subject)
            return
        if msg.subject != self._names.forwarder(host):
            return
        handle = self._alive.pop(host, None)
        if handle is not None:
            handle.cancel()
        loop = asyncio.get_running_loop()
        timeout = self._settings.forwarder_timeout
        self._alive[host] = loop.call_later(timeout, self._forwarder_silent, host)
        if handle is None:
            for watcher in list(self._host_watchers):
                watcher(host, True)

    def _forwarder_silent(self, host: str) -> None:
        if self._alive.pop(host, None) is None or self._closed:
            return
        log.warning(
            "pi_ask_sdk.fleet: the forwarder of host %r is gone (silent for %g s): its Pis' "
            "forms are ended for this bridge",
            host,
            self._settings.forwarder_timeout,
        )
        for transport in list(self._transports):
            if transport.host == host:
                transport._forwarder_gone(self._settings.forwarder_timeout)
        for watcher in list(self._host_watchers):
            watcher(host, False)

    # --- presence ---

    async def _beat(self) -> None:
        beat = Heartbeat(
            bridge=self._bridge_id, role=self._role, interval=self._heartbeat, hosts=self._hosts
        )
        nc = self._nc
        if nc is not None and nc.is_connected:
            with contextlib.suppress(nats.errors.Error, OSError):
                await nc.publish(self._names.bridge(self._bridge_id), ENCODER.encode(beat))

    async def _beat_loop(self) -> None:
        while True:
            await asyncio.sleep(self._heartbeat)  # the heartbeat's period, not a synchronisation
            await self._beat()

    async def _on_probe(self, msg: Msg) -> None:
        await self._beat()

    # --- Pis ---

    def transport(
        self, host: str, pid: int, *, open_timeout: float = 10.0, send_timeout: float = 5.0
    ) -> NatsTransport:
        """A ``NatsTransport`` for Pi ``pid`` on ``host`` (not yet opened).

        Args:
            host: The host id its forwarder publishes under.
            pid: The Pi's process id on that host.
            open_timeout: Seconds ``open`` waits for the Pi's snapshot.
            send_timeout: Seconds ``send`` waits for the server to store a submit.

        Raises:
            InvalidArgument: ``host`` cannot be a host id.
        """
        return NatsTransport(
            self, check_host_id(host), pid, open_timeout=open_timeout, send_timeout=send_timeout
        )

    async def pis(self, *, timeout: float = 10.0) -> list[FleetPi]:
        """The Pis up now, by host and pid. Raises ``FleetUnavailable`` when the states do not
        come within ``timeout`` seconds."""
        states: dict[str, PiState] = {}

        def on_state(msg: Msg) -> None:
            state = _state(msg)
            if state is not None:
                states[msg.subject] = state

        follower = Follower(
            self.js,
            self._names.flows_stream,
            self._names.all_states,
            on_state,
            idle_heartbeat=self.idle_heartbeat,
        )
        try:
            await follower.start(timeout)
        except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
            raise FleetUnavailable(self.url, f"the Pis' states did not come ({exc!r})") from exc
        finally:
            await follower.stop()
        up = [
            FleetPi._from_state(s)
            for s in states.values()
            if s.state == "up" and self.forwarder_alive(s.host)
        ]
        return sorted(up, key=lambda pi: (pi.host, pi.pid))

    async def wait_pi(self, host: str, pid: int, *, timeout: float = 10.0) -> FleetPi:
        """Wait (at most ``timeout`` s) until a forwarder reports Pi ``pid`` on ``host`` as up,
        and return it. Raises ``TimeoutError``, or ``FleetUnavailable``."""
        found: asyncio.Future[FleetPi] = asyncio.get_running_loop().create_future()
        last: list[PiState] = []

        def check() -> None:
            up = last and last[-1].state == "up" and self.forwarder_alive(last[-1].host)
            if up and not found.done():
                found.set_result(FleetPi._from_state(last[-1]))

        def on_state(msg: Msg) -> None:
            state = _state(msg)
            if state is not None:
                last.append(state)
                del last[:-1]
                check()

        def on_host(changed: str, alive: bool) -> None:
            if alive and changed == host:
                check()

        follower = Follower(
            self.js,
            self._names.flows_stream,
            self._names.state(check_host_id(host), pid),
            on_state,
            idle_heartbeat=self.idle_heartbeat,
        )
        self._host_watchers.append(on_host)
        try:
            try:
                await follower.start(timeout)
            except (nats.errors.Error, OSError) as exc:
                raise FleetUnavailable(self.url, f"cannot follow Pi {pid} ({exc!r})") from exc
            return await within(found, timeout)  # (a cancel is never swallowed: _follow)
        finally:
            self._host_watchers.remove(on_host)
            await follower.stop()

    async def bridges(self, *, wait: float = 1.0) -> list[Heartbeat]:
        """The bridges that answer a probe within ``wait`` seconds (answering bridges heartbeat
        at once when probed; observers do not heartbeat), by id: what ``pi-ask doctor`` shows.
        """
        heard: dict[str, Heartbeat] = {}

        async def on_beat(msg: Msg) -> None:
            with contextlib.suppress(msgspec.DecodeError):
                beat = HEARTBEAT_DECODER.decode(msg.data)
                if beat.bye:
                    heard.pop(beat.bridge, None)
                else:
                    heard[beat.bridge] = beat

        nc = self.nc
        sub = await nc.subscribe(self._names.all_bridges, cb=on_beat)
        try:
            await nc.publish(self._names.probe, b"")
            await nc.flush()
            await asyncio.sleep(wait)  # collecting answers for ``wait`` seconds is the point
        finally:
            with contextlib.suppress(nats.errors.Error, OSError):
                await sub.unsubscribe()
        return [heard[bridge] for bridge in sorted(heard)]

    async def serve(
        self,
        handler: FleetHandler,
        *,
        stop: asyncio.Event | None = None,
        request_id_prefix: str = "bridge",
        timeout: float = 10.0,
    ) -> None:
        """Run ``handler(client, pi)`` for every Pi up in the fleet, and for each that comes up
        later, until ``stop`` is set (or cancelled). Each Pi gets its own ``BridgeClient`` over a
        ``NatsTransport``, so one Pi's session end or exit touches only its forms; a handler's
        failure is logged and stays with its Pi.

        Args:
            handler: Serves one Pi, given its client (open) and the Pi.
            stop: Set it to stop serving; every handler is then cancelled.
            request_id_prefix: The start of every request id the clients make up.
            timeout: Seconds to wait for the fleet's list of Pis.
        """
        stop = asyncio.Event() if stop is None else stop
        serving: dict[tuple[str, int], tuple[asyncio.Task[None], NatsTransport]] = {}
        lingering: set[asyncio.Task[None]] = set()  # handlers of ended transports, returning
        states: dict[tuple[str, int], PiState] = {}
        loop = asyncio.get_running_loop()

        def consider(state: PiState) -> None:
            if state.state != "up" or stop.is_set() or not self.forwarder_alive(state.host):
                return
            key = (state.host, state.pid)
            current = serving.get(key)
            if current is not None and not current[0].done():
                if not current[1].is_ended:
                    return
                # Its transport ended (the forwarder was gone): the Pi is back, so it is served
                # again now, whatever its old handler is still doing.
                lingering.add(current[0])
                current[0].add_done_callback(lingering.discard)
            pi = FleetPi._from_state(state)
            transport = self.transport(pi.host, pi.pid)
            task = loop.create_task(self._serve_one(handler, pi, transport, request_id_prefix))
            serving[key] = (task, transport)

        def on_state(msg: Msg) -> None:
            state = _state(msg)
            if state is None:
                return
            key = (state.host, state.pid)
            if state.state == "up":
                states[key] = state
            else:
                states.pop(key, None)
            consider(state)

        def on_host(host: str, alive: bool) -> None:
            # A forwarder back: its Pis still up are served again (a fresh transport's
            # snapshot: exactly the forms open now).
            if alive:
                for state in [s for (h, _), s in states.items() if h == host]:
                    consider(state)

        follower = Follower(
            self.js,
            self._names.flows_stream,
            self._names.all_states,
            on_state,
            idle_heartbeat=self.idle_heartbeat,
        )
        self._host_watchers.append(on_host)
        try:
            try:
                await follower.start(timeout)
            except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
                raise FleetUnavailable(self.url, f"the Pis' states did not come ({exc!r})") from exc
            await stop.wait()
        finally:
            self._host_watchers.remove(on_host)
            await follower.stop()
            tasks = [task for task, _ in serving.values()] + list(lingering)
            await cancel_and_wait(tasks, what="Pi handlers")

    async def _serve_one(
        self, handler: FleetHandler, pi: FleetPi, transport: NatsTransport, prefix: str
    ) -> None:
        try:
            async with BridgeClient(transport, request_id_prefix=prefix) as c:
                await handler(c, pi)
        except asyncio.CancelledError:
            raise
        except FleetError as exc:
            log.info("pi_ask_sdk.fleet: not serving Pi %d on %r: %s", pi.pid, pi.host, exc)
        except Exception:
            log.exception("pi_ask_sdk.fleet: serving Pi %d on %r failed", pi.pid, pi.host)


def _state(msg: Msg) -> PiState | None:
    body = decode_body(msg)
    if body is None:
        return None
    try:
        return STATE_DECODER.decode(body)
    except msgspec.DecodeError:
        log.warning("pi_ask_sdk.fleet: skipped a bad state on %s", msg.subject)
        return None


async def serve_fleet(
    handler: FleetHandler,
    options: NatsOptions | str = "nats://127.0.0.1:4222",
    *,
    stop: asyncio.Event | None = None,
    names: FleetNames | None = None,
) -> None:
    """``serve_every_pi`` for the fleet: ``handler(client, pi)`` for every Pi on every host
    (including Pis and hosts that appear later), as an answering bridge, until ``stop`` is set
    or cancelled.

    Args:
        handler: Serves one Pi, given its client (open) and the Pi.
        options: The NATS server's URL, or ``NatsOptions``.
        stop: Set it to stop serving.
        names: The fleet's names (its subject prefix); the default prefix otherwise.

    Raises:
        FleetUnavailable: The server or its JetStream cannot be reached.
    """
    async with Fleet(options, names=names) as fleet:
        await fleet.serve(handler, stop=stop)


def pi_transport(
    options: NatsOptions | str,
    host: str,
    pid: int,
    *,
    role: RelayRole = "answerer",
    names: FleetNames | None = None,
    open_timeout: float = 10.0,
    send_timeout: float = 5.0,
) -> NatsTransport:
    """A ``NatsTransport`` to one Pi with a fleet connection of its own, opened by the
    transport's ``open`` and closed by its ``close`` (on the loop that opens it): for
    ``SyncBridgeClient(pi_transport(url, host, pid))`` or a bridge of one Pi.

    Args:
        options: The NATS server's URL, or ``NatsOptions``.
        host: The host id its forwarder publishes under.
        pid: The Pi's process id on that host.
        role: ``"answerer"`` or ``"observer"`` (as for ``Fleet``).
        names: The fleet's names (its subject prefix).
        open_timeout: Seconds ``open`` waits for the Pi's snapshot.
        send_timeout: Seconds ``send`` waits for the server to store a submit.

    Raises:
        InvalidArgument: ``host`` cannot be a host id.
    """
    fleet = Fleet(options, names=names, role=role)
    return NatsTransport(
        fleet,
        check_host_id(host),
        pid,
        open_timeout=open_timeout,
        send_timeout=send_timeout,
        owns_fleet=True,
    )
