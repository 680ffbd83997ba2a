"""The one decode boundary for event payloads: ``decode_event(channel, raw)``.

Whatever carries a payload (the relay's JSON lines, an in-process bus, a test relay), it reaches
a reader through this function and comes out as one typed form: the channel's wire Struct, or a
``Skipped`` value that says why it was not taken. It never raises on bad input.

``raw`` may be JSON text (``bytes``, ``bytearray``, ``memoryview``, ``msgspec.Raw``), decoded
JSON (a ``dict``), a wire Struct (taken as it is when it fits its channel), or a ``Skipped``
(returned unchanged, so decoding twice is harmless). JSON text is decoded once, straight into
the channel's Struct; only a payload that does not fit is decoded again as plain JSON, to name
what is wrong with it.

The version rule is the core's (``pi_ask_core.answers``): ``version`` must be the number 1, JSON
``1`` or ``1.0``, never ``true``.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias, final, overload

import msgspec

from .answers import is_version_one
from .protocol import (
    COMPLETED,
    LEGACY_CHANNEL_PREFIX,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    CompletedEvent,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    submit_result_from_builtins,
)

__all__ = ["DecodedEvent", "SkipReason", "Skipped", "decode_event"]

SkipReason = Literal[
    "unknown_channel", "legacy_channel", "not_json", "not_an_object", "bad_version", "malformed"
]
"""Why a payload was not taken: its channel is not one of the four (or is a legacy one), it is
not JSON (or nested too deeply), not a JSON object, its ``version`` is not the number 1, or it
does not fit its channel's shape."""


@final
class Skipped(msgspec.Struct, frozen=True):
    """A payload that was not taken; ``detail`` says why, for a log line. ``payload`` is the
    payload as plain JSON (``None`` when it was not JSON), for a watcher that shows it anyway."""

    channel: str
    reason: SkipReason
    detail: str
    payload: object = None


DecodedEvent: TypeAlias = StartedEvent | CompletedEvent | SubmitAck | SubmitRejection | SubmitEvent
"""What ``decode_event`` returns for a payload it takes."""

_JsonText: TypeAlias = bytes | bytearray | memoryview | msgspec.Raw
_JSON_TEXT: Final = (bytes, bytearray, memoryview, msgspec.Raw)


class _Decoders:
    """The JSON decoders, made on first use rather than at import: an in-process bridge never
    decodes JSON text, and ``import pi_ask_core`` stays light."""

    __slots__ = ("ack", "completed", "rejection", "started", "submit")

    def __init__(self) -> None:
        self.started = msgspec.json.Decoder(StartedEvent)
        self.completed = msgspec.json.Decoder(CompletedEvent)
        self.submit = msgspec.json.Decoder(SubmitEvent)
        self.ack = msgspec.json.Decoder(SubmitAck)
        self.rejection = msgspec.json.Decoder(SubmitRejection)


_ResultDecoder: TypeAlias = (
    "msgspec.json.Decoder[SubmitAck] | msgspec.json.Decoder[SubmitRejection]"
)
_decoders: _Decoders | None = None
_REFUSED: Final = b'"ok":false'

# Per known channel, the Structs that are its events.
_STRUCTS: Final[dict[str, tuple[type[DecodedEvent], ...]]] = {
    STARTED: (StartedEvent,),
    COMPLETED: (CompletedEvent,),
    SUBMIT: (SubmitEvent,),
    SUBMIT_RESULT: (SubmitAck, SubmitRejection),
}


