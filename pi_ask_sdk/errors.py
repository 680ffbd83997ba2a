"""Every error the bridge library raises, in one tree under ``PiAskError`` (from ``pi_ask_core``):

    PiAskError                         root (pi_ask_core.errors); catch it to handle them all
    ├── InvalidForm                    ask_user input that cannot open a form (core)
    ├── SubmitRefused                  a response the host refused, answered directly (core)
    ├── HostClosed                     the host was closed (core)
    ├── BridgeError                    everything the bridge library (pi_ask_sdk) raises
    │   ├── UnknownQuestion            a question id the form does not have
    │   ├── UnknownOption              an option value the question does not have
    │   ├── InvalidResponse            an answer the host would refuse (nothing sent)
    │   │   ├── InvalidSelection       by select()
    │   │   ├── InvalidCustomText      by custom_text()
    │   │   └── InvalidOptionNote      by option_note()
    │   ├── InvalidArgument            (also TypeError, ValueError) an argument of the wrong type
    │   │                              or value, or a value the SDK makes that was made up
    │   ├── ApprovalMappingError       an approval mapping that does not fit the form
    │   ├── FlowMismatch               a piece of one flow's form used for another flow
    │   ├── FlowClosed                 the flow can take no submit (nothing sent)
    │   │   ├── FlowAlreadyAnswered
    │   │   └── FlowAlreadyCompleted
    │   ├── InvalidRequestId           empty, in use, or not UTF-8 safe
    │   ├── UnknownTicket              another client's ticket
    │   ├── WaitTimeout                (also TimeoutError) a bounded wait ran out
    │   ├── ConnectionLost             the session ended or the connection went away
    │   ├── InvalidUse                 (also RuntimeError) a call the object's state forbids
    │   │   └── ClientNotOpen          used before open() or after close()
    │   └── TransportUnavailable       no transport could be made
    │       ├── RelayError             the relay transport (pi_ask_sdk.transports.relay.errors)
    │       └── FleetError             the fleet over NATS: pi_ask_sdk.fleet.errors draws its branch
    └── ToolingError                   the test tooling: pi_ask_sdk.testing.errors draws its branch
                                       (the stand-in host, the real-Pi kit, check_transport)

Misuse is an error of this tree too, and also the exception Python code expects for it: a bad
argument (wrong type or value, a made-up ``QuestionId``, an outcome tested for truth) raises
``InvalidArgument``, also a ``TypeError`` and a ``ValueError``; a call the state forbids
raises ``InvalidUse``, also a ``RuntimeError``. So ``except PiAskError`` catches every error the
SDK raises, and ``except (TypeError, ValueError)`` still catches the argument errors.

An ``OSError`` met on the way is never raised as it is: it is wrapped in one of these, with the
``OSError`` as its ``__cause__``.

Every error has a stable ``code`` (a ``Literal``) and keeps the offending names as attributes, so
a bridge can react programmatically and a person reading the message learns what was wrong.
Errors are raised *before* anything is sent whenever the SDK can tell locally; the host stays
authoritative for everything else (its refusals come back as ``SubmitRejected``, not as errors).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pi_ask_core import HostClosed, InvalidForm, PiAskError, SubmitRefused

__all__ = [
    "ApprovalMappingError",
    "ApprovalProblem",
    "BridgeError",
    "BridgeErrorCode",
    "ClientNotOpen",
    "ConnectionLost",
    "ConnectionLostReason",
    "CustomTextProblem",
    "FlowAlreadyAnswered",
    "FlowAlreadyCompleted",
    "FlowClosed",
    "FlowMismatch",
    "HostClosed",
    "InvalidArgument",
    "InvalidCustomText",
    "InvalidForm",
    "InvalidOptionNote",
    "InvalidRequestId",
    "InvalidResponse",
    "InvalidSelection",
    "InvalidUse",
    "MismatchedPiece",
    "OptionNoteProblem",
    "PiAskError",
    "ResponseProblem",
    "SelectProblem",
    "SubmitRefused",
    "TransportUnavailable",
    "UnknownOption",
    "UnknownQuestion",
    "UnknownTicket",
    "WaitTimeout",
]

BridgeErrorCode = Literal[
    "unknown_question",
    "unknown_option",
    "invalid_response",
    "invalid_argument",
    "invalid_use",
    "approval_mapping",
    "flow_mismatch",
    "flow_already_answered",
    "flow_already_completed",
    "invalid_request_id",
    "unknown_ticket",
    "wait_timeout",
    "connection_lost",
    "client_not_open",
    "transport_unavailable",
    "payload_too_large",
]
"""The ``code`` of every ``BridgeError``: stable, for programs to match on (the message is for
people)."""

SelectProblem = Literal[
    "duplicate_value", "too_many_values", "value_with_custom_text", "unknown_value"
]
"""The rules ``AnswerBuilder.select`` can break, in the host's order (``unknown_value`` only for
a flow id the host re-announced with other options)."""
CustomTextProblem = Literal["value_with_custom_text"]
"""The rule ``AnswerBuilder.custom_text`` can break."""
OptionNoteProblem = Literal["unknown_option_note"]
"""The rule ``AnswerBuilder.option_note`` can break."""
ResponseProblem = Literal[SelectProblem, CustomTextProblem, OptionNoteProblem]
"""Why a response builder refused an answer: the rule of ``pi_ask_core.answers`` that the host
would refuse it with (as ``invalid_answer``), checked locally in the host's order. Only the rules
a typed builder can break: the JSON-shape rules of ``pi_ask_core.answers.AnswerRule`` cannot
occur."""

MismatchedPiece = Literal[
    "response", "answer", "question", "question id", "option value", "approval mapping"
]
"""What ``FlowMismatch`` found taken from another flow."""

ApprovalProblem = Literal["question_not_in_form", "value_not_in_question", "unknown_button"]
"""What ``ApprovalMappingError`` found wrong in an approval mapping: a question the form does not
have, a value its question does not offer, or a button the mapping does not name."""
ConnectionLostReason = Literal["session_ended", "disconnected", "closed"]
"""Why ``ConnectionLost`` was raised: Pi's session ended (or the connection was lost and the
transport reconnects), the connection to the host is gone for good, or the client was closed;
always the reason the client's events give for the same loss."""


