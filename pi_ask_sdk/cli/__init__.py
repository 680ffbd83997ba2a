"""The ``pi-ask`` command and its ten subcommands: ``demo``, ``schema``, ``relay-path``,
``docs``, ``watch``, ``answer``, ``doctor``, ``standin-path``, ``try`` and ``forward``.

The subcommands are the table ``commands.COMMANDS`` (name, one-line help, arguments, the
function it runs), each importing what it needs when it runs, so ``pi-ask --help`` stays fast.
Help texts and exit statuses are in ``usage.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pi_ask_core import PiAskError

from .commands import COMMANDS
from .usage import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_USAGE,
    TOP_EPILOG,
    CommandParser,
    VersionAction,
    advice,
)

__all__ = ["main"]


def _parser() -> CommandParser:
    """``pi-ask``'s parser: its own options, then one subparser per entry of ``COMMANDS``."""
    parser = CommandParser(
        prog="pi-ask",
        description="Bridges for Pi's ask forms: answer them with explicit option values.",
        epilog=TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action=VersionAction, help="show the version")
    # Not required here: _run says which is missing, or names a flag it does not know first.
    subparsers = parser.add_subparsers(
        dest="command", metavar="COMMAND", parser_class=CommandParser
    )
    for command in COMMANDS:
        subparser = subparsers.add_parser(command.name, help=command.help)
        command.add_arguments(subparser)
        subparser.set_defaults(run=command.run)
    parser.commands = dict(subparsers.choices)
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
        words = list(sys.argv[1:] if argv is None else argv)
        args, unknown = parser.parse_known_args(words)
        # A flag before the command (or with none) is pi-ask's own usage error, named before
        # a missing command; one after it is the command's (argparse would word it as pi-ask's).
        before = words[: words.index(args.command)] if args.command in words else words
        if mine := [word for word in unknown if word in before]:
            parser.error(f"unrecognized arguments: {' '.join(mine)}")
        if args.command is None:
            parser.error("the following arguments are required: COMMAND")
        if unknown:
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
