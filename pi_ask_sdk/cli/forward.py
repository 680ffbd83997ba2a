"""``pi-ask forward``: run this host's fleet forwarder (pi_ask_sdk.fleet) until interrupted."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import logging
import os
import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from .usage import EXIT_INTERRUPTED, EXIT_OK, EXIT_RUNTIME, usage_error

if TYPE_CHECKING:
    from pi_ask_sdk.fleet import NatsOptions


def add_nats_args(parser: argparse.ArgumentParser, *, what: str | None = None) -> None:
    """The NATS connection options (passed through to nats-py), shared by fleet commands.
    ``what`` (``watch``, ``doctor``): ``--nats`` switches the command to the fleet, and has no
    default from ``$PI_ASK_NATS`` (which would switch it silently)."""
    if what is None:
        parser.add_argument(
            "--nats",
            metavar="URL",
            default=os.environ.get("PI_ASK_NATS"),
            help="the NATS server(s), comma-separated (default: $PI_ASK_NATS)",
        )
    else:
        parser.add_argument("--nats", metavar="URL", help=f"{what} (servers comma-separated)")
    parser.add_argument("--creds", metavar="FILE", help="NATS credentials file (.creds)")
    parser.add_argument("--nkey", metavar="FILE", help="NATS nkey seed file (an nkey user)")
    parser.add_argument("--tls-ca", metavar="FILE", help="CA bundle to verify the server with")
    parser.add_argument("--tls-cert", metavar="FILE", help="client certificate (mutual TLS)")
    parser.add_argument("--tls-key", metavar="FILE", help="the client certificate's key")
    parser.add_argument("--prefix", default="piask", help="the fleet's subject prefix")
    parser.add_argument(
        "--inbox-prefix",
        metavar="PREFIX",
        help="this NATS user's own inbox prefix (default _INBOX; docs/fleet.md, Security)",
    )


def nats_options(args: argparse.Namespace) -> NatsOptions:
    """The ``NatsOptions`` of ``add_nats_args``' options."""
    from pi_ask_sdk.fleet import NatsOptions

    return NatsOptions(
        url=args.nats,
        creds=args.creds,
        nkey=args.nkey,
        tls_ca=args.tls_ca,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
        inbox_prefix=args.inbox_prefix or "_INBOX",
    )


def nats_missing(command: str) -> bool:
    """True (after saying so on stderr) when nats-py is not installed."""
    try:
        import nats  # noqa: F401
    except ModuleNotFoundError:
        print(
            f"pi-ask {command}: nats-py is not installed: pip install 'pi-ask-sdk[nats]'",
            file=sys.stderr,
        )
        return True
    return False


def forward(args: argparse.Namespace) -> int:
    """Run the forwarder; ``EXIT_RUNTIME`` when nats-py is not installed."""
    if not args.nats:
        return usage_error("forward", "the NATS server is needed: --nats URL (or $PI_ASK_NATS)")
    if nats_missing("forward"):
        return EXIT_RUNTIME
    from pi_ask_sdk.fleet import FleetNames, FleetSettings, Forwarder

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(message)s",
        stream=sys.stderr,
    )
    options = nats_options(args)
    directory = None if args.relay_dir is None else Path(args.relay_dir)

    async def run() -> int:
        stop = asyncio.Event()
        interrupted = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_interrupt() -> None:
            interrupted.set()
            stop.set()

        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(signal.SIGTERM, stop.set)
            loop.add_signal_handler(signal.SIGINT, on_interrupt)
        forwarder = Forwarder(
            options,
            host_id=args.host_id or None,
            directory=directory,
            names=FleetNames(args.prefix),
            settings=FleetSettings(replicas=args.replicas),
            setup=not args.no_setup,
        )
        async with forwarder:
            print(
                f"pi-ask forward: host {forwarder.host_id} -> {options.shown_url} (Ctrl-C stops)",
                file=sys.stderr,
                flush=True,
            )
            await forwarder.run(stop)
        # Ctrl-C: 130, as the help says (SIGTERM: a clean stop, 0).
        return EXIT_INTERRUPTED if interrupted.is_set() else EXIT_OK

    return asyncio.run(run())
