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

from .usage import EXIT_OK, EXIT_RUNTIME, usage_error


def add_nats_args(parser: argparse.ArgumentParser) -> None:
    """The NATS connection options (passed through to nats-py), shared by fleet commands."""
    parser.add_argument(
        "--nats",
        metavar="URL",
        default=os.environ.get("PI_ASK_NATS"),
        help="the NATS server(s), comma-separated (default: $PI_ASK_NATS)",
    )
    parser.add_argument("--creds", metavar="FILE", help="NATS credentials file (.creds)")
    parser.add_argument("--tls-ca", metavar="FILE", help="CA bundle to verify the server with")
    parser.add_argument("--tls-cert", metavar="FILE", help="client certificate (mutual TLS)")
    parser.add_argument("--tls-key", metavar="FILE", help="the client certificate's key")
    parser.add_argument("--prefix", default="piask", help="the fleet's subject prefix")


def forward(args: argparse.Namespace) -> int:
    """Run the forwarder; ``EXIT_RUNTIME`` when nats-py is not installed."""
    if not args.nats:
        return usage_error("forward", "the NATS server is needed: --nats URL (or $PI_ASK_NATS)")
    try:
        import nats  # noqa: F401
    except ModuleNotFoundError:
        print(
            "pi-ask forward: nats-py is not installed: pip install 'pi-ask-sdk[nats]'",
            file=sys.stderr,
        )
        return EXIT_RUNTIME
    from pi_ask_sdk.fleet import Forwarder, default_host_id
    from pi_ask_sdk.transports.nats import FleetNames, NatsOptions

    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO,
        format="%(asctime)s %(message)s",
        stream=sys.stderr,
    )
    options = NatsOptions(
        url=args.nats,
        creds=args.creds,
        tls_ca=args.tls_ca,
        tls_cert=args.tls_cert,
        tls_key=args.tls_key,
    )
    host_id = args.host_id or default_host_id()
    directory = None if args.relay_dir is None else Path(args.relay_dir)

    async def run() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGTERM, signal.SIGINT):
            with contextlib.suppress(NotImplementedError, RuntimeError):
                loop.add_signal_handler(signum, stop.set)
        forwarder = Forwarder(
            options,
            host_id=host_id,
            directory=directory,
            names=FleetNames(args.prefix),
            setup=not args.no_setup,
        )
        async with forwarder:
            print(
                f"pi-ask forward: host {host_id} -> {args.nats} (Ctrl-C stops)",
                file=sys.stderr,
                flush=True,
            )
            await forwarder.run(stop)
        return EXIT_OK

    return asyncio.run(run())
