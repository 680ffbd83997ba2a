"""Every NATS subject, stream and header name of the fleet, in one place (docs/fleet.md).

Importing this module does not import ``nats``: tools may name subjects without the extra.

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
import re
from dataclasses import dataclass
from typing import Final, Literal, TypedDict

from pi_ask_sdk.errors import InvalidArgument

__all__ = [
    "DEFAULT_PREFIX",
    "FleetNames",
    "FlowKind",
    "Header",
    "NatsPermissions",
    "check_host_id",
    "flow_token",
]

DEFAULT_PREFIX: Final = "piask"

FlowKind = Literal["started", "completed", "gone", "too_large"]
"""What a message on a flow subject is (its ``Pi-Ask-Kind`` header): the host's ``started`` or
``completed`` payload, unchanged; ``gone``: the form ended without a ``completed`` (its session
ended, its Pi exited, or it vanished while the forwarder was away); ``too_large``: its started
payload did not fit the server's ``max_payload`` (the body says how big it was)."""


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
