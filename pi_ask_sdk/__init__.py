"""pi_ask_sdk: write bridges that answer Pi ask forms with explicit option values.

``BridgeClient`` follows forms as typed ``FlowView``s and submits ``Answer``s (built with
``AnswerBuilder`` from the form's own values) or explicit ``Cancel``s; ``await_result`` returns
every outcome as a value (``SubmitAccepted | SubmitRejected | SubmitTimedOut | SubmitLost``),
``respond`` also ``SubmitNotSent``. ``SyncBridgeClient`` does the same for code that is not
async. ``to_json`` writes views, responses and outcomes in the wire's shape.

This root holds what a bridge author uses: the clients, the views, the builders, the outcomes,
the errors a bridge catches and the JSON helpers. Everything else is imported from its module:
the whole error tree from ``pi_ask_sdk.errors`` (it draws the tree; every error is a
``PiAskError``), the transports and their contract from ``pi_ask_sdk.transports`` (the relay's,
and its errors, from ``pi_ask_sdk.transports.relay``; a transport that cannot connect raises a
``TransportUnavailable``), and the test tooling from ``pi_ask_sdk.testing``
(``FakeHost``, ``check_transport``, the pytest plugin, the stand-in host, the real-Pi kit, and
their errors in ``pi_ask_sdk.testing.errors``).
"""

from ._faces import publish
from .client import (
    DEFAULT_TIMEOUT,
    BridgeClient,
    ClientStream,
)
from .errors import (
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
    PiAskError,
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

__version__ = "0.2.0"

__all__ = [
    "DEFAULT_TIMEOUT",
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
    "OptionValue",
    "OptionView",
    "PiAskError",
    "QuestionAnswer",
    "QuestionId",
    "QuestionView",
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

publish(__name__, __all__, globals())
