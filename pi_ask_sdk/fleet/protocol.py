"""The fleet's protocol, in one place (docs/fleet.md): every NATS subject, stream and header
name, the records on them, the streams' configurations, how a body is encoded, and the named
JetStream error codes and nats-py status the fleet reads. Nothing outside this module writes a
subject shape or a JetStream code.

Subjects (``<p>`` is the prefix, ``piask`` by default; ``<host>`` a host id; ``<pid>`` Pi's
process id; ``<flow>`` a token made from the flow id):

==================================  ==========  ==============================================
subject                             stream      what
==================================  ==========  ==============================================
``<p>.<host>.<pid>.state``          FLOWS       the Pi process: up (with its epoch) or gone
``<p>.<host>.<pid>.flow.<flow>``    FLOWS       one form: its started, completed, gone (ended)
``<p>.<host>.<pid>.submit``         (core)      a bridge's submit: a request its host's one
                                                forwarder answers with the submit-result
``<p>.<host>.<pid>.result``         (core)      each submit-result again, for watchers
``<p>._bridge.<bridge>``            (core)      a bridge's presence heartbeat (and its goodbye)
``<p>._probe``                      (core)      a forwarder asks every bridge to heartbeat now
``<p>._forwarder.<host>``           FORWARDERS  a host's forwarder's heartbeat: its presence,
                                                and its lease on the host
==================================  ==========  ==============================================

JetStream keeps only what must outlive a process: the forms and Pi states (FLOWS) and the
forwarders' presence (FORWARDERS). A submit is never stored: the delivery rules are
``pi_ask_sdk.fleet.delivery``'s.

FORWARDERS keeps one message per host for ``FleetSettings.forwarder_timeout`` seconds
(``max_age``): a host with no message there has no live forwarder; a bridge that hears none
from a host for that long reports that host's Pis ended (``docs/fleet.md``, Forwarder
liveness). It is also the host's lease (one forwarder per host): a forwarder publishes its
first heartbeat only if the host has none (``Header.EXPECTED_LAST_SUBJECT_SEQUENCE`` ``0``),
and each next one only if the last is its own (that sequence): a second forwarder of the host
is refused (``JsCode.WRONG_LAST_SEQUENCE``) until the first has been silent for
``forwarder_timeout`` seconds. The heartbeat is the lease, so "alive" and "holds the host" can
never disagree, and it needs no stream or bucket of its own.

FLOWS keeps one message per subject (``max_msgs_per_subject=1``): the last word on each form
and each Pi. A bridge reads it with one ordered consumer, ``DeliverPolicy.LAST_PER_SUBJECT``
filtered to one Pi: the snapshot (forms open now, never a completed one as open) and then the
tail, from one consumer, so nothing falls between the two.
"""

from __future__ import annotations

import base64
import hashlib
import logging
import re
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

import msgspec
import nats.js.api
from nats.aio.msg import Msg
from nats.js.api import DiscardPolicy, RetentionPolicy, StorageType, StreamConfig

from pi_ask_sdk.errors import InvalidArgument

from .errors import FleetPayloadTooLarge

log: Final = logging.getLogger("pi_ask_sdk.fleet")

__all__ = [
    "COMPRESS_OVER",
    "DEFAULT_PREFIX",
    "ENCODER",
    "FORWARDER_BEAT_DECODER",
    "HEARTBEAT_DECODER",
    "STATE_DECODER",
    "TOO_LARGE_DECODER",
    "FleetNames",
    "FleetSettings",
    "FlowKind",
    "ForwarderBeat",
    "Header",
    "Heartbeat",
    "JsCode",
    "NatsPermissions",
    "PiState",
    "TooLarge",
    "check_host_id",
    "decode_body",
    "encode_body",
    "flow_token",
]

DEFAULT_PREFIX: Final = "piask"

FlowKind = Literal["started", "completed", "gone", "too_large"]
"""What a message on a flow subject is (its ``Pi-Ask-Kind`` header): the host's ``started`` or
``completed`` payload, unchanged; ``gone``: the form ended without a ``completed`` (its session
ended, its Pi exited, or it vanished while the forwarder was away); ``too_large``: its started
payload did not fit the server's ``max_payload`` (the body says how big it was)."""


