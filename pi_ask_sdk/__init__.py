"""pi_ask_sdk: write bridges that answer Pi ask forms with explicit option values.

``BridgeClient`` follows forms as typed ``FlowView``s and submits ``Answer``s (built with
``AnswerBuilder`` from the form's own values) or explicit ``Cancel``s; ``respond`` and
``await_result`` return every outcome as a value (``SubmitAccepted | SubmitRejected |
SubmitTimedOut | SubmitLost``). ``SyncBridgeClient`` does the same for
code that is not async. Test helpers (``FakeHost``) live in ``pi_ask_sdk.testing``.

The relay's errors (``NoRelayFound``, ``AmbiguousRelay``, ``UnsafeRelayPath``,
``RelayPathTooLong``, ``RelayConnectError``, ``RelayHandshakeError``, base ``RelayError``) are
importable from here too; they are loaded with the relay transport on first use.
"""

from typing import TYPE_CHECKING

from .client import DEFAULT_TIMEOUT, BridgeClient, ClientStream
from .errors import (
    ApprovalMappingError,
    ApprovalProblem,
    BridgeError,
    BridgeErrorCode,
    ClientNotOpen,
    ConnectionLost,
    ConnectionLostReason,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    FlowClosed,
    FlowMismatch,
    InvalidArgument,
    InvalidRequestId,
    InvalidResponse,
    ResponseProblem,
    TransportUnavailable,
    UnknownOption,
    UnknownQuestion,
    UnknownTicket,
    WaitTimeout,
)
from .forms import (
    DisplayText,
    FlowId,
    FlowView,
    OptionValue,
    OptionView,
    QuestionId,
    QuestionView,
)
from .outcomes import (
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    LostReason,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
)
from .responses import (
    Answer,
    AnswerBuilder,
    ApprovalMapping,
    BoundApproval,
    ButtonAction,
    Cancel,
    CancelFlow,
    QuestionAnswer,
    Response,
    SelectOption,
)
from .sync import SyncBridgeClient, SyncClientStream
from .transports import EndReason, MemoryTransport, Transport, TransportFactory, TransportListener

if TYPE_CHECKING:
    from .transports.relay import (
        AmbiguousRelay,
        NoRelayFound,
        RelayConnectError,
        RelayError,
        RelayHandshakeError,
        RelayPathTooLong,
        UnsafeRelayPath,
    )

_RELAY_ERRORS = frozenset(
    (
        "AmbiguousRelay",
        "NoRelayFound",
        "RelayConnectError",
        "RelayError",
        "RelayHandshakeError",
        "RelayPathTooLong",
        "UnsafeRelayPath",
    )
)


def __getattr__(name: str) -> object:
    # The relay errors live with the socket machinery, which is loaded only when first used.
    if name in _RELAY_ERRORS:
        from .transports import relay

        return getattr(relay, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TIMEOUT",
    "AmbiguousRelay",
    "Answer",
    "AnswerBuilder",
    "ApprovalMapping",
    "ApprovalMappingError",
    "ApprovalProblem",
    "BoundApproval",
    "BridgeClient",
    "BridgeError",
    "BridgeErrorCode",
    "BridgeEvent",
    "ButtonAction",
    "Cancel",
    "CancelFlow",
    "ClientNotOpen",
    "ClientStream",
    "ConnectionLost",
    "ConnectionLostReason",
    "DisplayText",
    "EndReason",
    "FlowAlreadyAnswered",
    "FlowAlreadyCompleted",
    "FlowClosed",
    "FlowCompleted",
    "FlowId",
    "FlowMismatch",
    "FlowStarted",
    "FlowView",
    "InvalidArgument",
    "InvalidRequestId",
    "InvalidResponse",
    "LostReason",
    "MemoryTransport",
    "NoRelayFound",
    "OptionValue",
    "OptionView",
    "QuestionAnswer",
    "QuestionId",
    "QuestionView",
    "RelayConnectError",
    "RelayError",
    "RelayHandshakeError",
    "RelayPathTooLong",
    "Response",
    "ResponseProblem",
    "SelectOption",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitLost",
    "SubmitOutcome",
    "SubmitRejected",
    "SubmitTicket",
    "SubmitTimedOut",
    "SyncBridgeClient",
    "SyncClientStream",
    "Transport",
    "TransportFactory",
    "TransportListener",
    "TransportUnavailable",
    "UnknownOption",
    "UnknownQuestion",
    "UnknownTicket",
    "UnsafeRelayPath",
    "WaitTimeout",
    "__version__",
]
