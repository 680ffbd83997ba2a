"""``pi-ask doctor --nats URL``: what the fleet looks like from the broker, and what is wrong.

It reads, and publishes nothing but a presence probe (which makes every answering bridge
heartbeat at once): the server and its JetStream, the fleet's streams, each host's forwarder
(alive while its last heartbeat is kept: ``forwarder_timeout`` seconds, as the bridges count
it), the Pis up and their open forms (the FLOWS stream's last word on each), and the answering
bridges alive (their heartbeats; observers never heartbeat, so none is counted). Needs the
extra ``pi-ask-sdk[nats]``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext

from pi_ask_sdk.fleet import FleetNames, FleetUnavailable, NatsOptions
from pi_ask_sdk.fleet.connection import connect_nats, jetstream_off
from pi_ask_sdk.fleet.follow import Follower
from pi_ask_sdk.fleet.protocol import ForwarderBeat, Header, Heartbeat, PiState, decode_body

from .doctor import Check
from .text import clean, json_line

__all__ = ["FleetSurvey", "HostSeen", "PiSeen", "doctor_fleet", "fleet_checks", "survey_fleet"]

_STATE = msgspec.json.Decoder(PiState)
_HEARTBEAT = msgspec.json.Decoder(Heartbeat)


@dataclass
class PiSeen:
    """A Pi the FLOWS stream shows as up, and how many of its forms are open."""

    host: str
    pid: int
    pi_version: str
    cwd: str
    open_forms: int = 0


@dataclass
class HostSeen:
    """A host the fleet knows: whether its forwarder heartbeats now (``forwarder``), its Pis
    up."""

    host: str
    forwarder: bool = False
    pis: list[PiSeen] = field(default_factory=list)


@dataclass
class FleetSurvey:
    """What ``survey_fleet`` found. ``error``: why it stopped early (then the rest is partial)."""

    url: str
    prefix: str
    server: str = ""
    jetstream: bool = False
    streams: dict[str, int | None] = field(default_factory=dict)  # name -> messages, None: missing
    hosts: dict[str, HostSeen] = field(default_factory=dict)
    answerers: list[str] = field(default_factory=list)
    error: str = ""

    @property
    def pis(self) -> list[PiSeen]:
        return [pi for host in self.hosts.values() for pi in host.pis]


async def survey_fleet(
    options: NatsOptions, names: FleetNames | None = None, *, listen: float = 1.5
) -> FleetSurvey:
    """Look at the fleet: connect, read the streams, probe the bridges and listen ``listen``
    seconds for their heartbeats. Never raises for a fleet problem: ``error`` says what
    stopped the survey (an unreachable server, JetStream off)."""
    names = names or FleetNames()
    found = FleetSurvey(options.shown_url, names.prefix)
    options = dataclasses.replace(
        options, name=options.name or "pi-ask doctor", max_reconnect_attempts=1
    )
    try:
        nc = await connect_nats(options)
    except FleetUnavailable as exc:
        found.error = exc.detail  # (connect_nats words it: "nothing answers there (...)")
        return found
    try:
        version = nc.connected_server_version
        found.server = f"nats-server {version.major}.{version.minor}.{version.patch}"
        await _survey(nc, names, found, listen)
    finally:
        with contextlib.suppress(nats.errors.Error, OSError, asyncio.TimeoutError):
            await asyncio.wait_for(nc.close(), 5)
    return found


async def _survey(nc: Client, names: FleetNames, found: FleetSurvey, listen: float) -> None:
    bridges: dict[str, str] = {}

    def on_beat(msg: Msg) -> None:
        with contextlib.suppress(msgspec.DecodeError):
            beat = _HEARTBEAT.decode(msg.data)
            if beat.bye:
                bridges.pop(beat.bridge, None)
            else:
                bridges[beat.bridge] = beat.role

    async def beat_cb(msg: Msg) -> None:
        on_beat(msg)

    # Heard from the start, so the answers to our probe are not missed.
    subscription = await nc.subscribe(names.all_bridges, cb=beat_cb)
    loop = asyncio.get_running_loop()
    heard_until = loop.time() + listen
    try:
        await nc.publish(names.probe, b"")
        await nc.flush(5)
        js = nc.jetstream()
        try:
            await js.account_info()
            found.jetstream = True
        except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
            found.error = jetstream_off(exc)
            return
        try:
            await _streams(js, names, found)
        except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
            found.error = f"reading the fleet's streams failed: {exc!r}"
            return
        # (a collection window, bounded: heartbeats come once a second, probed ones at once)
        await asyncio.sleep(max(0.0, heard_until - loop.time()))
    finally:
        with contextlib.suppress(nats.errors.Error, OSError):
            await subscription.unsubscribe()
    found.answerers = sorted(b for b, role in bridges.items() if role == "answerer")


async def _streams(js: JetStreamContext, names: FleetNames, found: FleetSurvey) -> None:
    for stream in (names.flows_stream, names.forwarders_stream):
        try:
            info = await js.stream_info(stream)
            found.streams[stream] = info.state.messages
        except nats.js.errors.NotFoundError:
            found.streams[stream] = None
    if found.streams.get(names.forwarders_stream) is not None:
        await _forwarders(js, names, found)
    if found.streams.get(names.flows_stream) is not None:
        await _pis(js, names, found)


async def _forwarders(js: JetStreamContext, names: FleetNames, found: FleetSurvey) -> None:
    """The hosts whose forwarder heartbeats: FORWARDERS keeps each host's last heartbeat for
    ``forwarder_timeout`` seconds (``max_age``), the timeout bridges count a forwarder gone
    after (pi_ask_sdk.fleet.liveness); a goodbye is no heartbeat."""
    beats: dict[str, ForwarderBeat] = {}

    def on_beat(msg: Msg) -> None:
        with contextlib.suppress(msgspec.DecodeError):
            beat = msgspec.json.decode(msg.data, type=ForwarderBeat)
            if msg.subject == names.forwarder(beat.host):
                beats[beat.host] = beat

    follower = Follower(js, names.forwarders_stream, names.all_forwarders, on_beat)
    try:
        await follower.start(10.0)
    finally:
        with contextlib.suppress(asyncio.TimeoutError):  # (as in watch_fleet)
            await asyncio.wait_for(follower.stop(), 2)
    for host, beat in beats.items():
        found.hosts.setdefault(host, HostSeen(host)).forwarder = not beat.bye


async def _pis(js: JetStreamContext, names: FleetNames, found: FleetSurvey) -> None:
    states: dict[tuple[str, int], PiState] = {}
    open_forms: dict[tuple[str, int], int] = {}

    def on_msg(msg: Msg) -> None:
        parsed = names.parse(msg.subject)
        if parsed is None:
            return
        key = (parsed[0], parsed[1])
        if parsed[2] == "state":
            body = decode_body(msg)
            with contextlib.suppress(msgspec.DecodeError):
                states[key] = _STATE.decode(body or b"")
        elif parsed[2] == "flow" and (msg.headers or {}).get(Header.KIND) == "started":
            open_forms[key] = open_forms.get(key, 0) + 1

    follower = Follower(js, names.flows_stream, f"{names.prefix}.>", on_msg)
    try:
        await follower.start(10.0)
    finally:
        with contextlib.suppress(asyncio.TimeoutError):  # (as in watch_fleet)
            await asyncio.wait_for(follower.stop(), 2)
    for (host_id, pid), state in sorted(states.items()):
        if state.state != "up":
            continue
        host = found.hosts.setdefault(host_id, HostSeen(host_id))
        host.pis.append(
            PiSeen(host_id, pid, state.pi_version, state.cwd, open_forms.get((host_id, pid), 0))
        )


def fleet_checks(found: FleetSurvey) -> list[Check]:
    """The survey as checks, in the order a person fixes things."""
    where = f"{found.url} (prefix {found.prefix})"
    if not found.server:
        return [Check("fail", "nats server", f"cannot reach {found.url}: {found.error}")]
    checks = [Check("ok", "nats server", f"{found.url}: {found.server}")]
    if not found.jetstream:
        return [*checks, Check("fail", "jetstream", found.error)]
    if found.error:
        return [*checks, Check("fail", "streams", found.error)]
    missing = [name for name, count in found.streams.items() if count is None]
    for name, count in found.streams.items():
        if count is not None:
            checks.append(Check("ok", f"stream {name}", f"{count} message(s)"))
    if missing:
        checks.append(
            Check(
                "fail",
                "streams",
                f"missing on {where}: {', '.join(missing)}; no forwarder has connected with "
                "this prefix yet: run pi-ask forward --nats URL on each host (or check --prefix)",
            )
        )
        return checks
    if not found.hosts:
        checks.append(
            Check(
                "fail",
                "forwarders",
                f"none has ever connected to {where}: run pi-ask forward --nats URL on each host",
            )
        )
    for host in sorted(found.hosts.values(), key=lambda h: h.host):
        checks.append(_host_check(host))
    checks.append(_pis_check(found))
    if found.answerers:
        checks.append(
            Check(
                "ok",
                "answerers",
                f"{len(found.answerers)} answering bridge(s) alive: {', '.join(found.answerers)}",
            )
        )
    else:
        checks.append(
            Check(
                "warn",
                "answerers",
                "no answering bridge is alive: headless Pis answer their forms with the "
                "fallback, and a Pi started by pi-ask try waits for a bridge (start your "
                "bridge, e.g. python examples/fleet_bridge.py)",
            )
        )
    return checks


def _pis_check(found: FleetSurvey) -> Check:
    # Only the Pis of hosts whose forwarder is connected can be answered; the others are
    # counted apart (their hosts' checks failed just above).
    served = [pi for pi in found.pis if found.hosts[pi.host].forwarder]
    stranded = [pi for pi in found.pis if not found.hosts[pi.host].forwarder]
    gone = ""
    if stranded:
        hosts = len({pi.host for pi in stranded})
        gone = (
            f"{len(stranded)} Pi(s) up on {hosts} host(s) whose forwarder is gone cannot be "
            "answered"
        )
    if not served:
        return Check("warn", "pis", gone or "no Pi with the relay is up on any host")
    hosts = len({pi.host for pi in served})
    forms = sum(pi.open_forms for pi in served)
    detail = f"{len(served)} Pi(s) up on {hosts} host(s), {forms} open form(s)"
    return Check("ok", "pis", f"{detail}; {gone}" if gone else detail)


def _host_check(host: HostSeen) -> Check:
    what = f"host {host.host}"
    pis = ", ".join(
        f"pi {pi.pid} (Pi {pi.pi_version} in {pi.cwd}, {pi.open_forms} open form(s))"
        for pi in host.pis
    )
    if not host.forwarder:
        if host.pis:
            return Check(
                "fail",
                what,
                f"its forwarder is not connected; {len(host.pis)} Pi(s) shown up cannot be "
                f"answered until it returns (their submits are not sent meanwhile): {pis}",
            )
        return Check("warn", what, "its forwarder is not connected (no Pi of it is up)")
    if not host.pis:
        return Check("ok", what, "forwarder connected; no Pi up")
    return Check("ok", what, f"forwarder connected; {len(host.pis)} Pi(s): {pis}")


def doctor_fleet(
    options: NatsOptions,
    names: FleetNames | None = None,
    write: Callable[[str], None] = print,
    *,
    as_json: bool = False,
    listen: float = 1.5,
) -> int:
    """Print the fleet's checks (one JSON object with ``as_json``); exit status 1 when any
    failed (an unreachable server is a failed check), as ``pi-ask doctor``."""
    found = asyncio.run(survey_fleet(options, names, listen=listen))
    checks = fleet_checks(found)
    failed = sum(check.status == "fail" for check in checks)
    if as_json:
        fleet = {
            "hosts": [
                {
                    "host": host.host,
                    "forwarder": host.forwarder,
                    "pis": [
                        {
                            "pid": pi.pid,
                            "piVersion": pi.pi_version,
                            "cwd": pi.cwd,
                            "openForms": pi.open_forms,
                        }
                        for pi in host.pis
                    ],
                }
                for host in sorted(found.hosts.values(), key=lambda h: h.host)
            ],
            "openForms": sum(pi.open_forms for pi in found.pis),
            "answerers": found.answerers,
        }
        report = {
            "ok": not failed,
            "nats": found.url,
            "prefix": found.prefix,
            "checks": [asdict(check) for check in checks],
            "fleet": fleet,
        }
        write(json_line(report, indent=2))
    else:
        for check in checks:
            # (hosts, cwds and versions come from the far end: shown inert, on one line: a
            # line break in a Pi's cwd must not start a check line of its own)
            write(f"[{check.status:>4}] {clean(check.what)}: {clean(check.detail)}")
        write("all good" if not failed else f"{failed} problem(s) found")
    return 1 if failed else 0
