"""The fleet's protocol, in one place (docs/fleet.md): every NATS subject, stream and header
name, the records on them, the streams' configurations, how a body is encoded, and the named
JetStream error codes and nats-py status the fleet reads. Nothing outside this module writes a
subject shape or a JetStream code.

Subjects (``<p>`` is the prefix, ``piask`` by default; ``<host>`` a host id; ``<pid>`` Pi's
process id; ``<flow>`` a token made from the flow id; ``<tid>`` one bridge transport's id):

==================================  ==========  =========================================
subject                             stream      what
==================================  ==========  =========================================
``<p>.<host>.<pid>.state``          FLOWS       the Pi process: up (with its epoch) or gone
``<p>.<host>.<pid>.flow.<flow>``    FLOWS       one form: its started, completed or gone
``<p>.<host>.<pid>.submit``         SUBMITS     a bridge's submit for that Pi
``<p>.<host>.<pid>.direct``         (core)      a bridge's submit, as a request to a live forwarder
``<p>.<host>.<pid>.replied.<tid>``  (core)      a direct submit's result again, for watchers
``<p>.<host>.<pid>.result.<tid>``   RESULTS     the host's submit-result, for the bridge that sent
``<p>._bridge.<bridge>``            (core)      a bridge's presence heartbeat (and its goodbye)
``<p>._probe``                      (core)      a forwarder asks every bridge to heartbeat now
``<p>._take.<host>``                (push)      where SUBMITS delivers a host's submits
``<p>._forwarder.<host>``           FORWARDERS  a host's forwarder's heartbeat (its presence)
==================================  ==========  =========================================

FORWARDERS keeps one message per host for ``FleetSettings.forwarder_timeout`` seconds
(``max_age``): a host with no message there has no live forwarder; a bridge that hears none
from a host for that long reports that host's Pis ended (``docs/fleet.md``, Forwarder
presence).

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
from nats.aio.msg import Msg
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

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
    "forwarder_consumer_config",
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

    MESSAGE_TOO_LARGE: Final = 10054
    """A message over the stream's (or server's) maximum size: never retried."""
    STREAM_NOT_FOUND: Final = 10059
    """No such stream (e.g. no forwarder ever connected with this prefix)."""
    NO_MESSAGE: Final = 10037
    """No message on that subject (``get_last_msg``: e.g. no heartbeat within its max age)."""
    NO_RESPONDERS: Final = "503"
    """The ``Status`` header of a request's reply when nobody subscribes to its subject."""
    STATUS: Final = "Status"
    """The header nats-py puts a reply's status in."""


