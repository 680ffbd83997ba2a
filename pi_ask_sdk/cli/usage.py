"""How ``pi-ask`` is used: its exit statuses, what ``--help`` says beyond one line (a
description, examples and the exit statuses: ``CommandParser``), argument types, and error
messages that name the command's flags.

Every usage error, argparse's and the commands' own (an unreadable ``--form``, an unknown guide),
is written one way (``usage_error``): ``pi-ask COMMAND: usage error: WHAT`` and a line pointing
at ``pi-ask COMMAND --help``, on stderr, exit status 2.

Exit statuses, the same for every subcommand: 0 done; 1 ran but nothing was accepted
(``answer``, ``demo``), a check failed (``doctor``) or the form was refused or failed (``try``); 2
usage error; 3 runtime error (no relay, several Pis and none chosen, unsafe relay path, lost
connection, Pi failed or exited); 130 interrupted (Ctrl-C).
"""

from __future__ import annotations

import argparse
import sys
import textwrap
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final, NoReturn, TypeVar

from pi_ask_core import PiAskError

from .prompts import CHOOSE_MANY, CHOOSE_ONE, FINAL, NOTE

__all__ = [
    "EXIT_CODES",
    "EXIT_FAILED",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUNTIME",
    "EXIT_USAGE",
    "FORM_PROMPTS",
    "PID_MAX",
    "TOP_EPILOG",
    "CommandParser",
    "VersionAction",
    "advice",
    "positive",
    "usage_error",
]

EXIT_OK: Final = 0
EXIT_FAILED: Final = 1
"""Ran, but nothing was accepted (``answer``, ``demo``), a check failed (``doctor``) or the host
refused the form or its call failed (``try``)."""
EXIT_USAGE: Final = 2
EXIT_RUNTIME: Final = 3
EXIT_INTERRUPTED: Final = 130

EXIT_CODES: Final = """\
exit status:
  0    done (also when the reader of the output went away: pi-ask schema | head)
  1    ran, but nothing was accepted (answer, demo), a check failed (doctor) or the
       host refused the form or its call failed (try)
  2    usage error (bad arguments, an invalid --form)
  3    runtime error: no relay found, several Pis and none chosen, unsafe relay path,
       connection lost, Pi failed or exited (try)
  130  interrupted (Ctrl-C)"""

_TOP_EXAMPLES: Final = (
    "pi-ask demo                      # a bridge answers a form, no Pi needed",
    'pi -e "$(pi-ask relay-path)"     # start Pi with the relay',
    "pi-ask doctor                    # check node, Pi, the relay and its directory",
    "pi-ask answer                    # answer a running Pi's forms here",
    "pi-ask docs relay                # the guide to reaching a real Pi",
)

FORM_PROMPTS: Final = (
    CHOOSE_ONE.format(id="ID"),
    CHOOSE_MANY.format(id="ID"),
    NOTE.format(id="ID"),
    FINAL,
)
"""``pi-ask answer``'s prompts as its help shows them (ID: the question's id)."""

