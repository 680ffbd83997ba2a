"""pi_ask_sdk: write bridges that answer Pi ask forms with explicit option values.

``BridgeClient`` follows forms as typed ``FlowView``s and submits ``Answer``s (built with
``AnswerBuilder`` from the form's own values) or explicit ``Cancel``s; ``await_result`` reports
``SubmitAccepted | SubmitRejected`` or raises a typed error. ``SyncBridgeClient`` does the same for
code that is not async. Test helpers (``FakeHost``) live in ``pi_ask_sdk.testing``.
"""

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
    InvalidRequestId,
    InvalidResponse,
    ResponseProblem,
    SubmitTimeout,
    TransportUnavailable,
    UnknownOption,
    UnknownQuestion,
    UnknownTicket,
    WaitTimeout,
)
from .forms import FlowId, FlowView, OptionValue, OptionView, QuestionId, QuestionView
from .outcomes import (
    BridgeEvent,
    FlowCompleted,
    FlowStarted,
    SessionEnded,
    SubmitAccepted,
    SubmitOutcome,
    SubmitRejected,
    SubmitTicket,
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

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_TIMEOUT",
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
    "EndReason",
    "FlowAlreadyAnswered",
    "FlowAlreadyCompleted",
    "FlowClosed",
    "FlowCompleted",
    "FlowId",
    "FlowMismatch",
    "FlowStarted",
    "FlowView",
    "InvalidRequestId",
    "InvalidResponse",
    "MemoryTransport",
    "OptionValue",
    "OptionView",
    "QuestionAnswer",
    "QuestionId",
    "QuestionView",
    "Response",
    "ResponseProblem",
    "SelectOption",
    "SessionEnded",
    "SubmitAccepted",
    "SubmitOutcome",
    "SubmitRejected",
    "SubmitTicket",
    "SubmitTimeout",
    "SyncBridgeClient",
    "SyncClientStream",
    "Transport",
    "TransportFactory",
    "TransportListener",
    "TransportUnavailable",
    "UnknownOption",
    "UnknownQuestion",
    "UnknownTicket",
    "WaitTimeout",
    "__version__",
]