class Header:
    """NATS header names the fleet sets."""

    KIND: Final = "Pi-Ask-Kind"
    """On a flow subject: its ``FlowKind``."""
    REPLAY: Final = "Pi-Ask-Replay"
    """``"1"`` on a ``started`` that was already open when the forwarder (re)connected."""
    ENCODING: Final = "Pi-Ask-Encoding"
    """``"zlib"`` when the body is zlib-compressed (bodies over ``COMPRESS_OVER`` bytes)."""
    BRIDGE: Final = "Pi-Ask-Bridge"
    """On a submit: the sending transport's id (where its submit-result goes)."""
    MSG_ID: Final = "Nats-Msg-Id"
    """JetStream's own de-duplication id (within the stream's ``duplicate_window``)."""
    SUBMIT: Final = "Pi-Ask-Submit"
    """On a submit and on its submit-result: the submit's id (``submit_msg_id``), the same
    whichever way it went, so a bridge takes one result per submit."""
    RESENT: Final = "Pi-Ask-Resent"
    """``"1"`` on a submit sent to SUBMITS after its direct request got no answer in time: the
    forwarder may have taken it already (docs/fleet.md, Delivery semantics)."""
    STATUS: Final = "Pi-Ask-Status"
    """On a direct reply that is not a submit-result: ``"not_sent"`` (the forwarder surely did
    not give the submit to Pi; the body says why)."""


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
    def submits_stream(self) -> str:
        """The work queue of submits (each taken once, by its host's forwarder)."""
        return f"{self._stem}_SUBMITS"

    @property
    def forwarders_stream(self) -> str:
        """The forwarders' heartbeats, one per host, each kept ``forwarder_timeout`` seconds."""
        return f"{self._stem}_FORWARDERS"

    @property
    def results_stream(self) -> str:
        """The stream of submit-results, one subject per sending transport."""
        return f"{self._stem}_RESULTS"

    # --- subjects ---

    def state(self, host: str, pid: int) -> str:
        """The subject of a Pi's state messages."""
        return f"{self.prefix}.{host}.{pid}.state"

    def flow(self, host: str, pid: int, flow_id: str) -> str:
        """The subject of one flow's events (its id made a subject token)."""
        return f"{self.prefix}.{host}.{pid}.flow.{flow_token(flow_id)}"

    def submit(self, host: str, pid: int) -> str:
        """The subject bridges publish a Pi's submits on."""
        return f"{self.prefix}.{host}.{pid}.submit"

    def direct(self, host: str, pid: int) -> str:
        """The subject of a Pi's direct submits: core NATS requests its host's live forwarder
        answers with the submit-result (no stream holds it)."""
        return f"{self.prefix}.{host}.{pid}.direct"

    def replied(self, host: str, pid: int, transport_id: str) -> str:
        """Where the forwarder publishes a direct submit's result again (core NATS, stored
        nowhere), for watchers: ``pi-ask watch`` shows every submit-result."""
        return f"{self.prefix}.{host}.{pid}.replied.{transport_id}"

    @property
    def all_replied(self) -> str:
        """Every host's direct submit-results, as published for watchers."""
        return f"{self.prefix}.*.*.replied.*"

    def result(self, host: str, pid: int, transport_id: str) -> str:
        """The subject of the submit-results for one sending transport."""
        return f"{self.prefix}.{host}.{pid}.result.{transport_id}"

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
        """The submits one host's forwarder takes."""
        return f"{self.prefix}.{host}.*.submit"

    def host_direct(self, host: str) -> str:
        """The direct submits one host's forwarder answers."""
        return f"{self.prefix}.{host}.*.direct"

    @property
    def all_bridges(self) -> str:
        """Every bridge's heartbeats."""
        return f"{self.prefix}._bridge.*"

    def forwarder_consumer(self, host: str) -> str:
        """The durable consumer of SUBMITS that a host's forwarder reads."""
        return f"forward-{host}"

    def forwarder_queue(self, host: str) -> str:
        """The queue group of a host's forwarders on its direct submits: were two running,
        each submit would still reach one."""
        return f"forward-{host}"

    def forwarder_deliver(self, host: str) -> str:
        """The subject the durable consumer ``forward-<host>`` pushes that host's submits to:
        one per host (not an inbox), so that NATS permissions let only that host's forwarder
        read it."""
        return f"{self.prefix}._take.{host}"

    # --- stream subject sets ---

    @property
    def flows_subjects(self) -> list[str]:
        """The subjects the flows stream holds."""
        return [f"{self.prefix}.*.*.state", f"{self.prefix}.*.*.flow.*"]

    @property
    def submits_subjects(self) -> list[str]:
        """The subjects the submits stream holds."""
        return [f"{self.prefix}.*.*.submit"]

    @property
    def results_subjects(self) -> list[str]:
        """The subjects the results stream holds."""
        return [f"{self.prefix}.*.*.result.*"]

    @property
    def forwarders_subjects(self) -> list[str]:
        """The subjects of the FORWARDERS stream."""
        return [self.all_forwarders]

    # --- NATS permissions (docs/fleet.md, Security) ---

    def forwarder_permissions(self, host: str) -> NatsPermissions:
        """What ``host``'s forwarder needs to publish and subscribe to, and nothing more: its
        own Pis' state, flow and result subjects, the probe, reading FLOWS (its look back),
        binding and acknowledging its own submit consumer (made beforehand by an administrator:
        ``ensure_forwarder_consumer``; run it with ``--no-setup``), its own inbox
        (``<p>_INBOX_<host>``; connect with ``NatsOptions(inbox_prefix=...)`` of the same).
        Its direct submits, answered on each bridge's reply subject (``allow_responses``;
        without it each direct submit waits 2 s, then goes through SUBMITS: slower, nothing
        lost)."""
        p, flows, submits = self.prefix, self.flows_stream, self.submits_stream
        durable = self.forwarder_consumer(host)
        return {
            "publish": [
                f"{p}.{host}.*.state",
                f"{p}.{host}.*.flow.*",
                f"{p}.{host}.*.result.*",
                f"{p}.{host}.*.replied.*",
                self.forwarder(host),
                self.probe,
                *_reader_api(flows),
                f"$JS.API.CONSUMER.INFO.{submits}.{durable}",
                f"$JS.ACK.{submits}.{durable}.>",
            ],
            "subscribe": [
                self.all_bridges,
                self.forwarder_deliver(host),
                self.host_direct(host),
                self.inbox(host) + ".>",
            ],
            "allow_responses": True,
        }

    def bridge_permissions(self, bridge: str) -> NatsPermissions:
        """What a bridge (``Fleet``, with ``setup=False``) needs: publish submits for every
        host and its presence heartbeat, read FLOWS and RESULTS, its own inbox
        (``inbox(bridge)``). No forwarder subject: it cannot fake a form, a Pi or a result.
        ``bridge`` names the NATS user (it need not be ``Fleet``'s ``bridge_id``)."""
        return {
            "publish": [
                f"{self.prefix}.*.*.submit",
                f"{self.prefix}.*.*.direct",
                self.all_bridges,
                *_reader_api(self.flows_stream),
                *_reader_api(self.results_stream),
                *_reader_api(self.forwarders_stream),
            ],
            "subscribe": [self.probe, self.inbox(bridge) + ".>"],
            "allow_responses": False,
        }

    def inbox(self, user: str) -> str:
        """An inbox prefix of one NATS user's own (``NatsOptions(inbox_prefix=...)``), so that
        no user may read another's replies or consumer deliveries."""
        return f"_INBOX_{self._stem}_{user}"

    def parse(self, subject: str) -> tuple[str, int, str, str] | None:
        """``(host, pid, kind, rest)`` of a per-Pi subject (``kind``: state, flow, submit or
        result; ``rest``: the token after it, or ``""``), or None for anything else."""
        head = self.prefix + "."
        if not subject.startswith(head):
            return None
        parts = subject[len(head) :].split(".")
        if len(parts) < 3 or not parts[1].isdigit():
            return None
        rest = parts[3] if len(parts) > 3 else ""
        return parts[0], int(parts[1]), parts[2], rest


