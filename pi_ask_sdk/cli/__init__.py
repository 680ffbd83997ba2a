"""The ``pi-ask`` command: ``demo | watch | answer | doctor | docs | relay-path | schema``.

Each subcommand imports what it needs when it runs, so ``pi-ask --help`` stays fast.

Exit status (the same for every subcommand, listed in ``pi-ask --help``): 0 done; 1 the command
ran but nothing was accepted (``answer``, ``demo``) or a check failed (``doctor``); 2 usage
error (bad arguments); 3 runtime error (no relay, unsafe relay path, lost connection...);
130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Callable, Sequence
from typing import Final

from pi_ask_core import PiAskError

__all__ = [
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "main",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
"""Ran, but nothing was accepted (``answer``, ``demo``) or a check failed (``doctor``)."""
EXIT_USAGE: Final = 2
EXIT_RUNTIME: Final = 3
EXIT_INTERRUPTED: Final = 130

EXIT_CODES: Final = """\
exit status:
  0    done
  1    ran, but nothing was accepted (answer, demo) or a check failed (doctor)
  2    usage error (bad arguments)
  3    runtime error: no relay found, several Pis and none chosen, unsafe relay path,
       connection lost
  130  interrupted (Ctrl-C)"""


def _epilog(*examples: str) -> str:
    return "examples:\n" + "\n".join(f"  {line}" for line in examples) + "\n\n" + EXIT_CODES


def _version() -> str:
    import platform

    from pi_ask_sdk import __version__
    from pi_ask_sdk.transports.relay import PROTOCOL

    return (
        f"pi-ask {__version__} (pi-ask-sdk; relay protocol {PROTOCOL}; "
        f"Python {platform.python_version()})"
    )


class _VersionAction(argparse.Action):
    """``--version``: the text is computed only when asked (it imports the package)."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        print(_version())
        parser.exit()


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return asyncio.run(run_demo(interactive=args.interactive, as_json=args.json))


def _cmd_schema(args: argparse.Namespace) -> int:
    from pi_ask_core.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return EXIT_OK


def _cmd_relay_path(args: argparse.Namespace) -> int:
    from pi_ask_sdk.transports.relay import relay_extension_path

    print(relay_extension_path())
    return EXIT_OK


def _cmd_docs(args: argparse.Namespace) -> int:
    from .docs import show_guide

    return show_guide(args.name)


