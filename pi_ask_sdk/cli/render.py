"""Plain-text renderings of forms, submits, acknowledgements and results for terminals.

Used by the ``pi-ask`` command (demo, watch, answer). Values are always shown next to labels:
what a bridge sends is the value.
"""

from __future__ import annotations

from collections.abc import Iterable

from msgspec import UNSET

from pi_ask_core import AskResult, AskResultAnswer, CancelResponse, SubmitEvent
from pi_ask_sdk.forms import FlowView, QuestionView
from pi_ask_sdk.outcomes import FlowCompleted, SubmitOutcome

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
    head = f"{number}. {question.label} [{question.id}, {kind}"
    head += ", required]" if question.required else "]"
    lines = [head, f"   {question.prompt}"]
    width = max(len(option.value) for option in question.options)
    for option in question.options:
        marker = " (recommended)" if option.recommended else ""
        line = f"   {option.position}) {option.value.ljust(width)}  {option.label}{marker}"
        if option.description:
            line += f" - {option.description}"
        lines.append(line)
        if option.preview:
            lines.extend(f"        | {text}" for text in option.preview.splitlines())
    return lines


def render_flow(flow: FlowView) -> str:
    title = f' "{flow.title}"' if flow.title else ""
    replay = " (already open)" if flow.replay else ""
    lines = [f"started {flow.flow_id}{title}{replay}"]
    if flow.source != "tool":
        lines[0] += f" [source {flow.source}]"
    for number, question in enumerate(flow.questions, start=1):
        lines.extend(_indent(render_question(question, number)))
    return "\n".join(lines)


def _answer_parts(values: object, custom: object, note: object, notes: object) -> list[str]:
    parts = []
    if values:
        parts.append(f"values {values}")
    if custom is not UNSET and custom is not None:
        parts.append(f"custom text {custom!r}")
    if note is not UNSET and note is not None:
        parts.append(f"note {note!r}")
    if notes:
        parts.append(f"option notes {notes}")
    return parts


def render_submit(event: SubmitEvent) -> str:
    response = event.response
    lines = [f"submit {event.request_id} -> {event.flow_id}"]
    if isinstance(response, CancelResponse):
        lines.append("  cancel (explicit)")
        return "\n".join(lines)
    if response.mode is not UNSET:
        lines.append(f"  mode {response.mode}")
    for qid, entry in response.answers.items():
        values = list(entry.values) if entry.values is not UNSET else []
        notes = entry.option_notes if entry.option_notes is not UNSET else {}
        parts = _answer_parts(values, entry.custom_text, entry.note, notes)
        lines.append(f"  {qid}: " + ("; ".join(parts) if parts else "(empty)"))
    return "\n".join(lines)


def render_outcome(outcome: SubmitOutcome) -> str:
    ticket = outcome.ticket
    if outcome.kind == "accepted":
        return f"submit-result {ticket.request_id}: accepted"
    still = "the form is still open" if outcome.flow_still_open else "the flow is gone"
    return f"submit-result {ticket.request_id}: {outcome.error} ({still})\n  {outcome.message}"


def _render_answer(qid: str, answer: AskResultAnswer) -> str:
    chosen = [
        f"{label} ({value}, #{index})"
        for value, label, index in zip(answer.values, answer.labels, answer.indices, strict=False)
    ]
    parts = [", ".join(chosen)] if chosen else []
    parts += _answer_parts(
        None,
        answer.custom_text,
        answer.note,
        answer.option_notes if answer.option_notes is not UNSET else None,
    )
    return f"  {qid}: " + ("; ".join(parts) if parts else "(no answer)")


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
    return f"completed {event.flow_id}\n" + "\n".join(
        _indent(render_result(event.result).split("\n"))
    )