@overload
def decode_event(
    channel: Literal["pi-agent-ask:started"], raw: object
) -> StartedEvent | Skipped: ...
@overload
def decode_event(
    channel: Literal["pi-agent-ask:completed"], raw: object
) -> CompletedEvent | Skipped: ...
@overload
def decode_event(
    channel: Literal["pi-agent-ask:submit-result"], raw: object
) -> SubmitAck | SubmitRejection | Skipped: ...
@overload
def decode_event(channel: Literal["pi-agent-ask:submit"], raw: object) -> SubmitEvent | Skipped: ...
@overload
def decode_event(channel: str, raw: object) -> DecodedEvent | Skipped: ...
def decode_event(channel: str, raw: object) -> DecodedEvent | Skipped:
    """``raw`` on ``channel`` as its wire Struct, or ``Skipped`` with the reason. Never raises.

    With a channel constant (``STARTED``, ...) the type checker knows which Struct comes back."""
    if type(raw) is Skipped:
        return raw
    structs = _STRUCTS.get(channel)
    if structs is None:
        return _from_builtins(channel, raw)
    # JSON text is tried first, unless ``raw`` is exactly one of the channel's Structs (what a
    # host on an in-process bus emits): an isinstance that fails reads the object's
    # ``__class__`` once per class tried (JSON text is four), and against a Struct class it goes
    # through the metaclass, while one on the exact class returns at once. The version test is
    # is_version_one's, with the usual int 1 taken without a call.
    if type(raw) not in structs and isinstance(raw, _JSON_TEXT):
        decoded = _decode_text(channel, raw)
        if decoded is not None:
            return decoded
    elif isinstance(raw, structs):
        version = raw.version
        if (type(version) is int and version == 1) or is_version_one(version):
            return raw
    return _from_builtins(channel, raw)


def _decode_text(channel: str, raw: _JsonText) -> DecodedEvent | None:
    """JSON text on a known channel as its Struct, or None when it does not decode as one (the
    slow path then names what is wrong)."""
    decoders = _decoders or _make_decoders()
    try:
        if channel == STARTED:
            return decoders.started.decode(raw)
        if channel == COMPLETED:
            return decoders.completed.decode(raw)
        if channel == SUBMIT:
            return decoders.submit.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return None
    # A submit-result: a hint of which shape to try first (JSON.stringify writes no spaces);
    # the other shape is still tried, so the hint never decides.
    text = raw if isinstance(raw, (bytes, bytearray)) else bytes(raw)
    order: tuple[_ResultDecoder, _ResultDecoder] = (decoders.ack, decoders.rejection)
    if _REFUSED in text:
        order = (decoders.rejection, decoders.ack)
    for decoder in order:
        try:
            return decoder.decode(raw)
        except (msgspec.DecodeError, RecursionError):
            pass
    return None


def _make_decoders() -> _Decoders:
    global _decoders
    _decoders = _Decoders()
    return _decoders


def _from_builtins(channel: str, raw: object) -> DecodedEvent | Skipped:
    """The slow path: ``raw`` as plain JSON, checked rule by rule to name what is wrong."""
    try:
        if isinstance(raw, _JSON_TEXT):
            raw = msgspec.json.decode(raw)
        elif isinstance(raw, msgspec.Struct):
            raw = msgspec.to_builtins(raw)
    except (msgspec.DecodeError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return Skipped(channel, "not_json", f"not JSON ({why})")
    except (TypeError, ValueError) as exc:
        return Skipped(channel, "not_json", f"not JSON ({exc})")
    if channel not in _STRUCTS:
        if channel.startswith(LEGACY_CHANNEL_PREFIX):
            return Skipped(channel, "legacy_channel", "a legacy channel", raw)
        return Skipped(channel, "unknown_channel", "not a pi-agent-ask channel", raw)
    if not isinstance(raw, dict):
        return Skipped(channel, "not_an_object", "not a JSON object", raw)
    version = raw.get("version")
    if not is_version_one(version):
        shown = "missing" if "version" not in raw else repr(version)
        return Skipped(channel, "bad_version", f"version must be the number 1, got {shown}", raw)
    original = raw
    if type(version) is float:
        raw = {**raw, "version": 1}
    try:
        if channel == SUBMIT_RESULT:
            return submit_result_from_builtins(raw)
        typed: DecodedEvent = msgspec.convert(raw, _STRUCTS[channel][0])
    except (msgspec.ValidationError, RecursionError) as exc:
        why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        return Skipped(channel, "malformed", f"malformed ({why})", original)
    return typed
