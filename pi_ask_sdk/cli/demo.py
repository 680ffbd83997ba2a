"""``pi-ask demo``: an embedded host opens a realistic form and a bridge answers it.

Everything runs in one process on the in-process bus: ``pi_ask_core.FlowHost`` plays the
``pi-agent-ask`` extension, and a ``BridgeClient`` over ``MemoryTransport`` is the bridge. The
bridge's policy names explicit option values; ``--interactive`` asks the person instead.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

import msgspec

from pi_ask_core import CHANNELS, FlowHost, LocalEventBus, SubmitEvent
from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.errors import BridgeError
from pi_ask_sdk.forms import FlowView
from pi_ask_sdk.responses import AnswerBuilder, Response
from pi_ask_sdk.transports import MemoryTransport

from .console import ask_person
from .render import render_completed, render_flow, render_outcome, render_result, render_submit
from .text import echo, json_line

__all__ = ["DEMO_FORM", "demo_policy", "run_demo"]

DEMO_FORM: Final = {
    "title": "Release 2.4.0",
    "questions": [
        {
            "id": "deploy",
            "label": "Deploy",
            "prompt": "Deploy release 2.4.0 to production?",
            "options": [
                {
                    "value": "now",
                    "label": "Deploy now",
                    "recommended": True,
                    "description": "All 412 checks passed",
                },
                {
                    "value": "window",
                    "label": "Wait for the maintenance window",
                    "description": "Tonight, 22:00 UTC",
                },
                {"value": "no", "label": "Do not deploy"},
            ],
        },
        {
            "id": "notify",
            "label": "Notify",
            "prompt": "Who should be told?",
            "type": "multi",
            "options": [
                {"value": "oncall", "label": "On-call engineer"},
                {"value": "release-channel", "label": "#release channel"},
                {"value": "status-page", "label": "Customer status page"},
            ],
        },
        {
            "id": "migration",
            "label": "Migration",
            "prompt": "Which database migration plan?",
            "type": "preview",
            "options": [
                {
                    "value": "online",
                    "label": "Online",
                    "preview": "1. add column (nullable)\n2. backfill in batches\n"
                    "3. add constraint",
                },
                {
                    "value": "offline",
                    "label": "Offline",
                    "preview": "1. stop writers\n2. migrate\n3. start writers (~4 min downtime)",
                },
            ],
        },
    ],
}

Write = Callable[[str], None]


def demo_policy(flow: FlowView) -> Response:
    """The demo bridge's rules: explicit values for the release form, nothing inferred."""
    deploy = flow.question("deploy")
    notify = flow.question("notify")
    migration = flow.question("migration")
    return (
        AnswerBuilder(flow)
        .select(deploy, deploy.value("window"))
        .note(deploy, "Deploy after the traffic peak.")
        .select(notify, notify.value("oncall"), notify.value("release-channel"))
        .option_note(notify, notify.value("status-page"), "Not needed for a minor release.")
        .select(migration, migration.value("online"))
        .build()
    )


async def run_demo(
    *,
    write: Write = echo,
    interactive: bool = False,
    as_json: bool = False,
    prompt: Callable[[str], str] = input,
    timeout: float = 5.0,
) -> int:
    """Run the demo; returns the process exit status: 0 when the bridge's response was
    accepted, 1 when it was not (or end of input stopped ``--interactive``)."""
    bus = LocalEventBus()
    # --json: the events' lines, written by the demo itself at each step (flush), never by a
    # bus handler: the bus logs what a handler raises, so a closed pipe (`| head`) would print
    # tracebacks there instead of ending the command quietly.
    events: list[str] = []

    def flush() -> None:
        while events:
            write(events.pop(0))

    if as_json:
        # Subscribed before the host, so a submit is printed before what it causes.
        for channel in CHANNELS:
            bus.on(channel, _json_recorder(channel, events.append))
    try:
        return await _run(bus, flush, write, interactive, as_json, prompt, timeout)
    finally:
        flush()


async def _run(
    bus: LocalEventBus,
    flush: Callable[[], None],
    write: Write,
    interactive: bool,
    as_json: bool,
    prompt: Callable[[str], str],
    timeout: float,
) -> int:
    host = FlowHost(bus)
    say: Write = (lambda text: None) if as_json else write
    say("pi-ask demo: pi_ask_core.FlowHost plays Pi's ask extension; a BridgeClient answers.\n")
    async with BridgeClient(MemoryTransport(bus, host), request_id_prefix="demo") as client:
        flows = client.flows()
        handle = host.start(DEMO_FORM, tool_call_id="call-demo-1")
        flow = await flows.next(timeout=timeout)
        flush()
        say(render_flow(flow) + "\n")
        if not interactive:
            # What a bridge must never do: pick by label. The builder refuses it before sending.
            try:
                flow.question("deploy").value("Deploy now")
            except BridgeError as error:
                say(f"(refused locally, nothing sent: {error})\n")
        try:
            response = ask_person(flow, prompt, write) if interactive else demo_policy(flow)
        except EOFError:
            write("end of input: nothing sent")
            return 1
        ticket = await client.submit(flow, response)
        flush()
        say(
            render_submit(
                SubmitEvent(
                    request_id=ticket.request_id, flow_id=flow.flow_id, response=response.to_wire()
                )
            )
        )
        outcome = await client.await_result(ticket, timeout=timeout)
        say(render_outcome(outcome))
        if outcome.kind == "accepted":
            say(render_completed(outcome.completion))
        elif handle.result is not None:
            say(render_result(handle.result))
        return 0 if outcome.kind == "accepted" else 1


def _json_recorder(channel: str, write: Write) -> Callable[[object], None]:
    def emit(data: object) -> None:
        payload = msgspec.to_builtins(data)
        write(json_line({"channel": channel, "data": payload}))

    return emit
