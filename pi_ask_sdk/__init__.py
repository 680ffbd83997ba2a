"""pi_ask_sdk: write bridges that answer Pi ask forms with explicit option values.

``BridgeClient`` follows forms as typed ``FlowView``s and submits ``Answer``s (built with
``AnswerBuilder`` from the form's own values) or explicit ``Cancel``s; ``await_result`` returns
every outcome as a value (``SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost``),
``respond`` also ``SubmitNotSent``. ``SyncBridgeClient`` does the same for code that is not
async. ``to_json`` writes views, responses and outcomes in the wire's shape. Test helpers
(``FakeHost``) live in ``pi_ask_sdk.testing``.

Every error the SDK raises is a ``PiAskError`` (``pi_ask_sdk.errors`` draws the tree), including
the relay's (``NoRelayFound``, ``AmbiguousRelay``, ...), importable from here without loading the
relay transport. The test tooling (``pi_ask_sdk.testing``: ``FakeHost``, ``check_transport``, the
pytest plugin, the stand-in host, the real-Pi kit) keeps its own errors in
``pi_ask_sdk.testing.errors``.
"""

from typing import TYPE_CHECKING

from ._moved import moved_attribute
from .client import DEFAULT_TIMEOUT, BridgeClient, ClientStream
from .errors import (
    AmbiguousRelay,
    ApprovalMappingError,
    ApprovalProblem,
    BridgeError,
    BridgeErrorCode,
    ClientNotOpen,
    ConnectionLost,
    ConnectionLostReason,
    CustomTextProblem,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    FlowClosed,
    FlowMismatch,
    HostClosed,
    InvalidArgument,
    InvalidCustomText,
    InvalidForm,
    InvalidOptionNote,
    InvalidRequestId,
    InvalidResponse,
    InvalidSelection,
    MismatchedPiece,
    NoRelayFound,
    OptionNoteProblem,
    PiAskError,
    RelayConnectError,
    RelayError,
    RelayHandshakeError,
    RelayPathMissing,
    RelayPathNotSocket,
    RelayPathTooLong,
    ResponseProblem,
    SelectProblem,
    SubmitRefused,
    TransportUnavailable,
    UnknownOption,
    UnknownQuestion,
    UnknownTicket,
    UnsafeRelayPath,
    WaitTimeout,
)
from .forms import (
    AnyFlow,
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
    NotSentReason,
    RespondOutcome,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
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
    UncheckedAnswer,
)
from .serialise import (
    JsonObject,
    JsonValue,
    Serialisable,
    flow_from_json,
    response_from_json,
    to_data,
    to_json,
)
from .sync import SyncBridgeClient, SyncClientStream
from .transports import EndReason, MemoryTransport, Transport, TransportFactory, TransportListener

if not TYPE_CHECKING:  # a type checker reports a moved name: import it from its new module

    def __getattr__(name: str) -> object:
        return moved_attribute(__name__, name, _MOVED)


__version__ = "0.1.0"

_MOVED: dict[str, str] = {
    # the test tooling's errors (deprecated here in 0.2.0)
    "PiFailed": "pi_ask_sdk.testing.errors",
    "PiNotInstalled": "pi_ask_sdk.testing.errors",
    "StandinError": "pi_ask_sdk.testing.errors",
    "StandinInUse": "pi_ask_sdk.testing.errors",
    "StandinPathTooLong": "pi_ask_sdk.testing.errors",
    "TransportCheckFailed": "pi_ask_sdk.testing.errors",
}
"""Names that left the root: where each lives now (they still resolve here, with a warning)."""

__all__ = [
    "DEFAULT_TIMEOUT",
    "AmbiguousRelay",
    "Answer",
    "AnswerBuilder",
    "AnyFlow",
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
    "CustomTextProblem",
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
    "HostClosed",
    "InvalidArgument",
    "InvalidCustomText",
    "InvalidForm",
    "InvalidOptionNote",
    "InvalidRequestId",
    "InvalidResponse",
    "InvalidSelection",
    "JsonObject",
    "JsonValue",
    "MemoryTransport",
    "MismatchedPiece",
    "NoRelayFound",
    "NotSentReason",
    "OptionNoteProblem",
    "OptionValue",
    "OptionView",
    "PiAskError",
    "QuestionAnswer",
    "QuestionId",
    "QuestionView",
    "RelayConnectError",
    "RelayError",
    "RelayHandshakeError",
    "RelayPathMissing",
    "RelayPathNotSocket",
    "RelayPathTooLong",
    "RespondOutcome",
    "Response",
    "ResponseProblem",
    "SelectOption",
    "SelectProblem",
    "Serialisable",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitLost",
    "SubmitNotSent",
    "SubmitOutcome",
    "SubmitRefused",
    "SubmitRejected",
    "SubmitTicket",
    "SubmitTimedOut",
    "SyncBridgeClient",
    "SyncClientStream",
    "Transport",
    "TransportFactory",
    "TransportListener",
    "TransportUnavailable",
    "UncheckedAnswer",
    "UnknownOption",
    "UnknownQuestion",
    "UnknownTicket",
    "UnsafeRelayPath",
    "WaitTimeout",
    "__version__",
    "flow_from_json",
    "response_from_json",
    "to_data",
    "to_json",
]