@dataclass(frozen=True, slots=True)
class FleetSettings:
    """Stream settings (seconds; file storage, one replica unless ``replicas`` says more).

    ``flows_max_age``: how long FLOWS keeps a Pi's state and a form's last word (a form open for
    longer drops out of late joiners' snapshots; live bridges still have it).
    ``submits_max_age``: how long a submit waits for its host's forwarder.
    ``results_max_age``: how long a submit-result waits for its bridge.
    ``duplicate_window``: JetStream's de-duplication of a re-sent submit (same ``Nats-Msg-Id``).
    ``forwarder_timeout``: how long a host's forwarder may be silent (it heartbeats every
    second) before bridges report its Pis ended ("forwarder gone"); the FORWARDERS stream keeps
    each heartbeat that long.
    """

    __module__ = "pi_ask_sdk.fleet"  # documented where users import it from

    flows_max_age: float = 7 * 24 * 3600.0
    submits_max_age: float = 600.0
    results_max_age: float = 900.0
    duplicate_window: float = 120.0
    forwarder_timeout: float = 10.0
    replicas: int = 1
    memory: bool = False

    def streams(self, names: FleetNames) -> list[StreamConfig]:
        """The configurations of the fleet's three streams under ``names``."""
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
                name=names.submits_stream,
                subjects=names.submits_subjects,
                retention=RetentionPolicy.WORK_QUEUE,
                max_age=self.submits_max_age,
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
            StreamConfig(
                name=names.results_stream,
                subjects=names.results_subjects,
                retention=RetentionPolicy.LIMITS,
                max_age=self.results_max_age,
                storage=storage,
                num_replicas=self.replicas,
                duplicate_window=self.duplicate_window,
            ),
        ]


def forwarder_consumer_config(
    names: FleetNames, host: str, *, ack_wait: float = 10.0
) -> ConsumerConfig:
    """The durable consumer of SUBMITS that ``host``'s forwarder binds (``forward-<host>``):
    push to ``names.forwarder_deliver(host)``, explicit acknowledgement, every submit of that
    host's Pis (``<p>.<host>.*.submit``)."""
    return ConsumerConfig(
        durable_name=names.forwarder_consumer(host),
        deliver_subject=names.forwarder_deliver(host),
        filter_subject=names.host_submits(host),
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        deliver_policy=DeliverPolicy.ALL,
        max_ack_pending=10000,
    )


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
    ``hosts`` (None: every host) and heartbeats every ``interval`` seconds; ``bye``: it left."""

    bridge: str
    role: str = "answerer"
    interval: float = 1.0
    hosts: list[str] | None = None
    bye: bool = False


class ForwarderBeat(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A forwarder's heartbeat on ``<p>._forwarder.<host>``: alive, beating every ``interval``
    seconds, following ``pids``."""

    host: str
    forwarder: str
    interval: float = 1.0
    pids: list[int] = []


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
