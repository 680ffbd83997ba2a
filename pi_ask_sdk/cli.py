"""The ``pi-ask`` command: ``demo | watch | answer | relay-path | schema | doctor``."""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence

__all__ = ["main"]


def _cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return asyncio.run(run_demo(interactive=args.interactive, as_json=args.json))


def _cmd_schema(args: argparse.Namespace) -> int:
    from pi_ask_core.schema import json_schema

    print(json.dumps(json_schema(), indent=2))
    return 0


def _cmd_relay_path(args: argparse.Namespace) -> int:
    from .transports.relay import relay_extension_path

    print(relay_extension_path())
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pi-ask",
        description="Bridges for Pi's ask forms: answer them with explicit option values.",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

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
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        return 130
    return status


if __name__ == "__main__":
    sys.exit(main())
