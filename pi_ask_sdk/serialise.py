"""Everything a bridge holds, as JSON in the wire's shape: ``to_json`` / ``to_data``, and back.

A bridge forwards forms and answers to a web page, a queue or a log. ``to_json(value)`` (text)
and ``to_data(value)`` (decoded JSON: dicts, lists, strings, numbers) take any of:

* ``FlowView``: the ``started`` event it was made from (``flowId``, ``toolCallId``, ``source``,
  ``title``, ``questions`` with ``options``, ``createdAt``, camelCase as on the wire), plus
  ``"replay": true`` for a replayed form. ``QuestionView`` / ``OptionView``: the question /
  option as in that event (an option marked ``recommended`` keeps ``"recommended": true``).
* ``Answer`` / ``Cancel`` (and ``UncheckedAnswer``): ``{"flowId": ..., "response": ...}``, the
  submit's own shape without ``version`` and ``requestId``.
* outcomes (``SubmitAccepted``, ``SubmitRejected``, ``SubmitTimedOut``, ``SubmitLost``,
  ``SubmitNotSent``) and events (``FlowStarted``, ``FlowCompleted``, ``SessionEnded``):
  ``{"kind": ..., ...}`` with camelCase keys; a completion's ``result`` is the wire's
  ``AskResult``.

Back, where it makes sense: ``flow_from_json`` rebuilds a ``FlowView`` (equal to the one
written), and ``response_from_json(flow, data)`` turns a response written by ``to_json`` (or
by a web page in the same shape) into a ``Response`` for ``flow`` through ``AnswerBuilder``, so
it is checked like one built in Python: a label is ``UnknownOption``, another flow's
``flowId`` is ``FlowMismatch``, malformed data ``InvalidArgument``. Display text is written as
plain strings; nothing read back is ever taken as a value unless the form has it.
"""

from __future__ import annotations

from typing import TypeAlias, cast

import msgspec

from pi_ask_core import AnswerResponse, CancelResponse, RemoteAnswer, StartedEvent
from pi_ask_core.protocol import AskOption

from ._json import JsonObject, JsonValue
from .errors import FlowMismatch, InvalidArgument
from .forms import F, FlowId, FlowView, OptionView, QuestionView
from .outcomes import (
    FlowCompleted,
    FlowStarted,
    SessionEnded,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitRejected,
    SubmitTicket,
    SubmitTimedOut,
)
from .responses import Answer, AnswerBuilder, Cancel, Response, UncheckedAnswer

__all__ = [
    "JsonObject",
    "JsonValue",
    "Serialisable",
    "flow_from_json",
    "response_from_json",
    "to_data",
    "to_json",
]

Serialisable: TypeAlias = (
    FlowView[F]
    | QuestionView[F]
    | OptionView[F]
    | Answer[F]
    | Cancel[F]
    | UncheckedAnswer[F]
    | SubmitAccepted
    | SubmitRejected
    | SubmitTimedOut
    | SubmitLost
    | SubmitNotSent
    | FlowStarted
    | FlowCompleted
    | SessionEnded
)
"""What ``to_json`` and ``to_data`` take."""


def _builtins(struct: msgspec.Struct) -> JsonObject:
    return cast("JsonObject", msgspec.to_builtins(struct))


def _flow(flow: FlowView[F]) -> JsonObject:
    data = _builtins(flow.to_started())
    if flow.replay:
        data["replay"] = True
    return data


def _option(option: OptionView[F]) -> AskOption:
    return AskOption(
        value=str(option.value),
        label=option.label.render(),
        description=msgspec.UNSET if option.description is None else option.description.render(),
        preview=msgspec.UNSET if option.preview is None else option.preview.render(),
        recommended=msgspec.UNSET if option.badge is None else True,
    )


def _ticket(ticket: SubmitTicket) -> JsonObject:
    return {
        "requestId": ticket.request_id,
        "flowId": ticket.flow_id,
        "responseKind": ticket.response_kind,
    }


def to_data(value: Serialisable[F]) -> JsonObject:
    """``value`` as decoded JSON in the wire's shape (see the module's docstring).

    Args:
        value: A view, a response, an outcome or a client event.

    Raises:
        InvalidArgument: ``value`` is none of those.
    """
    if isinstance(value, FlowView):
        return _flow(value)
    if isinstance(value, QuestionView):
        return _builtins(value._wire)
    if isinstance(value, OptionView):
        return _builtins(_option(value))
    if isinstance(value, (Answer, Cancel, UncheckedAnswer)):
        return {"flowId": value.flow_id, "response": value.to_builtins()}
    if isinstance(value, SubmitAccepted):
        completion = _event(value.completion)
        return {"kind": "accepted", **_ticket(value.ticket), "completion": completion}
    if isinstance(value, SubmitRejected):
        return {
            "kind": "rejected",
            **_ticket(value.ticket),
            "error": value.error,
            "message": value.message.render(),
        }
    if isinstance(value, SubmitTimedOut):
        return {
            "kind": "timed_out",
            **_ticket(value.ticket),
            "timeout": value.timeout,
            "acknowledged": value.acknowledged,
        }
    if isinstance(value, SubmitLost):
        return {
            "kind": "lost",
            **_ticket(value.ticket),
            "reason": value.reason,
            "acknowledged": value.acknowledged,
        }
    if isinstance(value, SubmitNotSent):
        return {"kind": "not_sent", "flowId": value.flow_id, "reason": value.reason}
    if isinstance(value, (FlowStarted, FlowCompleted, SessionEnded)):
        return _event(value)
    raise InvalidArgument("to_data", "value", "a view, response, outcome or event", value)


