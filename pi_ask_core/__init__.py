"""pi_ask_core: the strict, pure core of the ``pi-agent-ask`` protocol.

Wire types (msgspec), form validation, submit validation with the exact error codes, result
building, and a flow host that resolves flows on an event bus exactly as the extension does.
No I/O besides reading preview files named by a form.

The root holds what a host or bridge author handles: ``FlowHost`` on an ``EventBus``, the
channels, the wire Structs of each channel, ``decode_event`` and the errors. Everything else is
in its module: ``pi_ask_core.protocol`` (every wire type), ``.forms``, ``.answers``,
``.results``, ``.events``, ``.external_ui``, ``.background``, ``.schema``, ``.js``.
"""

from .bus import EventBus, LocalEventBus
from .errors import HostClosed, InvalidForm, PiAskError, SubmitRefused
from .events import Skipped, decode_event
from .host import FlowHandle, FlowHost
from .protocol import (
    CHANNELS,
    COMPLETED,
    PROTOCOL_VERSION,
    STARTED,
    SUBMIT,
    SUBMIT_RESULT,
    AnswerResponse,
    AskParams,
    AskResult,
    CancelResponse,
    CompletedEvent,
    RemoteAnswer,
    StartedEvent,
    SubmitAck,
    SubmitEvent,
    SubmitRejection,
    SubmitResultEvent,
)

__version__ = "0.2.0"

__all__ = [
    "CHANNELS",
    "COMPLETED",
    "PROTOCOL_VERSION",
    "STARTED",
    "SUBMIT",
    "SUBMIT_RESULT",
    "AnswerResponse",
    "AskParams",
    "AskResult",
    "CancelResponse",
    "CompletedEvent",
    "EventBus",
    "FlowHandle",
    "FlowHost",
    "HostClosed",
    "InvalidForm",
    "LocalEventBus",
    "PiAskError",
    "RemoteAnswer",
    "Skipped",
    "StartedEvent",
    "SubmitAck",
    "SubmitEvent",
    "SubmitRefused",
    "SubmitRejection",
    "SubmitResultEvent",
    "__version__",
    "decode_event",
]
