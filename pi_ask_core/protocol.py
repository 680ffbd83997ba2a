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
"""The ``version`` every payload carries."""

STARTED: Final = "pi-agent-ask:started"
"""The channel of ``StartedEvent``: the host opened a form."""
COMPLETED: Final = "pi-agent-ask:completed"
"""The channel of ``CompletedEvent``: a form ended with a result."""
SUBMIT: Final = "pi-agent-ask:submit"
"""The channel of ``SubmitEvent``: a bridge answers or cancels a form."""
SUBMIT_RESULT: Final = "pi-agent-ask:submit-result"
"""The channel of ``SubmitAck | SubmitRejection``: the host's verdict on a submit."""

Channel = Literal[
    "pi-agent-ask:started",
    "pi-agent-ask:completed",
    "pi-agent-ask:submit",
    "pi-agent-ask:submit-result",
]
"""One of the four channels."""
CHANNELS: Final[tuple[Channel, ...]] = (STARTED, COMPLETED, SUBMIT, SUBMIT_RESULT)
"""The four channels, in the order above."""
# The pre-1.2.7 names. Never listened on nor emitted to (spec §1.2); kept to recognise them.
LEGACY_CHANNEL_PREFIX: Final = "@eko24ive/pi-ask:"

QuestionType = Literal["single", "multi", "preview"]
"""How a question is answered: ``multi`` takes several values, the others at most one."""
FlowSource = Literal["tool", "ask:resume"]
"""What opened a flow: the ``ask_user`` tool, or a resumed form."""
ResultMode = Literal["submit", "elaborate"]
"""``submit`` answers; ``elaborate`` asks the agent to clarify first."""
SubmitErrorCode = Literal["flow_not_found", "invalid_request", "invalid_answer"]
"""Why the host refused a submit (spec §4): branch on it, never on the message."""
QuestionStatus = Literal["answered", "needs_clarification", "unanswered"]
"""A question's state in a continuation payload."""
NextAction = Literal["clarify", "clarify_then_reask"]
"""What an elaboration payload asks the agent to do next."""


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
    """One option of a ``started`` question, normalized (spec §1.4, §2.4)."""

    value: OptionValueStr
    label: LabelStr
    description: str | UnsetType = UNSET
    preview: str | UnsetType = UNSET
    preview_file: str | UnsetType = UNSET
    recommended: bool | UnsetType = UNSET


class AskQuestion(WireStruct, frozen=True, kw_only=True):
    """One question of a ``started`` form, normalized (spec §1.4, §2.4).

    ``type`` drives answer validation; ``required`` is advisory only, never enforced.
    """

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
    """The ``pi-agent-ask:started`` payload: the host opened a form."""

    version: Literal[1] = 1
    flow_id: str
    tool_call_id: str | UnsetType = UNSET
    source: FlowSource
    title: str | UnsetType = UNSET
    questions: list[AskQuestion]
    created_at: int | float


# --- completed ---------------------------------------------------------------------------------


class AskQuestionSummary(WireStruct, frozen=True, kw_only=True):
    """A question as a result lists it."""

    id: str
    label: LabelStr
    prompt: str
    type: QuestionType
    presented_type: QuestionType | UnsetType = UNSET


class AskResultAnswer(WireStruct, frozen=True, kw_only=True):
    """One question's answer in a result: values, labels, indices, custom text, notes."""

    values: list[str]  # the selected option values, then the custom text if any (not a value)
    labels: list[LabelStr]
    indices: list[int]
    custom_text: str | UnsetType = UNSET
    note: str | UnsetType = UNSET
    option_notes: dict[OptionValueStr, str] | UnsetType = UNSET


class ContextOption(WireStruct, frozen=True, kw_only=True):
    """An option as an elaboration item shows it to the agent."""

    value: OptionValueStr
    label: LabelStr
    description: str | UnsetType = UNSET
    preview: str | UnsetType = UNSET
    recommended: bool | UnsetType = UNSET


class ElaborationQuestionContext(WireStruct, frozen=True, kw_only=True):
    """A question as an elaboration item shows it to the agent."""

    id: str
    label: LabelStr
    prompt: str
    type: QuestionType
    presented_type: QuestionType | UnsetType = UNSET
    options: list[ContextOption]


class QuestionTarget(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="question"):
    """An elaboration item about a whole question."""

    if TYPE_CHECKING:
        # Without fields, type checkers fall back to Struct's ``*args: Any`` constructor.
        def __init__(self) -> None: ...


class OptionTarget(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="option"):
    """An elaboration item about one option (``option_value``)."""

    option_value: OptionValueStr


class ElaborationItem(WireStruct, frozen=True, kw_only=True):
    """One clarification item, about a question or one of its options (``target``).

    An option item also has ``option`` and ``selected``; a question item has neither (so the
    key order matches the reference).
    """

    target: QuestionTarget | OptionTarget
    question: ElaborationQuestionContext
    option: ContextOption | UnsetType = UNSET
    selected: bool | UnsetType = UNSET
    answered: bool
    answer: AskResultAnswer | UnsetType = UNSET
    note: str


