"""``Forwarder``: every relay of this host, mirrored to NATS JetStream, and the submits back."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import re
import secrets
import socket
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

from pi_ask_core import SUBMIT, Skipped, SubmitEvent, decode_event
from pi_ask_sdk._tasks import cancel_and_wait, within
from pi_ask_sdk.errors import ConnectionLost
from pi_ask_sdk.transports.relay import RelayRole, discover_relays, replace_lone_surrogates

from ._book import SubmitBook, SubmitKey
from ._link import PiLink, Prior
from .connection import NatsOptions, close_nats, connect_nats, ensure_streams
from .errors import FleetUnavailable
from .follow import Follower
from .liveness import Beater, Liveness
from .protocol import (
    FleetNames,
    FleetSettings,
    ForwarderBeat,
    Header,
    Heartbeat,
    PiState,
    check_host_id,
    decode_body,
    forwarder_consumer_config,
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

    Liveness: it heartbeats every ``heartbeat`` seconds on ``<p>._forwarder.<host>`` (kept in
    the FORWARDERS stream) once ``run`` has bound the host's submit consumer (a second
    forwarder of the same host waits there, silent, following no relay, until the first is
    gone); bridges report the Pis of a host silent past ``FleetSettings.forwarder_timeout``
    ended.

    Outages: each Pi's events wait for the server in a queue of at most ``max_queued``
    messages and ``max_queued_bytes`` bytes; on overflow that Pi's view is reset for the
    bridges (a new epoch, its open forms again) once the server is back: nothing is lost
    silently (docs/fleet.md, Delivery semantics).

    Presence: the forwarder tells its relays it is an answerer only while at least one
    answering bridge heartbeats (for this host, or for every host); a bridge counts as gone
    ``presence_factor`` heartbeat intervals after its last heartbeat, at once when it says bye.

    ``setup=False`` creates no stream (they and this host's durable consumer were made by an
    administrator: docs/fleet.md, Security); ``ack_wait`` is the submit consumer's (seconds).

    Raises ``FleetUnavailable`` (from ``open``) when NATS or its JetStream is unreachable.
    """

    __module__ = "pi_ask_sdk.fleet"  # documented where users import it from

    def __init__(
        self,
        options: NatsOptions | str = "nats://127.0.0.1:4222",
        *,
        host_id: str | None = None,
        directory: Path | None = None,
        names: FleetNames | None = None,
        settings: FleetSettings | None = None,
        poll: float = 1.0,
        presence_factor: float = 3.0,
        idle_heartbeat: float = 1.0,
        ack_wait: float = 10.0,
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
        self._ack_wait = ack_wait
        self._setup = setup
        self._heartbeat = heartbeat
        self.max_queued = max_queued
        self.max_queued_bytes = max_queued_bytes
        self._beater = Beater(self._beat, heartbeat)
        self.forwarder_id = secrets.token_hex(6)
        self.book = SubmitBook()
        self.closing = False
        self._nc: Client | None = None
        self._js: JetStreamContext | None = None
        self._links: dict[int, PiLink] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}
        self._priors: dict[int, Prior] = {}
        self._answerers = Liveness(self._answerer_changed)  # answering bridges, by id
        self._answer_changed = asyncio.Event()
        self._submits: JetStreamContext.PushSubscription | None = None
        self._taking = asyncio.Event()
        self._replying: set[asyncio.Task[None]] = set()
        self._backlog_done = asyncio.Event()  # SUBMITS delivered its last waiting submit
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
        self._nc = await connect_nats(options)
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

    async def _bind_submits(self, stop: asyncio.Event) -> bool:
        """Bind the host's durable submit consumer: the forwarder bound to it is the host's one
        forwarder, another one waits here (as for a killed forwarder's binding, which lingers
        until the server notices its connection is gone: retried, bounded). False when ``stop``
        was set meanwhile. Its submits wait until ``_take_submits``."""
        config = forwarder_consumer_config(self.names, self.host_id, ack_wait=self._ack_wait)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60.0
        delay = 0.05
        while True:
            try:
                self._submits = await self.js.subscribe(
                    self.names.host_submits(self.host_id),
                    durable=self.names.forwarder_consumer(self.host_id),
                    stream=self.names.submits_stream,
                    config=config,
                    manual_ack=True,
                    cb=self._on_submit,
                )
                await self._beater.now()  # the host's forwarder from now on: bridges count on it
                break
            except nats.js.errors.Error as exc:
                if loop.time() + delay > deadline:
                    raise FleetUnavailable(
                        self._options.shown_url, f"cannot take this host's submits ({exc})"
                    ) from exc
                log.info("pi_ask_sdk.fleet: waiting for the submit consumer: %s", exc)
            # backoff: no event tells that the other binding is gone
            with contextlib.suppress(asyncio.TimeoutError):
                await within(stop.wait(), delay)
            if stop.is_set() or self.closing:
                return False
            delay = min(delay * 2, 1.0)
        return True

    async def _take_submits(self) -> None:
        """Take the submits that waited in SUBMITS, then the direct ones."""
        self._relays_opened.set()
        # Direct submits (core NATS requests) are taken once the submits that waited in
        # SUBMITS were (bounded): until then a bridge's request finds no responder and queues
        # behind them, so that submits sent while the forwarder was away keep their order.
        await self._wait_backlog(10.0)
        await self.nc.subscribe(
            self.names.host_direct(self.host_id),
            queue=self.names.forwarder_queue(self.host_id),
            cb=self._on_direct,
        )
        self._taking.set()
        log.info("pi_ask_sdk.fleet: taking the submits of host %s", self.host_id)

    async def _wait_backlog(self, timeout: float) -> None:
        subscription = self._submits
        if subscription is None:
            return
        try:
            info = await subscription.consumer_info()
        except (nats.errors.Error, OSError, asyncio.TimeoutError):
            return
        if info.num_pending or info.num_ack_pending:
            with contextlib.suppress(asyncio.TimeoutError):
                await within(self._backlog_done.wait(), timeout)

    async def close(self) -> None:
        """Stop following the relays (their Pis stay up in the fleet: a forwarder restart finds
        them again), stop taking submits, disconnect."""
        if self.closing:
            return
        self.closing = True
        self._answerers.close()
        await self._beater.stop()
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

        It first binds the host's submit consumer: while another forwarder of the same host
        runs (bound to it), this one waits, following no relay (the bridges would see each
        form twice), at most 60 s (then ``FleetUnavailable``), or until ``stop``.

        Raises:
            FleetUnavailable: The submit consumer stayed bound to another forwarder, or this
                host's state cannot be read.
        """
        stop = asyncio.Event() if stop is None else stop
        if not await self._bind_submits(stop):
            return
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
                    link = PiLink(self, info, prior)
                    self._links[info.pid] = link
                    self._tasks[info.pid] = loop.create_task(link.run())
            if first:
                first = False
                await self._mark_missing_gone()
                # Submits that waited in the stream (for a forwarder that was away) are taken
                # once the relays found now are open, so that none is dropped for want of one.
                await self._wait_opened(10.0)
                await self._take_submits()
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
        nc = self._nc
        if nc is None or not nc.is_connected or self._submits is None:
            # Silence while away from the server is the truth (bridges cannot reach us), and
            # until we are bound to this host's submits (another forwarder may be: we follow
            # nothing then).
            return
        beat = ForwarderBeat(
            host=self.host_id,
            forwarder=self.forwarder_id,
            interval=self._heartbeat,
            pids=self.pids,
        )
        with contextlib.suppress(nats.errors.Error, OSError):
            await nc.publish(self.names.forwarder(self.host_id), msgspec.json.encode(beat))

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
        """Wait (at most ``timeout`` s) until ``run`` has opened the relays it found first,
        bound this host's submit consumer and subscribed to its direct submits; raises
        ``TimeoutError``."""
        await within(self._taking.wait(), timeout)

    async def wait_role(self, role: RelayRole, timeout: float) -> None:
        """Wait (at most ``timeout`` s) until the forwarder tells its relays ``role``; raises
        ``TimeoutError``."""

        async def until() -> None:
            while self.relay_role != role:
                await self._answer_changed.wait()

        await within(until(), timeout)

    # --- submits ---

    async def _on_direct(self, msg: Msg) -> None:
        """A direct submit: a core NATS request, answered on its reply subject with the
        submit-result (or a ``not_sent`` status). Never taken twice: a request that got no
        answer in time comes again through SUBMITS marked re-sent (``_take``)."""
        parsed = self.names.parse(msg.subject)
        if not msg.reply or parsed is None or parsed[0] != self.host_id:
            return
        headers = msg.headers or {}
        why = await self._take(
            parsed[1],
            headers.get(Header.BRIDGE, ""),
            headers.get(Header.SUBMIT, ""),
            _decode_submit(decode_body(msg) or b""),
            reply=msg.reply,
        )
        if why:
            await self._reply([msg.reply], why.encode(), {Header.STATUS: "not_sent"})

    async def _on_submit(self, msg: Msg) -> None:
        """A submit from SUBMITS (a bridge's fallback: no forwarder took its direct request, or
        it got no answer in time), acknowledged before the relay gets it."""
        await self._relays_opened.wait()  # (bound before the relays are followed: ``run``)
        try:
            await self._take_stored(msg)
        finally:
            if not self._backlog_done.is_set():
                with contextlib.suppress(nats.errors.Error, ValueError):
                    if msg.metadata.num_pending == 0:
                        self._backlog_done.set()

    async def _take_stored(self, msg: Msg) -> None:
        parsed = self.names.parse(msg.subject)
        if parsed is None or parsed[0] != self.host_id:
            await _term(msg)
            return
        headers = msg.headers or {}
        event = _decode_submit(decode_body(msg) or b"")
        if not isinstance(event, SubmitEvent):
            log.warning("pi_ask_sdk.fleet: dropped a submit that is not one: %s", event.detail)
            await _term(msg)
            return
        try:
            # Acknowledged (and the server's receipt awaited) before the relay gets it: a
            # forwarder killed in between loses the submit (its bridge times out), but a
            # submit is never given to Pi twice.
            await msg.ack_sync(timeout=2.0)
        except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
            log.info("pi_ask_sdk.fleet: a submit's ack failed (it comes again): %r", exc)
            return
        await self._take(
            parsed[1],
            headers.get(Header.BRIDGE, ""),
            headers.get(Header.SUBMIT, ""),
            event,
            resent=headers.get(Header.RESENT) == "1",
        )

    async def _take(
        self,
        pid: int,
        transport_id: str,
        submit_id: str,
        event: SubmitEvent | Skipped,
        *,
        reply: str | None = None,
        resent: bool = False,
    ) -> str:
        """Give a submit to Pi ``pid``'s relay once. Returns why it surely was not given (for
        a direct request's ``not_sent`` reply), or ``""``."""
        if not isinstance(event, SubmitEvent):
            log.warning(
                "pi_ask_sdk.fleet: dropped a submit for Pi %d that is not one: %s", pid, event
            )
            return f"not a submit: {event.detail}"
        key: SubmitKey = (pid, transport_id, event.flow_id, event.request_id, submit_id)
        link = self._links.get(pid)
        if link is not None and not link.opened.is_set():
            with contextlib.suppress(asyncio.TimeoutError):
                await within(link.opened.wait(), 10.0)
        # Read after that wait: another copy of this submit (direct, or re-sent) may have been
        # taken meanwhile.
        seen = self.book.seen(key)
        if isinstance(seen, bytes):
            # Came again after it was answered: the same acknowledgement again.
            headers = {Header.SUBMIT: submit_id} if submit_id else {}
            if reply:
                await self._reply([reply], seen, headers)
            elif link is not None:
                link._put(self.names.result(self.host_id, pid, transport_id), seen, headers)
            return ""
        if seen == "in_flight":
            self.book.wait(key, reply)  # its result will go this way too
            return ""
        if link is None or not link.transport.is_connected:
            log.info("pi_ask_sdk.fleet: a submit for Pi %d, which is not followed now", pid)
            return f"Pi {pid} is not followed by its host's forwarder now"
        if resent and event.flow_id not in link.open_flows:
            # Its direct request may have answered this form before another forwarder took
            # over: given to Pi again it would tell the bridge flow_not_found, which may be
            # false. Its outcome is unknown; the bridge times out (SubmitTimedOut).
            log.info(
                "pi_ask_sdk.fleet: a re-sent submit for a form of Pi %d that is not open: dropped",
                pid,
            )
            return ""
        self.book.sent(key, submit_id, reply, unsure=resent)
        try:
            await link.transport.send(event)
        except ConnectionLost as exc:
            self.book.unsent(key)
            log.info("pi_ask_sdk.fleet: a submit for Pi %d was not delivered: %s", pid, exc)
            return f"not delivered to Pi {pid}: {exc}"
        return ""

    async def _reply(self, subjects: list[str], body: bytes, headers: dict[str, str]) -> None:
        """Answer a direct request, in order on each of ``subjects`` (core NATS: if its bridge
        is gone, nobody hears it)."""
        nc = self._nc
        if nc is None:
            return
        with contextlib.suppress(nats.errors.Error, OSError):
            for subject in subjects:
                await nc.publish(subject, body, headers=headers or None)

    def reply_soon(self, subjects: list[str], body: bytes, headers: dict[str, str]) -> None:
        """Publish ``body`` to ``subjects`` in order (core NATS), from synchronous code (a
        relay event's handler)."""
        task = asyncio.get_running_loop().create_task(self._reply(subjects, body, headers))
        self._replying.add(task)
        task.add_done_callback(self._replying.discard)


def _decode_submit(body: bytes) -> SubmitEvent | Skipped:
    event = decode_event(SUBMIT, body)
    if not isinstance(event, SubmitEvent) and b"\\u" in body:
        # A lone surrogate escape (a bridge's text, written as JavaScript would): the one
        # decode rule for such text, as for relay input, is U+FFFD; the host judges it.
        event = decode_event(SUBMIT, replace_lone_surrogates(body))
    return event


async def _term(msg: Msg) -> None:
    with contextlib.suppress(nats.errors.Error, OSError, asyncio.TimeoutError):
        await msg.term()