class JsCode:
    """The JetStream API error codes (``APIError.err_code``) and nats-py status the fleet
    reads."""

    WRONG_LAST_SEQUENCE: Final = 10071
    """A publish whose expected last subject sequence is not the subject's: the host's lease
    is another forwarder's."""
    MESSAGE_TOO_LARGE: Final = 10054
    """A message over the stream's (or server's) maximum size: never retried."""
    STREAM_NOT_FOUND: Final = 10059
    """No such stream (e.g. no forwarder ever connected with this prefix)."""
    NO_MESSAGE: Final = 10037
    """No message on that subject (``get_last_msg``: e.g. no heartbeat within its max age)."""
    NO_RESPONDERS: Final = nats.js.api.StatusCode.SERVICE_UNAVAILABLE.value
    """The status of a request's reply when nobody subscribes to its subject."""
    STATUS: Final = nats.js.api.Header.STATUS.value
    """The header nats-py puts a reply's status in."""


class Header:
    """NATS header names the fleet sets."""

    KIND: Final = "Pi-Ask-Kind"
    """On a flow subject: its ``FlowKind``."""
    REPLAY: Final = "Pi-Ask-Replay"
    """``"1"`` on a ``started`` that was already open when the forwarder (re)connected."""
    ENCODING: Final = "Pi-Ask-Encoding"
    """``"zlib"`` when the body is zlib-compressed (bodies over ``COMPRESS_OVER`` bytes)."""
    STATUS: Final = "Pi-Ask-Status"
    """On a submit's reply that is not a submit-result: ``"not_sent"`` (the forwarder surely
    did not give the submit to Pi; the body says why)."""
    MSG_ID: Final = nats.js.api.Header.MSG_ID.value
    """JetStream's own de-duplication id (a forwarder's re-published event is stored once)."""
    EXPECTED_LAST_SUBJECT_SEQUENCE: Final = nats.js.api.Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value
    """The host's lease: a heartbeat is stored only if the subject's last is that sequence."""


class NatsPermissions(TypedDict):
    """A nats-server user's ``permissions`` for one side of the fleet: the ``allow`` lists of
    ``publish`` and ``subscribe``, and whether it may answer requests (``allow_responses``:
    publish once to the reply subject of each request it received)."""

    publish: list[str]
    subscribe: list[str]
    allow_responses: bool


COMPRESS_OVER: Final = 64 * 1024
"""Event and submit bodies longer than this are sent zlib-compressed (``Header.ENCODING``):
form JSON compresses well, so most forms far over 1 MiB still fit the server's max_payload."""

_HOST_ID: Final = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}")
_PID: Final = re.compile(r"0|[1-9][0-9]*")
_PREFIX: Final = re.compile(r"[A-Za-z0-9_-]+(\.[A-Za-z0-9_-]+)*")


def _reader_api(stream: str) -> list[str]:
    """JetStream API subjects of an ordered consumer of ``stream`` (create, info, delete, flow
    control). nats-py creates it by ``$JS.API.CONSUMER.CREATE.<stream>`` (no filter in the
    subject), so a reader of a stream may read all of it."""
    return [
        f"$JS.API.CONSUMER.CREATE.{stream}",
        f"$JS.API.CONSUMER.INFO.{stream}.*",
        f"$JS.API.CONSUMER.DELETE.{stream}.*",
        f"$JS.FC.{stream}.>",
    ]


def check_host_id(host: str) -> str:
    """``host`` if it can be a subject token: 1-64 of ``A-Z a-z 0-9 _ -``, not starting with
    ``_`` or ``-`` (``_`` starts the fleet's own subjects). Raises ``InvalidArgument`` (a
    ``ValueError``) otherwise."""
    if not isinstance(host, str) or _HOST_ID.fullmatch(host) is None:
        raise InvalidArgument(
            "check_host_id",
            "host",
            "a host id: 1-64 letters, digits, '_' or '-', starting with a letter or digit",
            host,
        )
    return host


def flow_token(flow_id: str) -> str:
    """The subject token for ``flow_id``: base64url (no padding) of its UTF-8 bytes, or for an
    id longer than 96 bytes (or not encodable) ``h`` + 40 hex digits of its SHA-256. A flow
    id may hold any character, a subject token only some."""
    data = flow_id.encode("utf-8", "surrogatepass")
    if len(data) <= 96:
        return "b" + base64.urlsafe_b64encode(data).decode("ascii").rstrip("=")
    return "h" + hashlib.sha256(data).hexdigest()[:40]