def _quoted(names: Iterable[str]) -> str:
    shown = ", ".join(f'"{name}"' for name in names)
    return shown or "none"


class BridgeError(PiAskError):
    """Base of every error raised by ``pi_ask_sdk``; catch it to handle them all."""

    code: BridgeErrorCode


class UnknownQuestion(BridgeError):
    """A question id that the started form does not have (ids are matched exactly)."""

    code: Literal["unknown_question"] = "unknown_question"

    def __init__(self, flow_id: str, question_id: str, known: Iterable[str]) -> None:
        self.flow_id = flow_id
        self.question_id = question_id
        self.known: tuple[str, ...] = tuple(known)
        super().__init__(
            f'Flow "{flow_id}" has no question "{question_id}"; '
            f"its question ids are {_quoted(self.known)}."
        )


class UnknownOption(BridgeError):
    """An option value that the question does not have. Labels never match: only values do."""

    code: Literal["unknown_option"] = "unknown_option"

    def __init__(self, question_id: str, value: str, known: Iterable[str]) -> None:
        self.question_id = question_id
        self.value = value
        self.known: tuple[str, ...] = tuple(known)
        super().__init__(
            f'Question "{question_id}" has no option value "{value}"; its option values are '
            f"{_quoted(self.known)} (labels are never accepted)."
        )


class InvalidResponse(BridgeError):
    """An answer the host would refuse as ``invalid_answer`` (spec §4.3), caught before sending.

    ``problem`` is the rule the host would apply and ``host_message`` the message it would send
    (both from ``pi_ask_core.answers``, the host's own checks). Each builder call raises its own
    subclass, whose ``problem`` lists only the rules that call can break: ``InvalidSelection``
    (``select``), ``InvalidCustomText`` (``custom_text``), ``InvalidOptionNote``
    (``option_note``).
    """

    code: Literal["invalid_response"] = "invalid_response"
    host_error: Literal["invalid_answer"] = "invalid_answer"
    problem: ResponseProblem

    def __init__(self, question_id: str, problem: ResponseProblem, message: str) -> None:
        self.question_id = question_id
        self.problem = problem
        self.host_message = message
        super().__init__(f"{message} (rule {problem}; nothing was sent)")


