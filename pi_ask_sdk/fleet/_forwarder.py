"""``Forwarder``: every relay of this host, mirrored to NATS JetStream, and the submits back."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import os
import re
import secrets
import socket
from datetime import datetime, timezone
from pathlib import Path
from types import TracebackType
from typing import Final

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from typing_extensions import Self

from pi_ask_sdk._tasks import cancel_and_wait, within
from pi_ask_sdk.transports.relay import RelayRole, discover_relays, relay_dir

from ._link import PiLink, Prior
from .connection import NatsOptions, close_nats, connect_nats, ensure_streams
from .delivery import NOT_SENT
from .errors import FleetHostTaken, FleetUnavailable
from .follow import Follower
from .groups import PRESENCE_FACTOR
from .liveness import Beater, Liveness
from .protocol import (
    FleetNames,
    FleetSettings,
    ForwarderBeat,
    Header,
    Heartbeat,
    JsCode,
    PiState,
    check_host_id,
    decode_body,
)

log: Final = logging.getLogger("pi_ask_sdk.fleet")

__all__ = ["Forwarder", "default_host_id"]


def default_host_id() -> str:
    """This machine's host name as a host id (characters a subject token cannot hold become
    ``-``; at most 64)."""
    name = re.sub(r"[^A-Za-z0-9_-]", "-", socket.gethostname()).lstrip("_-")[:64]
    return name or "host"


class Forwarder:
    """Mirrors every relay of this host to the fleet: ``async with Forwarder(url) as f``, then
    ``await f.run()`` (until ``stop`` is set), or ``pi-ask forward --nats URL``.

    ``host_id`` names this host in every subject (default: ``default_host_id()``): give each
    host its own. ``directory`` is the relay directory (default ``relay_dir()``), polled every
    ``poll`` seconds for Pis that start later.

    Liveness and the host's lease: it heartbeats every ``heartbeat`` seconds on
    ``<p>._forwarder.<host>`` (kept in the FORWARDERS stream), each heartbeat stored only if
    the last one is its own (``protocol``): the host's one forwarder. A second forwarder of
    the same host stops (``FleetHostTaken``) as soon as the first beats again; while the first
    is silent (killed, say) it waits, following no relay, until the first has been silent for
    ``FleetSettings.forwarder_timeout`` (bridges then report that host's Pis ended); one that
    finds its lease taken (it was stopped that long) stops. Submits are the rules of
    ``delivery``: each link answers its Pi's.

    Outages: each Pi's events wait for the server in a queue of at most ``max_queued``
    messages and ``max_queued_bytes`` bytes; on overflow that Pi's view is reset for the
    bridges (a new epoch, its open forms again) once the server is back: nothing is lost
    silently (docs/fleet.md, Delivery semantics).

    Presence: the forwarder tells its relays it is an answerer only while at least one
    answering bridge heartbeats (for this host, or for every host); a bridge counts as gone
    ``presence_factor`` heartbeat intervals after its last heartbeat, at once when it says bye.

    ``setup=False`` creates no stream (an administrator made them: docs/fleet.md, Security).

    Raises ``FleetUnavailable`` (from ``open``) when NATS or its JetStream is unreachable.
    """

    def __init__(
        self,
        options: NatsOptions | str = "nats://127.0.0.1:4222",
        *,
        host_id: str | None = None,
        directory: Path | None = None,
        names: FleetNames | None = None,
        settings: FleetSettings | None = None,
        poll: float = 1.0,
        presence_factor: float = PRESENCE_FACTOR,
        idle_heartbeat: float = 1.0,
        setup: bool = True,
        heartbeat: float = 1.0,
        max_queued: int = 10_000,
        max_queued_bytes: int = 64 * 1024 * 1024,
    ) -> None:
        self._options = NatsOptions(url=options) if isinstance(options, str) else options
        self.host_id = check_host_id(host_id if host_id is not None else default_host_id())
        self._directory = directory
        self.names = names or FleetNames()
        self._settings = settings or FleetSettings()
        self._poll = poll
        self._presence_factor = presence_factor
        self._idle_heartbeat = idle_heartbeat
        self._setup = setup
        self._heartbeat = heartbeat
        self.max_queued = max_queued
        self.max_queued_bytes = max_queued_bytes
        self._beater = Beater(self._beat, heartbeat)
        self.forwarder_id = secrets.token_hex(6)
        self.closing = False
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._links: dict[int, PiLink] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._priors: dict[int, Prior] = {}
        self._answerers = Liveness(self._answerer_changed)  # answering bridges, by id
        self._answer_changed = asyncio.Event()
        self._lease: int | None = None  # the sequence of our last heartbeat: the host is ours
        self._lost = asyncio.Event()  # another forwarder took the host (we were silent)
        self._taking = asyncio.Event()
        self._relays_opened = asyncio.Event()  # the relays found first are open (or gave up)

    # --- properties ---

    @property
    def nc(self) -> Client:
        """The NATS connection.

        Raises:
            FleetUnavailable: The forwarder is not open.
        """
        if self._nc is None:
            raise FleetUnavailable(self._options.shown_url, "the forwarder is not open")
        return self._nc

    @property
    def js(self) -> JetStreamContext:
        """The JetStream context of the connection.

        Raises:
            FleetUnavailable: The forwarder is not open.
        """
        if self._js is None:
            raise FleetUnavailable(self._options.shown_url, "the forwarder is not open")
        return self._js

    @property
    def relay_role(self) -> RelayRole:
        """What the forwarder tells its relays now: answerer while an answering bridge lives."""
        return "answerer" if len(self._answerers) else "observer"

    @property
    def answering_bridges(self) -> list[str]:
        """The ids of the answering bridges heard from lately."""
        return self._answerers.keys

    @property
    def pids(self) -> list[int]:
        """The Pis followed now."""
        return sorted(pid for pid, task in self._tasks.items() if not task.done())

    def link(self, pid: int) -> PiLink | None:
        """The link to Pi ``pid``'s relay, while it is followed."""
        return self._links.get(pid)

    # --- lifecycle ---

    async def open(self) -> None:
        """Connect, set up the streams, listen for bridges (``run`` takes the submits)."""
        options = self._options
        if options.name is None:
            options = dataclasses.replace(options, name=f"pi-ask forward {self.host_id}")
        self._nc = await connect_nats(
            options, disconnected_cb=self._server_lost, reconnected_cb=self._server_back
        )
        self._js = self._nc.jetstream()
        try:
            if self._setup:
                await ensure_streams(self._js, self.names, self._settings, options.shown_url)
            await self._nc.subscribe(self.names.all_bridges, cb=self._on_heartbeat)
            await self._nc.publish(self.names.probe, b"")
            await self._beater.start()
        except BaseException:
            await self.close()
            raise

    async def _server_lost(self) -> None:
        if not self.closing:  # (nats-py calls it on close too)
            log.warning(
                "pi_ask_sdk.fleet: the NATS server at %s is unreachable: events wait here, "
                "bridges count this host's forwarder gone after %g s",
                self._options.shown_url,
                self._settings.forwarder_timeout,
            )

    async def _server_back(self) -> None:
        log.warning("pi_ask_sdk.fleet: the NATS server at %s is back", self._options.shown_url)

    async def _read_priors(self) -> None:
        priors: dict[int, Prior] = {}

        def on_msg(msg: Msg) -> None:
            parsed = self.names.parse(msg.subject)
            if parsed is None:
                return
            _, pid, kind, _ = parsed
            prior = priors.setdefault(pid, Prior())
            if kind == "state":
                body = decode_body(msg)
                with contextlib.suppress(msgspec.DecodeError):
                    prior.state = msgspec.json.decode(body or b"", type=PiState)
            elif kind == "flow":
                if (msg.headers or {}).get(Header.KIND) == "started":
                    prior.open_flows.add(msg.subject)
                else:
                    prior.open_flows.discard(msg.subject)

        follower = Follower(
            self.js,
            self.names.flows_stream,
            self.names.host(self.host_id),
            on_msg,
            idle_heartbeat=self._idle_heartbeat,
        )
        try:
            await follower.start(30.0)
        except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
            raise FleetUnavailable(
                self._options.shown_url, f"cannot read this host's state ({exc!r})"
            ) from exc
        finally:
            await follower.stop()
        self._priors = priors

    async def _take_host(self, stop: asyncio.Event) -> bool:
        """Take the host's lease: our first heartbeat, stored only if the host has none (no
        live forwarder). While another forwarder holds it, wait (its heartbeats expire
        ``forwarder_timeout`` seconds after its last), at most 60 s, then ``FleetUnavailable``;
        but as soon as it beats again it is alive, and this one stops (``FleetHostTaken``).
        False when ``stop`` was set meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60.0
        delay = 0.05
        told = False
        first_seen: int | None = None  # the holder's heartbeat when we first found the host held
        interval = self._heartbeat  # the holder's, once read
        started = loop.time()
        while True:
            if await self._host_free() and await self._publish_beat(expected=0):
                return True
            seen = await self._holder()
            if seen is not None:
                seq, beat, age = seen
                interval = beat.interval
                if first_seen is None:
                    first_seen = seq
                elif seq != first_seen and not beat.bye and beat.forwarder != self.forwarder_id:
                    # A heartbeat newer than the one we found: not a stale lease, a live one.
                    raise FleetHostTaken(self.host_id, beat.pid, beat.machine, age)
            if not told and loop.time() - started > 2 * interval:
                # (said only once the holder missed a heartbeat: a live one stops us before)
                told = True
                log.warning(
                    "pi_ask_sdk.fleet: another forwarder of host %r is running: waiting for it "
                    "to stop (up to %g s after its last heartbeat)",
                    self.host_id,
                    self._settings.forwarder_timeout,
                )
            if loop.time() + delay > deadline:
                raise FleetUnavailable(
                    self._options.shown_url,
                    f"another forwarder of host {self.host_id!r} is still running",
                )
            # backoff: no event tells that the other forwarder's heartbeat expired
            with contextlib.suppress(asyncio.TimeoutError):
                await within(stop.wait(), delay)
            if stop.is_set() or self.closing:
                return False
            delay = min(delay * 2, 1.0)

    async def _host_free(self) -> bool:
        """Whether the host's lease looks free (no heartbeat stored, or a ``bye``): only then
        is a first heartbeat published. Bridges hear every heartbeat on its core subject, a
        refused one too: one sent while another forwarder holds the host would tell them this
        host's forwarder is alive while none takes its submits."""
        try:
            last = await self.js.get_last_msg(
                self.names.forwarders_stream, self.names.forwarder(self.host_id)
            )
            return msgspec.json.decode(last.data or b"", type=ForwarderBeat).bye
        except nats.js.errors.NotFoundError:
            return True
        except (nats.errors.Error, OSError, asyncio.TimeoutError, msgspec.DecodeError):
            return False  # (unreadable now: looked at again)

    async def _holder(self) -> tuple[int, ForwarderBeat, float] | None:
        """The last heartbeat on the host's subject: its sequence, itself, its age in seconds
        (None when there is none, or it cannot be read)."""
        try:
            last = await self.js.get_last_msg(
                self.names.forwarders_stream, self.names.forwarder(self.host_id)
            )
            beat = msgspec.json.decode(last.data or b"", type=ForwarderBeat)
        except (nats.errors.Error, OSError, asyncio.TimeoutError, msgspec.DecodeError):
            return None
        if last.seq is None:
            return None
        age = 0.0
        if last.time is not None:
            age = max(0.0, (datetime.now(timezone.utc) - last.time).total_seconds())
        return last.seq, beat, age

    async def _take_submits(self) -> None:
        """Answer the submits of this host's Pis (each link its own Pi's). No queue group: a
        cluster node that froze with this forwarder's old connection keeps its subscription
        until the cluster drops the node, and a queue group would send it some submits."""
        await self.nc.subscribe(self.names.host_submits(self.host_id), cb=self._on_submit)
        await self.nc.flush()  # subscribed at the server before anyone is told we take them
        self._taking.set()
        log.info("pi_ask_sdk.fleet: taking the submits of host %s", self.host_id)

    async def close(self) -> None:
        """Stop following the relays (their Pis stay up in the fleet: a forwarder restart finds
        them again), stop taking submits, disconnect."""
        if self.closing:
            return
        self.closing = True
        self._answerers.close()
        await self._beater.stop()
        if self._lease is not None and not self._lost.is_set():
            await self._publish_beat(expected=self._lease, bye=True)  # the host is free now
            self._lease = None
        await cancel_and_wait(list(self._tasks.values()), what="forwarder's links")
        nc, self._nc = self._nc, None
        if nc is not None:
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

    async def run(self, stop: asyncio.Event | None = None) -> None:
        """Follow every relay of this host (and each that starts later) until ``stop`` is set
        or cancelled. Pis the fleet showed as up that have no relay any more are marked gone.

        It first takes the host's lease: while another forwarder of the same host runs, this
        one waits, following no relay (the bridges would see each form twice), at most 60 s
        (then ``FleetUnavailable``), or until ``stop``.

        Raises:
            FleetHostTaken: Another forwarder of the host is alive: this one stops.
            FleetUnavailable: Another forwarder kept the host, or took it (this one was
                stopped past ``forwarder_timeout``), or this host's state cannot be read.
        """
        stop = asyncio.Event() if stop is None else stop
        if not await self._take_host(stop):
            return
        log.info(
            "pi_ask_sdk.fleet: host %s: following the relays in %s",
            self.host_id,
            self._directory if self._directory is not None else relay_dir(),
        )
        await self._take_submits()
        # What the fleet says of this host, read once the forwarder before (if any) is gone.
        await self._read_priors()
        loop = asyncio.get_running_loop()
        first = True
        while not stop.is_set() and not self.closing:
            for pid in [pid for pid, task in self._tasks.items() if task.done()]:
                del self._tasks[pid]  # a Pi that ended: its link is gone too
                self._links.pop(pid, None)
            live = set(self.pids)
            for info in discover_relays(
                self._directory, known={self._links[p].info.path for p in live}
            ):
                if info.forwarded or not info.pid:
                    continue  # another machine's Pi (ssh -L): its own forwarder mirrors it
                task = self._tasks.get(info.pid)
                if task is None or task.done():
                    prior = self._priors.pop(info.pid, None) or Prior()
                    log.info("pi_ask_sdk.fleet: following Pi %d (%s)", info.pid, info.path)
                    link = PiLink(self, info, prior)
                    self._links[info.pid] = link
                    self._tasks[info.pid] = loop.create_task(link.run())
            if first:
                first = False
                await self._mark_missing_gone()
                await self._wait_opened(10.0)
                self._relays_opened.set()
            if self._lost.is_set():
                raise FleetUnavailable(
                    self._options.shown_url,
                    f"another forwarder took host {self.host_id!r} (this one was silent for "
                    f"more than {self._settings.forwarder_timeout:g} s): stopped",
                )
            with contextlib.suppress(asyncio.TimeoutError):
                await within(stop.wait(), self._poll)

    async def _wait_opened(self, timeout: float) -> None:
        waits = [link.opened.wait() for link in self._links.values()]
        if waits:
            with contextlib.suppress(asyncio.TimeoutError):
                await within(asyncio.gather(*waits), timeout)

    async def _mark_missing_gone(self) -> None:
        """Pis this host showed as up before, whose relay is not there now: gone."""
        for pid, prior in list(self._priors.items()):
            if pid in self._tasks:
                continue
            del self._priors[pid]
            if prior.state is None or (prior.state.state != "up" and not prior.open_flows):
                continue
            for subject in sorted(prior.open_flows):
                await self._publish_now(subject, b"{}", {Header.KIND: "gone"})
            if prior.state.state == "up":
                gone = PiState(
                    state="gone",
                    host=self.host_id,
                    pid=pid,
                    epoch=prior.state.epoch,
                    forwarder=self.forwarder_id,
                    detail="its relay is gone (found by a restarted forwarder)",
                )
                await self._publish_now(
                    self.names.state(self.host_id, pid), msgspec.json.encode(gone), {}
                )

    async def _publish_now(self, subject: str, body: bytes, headers: dict[str, str]) -> None:
        with contextlib.suppress(nats.errors.Error, OSError, asyncio.TimeoutError):
            await self.js.publish(subject, body, timeout=5.0, headers=headers)

    # --- liveness ---

    async def _beat(self) -> None:
        if self._lease is None or self._lost.is_set():
            # Silent until the host is ours (another forwarder may hold it: we follow nothing
            # then), and after it was taken from us.
            return
        await self._publish_beat(expected=self._lease)

    async def _publish_beat(self, *, expected: int, bye: bool = False) -> bool:
        """Publish our heartbeat if the last on the host's subject has sequence ``expected``
        (0: none); True when it was stored (the host is ours). Silent while away from the
        server: bridges cannot reach us then, and that silence is the truth."""
        nc = self._nc
        if nc is None or not nc.is_connected:
            return False
        beat = ForwarderBeat(
            host=self.host_id,
            forwarder=self.forwarder_id,
            interval=self._heartbeat,
            pids=[] if bye else self.pids,
            bye=bye,
            pid=os.getpid(),
            machine=socket.gethostname(),
        )
        subject = self.names.forwarder(self.host_id)
        headers = {Header.EXPECTED_LAST_SUBJECT_SEQUENCE: str(expected)}
        try:
            ack = await self.js.publish(
                subject, msgspec.json.encode(beat), timeout=2.0, headers=headers
            )
        except nats.js.errors.APIError as exc:
            if exc.err_code != JsCode.WRONG_LAST_SEQUENCE:
                log.debug("pi_ask_sdk.fleet: a heartbeat failed: %r", exc)
                return False
            return await self._lease_check(expected)
        except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
            log.debug("pi_ask_sdk.fleet: a heartbeat failed: %r", exc)
            return False
        self._lease = ack.seq
        return True

    async def _lease_check(self, expected: int) -> bool:
        """Our heartbeat was refused: the last one on the host is not ``expected``. Ours all
        the same (a retry after a lost acknowledgement)? Then the host is still ours."""
        try:
            last = await self.js.get_last_msg(
                self.names.forwarders_stream, self.names.forwarder(self.host_id)
            )
            beat = msgspec.json.decode(last.data or b"", type=ForwarderBeat)
        except nats.js.errors.NotFoundError:
            # Our last heartbeat expired while the stream could store none (no leader, no
            # quorum) and nobody took the host meanwhile: ours again, if nobody is quicker.
            return bool(expected) and await self._publish_beat(expected=0)
        except (nats.errors.Error, OSError, asyncio.TimeoutError, msgspec.DecodeError):
            return False  # (unreadable now: the next beat tries again)
        holder = beat.forwarder
        if holder == self.forwarder_id and not beat.bye:
            self._lease = last.seq
            return True
        if beat.bye and not expected and last.seq is not None:
            # Its forwarder stopped and gave the host up: ours, if nobody was quicker.
            return await self._publish_beat(expected=last.seq)
        if expected and not self._lost.is_set():
            log.error(
                "pi_ask_sdk.fleet: another forwarder (%s) took host %r: this one stops",
                holder,
                self.host_id,
            )
            self._lost.set()
        return False

    # --- presence ---

    async def _on_heartbeat(self, msg: Msg) -> None:
        try:
            beat = msgspec.json.decode(msg.data, type=Heartbeat)
        except msgspec.DecodeError:
            return
        if beat.role != "answerer" or (beat.hosts is not None and self.host_id not in beat.hosts):
            return
        if beat.bye:
            self._answerers.forget(beat.bridge)
        else:
            self._answerers.heard(beat.bridge, max(0.1, beat.interval) * self._presence_factor)

    def _answerer_changed(self, bridge: str, alive: bool) -> None:
        # The role changes with the first answerer to come and the last to go.
        if len(self._answerers) == (1 if alive else 0):
            self._roles_changed()

    def _roles_changed(self) -> None:
        role = self.relay_role
        log.info(
            "pi_ask_sdk.fleet: %s to the relays (answering bridges: %d)", role, len(self._answerers)
        )
        for link in self._links.values():
            link.transport.set_role(role)
        self._answer_changed.set()
        self._answer_changed = asyncio.Event()

    async def wait_taking_submits(self, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until ``run`` holds the host's lease and has
        subscribed to its Pis' submits (at the server); raises ``TimeoutError``."""
        await within(self._taking.wait(), timeout)

    async def wait_role(self, role: RelayRole, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until the forwarder tells its relays ``role``; raises
        ``TimeoutError``."""

        async def until() -> None:
            while self.relay_role != role:
                await self._answer_changed.wait()

        await within(until(), timeout)

    # --- submits ---

    async def _on_submit(self, msg: Msg) -> None:
        """A bridge's submit: a core NATS request, routed by pid to its Pi's link, which
        answers it (``delivery``); ``not_sent`` for a Pi not followed."""
        parsed = self.names.parse(msg.subject)
        if not msg.reply or parsed is None or parsed[0] != self.host_id:
            return
        if not self._relays_opened.is_set():  # (the relays found first are being opened)
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._relays_opened.wait(), 10.0)
        link = self._links.get(parsed[1])
        body = decode_body(msg)
        if link is None or body is None:
            why = f"Pi {parsed[1]} is not followed by its host's forwarder now"
            if body is None:
                why = "a submit that cannot be read"
            with contextlib.suppress(nats.errors.Error, OSError):
                await self.nc.publish(msg.reply, why.encode(), headers={Header.STATUS: NOT_SENT})
            return
        await link.submit(msg.reply, body)
