"""A policy robot for CI: answers forms by explicit value rules, and fails closed.

Rules map a question id to the option values to select. A form is answered only when every one
of its questions has a rule and every value named by a rule is an option of that question;
any other form is cancelled explicitly (``kind: "cancel"``) with the reason logged, so a robot
never approves what it does not understand. Labels play no part.

Run against a running Pi (started with the relay extension):
    python examples/policy_bridge.py
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Literal, TypeVar

from pi_ask_sdk import AnswerBuilder, BridgeClient, Cancel, FlowView, RespondOutcome, Response

log = logging.getLogger("policy_bridge")

Rules = Mapping[str, Sequence[str]]
"""Question id -> the option values to select (one for single/preview questions)."""

CI_RULES: Rules = {
    "deploy": ["no"],  # CI never deploys
    "run_tests": ["yes"],
    "notify": ["oncall"],
}


F = TypeVar("F")  # one form: a decision holds only pieces of the flow it was made for


@dataclass(frozen=True)
class Answered(Generic[F]):
    response: Response[F]
    kind: Literal["answered"] = "answered"


@dataclass(frozen=True)
class Refused(Generic[F]):
    """No rule fits: the form is cancelled explicitly; ``reason`` says why."""

    response: Response[F]
    reason: str
    kind: Literal["refused"] = "refused"


def decide(flow: FlowView[F], rules: Rules) -> Answered[F] | Refused[F]:
    """What the robot sends for ``flow``: explicit values, or an explicit cancel."""
    builder = AnswerBuilder(flow)
    for question in flow.questions:
        wanted = rules.get(question.id)
        if wanted is None:
            return Refused(Cancel.of(flow), f'no rule for question "{question.id}"')
        missing = [value for value in wanted if not question.has_value(value)]
        if missing:
            return Refused(
                Cancel.of(flow),
                f'rule for "{question.id}" names {missing}, not options of this form '
                f"(its values: {list(question.values)})",
            )
        if len(wanted) > 1 and not question.multi:
            return Refused(Cancel.of(flow), f'rule for "{question.id}" selects several values')
        builder.select(question, *(question.value(value) for value in wanted))
    return Answered(builder.build())


async def serve(
    client: BridgeClient, rules: Rules = CI_RULES, *, limit: int | None = None, timeout: float = 10
) -> list[RespondOutcome]:
    """Answer forms as they open (``limit`` of them, or forever); returns the outcomes."""
    outcomes: list[RespondOutcome] = []
    async for flow in client.flows():
        decision = decide(flow, rules)
        if decision.kind == "refused":
            log.warning("cancelling %s: %s", flow.flow_id, decision.reason)
        outcome = await client.respond(flow, decision.response, timeout=timeout)
        if outcome.kind == "rejected":
            log.error("host refused our submit for %s: %s", flow.flow_id, outcome.message)
        elif outcome.kind != "accepted":  # timed out, lost, not sent: neither answer nor cancel
            log.error("no confirmation for %s (%s)", flow.flow_id, outcome.kind)
        outcomes.append(outcome)
        if limit is not None and len(outcomes) >= limit:
            break
    return outcomes


async def main() -> None:
    logging.basicConfig(level=logging.INFO)
    async with BridgeClient.connect() as client:
        await serve(client)


if __name__ == "__main__":
    asyncio.run(main())
