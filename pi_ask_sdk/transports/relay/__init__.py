"""``RelayTransport``: a ``BridgeClient`` transport to a real Pi through the relay extension.

The package is split by concept: ``_discovery`` (relay directory, same-user checks, finding
live Pis), ``_wire`` (envelopes, line decoding, the submit line), ``_connection`` (one socket:
framing and handshake) and ``_transport`` (``RelayTransport``: delivery and reconnects). Its
errors are ``pi_ask_sdk.transports.relay.errors``, exported here too.

The relay (``pi-ask-relay.ts`` beside this module, loaded with ``pi -e "$(pi-ask relay-path)"``)
listens on a private Unix socket ``<relay dir>/pi-<pid>.sock`` and speaks JSON lines (wire
protocol 1, see the relay's README):

* relay -> client: ``hello`` (first line), ``welcome`` (the reply to our hello), ``event``
  (``channel``, ``data``, ``replay``), ``session_end`` (then EOF), ``error`` (a reply to bad
  client input), ``ping`` (liveness) and ``goodbye`` (the last line of a dropped connection);
* client -> relay: ``hello`` (our role, and ``pong`` when the relay pings), ``pong`` (the
  reader's answer to every ``ping``), ``{"type":"emit","channel":"pi-agent-ask:submit",...}``.

An answerer that has answered no ping for the relay's ``pingTimeoutMs`` is dropped (``goodbye``
``unresponsive``, then EOF): the relay stops counting it, and what follows is what follows any
lost connection (below), so a process that was stopped finds its view reset, its pending submits
lost, and the forms still open replayed.

Lines are split on ``b"\\n"`` only (JSON strings may hold U+2028/U+2029) and bounded in length.
Envelopes decode straight into typed Structs; an event's ``data`` is kept as ``msgspec.Raw`` and
decoded into its channel's wire Struct, or, when it does not fit, into plain JSON so that the
client judges it (and logs why it is skipped).

After ``session_end`` the listener hears ``ended("session_ended")``, nothing more is read from
that connection, and the transport reconnects at once with bounded exponential backoff: Pi
listens again when the next session starts, and the forms the new connection replays restore
the client's view. A connection lost without ``session_end`` (or cut short during its replay)
is retried the same way; once Pi is gone or the retries run out, the listener hears
``ended("disconnected")`` and nothing more. "Pi is gone" is read from Pi's pid only when the
hello came from the relay's own socket at our path; through a forwarded socket (``ssh -L``) the
pid is another machine's, and only the connection tells.

Text: a lone UTF-16 surrogate, which Pi's ``JSON.stringify`` writes as an escape such as
``"\\ud83d"``, is decoded as U+FFFD (``replace_lone_surrogates``), the one decode rule for
relay input. A ``submit-result`` the relay marks ``"own": false`` answers another connection's
submit and is not delivered (unless ``foreign_results=True``).

Trust model: only the same OS user, only locally. The directory must be a real directory owned
by this uid with no group/other permission bits, and the socket must be a socket owned by this
uid with mode 0600 (the relay's own rules); anything else raises ``UnsafeRelayPath``.
"""

from __future__ import annotations

from pi_ask_sdk._faces import publish

from ._discovery import (
    check_relay_dir,
    check_relay_socket,
    discover_relays,
    is_forwarded_name,
    listening_socket_path,
    local_socket_pid,
    pid_alive,
    relay_dir,
    relay_extension_path,
    resolve_relay,
)
from ._relay_info import RelayInfo
from ._transport import LISTEN_WAIT, RelayTransport, discover
from ._wire import (
    CLIENT_HELLO,
    DEFAULT_MAX_LINE_BYTES,
    FLOW_ENDED,
    PING,
    PROTOCOL,
    FlowEnded,
    RelayHello,
    RelayRole,
    decode_flow_ended,
    replace_lone_surrogates,
)
from .errors import (
    MAX_SOCKET_PATH,
    AmbiguousRelay,
    NoRelayFound,
    RelayConnectError,
    RelayError,
    RelayHandshakeError,
    RelayPathMissing,
    RelayPathNotSocket,
    RelayPathTooLong,
    UnsafeRelayPath,
)

__all__ = [
    "CLIENT_HELLO",
    "DEFAULT_MAX_LINE_BYTES",
    "FLOW_ENDED",
    "LISTEN_WAIT",
    "MAX_SOCKET_PATH",
    "PING",
    "PROTOCOL",
    "AmbiguousRelay",
    "FlowEnded",
    "NoRelayFound",
    "RelayConnectError",
    "RelayError",
    "RelayHandshakeError",
    "RelayHello",
    "RelayInfo",
    "RelayPathMissing",
    "RelayPathNotSocket",
    "RelayPathTooLong",
    "RelayRole",
    "RelayTransport",
    "UnsafeRelayPath",
    "check_relay_dir",
    "check_relay_socket",
    "decode_flow_ended",
    "discover",
    "discover_relays",
    "is_forwarded_name",
    "listening_socket_path",
    "local_socket_pid",
    "pid_alive",
    "relay_dir",
    "relay_extension_path",
    "replace_lone_surrogates",
    "resolve_relay",
]

publish(__name__, __all__, globals())
