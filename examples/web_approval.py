"""A local web approval page: each open form, with the bridge's own buttons.

The buttons are an explicit ``ApprovalMapping`` declared for each form from its own values
("Approve" sends value ``yes`` of question ``deploy``, "Reject" sends ``no``, "Dismiss"
cancels). A form it does not fit gets no buttons and is left to the person in Pi. Nothing is
inferred from labels or button names. The page listens on 127.0.0.1 only, and every post must
carry the page's random token, so another site cannot press a button through the person's
browser.

It is a plain threaded ``http.server``, so it uses ``SyncBridgeClient``.

Run against a running Pi (started with the relay extension):
    python examples/web_approval.py --port 8765
"""

from __future__ import annotations

import argparse
import html
import secrets
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TypeVar
from urllib.parse import parse_qs

from typing_extensions import assert_never

from pi_ask_sdk import (
    ApprovalMapping,
    BridgeError,
    CancelFlow,
    FlowId,
    FlowView,
    SelectOption,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitRejected,
    SubmitTimedOut,
    SyncBridgeClient,
)
from pi_ask_sdk.transports.relay import discover

F = TypeVar("F")  # one form: its buttons are declared from, and bound to, that form only

Buttons = Callable[[FlowView], ApprovalMapping]
"""The buttons for one form; raises a ``BridgeError`` (e.g. ``UnknownQuestion``,
``UnknownOption``) for a form they do not fit."""


def deploy_buttons(flow: FlowView[F]) -> ApprovalMapping[F]:
    """Approve / Reject / Dismiss for a form with a ``deploy`` question of values yes / no."""
    deploy = flow.question("deploy")
    return ApprovalMapping(
        flow,
        {
            "Approve": SelectOption(deploy.value("yes")),
            "Reject": SelectOption(deploy.value("no")),
            "Dismiss": CancelFlow(),
        },
    )


PAGE = """<!doctype html>
<html><head><meta charset="utf-8"><title>Pi approvals</title>
<style>
body {{ font-family: sans-serif; margin: 2em; max-width: 48em; }}
.flow {{ border: 1px solid #ccc; border-radius: 6px; padding: 1em; margin: 1em 0; }}
.note {{ color: #555; }} .status {{ background: #eef; padding: .5em; }}
button {{ margin-right: .5em; }}
</style></head><body>
<h1>Pi approvals</h1>
{status}
{flows}
</body></html>
"""


class ApprovalPage:
    """The page and its server; ``start()`` serves from a thread, ``stop()`` ends it."""

    def __init__(
        self,
        client: SyncBridgeClient,
        buttons: Buttons = deploy_buttons,
        *,
        port: int = 0,
        timeout: float = 10.0,
    ) -> None:
        self.client = client
        self.buttons = buttons
        self.timeout = timeout
        self.token = secrets.token_urlsafe(16)
        self.status = ""
        page = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path != "/":
                    self.send_error(HTTPStatus.NOT_FOUND)
                    return
                self._reply(HTTPStatus.OK, page.render().encode())

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0") or 0)
                fields = parse_qs(self.rfile.read(min(length, 64 * 1024)).decode())
                if self.path != "/answer" or fields.get("token") != [page.token]:
                    self.send_error(HTTPStatus.FORBIDDEN, "missing or wrong page token")
                    return
                page.press(fields.get("flow", [""])[0], fields.get("button", [""])[0])
                self.send_response(HTTPStatus.SEE_OTHER)
                self.send_header("Location", "/")
                self.end_headers()

            def _reply(self, status: HTTPStatus, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass  # quiet: the page shows what happened

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}/"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=self.timeout)

    def press(self, flow_id: str, button: str) -> None:
        """What a button press does: the form's buttons, then the response of the one pressed."""
        flow = self.client.open_flows.get(FlowId(flow_id))
        if flow is None:
            self.status = f"{flow_id} is no longer open."
            return
        try:
            response = self.buttons(flow).response(button)
            outcome = self.client.respond(flow, response, timeout=self.timeout)
        except BridgeError as error:  # buttons that do not fit, a second press, ...
            self.status = f"{button} was not sent: {error}"
            return
        match outcome:
            case SubmitAccepted():
                self.status = f"{button} sent for {flow_id}: accepted."
            case SubmitRejected(error=code, message=message):
                self.status = f"{button} refused for {flow_id}: {code}: {message}"
            case SubmitTimedOut() | SubmitLost() | SubmitNotSent():
                self.status = f"{button} for {flow_id} not confirmed ({outcome.kind}); check Pi."
            case _:
                assert_never(outcome)

    def render(self) -> str:
        flows = [self._render_flow(flow) for flow in self.client.open_flows.values()]
        status = f'<p class="status">{html.escape(self.status)}</p>' if self.status else ""
        return PAGE.format(status=status, flows="\n".join(flows) or "<p>No open forms.</p>")

    def _render_flow(self, flow: FlowView) -> str:
        e = html.escape
        title = "Pi asks" if flow.title is None else flow.title.render()
        parts = [f'<div class="flow" id="{e(flow.flow_id)}"><h2>{e(title)}</h2>']
        for question in flow.questions:
            options = ", ".join(
                f"{e(o.label.render())} (<code>{e(o.value)}</code>)" for o in question.options
            )
            parts.append(f"<p><b>{e(question.prompt.render())}</b><br>{options}</p>")
        try:
            bound = self.buttons(flow)
        except BridgeError as error:
            parts.append(
                f'<p class="note">Not handled here ({e(str(error))}); answer it in Pi.</p>'
            )
        else:
            parts.append(self._buttons(flow, bound))
        parts.append("</div>")
        return "\n".join(parts)

    def _buttons(self, flow: FlowView, bound: ApprovalMapping) -> str:
        e = html.escape
        buttons = []
        for name in bound.buttons:
            action = bound.action(name)
            sends = (
                "cancels the form"
                if isinstance(action, CancelFlow)
                else f"sends {action.question_id} = {action.value}"
            )
            buttons.append(
                f'<button name="button" value="{e(name)}" title="{e(sends)}">{e(name)}</button>'
            )
        return (
            '<form method="post" action="/answer">'
            f'<input type="hidden" name="token" value="{e(self.token)}">'
            f'<input type="hidden" name="flow" value="{e(flow.flow_id)}">'
            + "".join(buttons)
            + "</form>"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    with SyncBridgeClient(discover()) as client:
        page = ApprovalPage(client, port=args.port)
        print(f"open {page.url}")
        try:
            page.server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            page.server.server_close()


if __name__ == "__main__":
    main()
