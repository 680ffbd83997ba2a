"""Connecting to NATS (several servers, credentials, nkeys and TLS passed through) and setting
up the fleet's streams."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import math
import ssl
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Final

import nats
import nats.errors
import nats.js.errors
from nats.aio.client import Client
from nats.js import JetStreamContext

from pi_ask_sdk._tasks import within
from pi_ask_sdk.errors import InvalidArgument

from .errors import FleetUnavailable
from .protocol import FleetNames, FleetSettings

log: Final = logging.getLogger("pi_ask_sdk.fleet")

__all__ = [
    "NatsOptions",
    "close_nats",
    "connect_nats",
    "ensure_streams",
    "jetstream_off",
    "max_payload",
    "shown_url",
]


@dataclass(frozen=True, slots=True, repr=False)
class NatsOptions:
    """How to reach the NATS server: passed through to ``nats.connect``.

    ``url`` may list several servers separated by commas (a cluster: the client fails over
    between them). ``creds`` is a ``.creds`` file (``user_credentials``: a JWT and its nkey,
    decentralised auth); ``nkey`` the path of an nkey seed file (``nkeys_seed``: a user the
    server's configuration names by its public nkey); ``tls_ca`` / ``tls_cert`` / ``tls_key``
    build an ``ssl.SSLContext`` (a ``tls://`` URL alone uses the system's CAs);
    ``user``/``password`` and ``token`` are nats-py's. ``name`` labels the connection in the
    server's monitoring.
    ``max_reconnect_attempts`` is nats-py's (-1: retry for ever once connected, what a
    forwarder wants); the first connection must succeed within
    ``connect_timeout`` seconds, and fails at once when every server refuses it or a server's
    TLS certificate is not trusted.
    ``ping_interval`` (seconds) and ``max_outstanding_pings`` are nats-py's: a server that
    answers no ping for ``ping_interval * (max_outstanding_pings + 1)`` seconds (a frozen
    node, a partition that keeps TCP open) is left for another (nats-py's own defaults, 120 s
    and 2, would wait about 4 minutes).
    ``inbox_prefix`` replaces nats-py's ``_INBOX`` for this connection's reply subjects (and
    its consumers' deliver subjects): give each NATS user its own and allow it only that, so
    that no user reads another's replies (docs/fleet.md, Security)."""

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
    ping_interval: float = 1.0
    max_outstanding_pings: int = 3

    def __post_init__(self) -> None:
        if not self.ping_interval > 0:
            raise InvalidArgument(
                "NatsOptions", "ping_interval", "a number of seconds above 0", self.ping_interval
            )
        if self.max_outstanding_pings < 1:
            raise InvalidArgument(
                "NatsOptions", "max_outstanding_pings", "1 or more", self.max_outstanding_pings
            )

    def __repr__(self) -> str:
        # Never a credential (docs/fleet.md, Security): options end up in logs, tracebacks and
        # test reports. The URL's user info, the password and the token show as ``***``; file
        # paths (creds, nkey, TLS) name where a secret is, not the secret.
        shown = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        shown["url"] = self.shown_url
        for secret in ("password", "token"):
            if shown[secret] is not None:
                shown[secret] = "***"
        return f"NatsOptions({', '.join(f'{k}={v!r}' for k, v in shown.items())})"

    @property
    def shown_url(self) -> str:
        """``url`` as it may be printed or logged: each server's user info (a user and
        password, or a token) replaced by ``***``."""
        return shown_url(self.url)

    def ssl_context(self) -> ssl.SSLContext | None:
        """The TLS context from ``tls_ca``/``tls_cert``/``tls_key`` (None when none is set)."""
        if self.tls_ca is None and self.tls_cert is None:
            return None
        context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=self.tls_ca)
        if self.tls_cert is not None:
            context.load_cert_chain(self.tls_cert, self.tls_key)
        return context


def shown_url(url: str) -> str:
    """``url`` (one server or several, comma-separated) with the user info of each replaced by
    ``***``: a URL may carry a password or a token, which is never printed nor logged."""
    shown = []
    for part in url.split(","):
        scheme, sep, rest = part.strip().rpartition("://")
        authority, slash, path = rest.partition("/")
        if "@" in authority:
            authority = "***@" + authority.rpartition("@")[2]
        shown.append(f"{scheme}{sep}{authority}{slash}{path}")
    return ",".join(shown)


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
    at once when every server refuses the connection ("nothing answers there") or a server's
    TLS certificate is not trusted (naming the check that failed and ``tls_ca``), after
    ``connect_timeout`` seconds when one accepts but does not answer.

    ``disconnected_cb`` / ``reconnected_cb`` are nats-py's: called when the connection to the
    server is lost (and when the client closes), and when it is back."""
    servers = [url.strip() for url in options.url.split(",") if url.strip()]
    errors: list[Exception] = []  # the last error met while connecting
    url = options.shown_url
    try:
        # Bounded as a whole: a server that accepts but never answers is retried meanwhile.
        return await within(
            _connect_or_distrust(options, servers, errors, disconnected_cb, reconnected_cb),
            options.connect_timeout,
        )
    except ssl.SSLCertVerificationError as exc:
        raise FleetUnavailable(url, _distrusted(exc, options)) from exc
    except asyncio.TimeoutError:
        raise FleetUnavailable(
            url, f"no server answered within {options.connect_timeout:g} s"
        ) from None
    except nats.errors.NoServersError as exc:
        last = errors[-1] if errors else exc
        if isinstance(last, ConnectionRefusedError):
            raise FleetUnavailable(url, _NOTHING_ANSWERS) from last
        raise FleetUnavailable(url, f"cannot connect ({last!r})") from last
    except (OSError, nats.errors.Error, ssl.SSLError) as exc:
        raise FleetUnavailable(url, f"cannot connect ({exc!r})") from exc


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


def _distrusted(exc: ssl.SSLCertVerificationError, options: NatsOptions) -> str:
    """What to say when a server's certificate failed the check (no secret: a CA's path is
    not one)."""
    why = exc.verify_message or exc.reason or str(exc)
    trusted = f"tls_ca {options.tls_ca}" if options.tls_ca else "the system's CAs (no tls_ca)"
    return (
        f"the server's TLS certificate is not trusted ({why}): it must be signed by a CA in "
        f"{trusted}, for the host name of the URL"
    )


async def _connect_or_distrust(
    options: NatsOptions,
    servers: list[str],
    errors: list[Exception],
    disconnected_cb: _Callback | None,
    reconnected_cb: _Callback | None,
) -> Client:
    """``_connect``, or the first certificate error met: nats-py reports it to its error
    callback and tries again, which cannot help (a wrong CA stays wrong)."""
    distrusted: asyncio.Future[ssl.SSLCertVerificationError] = (
        asyncio.get_running_loop().create_future()
    )
    connecting = asyncio.ensure_future(
        _connect(options, servers, errors, disconnected_cb, reconnected_cb, distrusted)
    )
    try:
        await asyncio.wait((connecting, distrusted), return_when=asyncio.FIRST_COMPLETED)
    except BaseException:  # cancelled (connect_timeout): nothing is handed out
        await _abandon(connecting)
        raise
    finally:
        refused = distrusted.done()
        distrusted.cancel()
    if refused:
        await _abandon(connecting)
        raise distrusted.result()
    return await connecting


async def _abandon(connecting: asyncio.Future[Client]) -> None:
    """Stop connecting; a client that connected meanwhile is closed."""
    connecting.cancel()
    await asyncio.wait((connecting,))
    if not connecting.cancelled() and connecting.exception() is None:
        with contextlib.suppress(nats.errors.Error, OSError):
            await connecting.result().close()


async def _connect(
    options: NatsOptions,
    servers: list[str],
    errors: list[Exception],
    disconnected_cb: _Callback | None,
    reconnected_cb: _Callback | None,
    distrusted: asyncio.Future[ssl.SSLCertVerificationError],
) -> Client:
    async def on_error(exc: Exception) -> None:
        errors[:] = [exc]  # (the last one: what a failed first connection reports)
        if isinstance(exc, ssl.SSLCertVerificationError) and not distrusted.done():
            distrusted.set_result(exc)
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
        # (nats-py types it int but sleeps on it: the exact value is set below)
        ping_interval=math.ceil(options.ping_interval),
        max_outstanding_pings=options.max_outstanding_pings,
    )
    nc.options["max_reconnect_attempts"] = options.max_reconnect_attempts
    nc.options["ping_interval"] = options.ping_interval
    return nc


async def _log_error(exc: Exception) -> None:
    log.debug("pi_ask_sdk.fleet: NATS: %r", exc)


async def ensure_streams(
    js: JetStreamContext, names: FleetNames, settings: FleetSettings, url: str
) -> None:
    """Create the fleet's streams, or update them to ``settings``, never lowering an existing
    stream's replicas (a process given the default settings, 1, must not scale a cluster's
    streams down: one node lost would then lose them); ``FleetUnavailable`` when JetStream is
    off or refuses."""
    for config in settings.streams(names):
        try:
            try:
                await js.add_stream(config)
            except nats.js.errors.BadRequestError:  # exists with other settings
                assert config.name is not None
                info = await js.stream_info(config.name)
                replicas = max(info.config.num_replicas or 1, config.num_replicas or 1)
                await js.update_stream(dataclasses.replace(config, num_replicas=replicas))
        except (nats.js.errors.ServiceUnavailableError, nats.errors.NoRespondersError) as exc:
            raise FleetUnavailable(url, jetstream_off(exc)) from exc
        except (nats.errors.Error, OSError, TimeoutError) as exc:
            raise FleetUnavailable(url, f"cannot set up stream {config.name} ({exc!r})") from exc


def jetstream_off(exc: BaseException) -> str:
    """What to say when the server's JetStream does not answer (``exc``: how it did not):
    the server runs without ``-js``, the usual cause."""
    return f"JetStream does not answer ({type(exc).__name__}): start nats-server with -js"


def max_payload(nc: Client) -> int:
    """The server's ``max_payload`` (1 MiB when not yet known)."""
    size = nc.max_payload
    return size if size > 0 else 1024 * 1024
