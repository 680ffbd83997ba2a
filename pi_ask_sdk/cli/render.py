"""Plain-text renderings of forms, submits, acknowledgements and results for terminals.

Used by the ``pi-ask`` command (demo, watch, answer). Values are always shown next to labels:
what a bridge sends is the value. Every piece of form text goes through ``text.clean`` (forms
are untrusted input) and columns are aligned by display width, not by code points.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import UNSET

from pi_ask_core import AskResult, CancelResponse, SubmitEvent
from pi_ask_core.protocol import AskResultAnswer
from pi_ask_sdk.forms import FlowView, QuestionView
from pi_ask_sdk.outcomes import FlowCompleted, RespondOutcome

from .text import clean, json_line, pad, width

__all__ = [
    "render_completed",
    "render_flow",
    "render_outcome",
    "render_question",
    "render_result",
    "render_submit",
]


def _indent(lines: Iterable[str], by: str = "  ") -> list[str]:
    return [by + line if line else line for line in lines]


def render_question(question: QuestionView, number: int) -> list[str]:
    kind: str = question.type
    if question.requested_type != question.type:
        kind = f"{question.type}, asked as {question.requested_type}"
    head = f"{number}. {clean(question.label)} [{clean(question.id)}, {kind}"
    head += ", required]" if question.required else "]"
    lines = [head]
    lines.extend(f"   {text}" for text in clean(question.prompt, multiline=True).split("\n"))
    values = [clean(option.value) for option in question.options]
    cells = max(width(value) for value in values)
    for option, value in zip(question.options, values, strict=True):
        marker = f" ({clean(option.badge)})" if option.badge else ""
        line = f"   {option.position}) {pad(value, cells)}  {clean(option.label)}{marker}"
        if option.description:
            line += f" - {clean(option.description)}"
        lines.append(line)
        if option.preview:
            preview = clean(option.preview, multiline=True)
            lines.extend(f"        | {text}" for text in preview.split("\n"))
    return lines


def render_flow(flow: FlowView) -> str:
    title = f' "{clean(flow.title)}"' if flow.title else ""
    replay = " (already open)" if flow.replay else ""
    lines = [f"started {clean(flow.flow_id)}{title}{replay}"]
    if flow.source != "tool":
        lines[0] += f" [source {flow.source}]"
    for number, question in enumerate(flow.questions, start=1):
        lines.extend(_indent(render_question(question, number)))
    return "\n".join(lines)


def _answer_parts(values: object, custom: object, note: object, notes: object) -> list[str]:
    parts = []
    # Quoted as JSON: each control shows as the same escape as everywhere else (text.visible).
    if values:
        parts.append(f"values {json_line(values)}")
    if custom is not UNSET and custom is not None:
        parts.append(f"custom text {json_line(custom)}")
    if note is not UNSET and note is not None:
        parts.append(f"note {json_line(note)}")
    if notes:
        parts.append(f"option notes {json_line(notes)}")
    return parts


def render_submit(event: SubmitEvent) -> str:
    response = event.response
    lines = [f"submit {clean(event.request_id)} -> {clean(event.flow_id)}"]
    if isinstance(response, CancelResponse):
        lines.append("  cancel (explicit)")
        return "\n".join(lines)
    if response.mode is not UNSET:
        lines.append(f"  mode {response.mode}")
    for qid, entry in response.answers.items():
        values = list(entry.values) if entry.values is not UNSET else []
        notes = entry.option_notes if entry.option_notes is not UNSET else {}
        parts = _answer_parts(values, entry.custom_text, entry.note, notes)
        lines.append(f"  {clean(qid)}: " + ("; ".join(parts) if parts else "(empty)"))
    return "\n".join(lines)


def render_outcome(outcome: RespondOutcome) -> str:
    if outcome.kind == "not_sent":
        return f"nothing was sent: lost ({outcome.reason}): neither an answer nor a cancel"
    if outcome.kind == "lost":
        seen = "; accepted, completion not seen" if outcome.acknowledged else ""
        return (
            f"submit {clean(outcome.ticket.request_id)}: lost ({outcome.reason}{seen}): "
            "neither an answer nor a cancel"
        )
    request_id = clean(outcome.ticket.request_id)
    if outcome.kind == "accepted":
        return f"submit-result {request_id}: accepted"
    if outcome.kind == "timed_out":
        seen = "accepted, completion not seen" if outcome.acknowledged else "no submit-result"
        return f"submit {request_id}: timed out after {outcome.timeout:g} s ({seen}); fate unknown"
    still = "the form is still open" if outcome.flow_still_open else "the flow is gone"
    message = clean(outcome.message, multiline=True).replace("\n", "\n  ")
    return f"submit-result {request_id}: {outcome.error} ({still})\n  {message}"


def _render_answer(qid: str, answer: AskResultAnswer) -> str:
    chosen = [
        f"{clean(label)} ({clean(value)}, #{index})"
        for value, label, index in zip(answer.values, answer.labels, answer.indices, strict=False)
    ]
    parts = [", ".join(chosen)] if chosen else []
    parts += _answer_parts(
        None,
        answer.custom_text,
        answer.note,
        answer.option_notes if answer.option_notes is not UNSET else None,
    )
    return f"  {clean(qid)}: " + ("; ".join(parts) if parts else "(no answer)")


def render_result(result: AskResult) -> str:
    state = "cancelled" if result.cancelled else result.mode
    lines = [f"result: {state}"]
    if not result.answers:
        lines.append("  (no answers)")
    lines.extend(_render_answer(qid, answer) for qid, answer in result.answers.items())
    if result.elaboration is not UNSET:
        lines.append(f"  clarification requested on {len(result.elaboration.items)} item(s)")
    return "\n".join(lines)


def render_completed(event: FlowCompleted) -> str:
    return f"completed {clean(event.flow_id)}\n" + "\n".join(
        _indent(render_result(event.result).split("\n"))
    )
