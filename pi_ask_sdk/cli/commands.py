"""The table of ``pi-ask``'s subcommands (``COMMANDS``): for each, its name, its one-line help,
how its arguments are added and the function it runs. ``pi_ask_sdk.cli`` builds its parser by
walking the table; a new subcommand is one more entry here (and its description and examples
in ``usage.py``).

Each function imports what its subcommand needs when it runs, so ``pi-ask --help`` stays fast.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from .forward import add_nats_args
from .usage import EXIT_FAILED, EXIT_OK, EXIT_RUNTIME, PID_MAX, positive, usage_error

__all__ = ["COMMANDS", "Command"]


@dataclass(frozen=True, slots=True)
class Command:
    """One subcommand of ``pi-ask``.

    Args:
        name: What is typed after ``pi-ask``.
        help: Its line in ``pi-ask --help`` (its own ``--help`` has more: ``usage.py``).
        add_arguments: Adds its options and arguments to its parser.
        run: Runs it with the parsed arguments; returns the exit status.
    """

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _no_arguments(parser: argparse.ArgumentParser) -> None:
    """A subcommand that takes no options."""


# --- demo, schema, relay-path, docs, standin-path: no Pi involved ---------------------------------


def _demo_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--interactive", action="store_true", help="you answer the form")
    parser.add_argument("--json", action="store_true", help="print the raw events as JSON lines")


def _demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return asyncio.run(run_demo(interactive=args.interactive, as_json=args.json))


def _schema(args: argparse.Namespace) -> int:
    from pi_ask_core.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def _relay_path(args: argparse.Namespace) -> int:
    from pi_ask_sdk.transports.relay import relay_extension_path

    print(relay_extension_path())
    return EXIT_OK


def _standin_path(args: argparse.Namespace) -> int:
    from pi_ask_sdk.testing.standin import standin_extension_path

    print(standin_extension_path())
    return EXIT_OK


def _docs_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", nargs="?", help="the guide: bridges, relay, real-pi, protocol-decisions, fleet"
    )


def _docs(args: argparse.Namespace) -> int:
    from .docs import show_guide

    return show_guide(args.name)


# --- watch, answer, doctor: the running Pis (or, with --nats, a fleet) ----------------------------

_NATS_OPTIONS: Final = ("creds", "tls_ca", "tls_cert", "tls_key", "inbox_prefix")
"""The ``add_nats_args`` options that only mean something with ``--nats``."""


def _nats_only(args: argparse.Namespace, command: str, *names: str) -> int | None:
    """A usage error (its status) when a NATS option is given without ``--nats``."""
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is not None]
    if args.nats is None and given:
        return usage_error(command, f"{', '.join(given)} needs --nats URL")
    return None


def _watch_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    parser.add_argument("--duration", type=positive(float), help="stop after this many seconds")
    add_nats_args(parser, what="watch the forms of every host of this NATS fleet instead")


def _watch(args: argparse.Namespace) -> int:
    refused = _nats_only(args, "watch", *_NATS_OPTIONS)
    if refused is not None:
        return refused
    if args.nats is not None:
        from .forward import nats_missing, nats_options

        if nats_missing("watch"):
            return EXIT_RUNTIME
        from pi_ask_sdk.fleet import FleetNames

        from .watch_fleet import watch_fleet

        fleet = watch_fleet(
            nats_options(args), FleetNames(args.prefix), as_json=args.json, duration=args.duration
        )
        return asyncio.run(fleet)
    from .watch import watch

    return asyncio.run(watch(as_json=args.json, duration=args.duration))


def _answer_arguments(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--pid", type=positive(int, PID_MAX), help="the Pi process to connect to")
    which.add_argument("--socket", help="the relay socket to connect to")
    parser.add_argument("--count", type=positive(int), help="stop after this many forms")
    parser.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per submit on stdout (flowId, outcome, error, response); "
        "forms and prompts go to stderr",
    )


def _answer(args: argparse.Namespace) -> int:
    from pi_ask_sdk.client import BridgeClient
    from pi_ask_sdk.transports.relay import discover

    from .console import answer_forms
    from .prompting import terminal

    prompt, say, record = terminal(as_json=args.json)

    async def run() -> int:
        client = BridgeClient.connect(
            lambda: discover(pid=args.pid, path=args.socket), request_id_prefix="pi-ask-answer"
        )
        async with client:
            say(f"answering forms of Pi (Ctrl-C stops); open now: {len(client.open_flows)}")
            accepted = await answer_forms(client, prompt, say, limit=args.count, record=record)
        return EXIT_OK if accepted else EXIT_FAILED

    return asyncio.run(run())


def _doctor_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="the checks as one JSON object")
    parser.add_argument(
        "--socket", help="check only this relay socket (e.g. one forwarded with ssh -L)"
    )
    add_nats_args(
        parser, what="check this NATS fleet instead: forwarders, hosts, Pis, forms, bridges"
    )
    parser.add_argument(
        "--listen",
        type=positive(float),
        metavar="SECONDS",
        help="with --nats: how long to listen for bridges' heartbeats (default 1.5)",
    )


def _doctor(args: argparse.Namespace) -> int:
    refused = _nats_only(args, "doctor", *_NATS_OPTIONS, "listen")
    if refused is not None:
        return refused
    if args.nats is not None:
        if args.socket is not None:
            return usage_error("doctor", "give --nats or --socket, not both")
        from .forward import nats_missing, nats_options

        if nats_missing("doctor"):
            return EXIT_RUNTIME
        from pi_ask_sdk.fleet import FleetNames

        from .doctor_fleet import doctor_fleet

        listen = 1.5 if args.listen is None else args.listen
        names = FleetNames(args.prefix)
        return doctor_fleet(nats_options(args), names, as_json=args.json, listen=listen)
    from .doctor import doctor

    return doctor(as_json=args.json, socket=None if args.socket is None else Path(args.socket))


# --- try, forward: start a Pi, join a fleet -------------------------------------------------------


def _try_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--form", help="ask_user input as a JSON file ('-': stdin); default: a demo"
    )
    parser.add_argument(
        "--count", type=positive(int), default=1, help="forms to open, one after another"
    )
    parser.add_argument(
        "--flavour",
        choices=("current", "legacy"),
        default="current",
        help="Pi 1.6.0 on node 22 (current) or Pi 0.74.2 on the machine's node (legacy)",
    )
    parser.add_argument("--host", help="your pi-agent-ask extension instead of the stand-in host")


def _try(args: argparse.Namespace) -> int:
    from .trying import run

    return run(args.form, args.count, args.flavour, args.host)


def _forward_arguments(parser: argparse.ArgumentParser) -> None:
    add_nats_args(parser)
    parser.add_argument(
        "--host-id", help="this host's name in the fleet's subjects (default: the host name)"
    )
    parser.add_argument(
        "--relay-dir", help="the relay directory to follow (default: as pi-ask answer finds it)"
    )
    parser.add_argument(
        "--no-setup",
        action="store_true",
        help="create no stream or consumer (an administrator made them: docs fleet, Security)",
    )
    parser.add_argument(
        "--replicas",
        type=int,
        choices=range(1, 6),
        metavar="N",
        default=1,
        help="the streams' replicas when it creates them (3 on a 3-node cluster); an existing "
        "stream's are never lowered",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log every NATS hiccup")


def _forward(args: argparse.Namespace) -> int:
    from .forward import forward

    return forward(args)


COMMANDS: Final[tuple[Command, ...]] = (
    Command(
        "demo",
        "an embedded host opens a form and a bridge answers it (no Pi needed)",
        _demo_arguments,
        _demo,
    ),
    Command("schema", "print the JSON Schema of every payload", _no_arguments, _schema),
    Command(
        "relay-path",
        'print the relay extension\'s path: pi -e "$(pi-ask relay-path)"',
        _no_arguments,
        _relay_path,
    ),
    Command(
        "docs",
        "print a guide shipped with the package (without a name: list them)",
        _docs_arguments,
        _docs,
    ),
    Command("watch", "print live events from every running relay", _watch_arguments, _watch),
    Command(
        "answer",
        "answer a running Pi's forms in this terminal, with explicit values",
        _answer_arguments,
        _answer,
    ),
    Command(
        "doctor",
        "check node, Pi, the relay extension, relay directory and sockets",
        _doctor_arguments,
        _doctor,
    ),
    Command(
        "standin-path",
        "print the stand-in host extension's path (pi-ask docs real-pi)",
        _no_arguments,
        _standin_path,
    ),
    Command(
        "try",
        "start a real Pi headless (relay + stand-in host); once a bridge that answers forms "
        "connects, its model asks with a live form",
        _try_arguments,
        _try,
    ),
    Command(
        "forward",
        "mirror this host's Pis to a NATS fleet (needs pi-ask-sdk[nats])",
        _forward_arguments,
        _forward,
    ),
)
"""Every subcommand, in the order ``pi-ask --help`` lists them."""
