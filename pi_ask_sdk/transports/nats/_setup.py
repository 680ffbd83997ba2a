"""Connecting to NATS (credentials and TLS passed through) and setting up the fleet's streams."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
import zlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Final

import msgspec
import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import (
    AckPolicy,
    ConsumerConfig,
    DeliverPolicy,
    DiscardPolicy,
    RetentionPolicy,
    StorageType,
    StreamConfig,
)

from pi_ask_sdk._tasks import within
from pi_ask_sdk.errors import FleetPayloadTooLarge, FleetUnavailable

from .subjects import COMPRESS_OVER, FleetNames, Header

log: Final = logging.getLogger("pi_ask_sdk.fleet")

__all__ = [
    "FleetSettings",
    "NatsOptions",
    "close_nats",
    "connect_nats",
    "ensure_forwarder_consumer",
    "ensure_streams",
    "forwarder_consumer_config",
    "jetstream_off",
]


@dataclass(frozen=True, slots=True)
class NatsOptions:
    """How to reach the NATS server: passed through to ``nats.connect``.

    ``url`` may list several servers separated by commas. ``creds`` is a ``.creds`` file
    (``user_credentials``); ``nkey`` an nkey seed file (``nkeys_seed``; both need nkeys,
    ``pip install 'nats-py[nkeys]'``); ``tls_ca`` / ``tls_cert`` / ``tls_key`` build an
    ``ssl.SSLContext`` (a ``tls://`` URL alone uses the system's CAs); ``user``/``password``
    and ``token`` are nats-py's. ``name`` labels the connection in the server's monitoring.
    ``max_reconnect_attempts`` is nats-py's (-1: retry for ever once connected, what a
    forwarder wants); the first connection must succeed within
    ``connect_timeout`` seconds, and fails at once when every server refuses it.
    ``inbox_prefix`` replaces nats-py's ``_INBOX`` for this connection's reply subjects (and
    its consumers' deliver subjects): give each NATS user its own and allow it only that, so
    that no user reads another's replies (docs/fleet.md, Security)."""

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

    url: str = "nats://127.0.0.1:4222"
    creds: str | None = None
    nkey: str | None = None
    tls_ca: str | None = None
    tls_cert: str | None = None
    tls_key: str | None = None
    user: str | None = None
    password: str | None = None
    token: str | None = None
    name: str | None = None
    connect_timeout: float = 5.0
    reconnect_time_wait: float = 0.25
    max_reconnect_attempts: int = -1
    inbox_prefix: str = "_INBOX"

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context from ``tls_ca``/``tls_cert``/``tls_key`` (None when none is set)."""
        if self.tls_ca is None and self.tls_cert is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca)
        if self.tls_cert is not None:
            context.load_cert_chain(self.tls_cert, self.tls_key)
        return context


# What FleetUnavailable.detail says when every server of the URL refused the connection (the
# doctor says it too).
_NOTHING_ANSWERS: Final = (
    "nothing answers there (connection refused: is nats-server running, and is the URL right?)"
)
_Callback = Callable[[], Awaitable[None]]


async def connect_nats(
    options: NatsOptions,
    *,
    disconnected_cb: _Callback | None = None,
    reconnected_cb: _Callback | None = None,
) -> Client:
    """A connected nats-py client; raises ``FleetUnavailable`` (the nats-py error as cause):
    at once when every server refuses the connection ("nothing answers there"), after
    ``connect_timeout`` seconds when one accepts but does not answer.

    ``disconnected_cb`` / ``reconnected_cb`` are nats-py's: called when the connection to the
    server is lost (and when the client closes), and when it is back."""
    servers = [url.strip() for url in options.url.split(",") if url.strip()]
    errors: list[Exception] = []  # the last error met while connecting
    try:
        # Bounded as a whole: a server that accepts but never answers is retried meanwhile.
        return await within(
            _connect(options, servers, errors, disconnected_cb, reconnected_cb),
            options.connect_timeout,
        )
    except asyncio.TimeoutError:
        raise FleetUnavailable(
            options.url, f"no server answered within {options.connect_timeout:g} s"
        ) from None
    except nats.errors.NoServersError as exc:
        last = errors[-1] if errors else exc
        if isinstance(last, ConnectionRefusedError):
            raise FleetUnavailable(options.url, _NOTHING_ANSWERS) from last
        raise FleetUnavailable(options.url, f"cannot connect ({last!r})") from last
    except (OSError, nats.errors.Error, ssl.SSLError) as exc:
        raise FleetUnavailable(options.url, f"cannot connect ({exc!r})") from exc


async def close_nats(nc: Client, *, timeout: float = 5.0) -> None:
    """Drain ``nc`` (what it published reaches the server, its subscriptions end), then close
    it. Never raises: a connection already broken is closed all the same.

    Args:
        nc: a client made by ``connect_nats``.
        timeout: the longest the drain may take, in seconds.
    """
    with contextlib.suppress(nats.errors.Error, OSError, asyncio.TimeoutError):
        await within(nc.drain(), timeout)
    if not nc.is_closed:
        with contextlib.suppress(nats.errors.Error, OSError):
            await nc.close()


async def _connect(
    options: NatsOptions,
    servers: list[str],
    errors: list[Exception],
    disconnected_cb: _Callback | None,
    reconnected_cb: _Callback | None,
) -> Client:
    async def on_error(exc: Exception) -> None:
        errors[:] = [exc]  # (the last one: what a failed first connection reports)
        await _log_error(exc)

    # The first connection tries each server twice at most (nats-py retries it for ever with
    # unlimited reconnects: a refused connection would wait out connect_timeout); once
    # connected, reconnects are as many as ``options`` says.
    first = options.max_reconnect_attempts if options.max_reconnect_attempts > 0 else 1
    nc = await nats.connect(
        servers=servers,
        name=options.name,
        user_credentials=options.creds,
        nkeys_seed=options.nkey,
        tls=options.ssl_context(),
        user=options.user,
        password=options.password,
        token=options.token,
        connect_timeout=int(max(1, options.connect_timeout)),
        reconnect_time_wait=options.reconnect_time_wait,
        max_reconnect_attempts=first,
        allow_reconnect=True,
        error_cb=on_error,
        disconnected_cb=disconnected_cb,
        reconnected_cb=reconnected_cb,
        inbox_prefix=options.inbox_prefix,
    )
    nc.options["max_reconnect_attempts"] = options.max_reconnect_attempts
    return nc


async def _log_error(exc: Exception) -> None:
    log.debug("pi_ask_sdk.fleet: NATS: %r", exc)


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

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

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


async def ensure_streams(
    js: JetStreamContext, names: FleetNames, settings: FleetSettings, url: str
) -> None:
    """Create the fleet's streams, or update them to ``settings``; ``FleetUnavailable`` when
    JetStream is off or refuses."""
    for config in settings.streams(names):
        try:
            try:
                await js.add_stream(config)
            except nats.js.errors.BadRequestError:
                await js.update_stream(config)  # exists with other settings
        except (nats.js.errors.ServiceUnavailableError, nats.errors.NoRespondersError) as exc:
            raise FleetUnavailable(url, jetstream_off(exc)) from exc
        except (nats.errors.Error, OSError, TimeoutError) as exc:
            raise FleetUnavailable(url, f"cannot set up stream {config.name} ({exc!r})") from exc


def jetstream_off(exc: BaseException) -> str:
    """What to say when the server's JetStream does not answer (``exc``: how it did not):
    the server runs without ``-js``, the usual cause."""
    return f"JetStream does not answer ({type(exc).__name__}): start nats-server with -js"


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


async def ensure_forwarder_consumer(
    js: JetStreamContext, names: FleetNames, host: str, url: str, *, ack_wait: float = 10.0
) -> None:
    """Create ``host``'s submit consumer (``forwarder_consumer_config``) if it does not exist:
    what an administrator runs, with ``ensure_streams``, before starting a forwarder whose NATS
    user may not create consumers (``pi-ask forward --no-setup``; docs/fleet.md, Security).
    Raises ``FleetUnavailable`` when JetStream refuses."""
    durable = names.forwarder_consumer(host)
    try:
        try:
            await js.consumer_info(names.submits_stream, durable)
            return
        except nats.js.errors.NotFoundError:
            pass
        await js.add_consumer(
            names.submits_stream, forwarder_consumer_config(names, host, ack_wait=ack_wait)
        )
    except (nats.errors.Error, OSError, TimeoutError) as exc:
        raise FleetUnavailable(url, f"cannot create the consumer {durable} ({exc!r})") from exc


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


def max_payload(nc: Client) -> int:
    """The server's ``max_payload`` (1 MiB when not yet known)."""
    size = nc.max_payload
    return size if size > 0 else 1024 * 1024


# --- small wire records of the fleet's own (states, presence) ---


class PiState(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The body of a ``state`` subject: a Pi process as its forwarder sees it.

    ``epoch`` changes whenever the bridges' view of this Pi must be reset (its session ended,
    or the forwarder lost and regained its relay and cannot vouch for the forms in between):
    a transport that sees a new epoch reports ``ended("session_ended")``."""

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

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

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

    bridge: str
    role: str = "answerer"
    interval: float = 1.0
    hosts: list[str] | None = None
    bye: bool = False


class ForwarderBeat(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """A forwarder's heartbeat on ``<p>._forwarder.<host>``: alive, beating every ``interval``
    seconds, following ``pids``."""

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

    host: str
    forwarder: str
    interval: float = 1.0
    pids: list[int] = []


class TooLarge(msgspec.Struct, frozen=True, kw_only=True):
    """The body of a ``too_large`` flow message."""

    __module__ = "pi_ask_sdk.transports.nats"  # documented where users import it from

    flow_id: str
    tool_call_id: str | None = None
    size: int
    limit: int


STATE_DECODER: Final = msgspec.json.Decoder(PiState)
HEARTBEAT_DECODER: Final = msgspec.json.Decoder(Heartbeat)
TOO_LARGE_DECODER: Final = msgspec.json.Decoder(TooLarge)
FORWARDER_BEAT_DECODER: Final = msgspec.json.Decoder(ForwarderBeat)
ENCODER: Final = msgspec.json.Encoder()
