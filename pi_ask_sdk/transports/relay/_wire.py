"""The relay's wire protocol 1: JSON-line envelopes, how a line is decoded, the submit line."""

from __future__ import annotations

import json
import re
from typing import Final, Literal

import msgspec

from pi_ask_core import (
    SubmitEvent,
)

PROTOCOL: Final = 1
"""The relay wire protocol this transport speaks (``hello.protocol`` must equal it)."""

CLIENT_HELLO: Final = 1
"""The client hello this transport sends when the relay's hello announces it (``clientHello``)."""

PING: Final = 1
"""The liveness ping this transport answers: when the relay's hello announces it (``ping``), the
client hello says ``"pong": 1`` and every ``{"type":"ping"}`` is answered with
``{"type":"pong"}`` by the connection's reader, whatever the bridge's own code is doing."""

RelayRole = Literal["answerer", "observer"]
"""What a client tells the relay it does: ``"answerer"`` answers forms (while one is connected,
a headless Pi opens its forms for the relay), ``"observer"`` only watches (never makes a form
wait). A client that says nothing (an older client) is an observer."""

DEFAULT_MAX_LINE_BYTES: Final = 64 * 1024 * 1024
"""Longest relay -> client line accepted; longer ones are logged and discarded."""

FLOW_ENDED: Final = "pi-ask-relay:flow-ended"
"""A relay-private event channel: a form the host disposed without a ``completed`` (its call
ended at the grace period). Its data is a ``FlowEnded``; a ``BridgeClient`` ignores it (an
unknown channel), a forwarder ends the form in the fleet."""


class FlowEnded(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    """The data of a ``FLOW_ENDED`` event: which form, and why (``grace``)."""

    flow_id: str = msgspec.field(name="flowId")
    reason: str = "unknown"


_FLOW_ENDED: Final = msgspec.json.Decoder(FlowEnded)


def decode_flow_ended(data: object) -> FlowEnded | None:
    """The ``FlowEnded`` of a ``FLOW_ENDED`` event's data (raw JSON, as a raw-events listener
    gets it, or decoded), or None if it is not one."""
    try:
        if isinstance(data, msgspec.Raw):
            return _FLOW_ENDED.decode(bytes(data))
        if isinstance(data, (bytes, bytearray, memoryview, str)):
            return _FLOW_ENDED.decode(data)
        return msgspec.convert(data, FlowEnded)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None


_EMIT_PREFIX: Final = b'{"type":"emit","channel":"pi-agent-ask:submit","data":'


class RelayHello(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="hello"
):
    """The relay's greeting: Pi's pid and cwd, Pi's version, the socket path."""

    protocol: int
    pid: int
    cwd: str = ""
    pi_version: str = msgspec.field(default="unknown", name="piVersion")
    socket: str = ""
    replaying: int = 0
    """How many replayed forms follow the hello (``open()`` returns once they all arrived)."""
    session_id: str = msgspec.field(default="", name="sessionId")
    """Names the Pi session behind the socket (new after ``/new``, ``/resume``, ...); it means
    the same through a forwarded socket, where Pi's pid means nothing on this machine."""
    client_hello: int = msgspec.field(default=0, name="clientHello")
    """The client hello version the relay understands (0: an older relay, which has none: its
    clients are neither answerers nor observers, and a headless Pi opens no form for them)."""
    answering: int = 0
    """How many other connected clients answer forms (said so in their hello)."""
    observing: int = 0
    """How many other connected clients only observe (or said nothing)."""
    ping: int = 0
    """The liveness ping the relay sends (0: an older relay, or pings turned off)."""
    ping_ms: int = msgspec.field(default=0, name="pingMs")
    """How often the relay pings an answering client that answers pings (milliseconds)."""
    ping_timeout_ms: int = msgspec.field(default=0, name="pingTimeoutMs")
    """How long such a client may send nothing before the relay drops it (milliseconds)."""


class WelcomeLine(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="welcome"
):
    """The relay's reply to our client hello: the role it now counts us in."""

    role: str = "observer"


class PingLine(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="ping"):
    """The relay asks whether we are alive: the reader answers at once."""


class GoodbyeLine(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="goodbye"
):
    """The relay's last line before it closes a connection it dropped (``unresponsive``: it
    answered no ping in time)."""

    reason: str = "unknown"
    message: str = ""


class EventLine(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="event"):
    channel: str
    data: msgspec.Raw
    replay: bool = False
    own: bool | None = None
    """On a ``submit-result``: whether this connection emitted the submit it answers (absent
    when the relay cannot tell, e.g. a submit emitted inside Pi)."""


class SessionEndLine(
    msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="session_end"
):
    reason: str = "unknown"


class ErrorLine(msgspec.Struct, frozen=True, kw_only=True, gc=False, tag_field="type", tag="error"):
    code: str = "unknown"
    message: str = ""


# The envelopes hold only strings, numbers and raw JSON: never a cycle, so the garbage collector
# need not track them (fewer tracked objects per line, fewer collections).
Envelope = (
    RelayHello | EventLine | SessionEndLine | ErrorLine | WelcomeLine | PingLine | GoodbyeLine
)

_ENVELOPE: Final = msgspec.json.Decoder(Envelope)
_ENCODER: Final = msgspec.json.Encoder()


# A JSON string escape of a UTF-16 surrogate pair, a lone surrogate, or an escaped backslash (so
# that the text after it is never mistaken for an escape).
_SURROGATE_ESCAPE: Final = re.compile(
    rb"\\\\|\\u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|\\u[dD][89a-fA-F][0-9a-fA-F]{2}"
)


def _replace_surrogate(match: re.Match[bytes]) -> bytes:
    escape = match.group()
    return escape if len(escape) != 6 or escape == b"\\\\" else b"\\ufffd"


def replace_lone_surrogates(line: bytes) -> bytes:
    """``line`` with each ``\\uD800``-``\\uDFFF`` escape that is not half of a pair replaced by
    ``\\ufffd`` (U+FFFD). JavaScript's ``JSON.stringify`` writes a lone surrogate that way; it
    is not valid Unicode, so Python (and msgspec) cannot hold it."""
    return _SURROGATE_ESCAPE.sub(_replace_surrogate, line)


def decode_envelope(line: bytes) -> Envelope:
    try:
        return _ENVELOPE.decode(line)
    except msgspec.DecodeError:
        repaired = replace_lone_surrogates(line)
        if repaired == line:
            raise
        return _ENVELOPE.decode(repaired)


def encode_client_hello(role: RelayRole, *, pong: bool = False) -> bytes:
    """Our hello: the role this connection takes, and (``pong``, when the relay pings) that we
    answer pings."""
    hello: dict[str, object] = {"type": "hello", "version": CLIENT_HELLO, "role": role}
    if pong:
        hello["pong"] = PING
    return _ENCODER.encode(hello) + b"\n"


PONG_LINE: Final = b'{"type":"pong"}\n'
"""Our answer to a ``ping``."""


def encode_emit(payload: SubmitEvent) -> bytes:
    """The line that asks the relay to emit ``payload`` on the submit channel."""
    try:
        body = _ENCODER.encode(payload)
    except UnicodeEncodeError:
        # A lone surrogate (text decoded with "surrogateescape", say): sent as a \\udXXX
        # escape, as JavaScript writes one; the host judges it.
        builtins = msgspec.to_builtins(payload)
        body = json.dumps(builtins, ensure_ascii=True, separators=(",", ":")).encode()
    return _EMIT_PREFIX + body + b"}\n"
