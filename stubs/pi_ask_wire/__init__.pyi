"""TypedDicts of the raw JSON payloads of the pi-agent-ask protocol (version 1).

Generated from pi_ask_core.protocol by `python -m pi_ask_core.schema`; do not edit.
Keys that may be absent are NotRequired; they are never null. Option values and labels
are distinct types (both str at run time): a label never type-checks as a value, nor as
any str, and compares only with another label.
"""

from typing import Literal, NewType, final

from typing_extensions import NotRequired, TypedDict

OptionValue = NewType("OptionValue", str)
"""An option value of a started form: what a bridge sends to select that option."""


@final
class Label:
    """A label: display text only, never sent to select anything. A str at run time,
    typed as display text: render it with an f-string or str(); it passes nowhere a str
    or a value goes, and compares (under --strict-equality) only with another Label."""

    def __format__(self, format_spec: str, /) -> str: ...


class AskOption(TypedDict):
    """One option of a ``started`` question, normalized (spec §1.4, §2.4)."""
    value: OptionValue
    label: Label
    description: NotRequired[str]
    preview: NotRequired[str]
    previewFile: NotRequired[str]
    recommended: NotRequired[bool]

class AskQuestion(TypedDict):
    """One question of a ``started`` form, normalized (spec §1.4, §2.4)."""
    id: str
    label: Label
    prompt: str
    type: Literal['single', 'multi', 'preview']
    requestedType: NotRequired[Literal['single', 'multi', 'preview']]
    presentedType: NotRequired[Literal['single', 'multi', 'preview']]
    required: bool
    options: list[AskOption]

class StartedEvent(TypedDict):
    """The ``pi-agent-ask:started`` payload: the host opened a form."""
    version: Literal[1]
    flowId: str
    toolCallId: NotRequired[str]
    source: Literal['tool', 'ask:resume']
    title: NotRequired[str]
    questions: list[AskQuestion]
    createdAt: int | float

class AskQuestionSummary(TypedDict):
    """A question as a result lists it."""
    id: str
    label: Label
    prompt: str
    type: Literal['single', 'multi', 'preview']
    presentedType: NotRequired[Literal['single', 'multi', 'preview']]

class AskResultAnswer(TypedDict):
    """One question's answer in a result: values, labels, indices, custom text, notes."""
    values: list[str]
    labels: list[Label]
    indices: list[int]
    customText: NotRequired[str]
    note: NotRequired[str]
    optionNotes: NotRequired[dict[OptionValue, str]]

class ContextOption(TypedDict):
    """An option as an elaboration item shows it to the agent."""
    value: OptionValue
    label: Label
    description: NotRequired[str]
    preview: NotRequired[str]
    recommended: NotRequired[bool]

class ElaborationQuestionContext(TypedDict):
    """A question as an elaboration item shows it to the agent."""
    id: str
    label: Label
    prompt: str
    type: Literal['single', 'multi', 'preview']
    presentedType: NotRequired[Literal['single', 'multi', 'preview']]
    options: list[ContextOption]

class QuestionTarget(TypedDict):
    """An elaboration item about a whole question."""
    kind: Literal['question']

class OptionTarget(TypedDict):
    """An elaboration item about one option (``option_value``)."""
    kind: Literal['option']
    optionValue: OptionValue

class ElaborationItem(TypedDict):
    """One clarification item, about a question or one of its options (``target``)."""
    target: QuestionTarget | OptionTarget
    question: ElaborationQuestionContext
    option: NotRequired[ContextOption]
    selected: NotRequired[bool]
    answered: bool
    answer: NotRequired[AskResultAnswer]
    note: str

class AskElaborationPayload(TypedDict):
    """What an ``elaborate`` result asks the agent to clarify."""
    instruction: str
    nextAction: Literal['clarify', 'clarify_then_reask']
    items: list[ElaborationItem]

class QuestionState(TypedDict):
    """A question's status in a continuation payload."""
    status: Literal['answered', 'needs_clarification', 'unanswered']

class AskContinuationPayload(TypedDict):
    """How an ``elaborate`` result continues: the questions affected and the answers kept."""
    affectedQuestionIds: list[str]
    preservedAnswers: dict[str, AskResultAnswer]
    questionStates: dict[str, QuestionState]
    strategy: Literal['refine_only', 'resume']