# command -> (description or None for the one-line help, examples)
_COMMANDS: Final[Mapping[str, tuple[str | None, tuple[str, ...]]]] = {
    "demo": (
        "An embedded host (pi_ask_core.FlowHost) opens a release form and a BridgeClient "
        "answers it with explicit option values, all in this process.",
        ("pi-ask demo", "pi-ask demo --json | jq .channel", "pi-ask demo --interactive"),
    ),
    "schema": (
        "Print the JSON Schema (2020-12) of the payloads on the four channels (started, "
        "completed, submit, submit-result), as pi_ask_core defines them: for bridges and tools "
        "written in other languages.",
        ("pi-ask schema > pi-ask-schema.json",),
    ),
    "relay-path": (
        "Print the path of the relay extension shipped in this package. Pi loads it with -e; it "
        "forwards the ask channels over a private Unix socket in the relay directory "
        "(PI_ASK_RELAY_DIR), where pi-ask answer, pi-ask watch and BridgeClient.connect() find it.",
        ('pi -e "$(pi-ask relay-path)" -e /path/to/pi-agent-ask',),
    ),
    "standin-path": (
        "Print the path of the stand-in host extension shipped in this package: a thin Pi "
        "extension that opens forms through pi_ask_core (pi-ask docs real-pi), for trying bridges "
        "on a real Pi without the pi-agent-ask extension.",
        ('pi -e "$(pi-ask relay-path)" -e "$(pi-ask standin-path)"',),
    ),
    "docs": (
        "Print a guide shipped with the package, as Markdown; without a name, list the guides.",
        ("pi-ask docs", "pi-ask docs bridges | less", "pi-ask docs relay"),
    ),
    "try": (
        "Install the pinned Pi from npm into the cache (once), start it headless with the relay "
        "and the stand-in host (or your pi-agent-ask with --host), wait until a bridge that "
        "answers forms is connected (headless, a form opens only then: pi-ask answer from "
        "another terminal, or your bridge; pi-ask watch only observes), and make its model open "
        "a form (the demo form, or --form, checked by pi_ask_core before Pi starts); each "
        "completed result is printed. Exit status 1 when the host refused the form or the call "
        "failed (every answering bridge left), 3 when Pi failed or exited. The first run "
        "installs Pi with npm (needs npm and the npm registry; Ctrl-C stops it and removes what "
        "it had written): about 380 MB into <cache>/node (Pi 1.6.0 with its own node 22), or "
        "about 220 MB into <cache>/node-legacy (Pi 0.74.2 on the machine's node), where <cache> "
        "is $PI_ASK_PI_CACHE, else $XDG_CACHE_HOME/pi-ask-sdk/pi, else ~/.cache/pi-ask-sdk/pi; "
        "later runs only check it. Delete that directory to free the space.",
        (
            "pi-ask try",
            "PI_ASK_PI_CACHE=/big/disk/pi pi-ask try    # install Pi elsewhere",
            "pi-ask try --form my-form.json --count 2",
            "pi-ask try --host ~/src/pi-agent-ask",
        ),
    ),
    "watch": (
        "Print the forms, completions and acknowledgements of every Pi whose relay listens in "
        "the relay directory (PI_ASK_RELAY_DIR). Watching sends nothing. With --nats, the Pis "
        "and forms of every host of a fleet (docs fleet): the Pis up and forms open now, then "
        "each Pi coming up or going and each form started, completed or gone, per host.",
        (
            "pi-ask watch",
            "pi-ask watch --json --duration 60 > events.jsonl",
            "pi-ask watch --nats nats://127.0.0.1:4222",
        ),
    ),
    "answer": (
        "Show each form of a running Pi and send what you choose: an option is picked by its "
        "number or its exact value (never its label); +text adds custom text; !cancel cancels "
        "the form explicitly. A form answered elsewhere meanwhile is not asked further. Exit "
        "status 1 when no form was accepted; 3 when Pi exits or its relay stops (at once, also "
        "while a form is being asked: nothing is sent for it, no input is waited for)."
        "\n\n"
        "Forms you do not answer (Ctrl-C, end of input, --count reached): nothing is sent for "
        "them. In Pi's TUI they stay open (answer them there or with another bridge); a "
        "headless Pi (rpc, print or json mode) waits for a form only while an answering bridge "
        "is connected, and ends each as a tool error for its agent once none has been "
        "connected for its grace period (PI_ASK_RELAY_GRACE_MS, 5 s by default)."
        "\n\n"
        "Prompts, in this order, one line of input each (scripted input follows them):"
        "\n\n"
        "  1. for each question, its choice (ID: the question's id), single-select:\n"
        f"       {FORM_PROMPTS[0]!r}\n"
        "     or multi-select:\n"
        f"       {FORM_PROMPTS[1]!r}\n"
        "  2. then its note:\n"
        f"       {FORM_PROMPTS[2]!r}\n"
        "  3. after the last question: s submit, e ask the agent to clarify first\n"
        "     (elaborate), c cancel:\n"
        f"       {FORM_PROMPTS[3]!r}"
        "\n\n"
        "A line that is refused gets a message ('  ! ...') and the same prompt again; !cancel "
        "at any prompt cancels the form; a form the host refuses as invalid_answer is asked "
        "again from its first question. Forms are asked in the order they open. With --json "
        "the prompts and forms go to stderr.",
        (
            "pi-ask answer",
            "pi-ask answer --pid 12345 --count 1",
            "pi-ask answer --socket /run/user/1000/pi-ask/pi-12345.sock",
            "pi-ask answer --json > answers.jsonl    # prompts on stderr",
        ),
    ),
    "forward": (
        "Mirror every Pi of this host to a fleet on NATS JetStream (docs fleet): each relay in "
        "the relay directory, and each that starts later, is followed; its forms go to the "
        "host's subjects and the submits bridges publish for them come back. The forwarder makes "
        "headless Pis wait for forms only while an answering bridge is alive. Runs until "
        "interrupted. Credentials and TLS options are passed on to nats-py.",
        (
            "pi-ask forward --nats nats://127.0.0.1:4222",
            "pi-ask forward --nats tls://nats.example:4222 --creds host.creds --host-id ci-7",
        ),
    ),
    "doctor": (
        "Check node, Pi, the relay extension, the relay directory and every relay socket in "
        "it; find running Pis whose relay listens in another directory, and Pis running "
        "without the relay. With --socket, check only that socket (e.g. a relay forwarded "
        "from another machine with ssh -L: docs relay). With --nats, check a fleet instead "
        "(docs fleet): the server and its JetStream, the fleet's streams, each host's forwarder, "
        "the Pis up and their open forms, and the answering bridges alive.",
        (
            "pi-ask doctor",
            "pi-ask doctor --json | jq '.checks[]'",
            'pi-ask doctor --socket "$dir/pi-buildbox.sock"    # a socket forwarded by ssh -L',
            "pi-ask doctor --nats nats://127.0.0.1:4222 --json | jq .fleet",
        ),
    ),
}