@dataclass(frozen=True, slots=True)
class FleetNames:
    """The subjects, streams and consumer names under one ``prefix`` (several fleets may share
    one NATS server with different prefixes). Stream names are ``<PREFIX>_<STREAM>`` in upper
    case, e.g. ``PIASK_FLOWS``."""

    prefix: str = DEFAULT_PREFIX

    def __post_init__(self) -> None:
        if _PREFIX.fullmatch(self.prefix) is None:
            raise InvalidArgument(
                "FleetNames",
                "prefix",
                "a subject prefix: dot-separated tokens of A-Z a-z 0-9 _ -",
                self.prefix,
            )

    # --- streams ---

    @property
    def _stem(self) -> str:
        return self.prefix.replace(".", "_").replace("-", "_").upper()

    @property
    def flows_stream(self) -> str:
        """The stream of Pi states and forms (one message per subject)."""
        return f"{self._stem}_FLOWS"

    @property
    def forwarders_stream(self) -> str:
        """The forwarders' heartbeats, one per host, each kept ``forwarder_timeout`` seconds."""
        return f"{self._stem}_FORWARDERS"

    # --- subjects ---

    def state(self, host: str, pid: int) -> str:
        """The subject of a Pi's state messages."""
        return f"{self.prefix}.{host}.{pid}.state"

    def flow(self, host: str, pid: int, flow_id: str) -> str:
        """The subject of one flow's events (its id made a subject token)."""
        return f"{self.prefix}.{host}.{pid}.flow.{flow_token(flow_id)}"

    def submit(self, host: str, pid: int) -> str:
        """Where a bridge sends a Pi's submits: core NATS requests its host's one forwarder
        answers (``pi_ask_sdk.fleet.delivery``)."""
        return f"{self.prefix}.{host}.{pid}.submit"

    def result(self, host: str, pid: int) -> str:
        """Where the forwarder publishes each of a Pi's submit-results again (core NATS,
        stored nowhere), for watchers: ``pi-ask watch`` shows every submit-result."""
        return f"{self.prefix}.{host}.{pid}.result"

    @property
    def all_results(self) -> str:
        """Every host's submit-results, as published for watchers."""
        return f"{self.prefix}.*.*.result"

    def bridge(self, bridge_id: str) -> str:
        """The subject of one bridge's presence heartbeats."""
        return f"{self.prefix}._bridge.{bridge_id}"

    def forwarder(self, host: str) -> str:
        """Where ``host``'s forwarder heartbeats."""
        return f"{self.prefix}._forwarder.{host}"

    @property
    def all_forwarders(self) -> str:
        """Every host's forwarder heartbeat subject (the FORWARDERS stream's)."""
        return f"{self.prefix}._forwarder.*"

    @property
    def probe(self) -> str:
        """The subject that asks every answering bridge to heartbeat now."""
        return f"{self.prefix}._probe"

    # --- filters ---

    def pi(self, host: str, pid: int) -> str:
        """Everything FLOWS holds on one Pi (its state and its forms)."""
        return f"{self.prefix}.{host}.{pid}.>"

    def host(self, host: str) -> str:
        """Everything FLOWS holds on one host's Pis."""
        return f"{self.prefix}.{host}.>"

    @property
    def all_states(self) -> str:
        """Every Pi's state subject (fleet discovery)."""
        return f"{self.prefix}.*.*.state"

    def host_submits(self, host: str) -> str:
        """The submits one host's forwarder answers."""
        return f"{self.prefix}.{host}.*.submit"

    @property
    def all_bridges(self) -> str:
        """Every bridge's heartbeats."""
        return f"{self.prefix}._bridge.*"

    # --- stream subject sets ---

    @property
    def flows_subjects(self) -> list[str]:
        """The subjects the flows stream holds."""
        return [f"{self.prefix}.*.*.state", f"{self.prefix}.*.*.flow.*"]

    @property
    def forwarders_subjects(self) -> list[str]:
        """The subjects of the FORWARDERS stream."""
        return [self.all_forwarders]

    # --- NATS permissions (docs/fleet.md, Security) ---

    def forwarder_permissions(self, host: str) -> NatsPermissions:
        """What ``host``'s forwarder needs to publish and subscribe to, and nothing more: its
        own Pis' state, flow and result subjects, its own heartbeat (its lease), the probe,
        reading FLOWS (its look back) and its heartbeat's last message (taking its lease back
        after a lost acknowledgement), its own inbox (``<p>_INBOX_<host>``; connect with
        ``NatsOptions(inbox_prefix=...)`` of the same), and its own Pis' submits, answered on
        each bridge's reply subject (``allow_responses``)."""
        p, flows, forwarders = self.prefix, self.flows_stream, self.forwarders_stream
        return {
            "publish": [
                f"{p}.{host}.*.state",
                f"{p}.{host}.*.flow.*",
                f"{p}.{host}.*.result",
                self.forwarder(host),
                self.probe,
                *_reader_api(flows),
                f"$JS.API.STREAM.MSG.GET.{forwarders}",
            ],
            "subscribe": [
                self.all_bridges,
                self.host_submits(host),
                self.inbox(host) + ".>",
            ],
            "allow_responses": True,
        }

    def bridge_permissions(self, bridge: str) -> NatsPermissions:
        """What a bridge (``Fleet``, with ``setup=False``) needs: send submits to every host
        and its presence heartbeat, read FLOWS and FORWARDERS, hear the forwarders' heartbeats
        as they are sent, its own inbox (``inbox(bridge)``: where its submits' replies come),
        and the bridges' heartbeats (a replica group's members). No forwarder subject to
        publish to: it cannot fake a form, a Pi, a forwarder or a submit-result. ``bridge``
        names the NATS user (it need not be ``Fleet``'s ``bridge_id``)."""
        return {
            "publish": [
                f"{self.prefix}.*.*.submit",
                self.all_bridges,
                *_reader_api(self.flows_stream),
                *_reader_api(self.forwarders_stream),
            ],
            "subscribe": [
                self.probe,
                self.all_forwarders,
                self.all_bridges,
                self.inbox(bridge) + ".>",
            ],
            "allow_responses": False,
        }

    def inbox(self, user: str) -> str:
        """An inbox prefix of one NATS user's own (``NatsOptions(inbox_prefix=...)``), so that
        no user may read another's replies or consumer deliveries."""
        return f"_INBOX_{self._stem}_{user}"

    def parse(self, subject: str) -> tuple[str, int, str, str] | None:
        """``(host, pid, kind, rest)`` of a per-Pi subject (``kind``: state, flow, submit or
        result; ``rest``: the token after it, or ``""``), or None for anything else (a pid
        token that is not a plain decimal number, e.g. ``012``)."""
        head = self.prefix + "."
        if not subject.startswith(head):
            return None
        parts = subject[len(head) :].split(".")
        # A pid token is a plain decimal number as the forwarder writes it: "012" or "²" (which
        # str.isdigit takes) would alias a Pi's subjects or fail int().
        if len(parts) < 3 or _PID.fullmatch(parts[1]) is None:
            return None
        rest = parts[3] if len(parts) > 3 else ""
        return parts[0], int(parts[1]), parts[2], rest


