"""pi_ask_sdk: write bridges that answer Pi ask forms with explicit option values.

``BridgeClient`` follows forms as typed ``FlowView``s and submits ``Answer``s (built with
``AnswerBuilder`` from the form's own values) or explicit ``Cancel``s; ``await_result`` returns
every outcome as a value (``SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost``),
``respond`` also ``SubmitNotSent``. ``SyncBridgeClient`` does the same for code that is not
async. ``to_json`` writes views, responses and outcomes in the wire's shape.

This root holds what a bridge author uses: the clients, the views, the builders, the outcomes,
the errors a bridge catches and the JSON helpers. Everything else is imported from its module:
the whole error tree from ``pi_ask_sdk.errors`` (it draws the tree; every error is a
``PiAskError``), the transports and their contract from ``pi_ask_sdk.transports`` (the relay's
from ``pi_ask_sdk.transports.relay``), and the test tooling from ``pi_ask_sdk.testing``
(``FakeHost``, ``check_transport``, the pytest plugin, the stand-in host, the real-Pi kit, and
their errors in ``pi_ask_sdk.testing.errors``). A name that left this root still resolves here
for one release, with a ``DeprecationWarning`` naming its module.
"""

from typing import TYPE_CHECKING

from ._moved import moved_attribute
from .client import (
    DEFAULT_TIMEOUT,
    BridgeClient,
    ClientStream,
)
from .errors import (
    AmbiguousRelay,
    ApprovalMappingError,
    BridgeError,
    ClientNotOpen,
    ConnectionLost,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    FlowClosed,
    FlowMismatch,
    InvalidArgument,
    InvalidCustomText,
    InvalidOptionNote,
    InvalidResponse,
    InvalidSelection,
    NoRelayFound,
    PiAskError,
    RelayError,
    RelayHandshakeError,
    TransportUnavailable,
    UnknownOption,
    UnknownQuestion,
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
)
from .serialise import (
    JsonValue,
    flow_from_json,
    response_from_json,
    to_data,
    to_json,
)
from .sync import (
    SyncBridgeClient,
    SyncClientStream,
)

if not TYPE_CHECKING:  # a type checker reports a moved name: import it from its module

    def __getattr__(name: str) -> object:
        return moved_attribute(__name__, name, _MOVED)


__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TIMEOUT",
    "AmbiguousRelay",
    "Answer",
    "AnswerBuilder",
    "AnyFlow",
    "ApprovalMapping",
    "ApprovalMappingError",
    "BoundApproval",
    "BridgeClient",
    "BridgeError",
    "BridgeEvent",
    "ButtonAction",
    "Cancel",
    "CancelFlow",
    "ClientNotOpen",
    "ClientStream",
    "ConnectionLost",
    "DisplayText",
    "FlowAlreadyAnswered",
    "FlowAlreadyCompleted",
    "FlowClosed",
    "FlowCompleted",
    "FlowId",
    "FlowMismatch",
    "FlowStarted",
    "FlowView",
    "InvalidArgument",
    "InvalidCustomText",
    "InvalidOptionNote",
    "InvalidResponse",
    "InvalidSelection",
    "JsonValue",
    "NoRelayFound",
    "OptionValue",
    "OptionView",
    "PiAskError",
    "QuestionAnswer",
    "QuestionId",
    "QuestionView",
    "RelayError",
    "RelayHandshakeError",
    "RespondOutcome",
    "Response",
    "SelectOption",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitLost",
    "SubmitNotSent",
    "SubmitOutcome",
    "SubmitRejected",
    "SubmitTicket",
    "SubmitTimedOut",
    "SyncBridgeClient",
    "SyncClientStream",
    "TransportUnavailable",
    "UnknownOption",
    "UnknownQuestion",
    "WaitTimeout",
    "__version__",
    "flow_from_json",
    "response_from_json",
    "to_data",
    "to_json",
]

_MOVED: dict[str, str] = {
    "ApprovalProblem": "pi_ask_sdk.errors",
    "BridgeErrorCode": "pi_ask_sdk.errors",
    "ConnectionLostReason": "pi_ask_sdk.errors",
    "CustomTextProblem": "pi_ask_sdk.errors",
    "HostClosed": "pi_ask_sdk.errors",
    "InvalidForm": "pi_ask_sdk.errors",
    "InvalidRequestId": "pi_ask_sdk.errors",
    "MismatchedPiece": "pi_ask_sdk.errors",
    "OptionNoteProblem": "pi_ask_sdk.errors",
    "RelayConnectError": "pi_ask_sdk.errors",
    "RelayPathMissing": "pi_ask_sdk.errors",
    "RelayPathNotSocket": "pi_ask_sdk.errors",
    "RelayPathTooLong": "pi_ask_sdk.errors",
    "ResponseProblem": "pi_ask_sdk.errors",
    "SelectProblem": "pi_ask_sdk.errors",
    "SubmitRefused": "pi_ask_sdk.errors",
    "UnknownTicket": "pi_ask_sdk.errors",
    "UnsafeRelayPath": "pi_ask_sdk.errors",
    "NotSentReason": "pi_ask_sdk.outcomes",
    "UncheckedAnswer": "pi_ask_sdk.responses",
    "JsonObject": "pi_ask_sdk.serialise",
    "Serialisable": "pi_ask_sdk.serialise",
    "EndReason": "pi_ask_sdk.transports",
    "MemoryTransport": "pi_ask_sdk.transports",
    "Transport": "pi_ask_sdk.transports",
    "TransportFactory": "pi_ask_sdk.transports",
    "TransportListener": "pi_ask_sdk.transports",
    "PiFailed": "pi_ask_sdk.testing.errors",
    "PiNotInstalled": "pi_ask_sdk.testing.errors",
    "StandinError": "pi_ask_sdk.testing.errors",
    "StandinInUse": "pi_ask_sdk.testing.errors",
    "StandinPathTooLong": "pi_ask_sdk.testing.errors",
    "TransportCheckFailed": "pi_ask_sdk.testing.errors",
}
"""Names that left the root (deprecated here in 0.2.0, gone in 0.3.0): the module each lives in."""
