"""``pi-ask watch --nats URL``: the forms of every Pi of every host, as text or JSON lines.

One ordered consumer on the fleet's FLOWS stream (``DeliverPolicy.LAST_PER_SUBJECT``): first
the Pis up now and the forms open now (shown as already open), then everything that happens:
Pis coming up and going, forms started, completed or gone. A core subscription to the
Pis' result subjects shows the submit-results from now on (they are stored nowhere), and a
second consumer, on the FORWARDERS stream, each host's forwarder going silent or coming back.
Watching publishes nothing and never counts as an answerer.
Needs the extra ``pi-ask-sdk[nats]``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import logging
from collections.abc import Mapping

import msgspec
import nats.errors
import nats.js.errors
from nats.aio.msg import Msg

from pi_ask_core import COMPLETED, STARTED, SUBMIT_RESULT, decode_event
from pi_ask_sdk.fleet import FleetNames, FleetUnavailable, NatsOptions
from pi_ask_sdk.fleet.connection import connect_nats, jetstream_off
from pi_ask_sdk.fleet.follow import Follower
from pi_ask_sdk.fleet.liveness import Liveness
from pi_ask_sdk.fleet.protocol import ForwarderBeat, Header, PiState, TooLarge, decode_body

from .text import clean, echo, json_line
from .watch import Write, describe, shown

__all__ = ["FleetPrinter", "watch_fleet"]

log = logging.getLogger("pi_ask_sdk.fleet")

_GONE_WHY = {
    "grace": "no answering bridge within the relay's grace period: its call ended as a tool error",
}


class _Gone(msgspec.Struct):
    reason: str = ""


def _gone_reason(body: bytes) -> str:
    try:
        return msgspec.json.decode(body, type=_Gone).reason
    except msgspec.DecodeError:
        return ""


_STATE = msgspec.json.Decoder(PiState)
_TOO_LARGE = msgspec.json.Decoder(TooLarge)


def flow_id_of(token: str) -> str | None:
    """The flow id a flow subject's token was made from (``flow_token``), when it can be read
    back (a short id); None for a hashed one."""
    if not token.startswith("b"):
        return None
    data = token[1:]
    try:
        raw = base64.urlsafe_b64decode(data + "=" * (-len(data) % 4))
        return raw.decode("utf-8", "surrogatepass")
    except (ValueError, UnicodeDecodeError):
        return None


class FleetPrinter:
    """Prints what one fleet carries: ``flows(msg)`` handles the FLOWS stream's consumer,
    ``results(msg)`` the core subscription to the Pis' submit-results. In the snapshot
    (``live`` False) only the Pis up and the forms open are shown; past endings are not news."""

    def __init__(self, names: FleetNames, write: Write, *, as_json: bool) -> None:
        self._names = names
        self._write = write
        self._json = as_json
        self.live = False
        self._flow_ids: dict[str, str] = {}  # flow subject -> flow id, while the form is open
        self.hosts_up: dict[str, set[int]] = {}  # host -> its Pis shown up
        self._epochs: dict[tuple[str, int], str] = {}  # (host, pid) -> its epoch shown up
        self.gone_forwarders: set[str] = set()
        self.server_lost = False

    def flows(self, msg: Msg) -> None:
        parsed = self._names.parse(msg.subject)
        body = decode_body(msg)
        if parsed is None or body is None:
            return
        host, pid, kind, token = parsed
        if kind == "state":
            self._state(host, pid, body)
        elif kind == "flow":
            flow_kind = (msg.headers or {}).get(Header.KIND, "")
            replay = not self.live or (msg.headers or {}).get(Header.REPLAY) == "1"
            self._flow(host, pid, msg.subject, token, flow_kind, body, replay)

    async def results(self, msg: Msg) -> None:
        parsed = self._names.parse(msg.subject)
        body = decode_body(msg)
        if parsed is not None and body is not None:
            self._event(parsed[0], parsed[1], SUBMIT_RESULT, body, replay=False)

    # --- what is printed ---

    def _state(self, host: str, pid: int, body: bytes) -> None:
        try:
            state = _STATE.decode(body)
        except msgspec.DecodeError:
            self._say(host, pid, "a state message that cannot be read", {"error": "bad state"})
            return
        pis = self.hosts_up.setdefault(host, set())
        before = self._epochs.pop((host, pid), None)
        if state.state == "up":
            pis.add(pid)
            self._epochs[host, pid] = state.epoch
        else:
            pis.discard(pid)
        if not self.live and state.state != "up":
            return
        record: dict[str, object] = {
            "state": state.state,
            "piVersion": state.pi_version,
            "cwd": state.cwd,
            "epoch": state.epoch,
            "sessionId": state.session_id,
        }
        if state.detail:
            record["detail"] = state.detail
        if state.state == "up" and before is not None:
            if before == state.epoch:
                return  # (a forwarder restart that vouches for its forms: nothing changed)
            # A new epoch: its session ended, or its forwarder cannot vouch for a time away;
            # bridges see SessionEnded("session_ended") and the forms open now.
            text = "session ended: its forms are reset (new epoch)"
            self._say(host, pid, text, {**record, "sessionEnded": True})
            return
        about = f"Pi {state.pi_version} in {state.cwd}" if state.state == "up" else state.detail
        self._say(host, pid, f"{state.state}: {about}".rstrip(": "), record)

    def _flow(
        self,
        host: str,
        pid: int,
        subject: str,
        token: str,
        kind: str,
        body: bytes,
        replay: bool,
    ) -> None:
        if kind == "started":
            event = decode_event(STARTED, body)
            flow_id = getattr(event, "flow_id", None)
            if isinstance(flow_id, str):
                self._flow_ids[subject] = flow_id
            self._event(host, pid, STARTED, body, replay=replay)
            return
        flow_id = self._flow_ids.pop(subject, None) or flow_id_of(token) or token
        if not self.live and kind != "too_large":
            return  # ended before we looked (a too_large marker is a form open now)
        if kind == "completed":
            self._event(host, pid, COMPLETED, body, replay=False)
        elif kind == "gone":
            why = _GONE_WHY.get(_gone_reason(body), "its session ended or its Pi exited")
            self._say(
                host,
                pid,
                f"gone {clean(flow_id)}: ended without a completion ({why})",
                {"gone": flow_id},
            )
        elif kind == "too_large":
            try:
                info = _TOO_LARGE.decode(body)
                size = f"{info.size} bytes, over the server's max_payload of {info.limit}"
                if flow_id == token:  # (a long id's token is its hash: the marker names it)
                    flow_id = info.flow_id
            except msgspec.DecodeError:
                size = "over the server's max_payload"
            self._say(
                host,
                pid,
                f"too large {clean(flow_id)}: {size}; no bridge can see it",
                {"tooLarge": flow_id},
            )

    def _event(self, host: str, pid: int, channel: str, body: bytes, *, replay: bool) -> None:
        event = decode_event(channel, body)
        try:
            if self._json:
                data = shown(event)
                line = {"host": host, "pid": pid, "channel": channel, "replay": replay}
                self._write(json_line({**line, "data": data}))
            else:
                self._write(f"[{clean(host)} pi {pid}] " + describe(channel, event, replay))
        except (RecursionError, ValueError, TypeError) as error:
            why = f"payload not printable ({type(error).__name__})"
            self._say(host, pid, f"{clean(channel)}: {why}", {"channel": channel, "error": why})

    def forwarder(self, host: str, alive: bool, silent: float) -> None:
        """A host's forwarder went silent past ``silent`` seconds, or beats again after."""
        if alive == (host not in self.gone_forwarders):
            return
        if alive:
            self.gone_forwarders.discard(host)
            text = "forwarder back: its Pis' open forms are served again"
        else:
            self.gone_forwarders.add(host)
            count = len(self.hosts_up.get(host, ()))
            text = (
                f"forwarder gone: no heartbeat for {silent:g} s; its {count} Pi(s) shown up "
                "cannot be answered (their forms are ended for bridges)"
            )
        if self._json:
            self._write(json_line({"host": host, "forwarder": "back" if alive else "gone"}))
        else:
            self._write(f"[{clean(host)}] {text}")

    def server(self, url: str, *, lost: bool) -> None:
        """The connection to the NATS server was lost (nats-py reconnects), or is back."""
        if lost == self.server_lost:
            return
        self.server_lost = lost
        if self._json:
            self._write(json_line({"server": "lost" if lost else "back"}))
        elif lost:
            self._write(f"server lost: reconnecting to {clean(url)}")
        else:
            self._write(f"server back: {clean(url)}")

    def _say(self, host: str, pid: int, text: str, record: Mapping[str, object]) -> None:
        if self._json:
            self._write(json_line({"host": host, "pid": pid, **record}))
        else:
            self._write(f"[{clean(host)} pi {pid}] {clean(text)}")


