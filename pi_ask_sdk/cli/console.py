"""Ask a person in a terminal: a started form in, an explicit ``Answer`` or ``Cancel`` out.

The terminal policy: an option is chosen by its number or by its exact value; both are turned
into the option's value by this code. Typing a label is refused with a hint (labels are for
reading, never sent). Free text is custom text only where the person says so (``+text``).
Cancelling is its own explicit command, never inferred from what was typed.

``pi-ask answer`` asks in a daemon thread (``prompting.py``): Ctrl-C and end of input are
never taken as an answer or a cancel; nothing is sent for a form not answered (what becomes of
it depends on how Pi runs: ``prompts.UNANSWERED``). The prompts' texts are in ``prompts.py``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import msgspec

from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.errors import BridgeError, ConnectionLost
from pi_ask_sdk.forms import FlowView, OptionValue, QuestionView
from pi_ask_sdk.responses import AnswerBuilder, Cancel, Response

from .prompting import FormWatch, PiGone, prompt_stdout
from .prompts import FINAL, FINAL_CHOICES, UNANSWERED, choose_prompt, note_prompt
from .render import render_flow, render_outcome, render_question
from .text import clean, echo

__all__ = ["CancelRequested", "answer_forms", "ask_person", "parse_choice"]

Prompt = Callable[[str], str]
Write = Callable[[str], None]
Record = Callable[[dict[str, object]], None]


class CancelRequested(Exception):
    """The person typed ``!cancel``."""


def parse_choice(question: QuestionView, text: str) -> tuple[list[OptionValue], str | None]:
    """Option values and custom text from what the person typed.

    Parts are separated by commas; a part is an option number, an exact option value, or
    ``+custom text``. Raises ``ValueError`` with a message for the person.
    """
    values: list[OptionValue] = []
    custom: str | None = None
    for raw_part in text.split(","):
        part = raw_part.strip()
        if not part:
            continue
        if part.startswith("+"):
            custom = part[1:].strip() or None
            continue
        if part.isdigit() and 1 <= int(part) <= len(question.options):
            values.append(question.options[int(part) - 1].value)
        elif question.has_value(part):
            values.append(question.value(part))
        else:
            labels = {o.label.render().casefold(): o for o in question.options}
            match = labels.get(part.casefold())
            if match is not None:
                raise ValueError(
                    f'"{part}" is a label; type its number ({match.position}) or its value '
                    f"({match.value})."
                )
            raise ValueError(f'"{part}" is neither an option number nor an option value.')
    return values, custom


def _ask_question(
    builder: AnswerBuilder, question: QuestionView, prompt: Prompt, write: Write, number: int
) -> None:
    write("\n".join(render_question(question, number)))
    qid = clean(question.id)
    while True:
        text = prompt(choose_prompt(qid, multi=question.multi))
        if text.strip() == "!cancel":
            raise CancelRequested
        try:
            values, custom = parse_choice(question, text)
            builder.select(question, *values)
            if custom is not None:
                builder.custom_text(question, custom)
        except (ValueError, BridgeError) as error:
            write(f"  ! {error}")
            continue
        break
    note = prompt(note_prompt(qid))
    if note.strip():
        builder.note(question, note)


def ask_person(flow: FlowView, prompt: Prompt = input, write: Write = echo) -> Response:
    """Walk the person through ``flow`` and return what they chose, as values.

    ``!cancel`` at any prompt, or ``c`` at the end, returns an explicit ``Cancel``. End of input
    raises ``EOFError`` (never a cancel); ``FormGone`` from ``prompt`` passes through.
    """
    builder = AnswerBuilder(flow)
    try:
        for number, question in enumerate(flow.questions, start=1):
            _ask_question(builder, question, prompt, write, number)
        while True:
            final = prompt(FINAL)
            choice = final.strip().lower()
            if choice in FINAL_CHOICES or choice == "!cancel":
                break
            write(f"  ! type {', '.join(FINAL_CHOICES)}")
    except CancelRequested:
        return Cancel.of(flow)
    if choice in ("c", "!cancel"):
        return Cancel.of(flow)
    return builder.mode("elaborate" if choice == "e" else "submit").build()


async def answer_forms(
    client: BridgeClient,
    prompt: Prompt = prompt_stdout,
    write: Write = echo,
    *,
    limit: int | None = None,
    timeout: float = 30.0,
    record: Record | None = None,
) -> int:
    """``pi-ask answer``: ask the person for each form as it opens and submit their choice.

    A form the host refuses as ``invalid_answer`` is still open and is asked again; a form that
    completes before or while it is asked is skipped. ``record`` receives one dict per submit
    (``--json``). Returns how many forms were answered (accepted). ``limit`` stops after that
    many forms; end of input stops at once (nothing is sent for the form being asked).

    Raises ``ConnectionLost`` when Pi exits or its relay stops, at once, also while the person
    is being asked (nothing is sent for that form, and no line is waited for).
    """
    async with FormWatch(client) as watch:
        try:
            return await _answer_each(client, watch, prompt, write, limit, timeout, record)
        except PiGone:
            pass
    raise ConnectionLost("disconnected", "Pi exited or its relay stopped")


async def _answer_each(
    client: BridgeClient,
    watch: FormWatch,
    prompt: Prompt,
    write: Write,
    limit: int | None,
    timeout: float,
    record: Record | None,
) -> int:
    handled = accepted = 0
    async for flow in client.flows():
        if flow.flow_id not in client.open_flows:
            write(f"! {clean(flow.flow_id)} completed before it was asked; skipped")
            continue
        write(render_flow(flow))
        while True:
            # input() blocks: ask in a daemon thread so the connection keeps being served.
            ask = functools.partial(ask_person, flow, write=write)
            try:
                response = await watch.ask(flow, ask, prompt, write)
            except EOFError:
                write(f"end of input: stopped; {UNANSWERED}")
                return accepted
            if response is None:
                break
            try:
                outcome = await client.respond(flow, response, timeout=timeout)
            except BridgeError as error:
                write(f"! {error}")
                _record(record, flow, response, "error", error.code, str(error))
                break
            write(render_outcome(outcome))
            if outcome.kind == "accepted":
                _record(record, flow, response, "accepted", None, None)
                accepted += 1
                break
            if outcome.kind == "rejected":
                message = outcome.message.render()
                _record(record, flow, response, "rejected", outcome.error, message)
            else:
                _record(record, flow, response, outcome.kind, outcome.kind, render_outcome(outcome))
            if outcome.kind != "rejected" or not outcome.flow_still_open:
                break
            write("the form is still open; answer it again")
        handled += 1
        if limit is not None and handled >= limit:
            break
    else:
        raise PiGone  # the stream ends only when the connection is lost for good
    return accepted


def _record(
    record: Record | None,
    flow: FlowView,
    response: Response,
    outcome: str,
    error: str | None,
    message: str | None,
) -> None:
    if record is None:
        return
    entry: dict[str, object] = {"flowId": flow.flow_id, "outcome": outcome}
    if error is not None:
        entry["error"] = error
        entry["message"] = message
    entry["response"] = msgspec.to_builtins(response.to_wire())
    record(entry)