def _positive(kind: Callable[[str], float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if not value > 0:  # (also refuses nan)
            raise argparse.ArgumentTypeError(f"must be more than 0, not {text}")
        return value

    return parse


def _relay_args(parser: argparse.ArgumentParser) -> None:
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--pid", type=int, help="the Pi process to connect to (pi-ask doctor lists them)"
    )
    which.add_argument("--socket", metavar="PATH", help="the relay socket to connect to")


def _cmd_watch(args: argparse.Namespace) -> int:
    from .watch import watch

    return asyncio.run(watch(as_json=args.json, duration=args.duration))


def _cmd_answer(args: argparse.Namespace) -> int:
    from pi_ask_sdk.client import BridgeClient
    from pi_ask_sdk.transports.relay import discover

    from .console import answer_forms
    from .prompting import prompt_stderr, prompt_stdout
    from .text import clean, echo, json_line

    def say(text: str) -> None:  # with --json, stdout carries only the JSON lines
        if args.json:
            print(clean(text, multiline=True), file=sys.stderr, flush=True)
        else:
            echo(text)

    def record(entry: dict[str, object]) -> None:
        print(json_line(entry), flush=True)

    async def run() -> int:
        client = BridgeClient.connect(
            lambda: discover(pid=args.pid, path=args.socket), request_id_prefix="pi-ask-answer"
        )
        async with client:
            say(f"answering forms of Pi (Ctrl-C stops); open now: {len(client.open_flows)}")
            accepted = await answer_forms(
                client,
                prompt_stderr if args.json else prompt_stdout,
                say,
                limit=args.count,
                record=record if args.json else None,
            )
        return EXIT_OK if accepted else EXIT_FAILED

    return asyncio.run(run())


def _cmd_doctor(args: argparse.Namespace) -> int:
    from .doctor import doctor

    return doctor(as_json=args.json)


def _parser() -> argparse.ArgumentParser:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(
        prog="pi-ask",
        description="Bridges for Pi's ask forms: answer them with explicit option values.",
        epilog=_epilog(
            "pi-ask demo                      # a bridge answers a form, no Pi needed",
            'pi -e "$(pi-ask relay-path)"     # start Pi with the relay',
            "pi-ask doctor                    # check node, Pi, the relay and its directory",
            "pi-ask answer                    # answer a running Pi's forms here",
            "pi-ask docs relay                # the guide to reaching a real Pi",
        )
        + "\n\nRun `pi-ask COMMAND --help` for a command's options and examples.",
        formatter_class=raw,
    )
    parser.add_argument("-V", "--version", action=_VersionAction, help="show the version")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="an embedded host opens a form and a bridge answers it (no Pi needed)",
        description="An embedded host (pi_ask_core.FlowHost) opens a release form and a "
        "BridgeClient answers it with explicit option values, all in this process.",
        epilog=_epilog(
            "pi-ask demo", "pi-ask demo --json | jq .channel", "pi-ask demo --interactive"
        ),
        formatter_class=raw,
    )
    demo.add_argument("--interactive", action="store_true", help="you answer the form")
    demo.add_argument("--json", action="store_true", help="print the raw events as JSON lines")
    demo.set_defaults(run=_cmd_demo)

    schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of every payload",
        epilog=_epilog("pi-ask schema > pi-ask-schema.json"),
        formatter_class=raw,
    )
    schema.set_defaults(run=_cmd_schema)

    relay_path = commands.add_parser(
        "relay-path",
        help='print the relay extension\'s path: pi -e "$(pi-ask relay-path)"',
        epilog=_epilog('pi -e "$(pi-ask relay-path)" -e /path/to/pi-agent-ask'),
        formatter_class=raw,
    )
    relay_path.set_defaults(run=_cmd_relay_path)

    docs = commands.add_parser(
        "docs",
        help="print a guide shipped with the package (without a name: list them)",
        epilog=_epilog("pi-ask docs", "pi-ask docs bridges | less", "pi-ask docs relay"),
        formatter_class=raw,
    )
    docs.add_argument("name", nargs="?", help="the guide: bridges, relay, protocol-decisions")
    docs.set_defaults(run=_cmd_docs)

    watch = commands.add_parser(
        "watch",
        help="print live events from every running relay",
        description="Print the forms, completions and acknowledgements of every Pi whose relay "
        "listens in the relay directory (PI_ASK_RELAY_DIR). Watching sends nothing.",
        epilog=_epilog("pi-ask watch", "pi-ask watch --json --duration 60 > events.jsonl"),
        formatter_class=raw,
    )
    watch.add_argument("--json", action="store_true", help="one JSON object per line")
    watch.add_argument("--duration", type=_positive(float), help="stop after this many seconds")
    watch.set_defaults(run=_cmd_watch)

    answer = commands.add_parser(
        "answer",
        help="answer a running Pi's forms in this terminal, with explicit values",
        description="Show each form of a running Pi and send what you choose: an option is "
        "picked by its number or its exact value (never its label); +text adds custom text; "
        "!cancel cancels the form explicitly. Forms you do not answer stay open in Pi; a form "
        "answered elsewhere meanwhile is not asked further. Exit status 1 when no form was "
        "accepted.",
        epilog=_epilog(
            "pi-ask answer",
            "pi-ask answer --pid 12345 --count 1",
            "pi-ask answer --socket /run/user/1000/pi-ask/pi-12345.sock",
            "pi-ask answer --json > answers.jsonl    # prompts on stderr",
        ),
        formatter_class=raw,
    )
    _relay_args(answer)
    answer.add_argument("--count", type=_positive(int), help="stop after this many forms")
    answer.add_argument(
        "--json",
        action="store_true",
        help="one JSON object per submit on stdout (flowId, outcome, error, response); "
        "forms and prompts go to stderr",
    )
    answer.set_defaults(run=_cmd_answer)

    doctor = commands.add_parser(
        "doctor",
        help="check node, Pi, the relay extension, relay directory and sockets",
        description="Check node, Pi, the relay extension, the relay directory and every relay "
        "socket in it; find running Pis whose relay listens in another directory, and Pis "
        "running without the relay.",
        epilog=_epilog("pi-ask doctor", "pi-ask doctor --json | jq '.checks[]'"),
        formatter_class=raw,
    )
    doctor.add_argument("--json", action="store_true", help="the checks as one JSON object")
    doctor.set_defaults(run=_cmd_doctor)
    return parser


def _advice(error: PiAskError) -> str:
    """The error's message, with what to type on the command line where it names Python."""
    from pi_ask_sdk.transports.relay import AmbiguousRelay

    if isinstance(error, AmbiguousRelay):
        choices = "; ".join(f"--pid {info.pid} (or --socket {info.path})" for info in error.relays)
        return f"{len(error.relays)} Pi processes run the pi-ask relay; choose one: {choices}"
    return str(error)


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pi-ask``; returns the exit status (see ``EXIT_CODES``)."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
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
        print(f"pi-ask {args.command}: {_advice(error)}", file=sys.stderr)
        return EXIT_RUNTIME
    except OSError as error:  # e.g. a socket refused between discovery and connecting
        print(f"pi-ask {args.command}: {error}", file=sys.stderr)
        return EXIT_RUNTIME
    return status
