"""One bridge for the Pis of every host: a policy robot over NATS (copy this file alone).

Each host runs ``pi-ask forward --nats URL`` (its Pis' forms go to NATS JetStream, the
answers come back). This bridge connects to the same NATS server and ``serve(handler, fleet)``
gives every Pi of every host (those up now, and each that comes up later, on any host) its own
``BridgeClient``; ``answer_pi`` answers its forms by explicit value rules and cancels
explicitly what the rules do not cover. Nothing in ``answer_pi`` knows about NATS: the typed
API is the same as for one local Pi, and its test runs it on ``pi_ask_sdk.testing.fleet``'s
``FakeFleet``, without a server. While it runs, headless Pis open their forms (the forwarders
tell their relays an answering bridge is alive); when it stops, they get their fallback again.

Needs ``pip install 'pi-ask-sdk[nats]'``. Run (docs/fleet.md, Quick start):
    python examples/fleet_bridge.py nats://127.0.0.1:4222
Ctrl-C stops it (exit status 130); 3 when the NATS server cannot be reached.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Mapping, Sequence

from pi_ask_sdk import AnswerBuilder, BridgeClient, Cancel, FlowView, RespondOutcome, Response
from pi_ask_sdk.fleet import Fleet, FleetPi, FleetUnavailable, NatsOptions
from pi_ask_sdk.serving import serve

log = logging.getLogger("fleet_bridge")

Rules = Mapping[str, Sequence[str]]
"""Question id -> the option values to select (one for a single-choice question)."""

RELEASE_RULES: Rules = {
    # The form `pi-ask try` opens (its demo release form): wait for the window, tell the
    # on-call engineer and the release channel, migrate online.
    "deploy": ["window"],
    "notify": ["oncall", "release-channel"],
    "migration": ["online"],
}


def decide(flow: FlowView, rules: Rules) -> tuple[Response, str]:
    """The response for ``flow``: its answer by ``rules``, or an explicit cancel with the reason
    (any question without a rule, any value not among its options: never a guess)."""
    builder = AnswerBuilder(flow)
    for question in flow.questions:
        wanted = rules.get(question.id)
        if wanted is None:
            return Cancel.of(flow), f'no rule for question "{question.id}"'
        if not all(question.has_value(value) for value in wanted):
            return Cancel.of(flow), f'rule for "{question.id}" names values not in this form'
        if len(wanted) > 1 and not question.multi:
            return Cancel.of(flow), f'rule for "{question.id}" selects several values'
        builder.select(question, *(question.value(value) for value in wanted))
    return builder.build(), ""


async def answer_pi(
    client: BridgeClient,
    pi: FleetPi,
    rules: Rules = RELEASE_RULES,
    *,
    limit: int | None = None,
    timeout: float = 30,
) -> list[RespondOutcome]:
    """Serve one Pi of the fleet (the handler ``serve(handler, fleet)`` runs): its forms, by
    ``rules``, until it is gone (or ``limit`` forms). Returns the outcomes."""
    log.info("serving Pi %d on %s (Pi %s in %s)", pi.pid, pi.host, pi.pi_version, pi.cwd)
    outcomes: list[RespondOutcome] = []
    async for flow in client.flows():
        response, refused = decide(flow, rules)
        if refused:
            log.warning("cancelling %s on %s: %s", flow.flow_id, pi.host, refused)
        outcome = await client.respond(flow, response, timeout=timeout)
        if outcome.kind != "accepted":  # refused, timed out, lost: neither answer nor cancel
            log.error("no confirmation for %s on %s (%s)", flow.flow_id, pi.host, outcome.kind)
        outcomes.append(outcome)
        if limit is not None and len(outcomes) >= limit:
            break
    log.info("done with Pi %d on %s: %d form(s)", pi.pid, pi.host, len(outcomes))
    return outcomes


async def handler(client: BridgeClient, pi: FleetPi) -> None:
    """What ``serve`` runs for each Pi."""
    await answer_pi(client, pi)


async def run(options: NatsOptions, stop: asyncio.Event | None = None) -> None:
    """Answer every form of every Pi of the fleet until ``stop`` is set (or cancelled).
    Raises ``FleetUnavailable`` when the NATS server cannot be reached."""
    async with Fleet(options) as fleet:
        log.info("answering every host's forms through %s (Ctrl-C stops)", options.shown_url)
        await serve(handler, fleet, stop=stop)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bridge: 130 on Ctrl-C; 3 (as ``pi-ask``) when the fleet is unavailable."""
    parser = argparse.ArgumentParser(
        description="One policy bridge for every host's Pis (Ctrl-C stops: exit status 130)."
    )
    parser.add_argument("url", nargs="?", default="nats://127.0.0.1:4222", help="NATS server")
    parser.add_argument("--creds", help="NATS credentials file (.creds)")
    parser.add_argument("--tls-ca", help="CA bundle to verify the server with")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    options = NatsOptions(url=args.url, creds=args.creds, tls_ca=args.tls_ca)
    try:
        asyncio.run(run(options))
    except KeyboardInterrupt:  # Ctrl-C: the handlers were cancelled; no traceback
        return 130
    except FleetUnavailable as error:  # no server, no JetStream: a message, not a traceback
        print(f"fleet_bridge: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