class AskElaborationPayload(WireStruct, frozen=True, kw_only=True):
    """What an ``elaborate`` result asks the agent to clarify."""

    instruction: str
    next_action: NextAction = "clarify_then_reask"
    items: list[ElaborationItem]


class QuestionState(WireStruct, frozen=True, kw_only=True):
    """A question's status in a continuation payload."""

    status: QuestionStatus


class AskContinuationPayload(WireStruct, frozen=True, kw_only=True):
    """How an ``elaborate`` result continues: the questions affected and the answers kept."""

    affected_question_ids: list[str]
    preserved_answers: dict[str, AskResultAnswer]
    question_states: dict[str, QuestionState]
    strategy: Literal["refine_only", "resume"] = "refine_only"


class AskResult(WireStruct, frozen=True, kw_only=True):
    """What the ``ask_user`` tool returns, and what ``completed`` carries."""

    title: str | UnsetType = UNSET
    cancelled: bool
    mode: ResultMode
    questions: list[AskQuestionSummary]
    answers: dict[str, AskResultAnswer]
    continuation: AskContinuationPayload | UnsetType = UNSET
    elaboration: AskElaborationPayload | UnsetType = UNSET


class CompletedEvent(WireStruct, frozen=True, kw_only=True):
    """The ``pi-agent-ask:completed`` payload: a form ended with ``result``."""

    version: Literal[1] = 1
    flow_id: str
    tool_call_id: str | UnsetType = UNSET
    source: FlowSource
    result: AskResult
    completed_at: int | float


# --- invalid ask_user input (a tool result, never an event) ------------------------------------


class Issue(WireStruct, frozen=True, kw_only=True):
    """One problem with ``ask_user`` input: where (``path``) and what."""

    path: str
    message: str


class InvalidInputError(WireStruct, frozen=True, kw_only=True):
    """The ``error`` of an ``InvalidInputResult``: every issue found."""

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
    """One question's answer in a submit: option values, custom text, notes."""

    values: list[OptionValueStr] | UnsetType = UNSET
    custom_text: str | UnsetType = UNSET
    note: str | UnsetType = UNSET
    option_notes: dict[OptionValueStr, str] | UnsetType = UNSET


class AnswerResponse(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="answer"):
    """A submit's ``response`` that answers (``kind: "answer"``)."""

    mode: ResultMode | UnsetType = UNSET
    answers: dict[str, RemoteAnswer]


class CancelResponse(WireStruct, frozen=True, kw_only=True, tag_field="kind", tag="cancel"):
    """A submit's ``response`` that cancels (``kind: "cancel"``)."""

    if TYPE_CHECKING:
        # Without fields, type checkers fall back to Struct's ``*args: Any`` constructor.
        def __init__(self) -> None: ...


RemoteResponse = AnswerResponse | CancelResponse
"""A submit's ``response``, tagged by ``kind``."""


class SubmitEvent(WireStruct, frozen=True, kw_only=True):
    """The ``pi-agent-ask:submit`` payload a bridge emits to answer or cancel a flow."""

    version: Literal[1] = 1
    request_id: str
    flow_id: str
    response: RemoteResponse


# --- submit-result -----------------------------------------------------------------------------
# ``ok`` is a boolean, which msgspec cannot use as a union tag, so the two shapes are separate
# Structs and ``submit_result_from_builtins`` decides between them.


class SubmitAck(WireStruct, frozen=True, kw_only=True):
    """The ``submit-result`` of an accepted submit (``ok: true``)."""

    version: Literal[1] = 1
    request_id: str
    flow_id: str
    ok: Literal[True] = True


class SubmitRejection(WireStruct, frozen=True, kw_only=True):
    """The ``submit-result`` of a refused submit (``ok: false``): a code, and text for people."""

    version: Literal[1] = 1
    request_id: str
    flow_id: str
    ok: Literal[False] = False
    error: SubmitErrorCode
    message: str


SubmitResultEvent = SubmitAck | SubmitRejection
"""The ``pi-agent-ask:submit-result`` payload (``submit_result_from_builtins`` decodes it)."""


def submit_result_from_builtins(data: object) -> SubmitResultEvent:
    """Decode a ``submit-result`` payload (decoded JSON) into ``SubmitAck | SubmitRejection``.

    Unknown extra keys (such as the reference's leaked ``state``) are ignored.

    Raises:
        msgspec.ValidationError: ``data`` fits neither shape (the message names the field).
    """
    ok = data.get("ok") if isinstance(data, dict) else None
    if ok is True:
        return msgspec.convert(data, SubmitAck)
    if ok is False:
        return msgspec.convert(data, SubmitRejection)
    raise msgspec.ValidationError("Expected `ok` to be true or false - at `$.ok`")


# --- ask_user input (typed form of the tool parameters) ----------------------------------------


class AskParamsOption(WireStruct, frozen=True, kw_only=True):
    """One option of ``ask_user`` input, as the agent gives it."""

    value: str
    label: str | UnsetType = UNSET
    description: str | UnsetType = UNSET
    preview: str | UnsetType = UNSET
    preview_file: str | UnsetType = UNSET
    recommended: bool | UnsetType = UNSET


class AskParamsQuestion(WireStruct, frozen=True, kw_only=True):
    """One question of ``ask_user`` input, as the agent gives it."""

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
