"""A tiny bridge: it refuses every production deploy Pi asks about, by option value."""

from __future__ import annotations

from pi_ask_sdk import AnswerBuilder, BridgeClient


async def refuse_deploys(client: BridgeClient, *, limit: int | None = None) -> int:
    """Answer ``deploy`` with the value ``no``; leave other forms to the user. Returns how many
    answers the host accepted."""
    accepted = seen = 0
    async for flow in client.flows():
        if not flow.has_question("deploy"):
            continue
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("no")).build()
        outcome = await client.respond(flow, answer, timeout=10)
        accepted += outcome.kind == "accepted"
        seen += 1
        if limit is not None and seen >= limit:
            break
    return accepted