class InvalidSelection(InvalidResponse):
    """``AnswerBuilder.select`` made an answer the host would refuse."""

    problem: SelectProblem

    def __init__(self, question_id: str, problem: SelectProblem, message: str) -> None:
        super().__init__(question_id, problem, message)


class InvalidCustomText(InvalidResponse):
    """``AnswerBuilder.custom_text`` made an answer the host would refuse."""

    problem: CustomTextProblem

    def __init__(self, question_id: str, problem: CustomTextProblem, message: str) -> None:
        super().__init__(question_id, problem, message)


class InvalidOptionNote(InvalidResponse):
    """``AnswerBuilder.option_note`` named no option value of its question."""

    problem: OptionNoteProblem

    def __init__(self, question_id: str, problem: OptionNoteProblem, message: str) -> None:
        super().__init__(question_id, problem, message)


class InvalidArgument(BridgeError, TypeError, ValueError):
    """An SDK call was given an argument it cannot take: of the wrong type (``mode("approve")``,
    ``custom_text(q, None)``, a plain ``str`` where an ``OptionValue`` is required) or with a
    value it refuses (``BridgeClient(t, request_id_prefix="")``), or a value the SDK makes was
    made up or misused (``QuestionId("x")``, ``Answer(...)``, subclassing ``OptionValue``,
    ``if outcome:``). ``method`` names the call and ``argument`` the parameter.

    Also a ``TypeError`` and a ``ValueError``, so code that catches what Python raises for a bad
    argument keeps working."""

    code: Literal["invalid_argument"] = "invalid_argument"

    def __init__(
        self, method: str, argument: str, expected: str, got: object, *, message: str = ""
    ) -> None:
        self.method = method
        self.argument = argument
        self.expected = expected
        if not message:
            shown = repr(got)
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            message = (
                f"{method}(): argument {argument!r} must be {expected}, "
                f"got {type(got).__name__} {shown}."
            )
        super().__init__(message)


class ApprovalMappingError(BridgeError):
    """An approval mapping that does not fit a form, or a button it does not know.

    Raised when a mapping is bound to a form whose questions or option values do not include
    what a button names, so a bridge never sends a guess; there is no fallback to labels.
    """

    code: Literal["approval_mapping"] = "approval_mapping"

    def __init__(
        self,
        problem: ApprovalProblem,
        *,
        button: str,
        flow_id: str,
        question_id: str | None = None,
        value: str | None = None,
        known: Iterable[str] = (),
    ) -> None:
        self.problem: ApprovalProblem = problem
        self.button = button
        self.flow_id = flow_id
        self.question_id = question_id
        self.value = value
        self.known: tuple[str, ...] = tuple(known)
        if problem == "unknown_button":
            detail = f"no such button; the mapping has {_quoted(self.known)}"
        elif problem == "question_not_in_form":
            detail = (
                f'it selects question "{question_id}", which flow "{flow_id}" does not have '
                f"(its questions are {_quoted(self.known)})"
            )
        else:
            detail = (
                f'it selects value "{value}" of question "{question_id}", which has no such '
                f"option value (its values are {_quoted(self.known)})"
            )
        super().__init__(f'Approval button "{button}": {detail}.')


class FlowMismatch(BridgeError):
    """A piece of one flow's form (a response, an answer, a question id, an option value, an
    approval mapping) was used for another flow; refused before anything is sent.

    ``flow_id`` is the flow it was used for, ``other_flow_id`` the flow it was taken from and
    ``piece`` what it was.
    """

    code: Literal["flow_mismatch"] = "flow_mismatch"

    def __init__(
        self, flow_id: str, other_flow_id: str, piece: MismatchedPiece = "response"
    ) -> None:
        self.flow_id = flow_id
        self.other_flow_id = other_flow_id
        self.piece: MismatchedPiece = piece
        super().__init__(
            f'The {piece} was taken from flow "{other_flow_id}", not from flow "{flow_id}"; '
            "build it from the form you submit to (nothing was sent)."
        )