def _event(event: FlowStarted | FlowCompleted | SessionEnded) -> JsonObject:
    if isinstance(event, FlowStarted):
        return {"kind": "started", "flow": _flow(event.flow)}
    if isinstance(event, SessionEnded):
        return {"kind": "session_ended", "reason": event.reason}
    data: JsonObject = {"kind": "completed", "flowId": event.flow_id}
    if event.tool_call_id is not None:
        data["toolCallId"] = event.tool_call_id
    data["source"] = event.source
    data["result"] = _builtins(event.result)
    data["completedAt"] = event.completed_at
    if event.flow is not None:
        data["flow"] = _flow(event.flow)
    return data


def to_json(value: Serialisable[F]) -> str:
    """``to_data(value)`` as JSON text (UTF-8 safe; what ``json.loads`` reads back).

    Args:
        value: A view, a response, an outcome or a client event.

    Raises:
        InvalidArgument: ``value`` is none of those.
    """
    return msgspec.json.encode(to_data(value)).decode()


def _json_bytes(where: str, data: str | bytes | JsonObject) -> bytes:
    if isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, dict):
        return msgspec.json.encode(data)
    raise InvalidArgument(where, "data", "JSON text or a decoded JSON object", data)


def flow_from_json(data: str | bytes | JsonObject) -> FlowView:
    """The ``FlowView`` that ``to_json`` / ``to_data`` wrote.

    Args:
        data: JSON text, its UTF-8 bytes, or the decoded object.

    Raises:
        InvalidArgument: ``data`` is not JSON in a ``started`` event's shape.
    """
    raw = _json_bytes("flow_from_json", data)
    try:
        event = msgspec.json.decode(raw, type=StartedEvent)
        replay = msgspec.json.decode(raw, type=_Replay).replay
    except (msgspec.DecodeError, UnicodeError) as exc:
        raise InvalidArgument("flow_from_json", "data", f"a started event ({exc})", data) from None
    return FlowView.from_started(event, replay=replay)


class _Replay(msgspec.Struct):
    replay: bool = False


class _Submitted(msgspec.Struct, rename="camel"):
    flow_id: str
    response: AnswerResponse | CancelResponse


def response_from_json(flow: FlowView[F], data: str | bytes | JsonObject) -> Response[F]:
    """The response ``data`` (``{"flowId": ..., "response": ...}``, as ``to_json`` writes it)
    for ``flow``, built with ``AnswerBuilder`` so it is checked like one built in Python.

    Args:
        flow: The form the response answers.
        data: JSON text, its UTF-8 bytes, or the decoded object.

    Raises:
        InvalidArgument: ``data`` is not JSON in that shape.
        FlowMismatch: ``data`` names another flow.
        UnknownQuestion: It answers a question the form does not have.
        UnknownOption: It selects or notes a value its question does not have.
        InvalidResponse: The host would refuse it (``InvalidSelection``, ...).
    """
    raw = _json_bytes("response_from_json", data)
    try:
        submitted = msgspec.json.decode(raw, type=_Submitted)
    except (msgspec.DecodeError, UnicodeError) as exc:
        raise InvalidArgument(
            "response_from_json", "data", f'{{"flowId": ..., "response": ...}} ({exc})', data
        ) from None
    if submitted.flow_id != flow.flow_id:
        raise FlowMismatch(flow.flow_id, FlowId(submitted.flow_id), "response")
    response = submitted.response
    if isinstance(response, CancelResponse):
        return Cancel.of(flow)
    builder = AnswerBuilder(flow)
    if response.mode is not msgspec.UNSET:
        builder.mode(response.mode)
    for qid, entry in response.answers.items():
        _answer_one(builder, flow.question(qid), entry)
    return builder.build()


def _answer_one(builder: AnswerBuilder[F], question: QuestionView[F], entry: RemoteAnswer) -> None:
    # Always an entry for the question, as sent (``{}`` too), then what it holds.
    values = () if entry.values is msgspec.UNSET else entry.values
    builder.select(question, *[question.value(value) for value in values])
    if entry.custom_text is not msgspec.UNSET:
        builder.custom_text(question, entry.custom_text)
    if entry.note is not msgspec.UNSET:
        builder.note(question, entry.note)
    if entry.option_notes is not msgspec.UNSET:
        for value, text in entry.option_notes.items():
            builder.option_note(question, question.value(value), text)