@dataclass(frozen=True, slots=True)
class FleetSettings:
    """Stream settings (seconds; file storage).

    ``flows_max_age``: how long FLOWS keeps a Pi's state and a form's last word (a form open for
    longer drops out of late joiners' snapshots; live bridges still have it).
    ``duplicate_window``: JetStream's de-duplication of a forwarder's re-published event.
    ``forwarder_timeout``: how long a host's forwarder may be silent (it heartbeats every
    second) before bridges report its Pis ended ("forwarder gone") and another forwarder may
    take the host; the FORWARDERS stream keeps each heartbeat that long.
    ``replicas``: each stream's replicas (1 for one server; 3 on a 3-node cluster: a stream
    survives the loss of one node). ``memory``: memory storage instead of files (tests).
    """

    flows_max_age: float = 7 * 24 * 3600.0
    duplicate_window: float = 120.0
    forwarder_timeout: float = 10.0
    replicas: int = 1
    memory: bool = False

    def streams(self, names: FleetNames) -> list[StreamConfig]:
        """The configurations of the fleet's two streams under ``names``."""
        storage = StorageType.MEMORY if self.memory else StorageType.FILE
        return [
            StreamConfig(
                name=names.flows_stream,
                subjects=names.flows_subjects,
                retention=RetentionPolicy.LIMITS,
                max_msgs_per_subject=1,
                max_age=self.flows_max_age,
                discard=DiscardPolicy.OLD,
                storage=storage,
                num_replicas=self.replicas,
                duplicate_window=self.duplicate_window,
            ),
            StreamConfig(
                name=names.forwarders_stream,
                subjects=names.forwarders_subjects,
                retention=RetentionPolicy.LIMITS,
                max_msgs_per_subject=1,
                max_age=self.forwarder_timeout,
                discard=DiscardPolicy.OLD,
                storage=storage,
                num_replicas=self.replicas,
                duplicate_window=min(self.duplicate_window, self.forwarder_timeout),
            ),
        ]


