"""One bridge for the Pis of every host: the policy robot of policy_bridge.py, over NATS.

Each host runs ``pi-ask forward --nats URL`` (its Pis' forms go to NATS JetStream, the
answers come back). This bridge connects to the same NATS server and ``Fleet.serve`` gives
every Pi of every host (those up now, and each that comes up later, on any host) its own
``BridgeClient``; the same ``serve`` loop as policy_bridge.py answers its forms by explicit
value rules and cancels explicitly what the rules do not cover. Nothing in that loop knows
about NATS: the typed API is the same as for one local Pi. While it runs, headless Pis open
their forms (the forwarders tell their relays an answering bridge is alive); when it stops,
they get their fallback again.

Needs ``pip install 'pi-ask-sdk[nats]'``. Run (docs/fleet.md, Quick start):
    python examples/fleet_bridge.py nats://127.0.0.1:4222
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence

from policy_bridge import Rules  # examples/: the same robot, now for every host
from policy_bridge import serve as serve_forms

from pi_ask_sdk import BridgeClient, RespondOutcome
from pi_ask_sdk.fleet import Fleet, FleetPi, FleetUnavailable, NatsOptions
from pi_ask_sdk.serving import serve

log = logging.getLogger("fleet_bridge")

RELEASE_RULES: Rules = {
    # The form `pi-ask try` opens (its demo release form): wait for the window, tell the
    # on-call engineer and the release channel, migrate online.
    "deploy": ["window"],
    "notify": ["oncall", "release-channel"],
    "migration": ["online"],
}


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
    outcomes = await serve_forms(client, rules, limit=limit, timeout=timeout)
    kinds = [outcome.kind for outcome in outcomes]
    log.info("done with Pi %d on %s: %d form(s): %s", pi.pid, pi.host, len(kinds), kinds)
    return outcomes


async def run(options: NatsOptions, stop: asyncio.Event | None = None) -> None:
    """Answer every form of every Pi of the fleet until ``stop`` is set (or cancelled).
    Raises ``FleetUnavailable`` when the NATS server cannot be reached."""

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        await answer_pi(client, pi)

    async with Fleet(options) as fleet:
        log.info("answering every host's forms through %s (Ctrl-C stops)", options.shown_url)
        await serve(handler, fleet, stop=stop)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the bridge; 3 (as ``pi-ask``) when the fleet is unavailable, saying why."""
    parser = argparse.ArgumentParser(description="One policy bridge for every host's Pis.")
    parser.add_argument("url", nargs="?", default="nats://127.0.0.1:4222", help="NATS server")
    parser.add_argument("--creds", help="NATS credentials file (.creds)")
    parser.add_argument("--tls-ca", help="CA bundle to verify the server with")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(message)s")
    options = NatsOptions(url=args.url, creds=args.creds, tls_ca=args.tls_ca)
    try:
        with contextlib.suppress(KeyboardInterrupt):
            asyncio.run(run(options))
    except FleetUnavailable as error:  # no server, no JetStream: a message, not a traceback
        print(f"fleet_bridge: {error}", file=sys.stderr)
        return 3
    return 0


if __name__ == "__main__":
    sys.exit(main())
