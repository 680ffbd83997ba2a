"""A console bridge: shows each form in the terminal and sends what the person picks.

The person types an option's number; the bridge turns it into that option's *value* (taken from
the started form) and sends the value. Typing "x" cancels the form, explicitly.

Form text comes from whatever opened the form, so it is printed with ``echo`` (controls shown
as escapes, never acted on), and the person's input is read by ``prompt_stdout`` in a daemon
thread (``in_daemon_thread``): Ctrl-C stops the bridge at once, with exit status 130, and an
unanswered form stays open in Pi.

Run against a running Pi (started with the relay extension):
    python examples/console_bridge.py
"""

from __future__ import annotations

import asyncio
import functools
import sys
from collections.abc import Callable
from typing import TypeVar

from typing_extensions import assert_never

from pi_ask_sdk import (
    AnswerBuilder,
    BridgeClient,
    Cancel,
    FlowView,
    QuestionView,
    Response,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitRejected,
    SubmitTimedOut,
)
from pi_ask_sdk.cli.prompting import in_daemon_thread, prompt_stdout
from pi_ask_sdk.cli.text import echo

F = TypeVar("F")  # one form: what ask() uses and returns belongs to the flow it was given

Prompt = Callable[[str], str]
Write = Callable[[str], None]


def show(flow: FlowView[F], write: Write) -> None:
    title = "Pi asks" if flow.title is None else flow.title.render()
    write(f"\n== {title} ({flow.flow_id})")
    for question in flow.questions:
        write(f"{question.label}: {question.prompt}")
        for option in question.options:
            badge = "" if option.badge is None else f" ({option.badge})"  # shown, never chosen by
            write(f"  {option.position}. {option.label}{badge}")


def pick(question: QuestionView[F], prompt: Prompt, write: Write) -> list[int] | None:
    """Option numbers the person chose, or None for cancel."""
    many = "numbers, comma-separated" if question.multi else "a number"
    while True:
        text = prompt(f"{question.label} ({many}, x to cancel): ").strip()
        if text == "x":
            return None
        try:
            numbers = [int(part) for part in text.split(",") if part.strip()]
        except ValueError:
            write("  please type option numbers")
            continue
        if all(1 <= n <= len(question.options) for n in numbers) and (
            question.multi or len(numbers) <= 1
        ):
            return numbers
        write(f"  choose {many} between 1 and {len(question.options)}")


def ask(flow: FlowView[F], prompt: Prompt = prompt_stdout, write: Write = echo) -> Response[F]:
    show(flow, write)
    builder = AnswerBuilder(flow)
    for question in flow.questions:
        numbers = pick(question, prompt, write)
        if numbers is None:
            return Cancel.of(flow)
        # The number is only how the person points; what is sent is the option's value.
        builder.select(question, *(question.options[n - 1].value for n in numbers))
    return builder.build()


async def serve(
    client: BridgeClient,
    prompt: Prompt = prompt_stdout,
    write: Write = echo,
    *,
    limit: int | None = None,
) -> int:
    """Answer forms as they open; returns how many were accepted."""
    accepted = handled = 0
    async for flow in client.flows():
        # input() blocks: ask in a daemon thread, so the connection keeps being served and
        # Ctrl-C ends the program at once (asyncio.to_thread's worker would be waited for).
        response = await in_daemon_thread(functools.partial(ask, flow, prompt, write))
        outcome = await client.respond(flow, response, timeout=10)
        match outcome:
            case SubmitAccepted():
                accepted += 1
                write("sent.")
            case SubmitRejected(error=error, message=message):
                write(f"refused: {error}: {message}")
            case SubmitTimedOut() | SubmitLost() | SubmitNotSent():
                # never an answer nor a cancel: say so
                write(f"not confirmed ({outcome.kind}); check the form in Pi.")
            case _:
                assert_never(outcome)
        handled += 1
        if limit is not None and handled >= limit:
            break
    return accepted


async def main() -> None:
    async with BridgeClient.connect() as client:
        await serve(client)


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:  # Ctrl-C: stop at once and quietly, with the shell's status
        sys.exit(130)