class FlowClosed(BridgeError):
    """A submit refused locally because the flow can no longer take one; nothing was sent."""

    code: Literal["flow_already_answered", "flow_already_completed"]

    def __init__(self, flow_id: str, message: str) -> None:
        self.flow_id = flow_id
        super().__init__(message)


class FlowAlreadyAnswered(FlowClosed):
    """The host already accepted a submit for this flow (a flow completes at most once)."""

    code: Literal["flow_already_answered"] = "flow_already_answered"

    def __init__(self, flow_id: str) -> None:
        super().__init__(flow_id, f'Flow "{flow_id}" already accepted a submit; nothing was sent.')


class FlowAlreadyCompleted(FlowClosed):
    """The flow's ``completed`` event was already seen; nothing was sent."""

    code: Literal["flow_already_completed"] = "flow_already_completed"

    def __init__(self, flow_id: str) -> None:
        super().__init__(flow_id, f'Flow "{flow_id}" has already completed; nothing was sent.')


class InvalidRequestId(BridgeError):
    """A caller-chosen request id that is empty or already in use by a pending submit."""

    code: Literal["invalid_request_id"] = "invalid_request_id"

    def __init__(self, request_id: str, reason: str) -> None:
        self.request_id = request_id
        super().__init__(f"Request id {request_id!r} {reason}.")


class UnknownTicket(BridgeError):
    """A ticket given to a client that did not issue it."""

    code: Literal["unknown_ticket"] = "unknown_ticket"

    def __init__(self, request_id: str) -> None:
        self.request_id = request_id
        super().__init__(f"Submit ticket {request_id!r} was issued by another client.")


class WaitTimeout(BridgeError, TimeoutError):
    """A bounded wait (for a form, an event, or the sync facade's loop) ran out."""

    code: Literal["wait_timeout"] = "wait_timeout"

    def __init__(self, what: str, timeout: float) -> None:
        self.what = what
        self.timeout = timeout
        super().__init__(f"Timed out after {timeout:g} s waiting for {what}.")


class ConnectionLost(BridgeError):
    """The session ended or the connection to the host went away.

    Raised by ``submit`` for a flow that is gone and by streams that have ended; ``respond`` and
    ``await_result`` report it as an outcome instead: ``SubmitLost`` for a submit that was sent
    (it may or may not have been applied), ``SubmitNotSent`` from ``respond`` when nothing was;
    neither is ever reported as an answer or a cancel.
    """

    code: Literal["connection_lost"] = "connection_lost"

    def __init__(self, reason: ConnectionLostReason, detail: str = "") -> None:
        self.reason: ConnectionLostReason = reason
        text = {
            "session_ended": "The Pi session ended before the submit was acknowledged",
            "disconnected": "The connection to the host was lost",
            "closed": "The client was closed",
        }[reason]
        super().__init__(f"{text}{': ' + detail if detail else ''}.")


class InvalidUse(BridgeError, RuntimeError):
    """A call the object's state does not allow: a transport opened twice, a
    ``SyncBridgeClient`` called from its own loop thread, a client not open (``ClientNotOpen``).
    ``action`` says what was attempted. Also a ``RuntimeError``."""

    code: Literal["invalid_use", "client_not_open"] = "invalid_use"

    def __init__(self, action: str, message: str) -> None:
        self.action = action
        super().__init__(message)


class ClientNotOpen(InvalidUse):
    """The client was used before ``async with`` / ``open()`` or after it closed."""

    code: Literal["client_not_open"] = "client_not_open"

    def __init__(self, action: str) -> None:
        super().__init__(
            action, f"Cannot {action}: the BridgeClient is not open (use `async with`)."
        )


class TransportUnavailable(BridgeError):
    """No transport could be made, e.g. ``BridgeClient.connect()`` without a relay module."""

    code: Literal["transport_unavailable"] = "transport_unavailable"

    def __init__(self, message: str) -> None:
        super().__init__(message)