def encode_body(body: bytes, what: str, limit: int) -> tuple[bytes, dict[str, str]]:
    """``body`` ready to publish (zlib-compressed over ``COMPRESS_OVER`` bytes), and the header
    that says so; ``FleetPayloadTooLarge`` when it does not fit ``limit`` even so."""
    headers: dict[str, str] = {}
    if len(body) > COMPRESS_OVER:
        packed = zlib.compress(body, 6)
        if len(packed) < len(body):
            headers[Header.ENCODING] = "zlib"
            if len(packed) + 1024 > limit:  # (headers and subject ride in the same limit)
                raise FleetPayloadTooLarge(what, len(body), limit)
            return packed, headers
    if len(body) + 1024 > limit:
        raise FleetPayloadTooLarge(what, len(body), limit)
    return body, headers


_MAX_INFLATED: Final = 256 * 1024 * 1024


def decode_body(msg: Msg) -> bytes | None:
    """The body of ``msg`` as sent (inflated when compressed); None when it cannot be (a body
    that inflates past 256 MiB, or bad data: logged)."""
    headers: Mapping[str, str] = msg.headers or {}
    encoding = headers.get(Header.ENCODING)
    if encoding is None:
        return msg.data
    if encoding != "zlib":
        log.warning(
            "pi_ask_sdk.fleet: skipped a message in encoding %r on %s", encoding, msg.subject
        )
        return None
    try:
        inflater = zlib.decompressobj()
        body = inflater.decompress(msg.data, _MAX_INFLATED)
        if inflater.unconsumed_tail:
            raise zlib.error("inflates past 256 MiB")
        return body
    except zlib.error as exc:
        log.warning(
            "pi_ask_sdk.fleet: skipped a bad compressed message on %s: %s", msg.subject, exc
        )
        return None


# --- small wire records of the fleet's own (states, presence) ---


class PiState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The body of a ``state`` subject: a Pi process as its forwarder sees it.

    ``epoch`` changes whenever the bridges' view of this Pi must be reset (its session ended,
    or the forwarder lost and regained its relay and cannot vouch for the forms in between):
    a transport that sees a new epoch reports ``ended("session_ended")``."""

    state: str  # "up" | "gone"
    host: str
    pid: int
    epoch: str
    forwarder: str = ""
    cwd: str = ""
    pi_version: str = ""
    session_id: str = ""
    detail: str = ""


class Heartbeat(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A bridge's presence on ``<p>._bridge.<bridge>``: it answers (or only observes) forms of
    ``hosts`` (None: every host) and heartbeats every ``interval`` seconds; ``bye``: it left.
    ``group``: the replica group it shares the forms with (``pi_ask_sdk.fleet.groups``)."""

    bridge: str
    role: str = "answerer"
    interval: float = 1.0
    hosts: list[str] | None = None
    bye: bool = False
    group: str | None = None


class ForwarderBeat(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A forwarder's heartbeat on ``<p>._forwarder.<host>``: alive, beating every ``interval``
    seconds, following ``pids``; ``bye``: it stopped, and gives the host's lease up (the next
    forwarder may take it at once instead of waiting for this heartbeat to expire)."""

    host: str
    forwarder: str
    interval: float = 1.0
    pids: list[int] = []
    bye: bool = False
    pid: int = 0  # the forwarder's process and machine: a second forwarder names them
    machine: str = ""


class TooLarge(msgspec.Struct, frozen=True, kw_only=True):
    """The body of a ``too_large`` flow message."""

    flow_id: str
    tool_call_id: str | None = None
    size: int
    limit: int


STATE_DECODER: Final = msgspec.json.Decoder(PiState)
HEARTBEAT_DECODER: Final = msgspec.json.Decoder(Heartbeat)
TOO_LARGE_DECODER: Final = msgspec.json.Decoder(TooLarge)
FORWARDER_BEAT_DECODER: Final = msgspec.json.Decoder(ForwarderBeat)
ENCODER: Final = msgspec.json.Encoder()
