"""``Fleet``: a bridge's NATS connection to every Pi of every host, and its Pis as a source of
``pi_ask_sdk.serving.serve``."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Final

import msgspec
import nats.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from typing_extensions import Self

from pi_ask_sdk._tasks import within
from pi_ask_sdk.errors import InvalidArgument, InvalidUse
from pi_ask_sdk.transports.relay import RelayRole

from ._transport import NatsTransport
from .connection import NatsOptions, close_nats, connect_nats, ensure_streams
from .errors import FleetUnavailable
from .follow import Follower
from .groups import Group
from .liveness import Beater, Liveness
from .protocol import (
    ENCODER,
    FORWARDER_BEAT_DECODER,
    HEARTBEAT_DECODER,
    STATE_DECODER,
    FleetNames,
    FleetSettings,
    Heartbeat,
    PiState,
    check_host_id,
    decode_body,
)

log: Final = logging.getLogger("pi_ask_sdk.fleet")

__all__ = ["Fleet", "FleetPi", "pi_transport"]


@dataclass(frozen=True, slots=True)
class FleetPi:
    """A Pi process of the fleet, as its host's forwarder reported it."""

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


class Fleet:
    """A bridge's connection to the fleet: ``async with Fleet("nats://…") as fleet``.

    ``options`` is a URL or ``NatsOptions`` (credentials, TLS). ``role="answerer"`` (the
    default) heartbeats on ``<prefix>._bridge.<bridge_id>`` every ``heartbeat`` seconds, so the
    forwarders make headless Pis wait for this bridge's answers (``hosts``: only those hosts'
    forwarders count it, and ``serve`` serves only their Pis; None: all); ``"observer"`` never
    makes a form wait. ``setup=False`` skips creating the streams (a bridge whose NATS user may
    not). ``idle_heartbeat`` bounds how long a restarted server goes unnoticed by each
    consumer.

    ``group="name"`` makes this bridge one replica of a group that shares the forms: each form
    is shown to exactly one live replica of the group (rendezvous hashing of the form over the
    members heard from: ``pi_ask_sdk.fleet.groups``), and the open forms of a replica that
    says goodbye, dies or freezes for ``PRESENCE_FACTOR`` heartbeat intervals are shown to
    another. A form is never answered twice (a late submit of a replica that froze is
    refused by Pi). Without a group every bridge sees every form. Answerers only.

    ``transport(host, pid)`` makes a ``NatsTransport`` for one Pi; ``pis()`` lists the Pis up
    now; ``pi_ask_sdk.serving.serve(handler, fleet)`` runs ``handler(client, pi)`` for every
    Pi, now and later (``Fleet`` is its source: ``follow``, ``pi_key``, ``pi_transport``).

    Forwarder liveness: a host whose forwarder has not heartbeaten for
    ``settings.forwarder_timeout`` seconds (10 s) is "forwarder gone": its Pis are left out of
    ``pis()``, its transports end (``disconnected``: pending submits ``SubmitLost``) and
    ``open`` refuses them (``FleetPiNotFound``); ``serve`` serves them again when it beats
    again (``forwarder_alive(host)``), whatever their old handlers are still doing.
    Raises ``FleetUnavailable`` (from ``open``) when the server or its JetStream is unreachable.
    """

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
        group: str | None = None,
    ) -> None:
        if role not in ("answerer", "observer"):
            raise InvalidArgument("Fleet", "role", '"answerer" or "observer"', role)
        if group is not None and (not isinstance(group, str) or not group):
            raise InvalidArgument("Fleet", "group", "a non-empty group name, or None", group)
        if group is not None and role != "answerer":
            raise InvalidArgument(
                "Fleet", "group", "None for an observer (groups share answering)", group
            )
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
        self._closed = False
        self._forwarders = Liveness(self._forwarder_changed)  # by host
        self._next_beat: dict[str, asyncio.Event] = {}  # by host: set by its next heartbeat
        self._beater = Beater(self._beat, heartbeat)
        self._group = (
            None if group is None else Group(group, self._bridge_id, self._members_changed)
        )
        self._group_changed = asyncio.Event()  # replaced at each change of members

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
            if self._group is not None:
                await self._join_group(nc)
            if self._role == "answerer":
                await nc.subscribe(self._names.probe, cb=self._on_probe)
                await self._beater.start()
        except BaseException:
            await self.close()
            raise

    async def close(self) -> None:
        """Say goodbye (an answerer), end every transport (``disconnected``), disconnect."""
        if self._closed:
            return
        self._closed = True
        await self._beater.stop()
        self._forwarders.close()
        if self._group is not None:
            self._group.close()
        for transport in list(self._transports):
            transport._fleet_closed()
        nc, self._nc = self._nc, None
        if nc is None:
            return
        if self._role == "answerer" and nc.is_connected:
            bye = Heartbeat(bridge=self._bridge_id, role=self._role, bye=True, group=self.group)
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

    @property
    def group(self) -> str | None:
        """The replica group this bridge shares the forms with, or None (it sees them all)."""
        return None if self._group is None else self._group.name

    @property
    def group_members(self) -> tuple[str, ...]:
        """The bridge ids of the group's live members (this one among them), sorted; just
        this one without a group."""
        return (self._bridge_id,) if self._group is None else self._group.members

    async def wait_group(self, count: int, timeout: float) -> tuple[str, ...]:
        """Wait (at most ``timeout`` s) until the group has at least ``count`` live members,
        and return them. Raises ``TimeoutError``, or ``InvalidUse`` without a group."""
        if self._group is None:
            raise InvalidUse("wait_group", "this Fleet has no group")

        async def enough() -> None:
            while len(self.group_members) < count:
                changed = self._group_changed
                await changed.wait()

        await within(enough(), timeout)
        return self.group_members

    def owns(self, flow_subject: str) -> bool:
        """Whether this bridge shows the form on ``flow_subject`` (always, without a group)."""
        if self._group is None:
            return True
        parsed = self._names.parse(flow_subject)
        return self._group.owns(flow_subject, None if parsed is None else parsed[0])

    def _attach(self, transport: NatsTransport) -> None:
        self._transports.add(transport)

    def _detach(self, transport: NatsTransport) -> None:
        self._transports.discard(transport)

    # --- forwarder liveness ---

    async def _follow_forwarders(self) -> None:
        """The forwarders' heartbeats: the FORWARDERS stream's last one per host (younger than
        ``forwarder_timeout``) once, then each as it is sent, on the core subject: a stream
        without a leader (an election, a cluster without a quorum) stores none, though the
        forwarders are alive and send them (subscribed first: none falls between)."""
        await self.nc.subscribe(self._names.all_forwarders, cb=self._on_forwarder_msg)
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
        finally:
            await follower.stop()

    async def _on_forwarder_msg(self, msg: Msg) -> None:
        self._on_forwarder_beat(msg)

    def forwarder_alive(self, host: str) -> bool:
        """Whether ``host``'s forwarder heartbeat within the last ``forwarder_timeout`` s."""
        return self._forwarders.alive(host)

    async def wait_forwarder(self, host: str, timeout: float) -> bool:
        """Whether ``host``'s forwarder is alive now or heartbeats within ``timeout`` seconds
        (its heartbeat and its Pis' states come through different consumers: either may be
        delivered first)."""
        return await self._forwarders.wait(host, timeout)

    async def next_forwarder_beat(self, host: str, timeout: float) -> bool:
        """Whether ``host``'s forwarder heartbeats again (a goodbye does not count) within
        ``timeout`` seconds (a forwarder that has just taken the host heartbeats before it
        takes its submits: a submit that found nobody is sent again at its next heartbeat)."""
        event = self._next_beat.setdefault(host, asyncio.Event())
        try:
            await within(event.wait(), timeout)
        except asyncio.TimeoutError:
            return False
        return True

    def watch_forwarders(self, watcher: Callable[[str, bool], None]) -> Callable[[], None]:
        """Call ``watcher(host, alive)`` whenever a host's forwarder comes (back) or is counted
        gone; returns what stops it."""
        return self._forwarders.watch(watcher)

    def _on_forwarder_beat(self, msg: Msg) -> None:
        try:
            beat = FORWARDER_BEAT_DECODER.decode(msg.data)
            host = check_host_id(beat.host)
        except (msgspec.DecodeError, InvalidArgument):
            log.warning("pi_ask_sdk.fleet: skipped a bad forwarder heartbeat on %s", msg.subject)
            return
        if msg.subject != self._names.forwarder(host):
            return
        self._forwarders.heard(host, self._settings.forwarder_timeout)
        if not beat.bye:
            event = self._next_beat.pop(host, None)
            if event is not None:
                event.set()

    def _forwarder_changed(self, host: str, alive: bool) -> None:
        if alive or self._closed:
            return
        nc = self._nc
        if nc is not None and not nc.is_connected:  # it is the server that is gone, not the host
            log.warning(
                "pi_ask_sdk.fleet: the NATS server at %s is unreachable (for %g s): the forms of "
                "host %r are ended for this bridge until it is back",
                self.url,
                self._settings.forwarder_timeout,
                host,
            )
        else:
            log.warning(
                "pi_ask_sdk.fleet: the forwarder of host %r is gone (silent for %g s): its Pis' "
                "forms are ended for this bridge",
                host,
                self._settings.forwarder_timeout,
            )
        for transport in list(self._transports):
            if transport.host == host:
                transport._forwarder_gone(self._settings.forwarder_timeout)

    # --- replica group ---

    async def _join_group(self, nc: Client) -> None:
        """Follow the group's heartbeats, and ask every bridge to beat now: the members are
        known (they answer the probe at once) before any form is shown, so that a replica
        that joins does not take every form for a moment."""
        await nc.subscribe(self._names.all_bridges, cb=self._on_bridge_beat)
        await nc.publish(self._names.probe, b"")
        await nc.flush()
        # The probe's answers come within a round trip; one heartbeat period (at most 1 s)
        # covers a member busy at that moment. Joining is waiting to hear the group.
        await asyncio.sleep(min(self._heartbeat, 1.0))

    async def _on_bridge_beat(self, msg: Msg) -> None:
        group = self._group
        if group is None:
            return
        try:
            beat = HEARTBEAT_DECODER.decode(msg.data)
        except msgspec.DecodeError:
            return
        if beat.group != group.name or beat.role != "answerer":
            return
        if msg.subject != self._names.bridge(beat.bridge):
            return
        if beat.bye:
            group.bye(beat.bridge)
        else:
            group.heard(beat.bridge, beat.interval, beat.hosts)

    def _members_changed(self) -> None:
        changed, self._group_changed = self._group_changed, asyncio.Event()
        changed.set()
        if self._closed:
            return
        log.info(
            "pi_ask_sdk.fleet: group %r: %d live member(s)",
            self.group,
            len(self.group_members),
        )
        for transport in list(self._transports):
            transport._members_changed()

    # --- presence ---

    async def _beat(self) -> None:
        beat = Heartbeat(
            bridge=self._bridge_id,
            role=self._role,
            interval=self._heartbeat,
            hosts=self._hosts,
            group=self.group,
        )
        nc = self._nc
        if nc is not None and nc.is_connected:
            with contextlib.suppress(nats.errors.Error, OSError):
                await nc.publish(self._names.bridge(self._bridge_id), ENCODER.encode(beat))

    async def _on_probe(self, msg: Msg) -> None:
        await self._beater.now()

    # --- Pis ---

    def transport(
        self, host: str, pid: int, *, open_timeout: float = 10.0, send_timeout: float = 5.0
    ) -> NatsTransport:
        """A ``NatsTransport`` for Pi ``pid`` on ``host`` (not yet opened).

        Args:
            host: The host id its forwarder publishes under.
            pid: The Pi's process id on that host.
            open_timeout: Seconds ``open`` waits for the Pi's snapshot.
            send_timeout: Seconds ``send`` waits for the host's forwarder and its reply
                (``pi_ask_sdk.fleet.delivery``).

        Raises:
            InvalidArgument: ``host`` cannot be a host id.
        """
        return NatsTransport(
            self, check_host_id(host), pid, open_timeout=open_timeout, send_timeout=send_timeout
        )

    async def pis(self, *, timeout: float = 10.0) -> list[FleetPi]:
        """The Pis up now, by host and pid, of every host (``hosts`` scopes ``serve`` only).
        Raises ``FleetUnavailable`` when the states do not come within ``timeout`` seconds."""
        states: dict[str, PiState] = {}

        def on_state(msg: Msg) -> None:
            state = _state(msg, self._names)
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
        and return it, whatever ``hosts`` (it scopes ``serve`` only). Raises ``TimeoutError``,
        or ``FleetUnavailable``."""
        found: asyncio.Future[FleetPi] = asyncio.get_running_loop().create_future()
        last: list[PiState] = []

        def check() -> None:
            up = last and last[-1].state == "up" and self.forwarder_alive(last[-1].host)
            if up and not found.done():
                found.set_result(FleetPi._from_state(last[-1]))

        def on_state(msg: Msg) -> None:
            state = _state(msg, self._names)
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
        unwatch = self.watch_forwarders(on_host)
        try:
            try:
                await follower.start(timeout)
            except (nats.errors.Error, OSError) as exc:
                raise FleetUnavailable(self.url, f"cannot follow Pi {pid} ({exc!r})") from exc
            return await within(found, timeout)  # (a cancel is never swallowed: _follow)
        finally:
            unwatch()
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

    # --- the Pis, for serve(handler, fleet) ---

    async def follow(
        self, found: Callable[[FleetPi], bool], stop: asyncio.Event, *, timeout: float = 10.0
    ) -> None:
        """Call ``found(pi)`` for every Pi up in the fleet, each that comes up later, and each
        whose host's forwarder is back (its transport ended meanwhile), until ``stop`` is set:
        the fleet as a source of ``pi_ask_sdk.serving.serve``. With ``hosts``, only those
        hosts' Pis are found (the others' forwarders do not count this bridge). Every Pi up is
        also found again every 0.5 s (a Pi whose handler ended is served again); one whose
        client fails to open is found again after a delay that doubles, at most every 8 s.

        Raises:
            FleetUnavailable: The Pis' states did not come within ``timeout`` seconds.
        """
        states: dict[tuple[str, int], PiState] = {}
        # Pis up whose client is not open (its open failed: a 503 while a stream elects its
        # leader, say): found again after a delay that doubles, at most every 8 s.
        unserved: dict[tuple[str, int], tuple[float, float]] = {}  # key -> (when, delay)
        loop = asyncio.get_running_loop()

        def consider(state: PiState) -> None:
            key = (state.host, state.pid)
            if self._hosts is not None and state.host not in self._hosts:
                return  # not a host this bridge answers for: its forwarder does not count it
            if state.state == "up" and not stop.is_set() and self.forwarder_alive(state.host):
                if found(FleetPi._from_state(state)):
                    unserved.pop(key, None)
                elif key not in unserved:
                    unserved[key] = (loop.time() + 0.5, 0.5)
            else:
                unserved.pop(key, None)

        def on_state(msg: Msg) -> None:
            state = _state(msg, self._names)
            if state is None:
                return
            key = (state.host, state.pid)
            if state.state == "up":
                states[key] = state
            else:
                states.pop(key, None)
            consider(state)

        def on_host(host: str, alive: bool) -> None:
            # A forwarder back: its Pis still up are found again (a fresh transport's
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
        unwatch = self.watch_forwarders(on_host)
        try:
            try:
                await follower.start(timeout)
            except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
                raise FleetUnavailable(self.url, f"the Pis' states did not come ({exc!r})") from exc
            while not stop.is_set():
                with contextlib.suppress(asyncio.TimeoutError):
                    await within(stop.wait(), 0.5)  # (the look again's period)
                now = loop.time()
                for key, (when, delay) in list(unserved.items()):
                    state = states.get(key)
                    if state is None or stop.is_set():
                        unserved.pop(key, None)
                    elif now >= when:
                        unserved[key] = (now + min(delay * 2, 8.0), min(delay * 2, 8.0))
                        consider(state)
                # Every other Pi up is looked at again too: one whose handler ended (returned
                # or raised) while nothing changed in the fleet is served again. In a replica
                # group its forms go to this bridge alone, so waiting for a change loses them.
                for key, state in list(states.items()):
                    if key not in unserved:
                        consider(state)
        finally:
            unwatch()
            await follower.stop()

    def pi_key(self, pi: FleetPi) -> tuple[str, int]:
        """A Pi's key: its host and pid."""
        return (pi.host, pi.pid)

    def pi_transport(self, pi: FleetPi) -> NatsTransport:
        """A new ``NatsTransport`` to ``pi`` (``transport(pi.host, pi.pid)``)."""
        return self.transport(pi.host, pi.pid)


def _state(msg: Msg, names: FleetNames) -> PiState | None:
    body = decode_body(msg)
    if body is None:
        return None
    try:
        state = STATE_DECODER.decode(body)
    except msgspec.DecodeError:
        log.warning("pi_ask_sdk.fleet: skipped a bad state on %s", msg.subject)
        return None
    # The subject is what NATS permissions guard (each host's forwarder publishes only under its
    # host): a body naming another host or Pi would let one host's forwarder speak for another.
    if names.parse(msg.subject) != (state.host, state.pid, "state", ""):
        log.warning(
            "pi_ask_sdk.fleet: skipped a state on %s that names another Pi (host %r, pid %d)",
            msg.subject,
            state.host,
            state.pid,
        )
        return None
    return state


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
        send_timeout: Seconds ``send`` waits for the host's forwarder and its reply
            (``pi_ask_sdk.fleet.delivery``).

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