class AskResult(TypedDict):
    """What the ``ask_user`` tool returns, and what ``completed`` carries."""
    title: NotRequired[str]
    cancelled: bool
    mode: Literal['submit', 'elaborate']
    questions: list[AskQuestionSummary]
    answers: dict[str, AskResultAnswer]
    continuation: NotRequired[AskContinuationPayload]
    elaboration: NotRequired[AskElaborationPayload]

class CompletedEvent(TypedDict):
    """The ``pi-agent-ask:completed`` payload: a form ended with ``result``."""
    version: Literal[1]
    flowId: str
    toolCallId: NotRequired[str]
    source: Literal['tool', 'ask:resume']
    result: AskResult
    completedAt: int | float

class Issue(TypedDict):
    """One problem with ``ask_user`` input: where (``path``) and what."""
    path: str
    message: str

class InvalidInputError(TypedDict):
    """The ``error`` of an ``InvalidInputResult``: every issue found."""
    kind: Literal['invalid_input']
    issues: list[Issue]

class InvalidInputResult(TypedDict):
    """What the ``ask_user`` tool returns for a form that fails validation (spec §2.1)."""
    title: NotRequired[str]
    cancelled: Literal[True]
    mode: Literal['submit']
    questions: list[AskQuestionSummary]
    answers: dict[str, AskResultAnswer]
    error: InvalidInputError

class RemoteAnswer(TypedDict):
    """One question's answer in a submit: option values, custom text, notes."""
    values: NotRequired[list[OptionValue]]
    customText: NotRequired[str]
    note: NotRequired[str]
    optionNotes: NotRequired[dict[OptionValue, str]]

class AnswerResponse(TypedDict):
    """A submit's ``response`` that answers (``kind: "answer"``)."""
    kind: Literal['answer']
    mode: NotRequired[Literal['submit', 'elaborate']]
    answers: dict[str, RemoteAnswer]

class CancelResponse(TypedDict):
    """A submit's ``response`` that cancels (``kind: "cancel"``)."""
    kind: Literal['cancel']

class SubmitEvent(TypedDict):
    """The ``pi-agent-ask:submit`` payload a bridge emits to answer or cancel a flow."""
    version: Literal[1]
    requestId: str
    flowId: str
    response: AnswerResponse | CancelResponse

class SubmitAck(TypedDict):
    """The ``submit-result`` of an accepted submit (``ok: true``)."""
    version: Literal[1]
    requestId: str
    flowId: str
    ok: Literal[True]

class SubmitRejection(TypedDict):
    """The ``submit-result`` of a refused submit (``ok: false``): a code, and text for people."""
    version: Literal[1]
    requestId: str
    flowId: str
    ok: Literal[False]
    error: Literal['flow_not_found', 'invalid_request', 'invalid_answer']
    message: str

class AskParamsOption(TypedDict):
    """One option of ``ask_user`` input, as the agent gives it."""
    value: str
    label: NotRequired[str]
    description: NotRequired[str]
    preview: NotRequired[str]
    previewFile: NotRequired[str]
    recommended: NotRequired[bool]

class AskParamsQuestion(TypedDict):
    """One question of ``ask_user`` input, as the agent gives it."""
    id: str
    label: NotRequired[str]
    prompt: str
    type: NotRequired[Literal['single', 'multi', 'preview']]
    required: NotRequired[bool]
    options: list[AskParamsOption]

class AskParams(TypedDict):
    """The ``ask_user`` tool input; ``FlowHost.start`` also takes it as a plain dict."""
    title: NotRequired[str]
    background: NotRequired[bool]
    questions: list[AskParamsQuestion]

RemoteResponse = AnswerResponse | CancelResponse
SubmitResultEvent = SubmitAck | SubmitRejection

__all__ = [
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
    "CompletedEvent",
    "ContextOption",
    "ElaborationItem",
    "ElaborationQuestionContext",
    "InvalidInputError",
    "InvalidInputResult",
    "Issue",
    "Label",
    "OptionTarget",
    "OptionValue",
    "QuestionState",
    "QuestionTarget",
    "RemoteAnswer",
    "RemoteResponse",
    "StartedEvent",
    "SubmitAck",
    "SubmitEvent",
    "SubmitRejection",
    "SubmitResultEvent",
]