def _fill(text: str) -> str:
    """Paragraphs wrapped at 78 columns; a paragraph of indented lines is kept as it is."""
    return "\n\n".join(
        paragraph
        if paragraph.startswith("  ")
        else textwrap.fill(paragraph, 78, break_on_hyphens=False)
        for paragraph in text.split("\n\n")
    )


def _epilog(examples: Sequence[str]) -> str:
    shown = "examples:\n" + "\n".join(f"  {line}" for line in examples) + "\n\n" if examples else ""
    return shown + EXIT_CODES


TOP_EPILOG: Final = (
    _epilog(_TOP_EXAMPLES) + "\n\nRun `pi-ask COMMAND --help` for its options and examples."
)


class CommandParser(argparse.ArgumentParser):
    """The parser of one subcommand (``add_subparsers(parser_class=...)``): its description,
    examples and the exit statuses come from this module, for every subcommand registered."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        super().__init__(*args, **kwargs)
        name = (self.prog or "").rsplit(" ", 1)[-1]
        description, examples = _COMMANDS.get(name, (None, ()))
        if self.description is None and description is not None:
            # (the raw formatter keeps the examples' layout, so the text is wrapped here)
            self.description = _fill(description)
        if self.epilog is None:
            self.epilog = _epilog(examples)
        self.commands: dict[str, argparse.ArgumentParser] = {}
        """``pi-ask``'s subcommands by name (the parser of ``pi-ask`` fills it in)."""

    def error(self, message: str) -> NoReturn:
        """argparse's usage errors, in the one format (``usage_error``), exit status 2."""
        self.exit(EXIT_USAGE, _usage_text(self.prog, message))


def _usage_text(prog: str, message: str) -> str:
    from .text import clean

    # (what was typed may hold escape sequences: shown inert, as everything pi-ask prints)
    what = clean(message, multiline=True)
    return f"{prog}: usage error: {what}\n(`{prog} --help` shows its usage)\n"


def usage_error(command: str | None, message: str) -> int:
    """Write a usage error of ``pi-ask COMMAND`` (``None``: of ``pi-ask`` itself) to stderr,
    in the format of every other; returns ``EXIT_USAGE`` for the command to return."""
    sys.stderr.write(_usage_text("pi-ask" if command is None else f"pi-ask {command}", message))
    return EXIT_USAGE


N = TypeVar("N", int, float)


def positive(kind: type[N], maximum: N | None = None) -> Callable[[str], N]:
    """An argparse ``type``: a number above 0 (``int``: a whole one) and, given ``maximum``, at
    most that, else a usage error worded the same for every flag: ``argument --count: must be a
    whole number above 0, not '0'`` (``... from 1 to 2147483647, not ...`` above ``maximum``)."""
    wanted = "a whole number" if kind is int else "a number"

    def parse(text: str) -> N:
        try:
            value = kind(text)
        except ValueError:
            value = None
        if value is None or not value > 0:  # (also refuses nan)
            raise argparse.ArgumentTypeError(f"must be {wanted} above 0, not {text!r}")
        if maximum is not None and value > maximum:
            raise argparse.ArgumentTypeError(f"must be {wanted} from 1 to {maximum}, not {text!r}")
        return value

    return parse


PID_MAX: Final = 2**31 - 1
"""The largest process id there can be (``pid_t`` is a signed 32-bit integer)."""


class VersionAction(argparse.Action):
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
        import platform

        from pi_ask_sdk import __version__
        from pi_ask_sdk.transports.relay import PROTOCOL

        print(
            f"pi-ask {__version__} (pi-ask-sdk; relay protocol {PROTOCOL}; "
            f"Python {platform.python_version()})"
        )
        parser.exit()


def advice(error: PiAskError) -> str:
    """The error's message, with what to type on the command line where it names Python."""
    from pi_ask_sdk.transports.relay import AmbiguousRelay

    if isinstance(error, AmbiguousRelay):
        choices = "; ".join(f"--pid {info.pid} (or --socket {info.path})" for info in error.relays)
        return f"{len(error.relays)} Pi processes run the pi-ask relay; choose one: {choices}"
    return str(error)
