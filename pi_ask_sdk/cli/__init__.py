"""The ``pi-ask`` command and its ten subcommands: ``demo``, ``schema``, ``relay-path``,
``docs``, ``watch``, ``answer``, ``doctor``, ``standin-path``, ``try`` and ``forward``.

Each subcommand imports what it needs when it runs, so ``pi-ask --help`` stays fast. Help
texts and exit statuses are in ``usage.py``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from pi_ask_core import PiAskError

from .usage import (
    EXIT_FAILED,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    PID_MAX,
    TOP_EPILOG,
    CommandParser,
    VersionAction,
    advice,
    positive,
    usage_error,
)

__all__ = ["main"]


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return asyncio.run(run_demo(interactive=args.interactive, as_json=args.json))


def _cmd_schema(args: argparse.Namespace) -> int:
    from pi_ask_core.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _cmd_relay_path(args: argparse.Namespace) -> int:
    from pi_ask_sdk.transports.relay import relay_extension_path

    print(relay_extension_path())
    return 0


def _cmd_standin_path(args: argparse.Namespace) -> int:
    from pi_ask_sdk.testing.standin import standin_extension_path

    print(standin_extension_path())
    return 0


def _cmd_try(args: argparse.Namespace) -> int:
    from .trying import run

    return run(args.form, args.count, args.flavour, args.host)


def _cmd_forward(args: argparse.Namespace) -> int:
    from .forward import forward

    return forward(args)


def _cmd_docs(args: argparse.Namespace) -> int:
    from .docs import show_guide

    return show_guide(args.name)


def _relay_args(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--pid", type=positive(int, PID_MAX), help="the Pi process to connect to")
    which.add_argument("--socket", help="the relay socket to connect to")


def _nats_only(args: argparse.Namespace, command: str, *names: str) -> int | None:
    """A usage error (its status) when a NATS option is given without ``--nats``."""
    given = [f"--{name.replace('_', '-')}" for name in names if getattr(args, name) is not None]
    if args.nats is None and given:
        return usage_error(command, f"{', '.join(given)} needs --nats URL")
    return None


_NATS_OPTIONS = ("creds", "tls_ca", "tls_cert", "tls_key", "inbox_prefix")


def _cmd_watch(args: argparse.Namespace) -> int:
    refused = _nats_only(args, "watch", *_NATS_OPTIONS)
    if refused is not None:
        return refused
    if args.nats is not None:
        from .forward import nats_missing, nats_options

        if nats_missing("watch"):
            return EXIT_RUNTIME
        from pi_ask_sdk.transports.nats import FleetNames

        from .watch_fleet import watch_fleet

        fleet = watch_fleet(
            nats_options(args), FleetNames(args.prefix), as_json=args.json, duration=args.duration
        )
        return asyncio.run(fleet)
    from .watch import watch

    return asyncio.run(watch(as_json=args.json, duration=args.duration))


def _cmd_answer(args: argparse.Namespace) -> int:
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


def _cmd_doctor(args: argparse.Namespace) -> int:
    refused = _nats_only(args, "doctor", *_NATS_OPTIONS, "listen")
    if refused is not None:
        return refused
    if args.nats is not None:
        if args.socket is not None:
            return usage_error("doctor", "give --nats or --socket, not both")
        from .forward import nats_missing, nats_options

        if nats_missing("doctor"):
            return EXIT_RUNTIME
        from pi_ask_sdk.transports.nats import FleetNames

        from .doctor_fleet import doctor_fleet

        listen = 1.5 if args.listen is None else args.listen
        names = FleetNames(args.prefix)
        return doctor_fleet(nats_options(args), names, as_json=args.json, listen=listen)
    from .doctor import doctor

    return doctor(as_json=args.json, socket=None if args.socket is None else Path(args.socket))


def _fleet_args(parser: argparse.ArgumentParser, what: str) -> None:
    from .forward import add_nats_args

    add_nats_args(parser, what=what)


def _parser() -> CommandParser:
    parser = CommandParser(
        prog="pi-ask",
        description="Bridges for Pi's ask forms: answer them with explicit option values.",
        epilog=TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action=VersionAction, help="show the version")
    commands = parser.add_subparsers(
        dest="command", required=True, metavar="COMMAND", parser_class=CommandParser
    )

    demo = commands.add_parser(
        "demo", help="an embedded host opens a form and a bridge answers it (no Pi needed)"
    )
    demo.add_argument("--interactive", action="store_true", help="you answer the form")
    demo.add_argument("--json", action="store_true", help="print the raw events as JSON lines")
    demo.set_defaults(run=_cmd_demo)

    schema = commands.add_parser("schema", help="print the JSON Schema of every payload")
    schema.set_defaults(run=_cmd_schema)

    relay_path = commands.add_parser(
        "relay-path", help='print the relay extension\'s path: pi -e "$(pi-ask relay-path)"'
    )
    relay_path.set_defaults(run=_cmd_relay_path)

    docs = commands.add_parser(
        "docs", help="print a guide shipped with the package (without a name: list them)"
    )
    docs.add_argument(
        "name", nargs="?", help="the guide: bridges, relay, real-pi, protocol-decisions, fleet"
    )
    docs.set_defaults(run=_cmd_docs)

    watch = commands.add_parser("watch", help="print live events from every running relay")
    watch.add_argument("--json", action="store_true", help="one JSON object per line")
    watch.add_argument("--duration", type=positive(float), help="stop after this many seconds")
    _fleet_args(watch, "watch the forms of every host of this NATS fleet instead")
    watch.set_defaults(run=_cmd_watch)

    answer = commands.add_parser(
        "answer", help="answer a running Pi's forms in this terminal, with explicit values"
    )
    _relay_args(answer)
    answer.add_argument("--count", type=positive(int), help="stop after this many forms")
    answer.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per submit on stdout (flowId, outcome, error, response); "
        "forms and prompts go to stderr",
    )
    answer.set_defaults(run=_cmd_answer)

    doctor = commands.add_parser(
        "doctor", help="check node, Pi, the relay extension, relay directory and sockets"
    )
    doctor.add_argument("--json", action="store_true", help="the checks as one JSON object")
    doctor.add_argument(
        "--socket", help="check only this relay socket (e.g. one forwarded with ssh -L)"
    )
    _fleet_args(doctor, "check this NATS fleet instead: forwarders, hosts, Pis, forms, bridges")
    doctor.add_argument(
        "--listen",
        type=positive(float),
        metavar="SECONDS",
        help="with --nats: how long to listen for bridges' heartbeats (default 1.5)",
    )
    doctor.set_defaults(run=_cmd_doctor)

    standin_path = commands.add_parser(
        "standin-path", help="print the stand-in host extension's path (pi-ask docs real-pi)"
    )
    standin_path.set_defaults(run=_cmd_standin_path)
    try_ = commands.add_parser(
        "try",
        help="start a real Pi headless (relay + stand-in host); once a bridge that answers "
        "forms connects, its model asks with a live form",
    )
    try_.add_argument("--form", help="ask_user input as a JSON file ('-': stdin); default: a demo")
    try_.add_argument(
        "--count", type=positive(int), default=1, help="forms to open, one after another"
    )
    try_.add_argument(
        "--flavour",
        choices=("current", "legacy"),
        default="current",
        help="Pi 1.6.0 on node 22 (current) or Pi 0.74.2 on the machine's node (legacy)",
    )
    try_.add_argument("--host", help="your pi-agent-ask extension instead of the stand-in host")
    try_.set_defaults(run=_cmd_try)

    from .forward import add_nats_args

    forward = commands.add_parser(
        "forward", help="mirror this host's Pis to a NATS fleet (needs pi-ask-sdk[nats])"
    )
    add_nats_args(forward)
    forward.add_argument(
        "--host-id", help="this host's name in the fleet's subjects (default: the host name)"
    )
    forward.add_argument(
        "--relay-dir", help="the relay directory to follow (default: as pi-ask answer finds it)"
    )
    forward.add_argument(
        "--no-setup",
        action="store_true",
        help="create no stream or consumer (an administrator made them: docs fleet, Security)",
    )
    forward.add_argument("-v", "--verbose", action="store_true", help="log every NATS hiccup")
    forward.set_defaults(run=_cmd_forward)
    parser.commands = dict(commands.choices)
    return parser


def _open_standard_streams() -> None:
    """A standard stream ``pi-ask`` was started without (``<&-``, ``>&-``) reads as empty and
    writes nowhere, as /dev/null does. Else Python has no ``sys.stdin`` (a traceback), and the
    first file or pipe this process opens takes fd 0 and is read as the person's input."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
            if opened != fd:  # (the lowest free fd: this one, unless a lower one is closed)
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdin is None:
        sys.stdin = os.fdopen(0, "r", encoding="utf-8", closefd=False)
    if sys.stdout is None:
        sys.stdout = os.fdopen(1, "w", encoding="utf-8", closefd=False)
    if sys.stderr is None:
        sys.stderr = os.fdopen(2, "w", encoding="utf-8", closefd=False)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pi-ask``; returns the exit status (see ``EXIT_CODES``)."""
    _open_standard_streams()
    try:
        status = _run(argv)
        sys.stdout.flush()  # here, not at exit: a reader gone meanwhile is caught below
    except BrokenPipeError:
        # The reader went away (`pi-ask schema | head`): stop quietly, status 0, like other
        # commands. stdout is pointed at /dev/null so the interpreter's final flush cannot
        # fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    return status


def _run(argv: Sequence[str] | None) -> int:
    parser = _parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:  # the command's own usage error (argparse would word it as pi-ask's)
            parser.commands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    except SystemExit as exit_:  # argparse: 0 after --help, 2 on a usage error
        code: object = exit_.code
        return code if isinstance(code, int) else EXIT_USAGE
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        print(f"\npi-ask {args.command}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except PiAskError as error:
        # Typed errors (no relay running, unsafe socket dir, ...) are messages, not tracebacks.
        print(f"pi-ask {args.command}: {advice(error)}", file=sys.stderr)
        return EXIT_RUNTIME
    except BrokenPipeError:
        raise  # (an OSError, but not a runtime error: main() ends quietly)
    except OSError as error:  # e.g. a socket refused between discovery and connecting
        print(f"pi-ask {args.command}: {error}", file=sys.stderr)
        return EXIT_RUNTIME
    return status