async def watch_fleet(
    options: NatsOptions,
    names: FleetNames | None = None,
    write: Write = echo,
    *,
    as_json: bool = False,
    duration: float | None = None,
    timeout: float = 10.0,
    forwarder_timeout: float = 10.0,
) -> int:
    """Print the fleet's Pis and forms until cancelled (or for ``duration`` seconds, or until
    the output is closed: ``BrokenPipeError``), and each host whose forwarder has not
    heartbeaten for ``forwarder_timeout`` seconds ("forwarder gone"; then "back"), and when the
    connection to the server is lost or back ("server lost"/"server back"). Raises
    ``FleetUnavailable`` when the server cannot be reached or the fleet's streams do not exist
    (no forwarder ever connected)."""
    names = names or FleetNames()
    if options.name is None:
        options = dataclasses.replace(options, name="pi-ask watch")
    broken = asyncio.Event()
    closing = False

    def guarded(text: str) -> None:
        try:
            write(text)
        except BrokenPipeError:
            broken.set()

    printer = FleetPrinter(names, guarded, as_json=as_json)

    async def lost() -> None:
        if not closing:  # (nats-py calls it on close too)
            printer.server(options.shown_url, lost=True)

    async def back() -> None:
        printer.server(options.shown_url, lost=False)

    nc = await connect_nats(options, disconnected_cb=lost, reconnected_cb=back)
    js = nc.jetstream()

    def on_flow(msg: Msg) -> None:
        # Caught up is set once the last message of the snapshot has been handled: what comes
        # before it is the fleet as it was when we looked, what comes after is news.
        printer.live = flows.caught_up
        printer.flows(msg)

    flows = Follower(js, names.flows_stream, f"{names.prefix}.>", on_flow)
    # The forwarders' liveness, as the bridges count it (pi_ask_sdk.fleet.liveness).
    alive = Liveness(lambda host, up: printer.forwarder(host, up, forwarder_timeout))

    def on_beat(msg: Msg) -> None:
        try:
            beat = msgspec.json.decode(msg.data, type=ForwarderBeat)
        except msgspec.DecodeError:
            return
        if msg.subject == names.forwarder(beat.host):
            alive.heard(beat.host, forwarder_timeout)

    async def on_beat_sent(msg: Msg) -> None:
        on_beat(msg)

    # The heartbeats as they are stored (the last of each host at start), and as they are sent
    # on their core subject, as a bridge hears them: a stream without a leader (an election, a
    # cluster without a quorum) stores none while the forwarders are alive and beat.
    beats = Follower(js, names.forwarders_stream, names.all_forwarders, on_beat)
    try:
        for stream in (names.flows_stream,):
            try:
                await js.stream_info(stream)
            except nats.js.errors.NotFoundError:
                raise FleetUnavailable(
                    options.shown_url,
                    f"the fleet's stream {stream} does not exist: no forwarder has connected "
                    f"with the prefix {names.prefix!r} yet (pi-ask forward --nats URL)",
                ) from None
            except (nats.errors.Error, OSError, asyncio.TimeoutError) as exc:
                raise FleetUnavailable(options.shown_url, jetstream_off(exc)) from exc
        if not as_json:
            guarded(
                f"watching the fleet at {options.shown_url} (prefix {names.prefix}; Ctrl-C stops)"
            )
        try:
            await nc.subscribe(names.all_results, cb=printer.results)
            await flows.start(timeout)
        except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
            raise FleetUnavailable(
                options.shown_url, f"the streams cannot be read ({exc!r})"
            ) from exc
        try:
            await nc.subscribe(names.all_forwarders, cb=on_beat_sent)  # (first: none between)
            await beats.start(timeout)
        except (asyncio.TimeoutError, nats.errors.Error, OSError) as exc:
            # (forwarders older than their heartbeats: no FORWARDERS stream)
            log.info("pi_ask_sdk.fleet: watch: no forwarder heartbeats (%r)", exc)
        else:
            for host, pis in printer.hosts_up.items():
                if pis and not alive.alive(host):  # silent already when the watch started
                    printer.forwarder(host, False, forwarder_timeout)
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(broken.wait(), duration)
        if broken.is_set():
            raise BrokenPipeError(32, "the output was closed")
    finally:
        # Bounded: removing an ephemeral consumer is a request the server may answer late (a
        # consumer it has not yet seen go is dropped by the server itself when idle).
        closing = True
        alive.close()
        for follower in (flows, beats):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(follower.stop(), 2)
        with contextlib.suppress(nats.errors.Error, OSError, asyncio.TimeoutError):
            await asyncio.wait_for(nc.close(), 5)
    return 0
