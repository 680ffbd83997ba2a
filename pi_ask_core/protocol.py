"""Wire types of the ``pi-agent-ask`` protocol, as msgspec Structs.

One source of truth for every payload on the four channels (spec §1). Field order is the
reference key order, and optional fields use ``UNSET`` so that an absent key stays absent when
encoded (never ``null``). Arrays are lists, so ``msgspec.to_builtins`` of any payload is exactly
its JSON. Structs are frozen (fields cannot be reassigned); the host gives every listener lists
of its own where sharing would let one listener change another's view.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated, Final, Literal

import msgspec
from msgspec import UNSET, UnsetType

from ._wire import WireStruct

__all__ = [
    "CHANNELS",
    "COMPLETED",
    "LEGACY_CHANNEL_PREFIX",
    "PROTOCOL_VERSION",
    "STARTED",
    "SUBMIT",
    "SUBMIT_RESULT",
    "UNSET",
    "AnswerResponse",
    "AskContinuationPayload",
    "AskElaborationPayload",
    "AskOption",
    "AskParams",
    "AskParamsOption",
    "AskParamsQuestion",
    "AskQuestion",
    "AskQuestionSummary",
    "AskResult",
    "AskResultAnswer",
    "CancelResponse",
    "Channel",
    "CompletedEvent",
    "ContextOption",
    "ElaborationItem",
    "ElaborationQuestionContext",
    "FlowSource",
    "InvalidInputError",
    "InvalidInputResult",
    "Issue",
    "LabelStr",
    "NextAction",
    "OptionTarget",
    "OptionValueStr",
    "QuestionState",
    "QuestionStatus",
    "QuestionTarget",
    "QuestionType",
    "RemoteAnswer",
    "RemoteResponse",
    "ResultMode",
    "StartedEvent",
    "SubmitAck",
    "SubmitErrorCode",
    "SubmitEvent",
    "SubmitRejection",
    "SubmitResultEvent",
    "UnsetType",
    "WireRole",
    "submit_result_from_builtins",
]

PROTOCOL_VERSION: Final = 1

STARTED: Final = "pi-agent-ask:started"
COMPLETED: Final = "pi-agent-ask:completed"
SUBMIT: Final = "pi-agent-ask:submit"
SUBMIT_RESULT: Final = "pi-agent-ask:submit-result"

Channel = Literal[
    "pi-agent-ask:started",
    "pi-agent-ask:completed",
    "pi-agent-ask:submit",
    "pi-agent-ask:submit-result",
]
CHANNELS: Final[tuple[Channel, ...]] = (STARTED, COMPLETED, SUBMIT, SUBMIT_RESULT)
# The pre-1.2.7 names. Never listened on nor emitted to (spec §1.2); kept to recognise them.
LEGACY_CHANNEL_PREFIX: Final = "@eko24ive/pi-ask:"

QuestionType = Literal["single", "multi", "preview"]
FlowSource = Literal["tool", "ask:resume"]
ResultMode = Literal["submit", "elaborate"]
SubmitErrorCode = Literal["flow_not_found", "invalid_request", "invalid_answer"]
QuestionStatus = Literal["answered", "needs_clarification", "unanswered"]
NextAction = Literal["clarify", "clarify_then_reask"]


class WireRole:
    """A marker in ``Annotated`` saying what a ``str`` field holds on the wire.

    Invisible to msgspec and to type checkers of ``pi_ask_core``; the ``pi_ask_wire`` stub
    generator (``schema.py``) renders option values and labels as distinct types, so a bridge
    handling plain dicts cannot put a label where a value goes.
    """

    __slots__ = ("name",)

    def __init__(self, name: Literal["OptionValue", "Label"]) -> None:
        self.name: Literal["OptionValue", "Label"] = name

    def __repr__(self) -> str:
        return f"WireRole({self.name!r})"


OptionValueStr = Annotated[str, WireRole("OptionValue")]
"""An option ``value``: what a bridge sends to select an option."""
LabelStr = Annotated[str, WireRole("Label")]
"""A label: display text only, never sent to select anything."""


# --- started -----------------------------------------------------------------------------------


class AskOption(WireStruct, frozen=True, kw_only=True):
    value: OptionValueStr
    label: LabelStr
    description: str | UnsetType = UNSET
    preview: str | UnsetType = UNSET
    preview_file: str | UnsetType = UNSET
    recommended: bool | UnsetType = UNSET


class AskQuestion(WireStruct, frozen=True, kw_only=True):
    id: str
    label: LabelStr
    prompt: str
    type: QuestionType
    requested_type: QuestionType | UnsetType = UNSET
    presented_type: QuestionType | UnsetType = UNSET
    required: bool = False
    options: list[AskOption]

    @property
    def requested(self) -> QuestionType:
        """The type the agent asked for (what results report)."""
        return self.type if isinstance(self.requested_type, UnsetType) else self.requested_type


class StartedEvent(WireStruct, frozen=True, kw_only=True):
    version: Literal[1] = 1
    flow_id: str
    tool_call_id: str | UnsetType = UNSET
    source: FlowSource
    title: str | UnsetType = UNSET
    questions: list[AskQuestion]
    created_at: int | float


# --- completed ---------------------------------------------------------------------------------


class AskQuestionSummary(WireStruct, frozen=True, kw_only=True):
    id: str
    label: LabelStr
    prompt: str
    type: QuestionType
    presented_type: QuestionType | UnsetType = UNSET


class AskResultAnswer(WireStruct, frozen=True, kw_only=True):
    values: list[str]  # the selected option values, then the custom text if any (not a value)
    labels: list[LabelStr]
    indices: list[int]
    custom_text: str | UnsetType = UNSET
    note: str | UnsetType = UNSET
    option_notes: dict[OptionValueStr, str] | UnsetType = UNSET


class ContextOption(WireStruct, frozen=True, kw_only=True):
    value: OptionValueStr
    label: LabelStr
    description: str | UnsetType = UNSET
    preview: str | UnsetType = UNSET
    recommended: bool | UnsetType = UNSET


class ElaborationQuestionContext(WireStruct, frozen=True, kw_only=True):
    id: str
    label: LabelStr
    prompt: str
    type: QuestionType
    presented_type: QuestionType | UnsetType = UNSET
    options: list[ContextOption]


class QuestionTarget(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="question"):
    if TYPE_CHECKING:
        # Without fields, type checkers fall back to Struct's ``*args: Any`` constructor.
        def __init__(self) -> None: ...


class OptionTarget(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="option"):
    option_value: OptionValueStr


class ElaborationItem(WireStruct, frozen=True, kw_only=True):
    """One clarification item. ``target`` decides the kind: an option item also has ``option``
    and ``selected``; a question item has neither (so the key order matches the reference)."""

    target: QuestionTarget | OptionTarget
    question: ElaborationQuestionContext
    option: ContextOption | UnsetType = UNSET
    selected: bool | UnsetType = UNSET
    answered: bool
    answer: AskResultAnswer | UnsetType = UNSET
    note: str


class AskElaborationPayload(WireStruct, frozen=True, kw_only=True):
    instruction: str
    next_action: NextAction = "clarify_then_reask"
    items: list[ElaborationItem]


class QuestionState(WireStruct, frozen=True, kw_only=True):
    status: QuestionStatus


class AskContinuationPayload(WireStruct, frozen=True, kw_only=True):
    affected_question_ids: list[str]
    preserved_answers: dict[str, AskResultAnswer]
    question_states: dict[str, QuestionState]
    strategy: Literal["refine_only", "resume"] = "refine_only"


class AskResult(WireStruct, frozen=True, kw_only=True):
    title: str | UnsetType = UNSET
    cancelled: bool
    mode: ResultMode
    questions: list[AskQuestionSummary]
    answers: dict[str, AskResultAnswer]
    continuation: AskContinuationPayload | UnsetType = UNSET
    elaboration: AskElaborationPayload | UnsetType = UNSET


class CompletedEvent(WireStruct, frozen=True, kw_only=True):
    version: Literal[1] = 1
    flow_id: str
    tool_call_id: str | UnsetType = UNSET
    source: FlowSource
    result: AskResult
    completed_at: int | float


# --- invalid ask_user input (a tool result, never an event) ------------------------------------


class Issue(WireStruct, frozen=True, kw_only=True):
    path: str
    message: str


class InvalidInputError(WireStruct, frozen=True, kw_only=True):
    kind: Literal["invalid_input"] = "invalid_input"
    issues: list[Issue]


class InvalidInputResult(WireStruct, frozen=True, kw_only=True):
    """What the ``ask_user`` tool returns for a form that fails validation (spec §2.1)."""

    title: str | UnsetType = UNSET
    cancelled: Literal[True] = True
    mode: Literal["submit"] = "submit"
    questions: list[AskQuestionSummary] = msgspec.field(default_factory=list)
    answers: dict[str, AskResultAnswer] = msgspec.field(default_factory=dict)
    error: InvalidInputError


# --- submit ------------------------------------------------------------------------------------


class RemoteAnswer(WireStruct, frozen=True, kw_only=True):
    values: list[OptionValueStr] | UnsetType = UNSET
    custom_text: str | UnsetType = UNSET
    note: str | UnsetType = UNSET
    option_notes: dict[OptionValueStr, str] | UnsetType = UNSET


class AnswerResponse(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="answer"):
    mode: ResultMode | UnsetType = UNSET
    answers: dict[str, RemoteAnswer]


class CancelResponse(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="cancel"):
    if TYPE_CHECKING:
        # Without fields, type checkers fall back to Struct's ``*args: Any`` constructor.
        def __init__(self) -> None: ...


RemoteResponse = AnswerResponse | CancelResponse


class SubmitEvent(WireStruct, frozen=True, kw_only=True):
    version: Literal[1] = 1
    request_id: str
    flow_id: str
    response: RemoteResponse


# --- submit-result -----------------------------------------------------------------------------
# ``ok`` is a boolean, which msgspec cannot use as a union tag, so the two shapes are separate
# Structs and ``submit_result_from_builtins`` decides between them.


class SubmitAck(WireStruct, frozen=True, kw_only=True):
    version: Literal[1] = 1
    request_id: str
    flow_id: str
    ok: Literal[True] = True


class SubmitRejection(WireStruct, frozen=True, kw_only=True):
    version: Literal[1] = 1
    request_id: str
    flow_id: str
    ok: Literal[False] = False
    error: SubmitErrorCode
    message: str


SubmitResultEvent = SubmitAck | SubmitRejection


def submit_result_from_builtins(data: object) -> SubmitResultEvent:
    """Decode a ``submit-result`` payload (decoded JSON) into ``SubmitAck | SubmitRejection``.

    Raises ``msgspec.ValidationError`` naming the offending field when it fits neither shape.
    Unknown extra keys (such as the reference's leaked ``state``) are ignored.
    """
    ok = data.get("ok") if isinstance(data, dict) else None
    if ok is True:
        return msgspec.convert(data, SubmitAck)
    if ok is False:
        return msgspec.convert(data, SubmitRejection)
    raise msgspec.ValidationError("Expected `ok` to be true or false - at `$.ok`")


# --- ask_user input (typed form of the tool parameters) ----------------------------------------


class AskParamsOption(WireStruct, frozen=True, kw_only=True):
    value: str
    label: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    preview: str | UnsetType = UNSET
    preview_file: str | UnsetType = UNSET
    recommended: bool | UnsetType = UNSET


class AskParamsQuestion(WireStruct, frozen=True, kw_only=True):
    id: str
    label: str | UnsetType = UNSET
    prompt: str
    type: QuestionType | UnsetType = UNSET
    required: bool | UnsetType = UNSET
    options: list[AskParamsOption]


class AskParams(WireStruct, frozen=True, kw_only=True):
    """The ``ask_user`` tool input; ``FlowHost.start`` also takes it as a plain dict."""

    title: str | UnsetType = UNSET
    background: bool | UnsetType = UNSET
    questions: list[AskParamsQuestion]
