"""The real-Pi kit's options and reports are typed: a misspelt option or report key is an error."""

from __future__ import annotations

from pathlib import Path

from pi_ask_sdk import QuestionId
from pi_ask_sdk.testing.realpi import PiEnv, PiProcess, real_pi, running_pi


def misspelt_options(env: PiEnv, workdir: Path) -> None:
    with running_pi(env, workdir, relay_directory=workdir):  # type: ignore[call-arg]
        pass
    with real_pi(test_host="yes"):  # type: ignore[arg-type]
        pass


def client_options(pi: PiProcess) -> None:
    pi.client(hello_timeout="5")  # type: ignore[arg-type]
    pi.client(path="/tmp/x.sock")  # type: ignore[call-arg]


def report_keys(pi: PiProcess) -> None:
    report = pi.complete_form("tool:x", {"kind": "cancel"})
    ok: str = report["ok"]  # type: ignore[assignment]
    print(ok, report["flow_id"])  # type: ignore[typeddict-item]


def typed_forms_and_responses(pi: PiProcess) -> None:
    """Item 6: open_form takes the typed ask_user input, complete_form an SDK response or the
    wire's RemoteResponse."""
    pi.open_form({"questions": [{"id": "q", "options": [{"label": "Yes"}]}]})  # type: ignore[typeddict-item]
    pi.open_form({"questions": [], "titel": "typo"})  # type: ignore[typeddict-unknown-key]
    pi.complete_form("tool:x", {"kind": "answer", "answers": {"q": {"labels": ["Yes"]}}})  # type: ignore[arg-type]
    pi.complete_form("tool:x", {"kind": "approve"})  # type: ignore[arg-type]


def typed_flow_ids(pi: PiProcess) -> None:
    """Item 6: the flow ids the kit returns are FlowIds, not plain text to mix with other ids."""
    flow_id = pi.open_form({"questions": []})
    question_id: QuestionId = flow_id  # type: ignore[assignment]
    [open_id] = pi.open_flow_ids()
    other: QuestionId = open_id  # type: ignore[assignment]
    print(question_id, other)


def results_by_the_flow_id_handed_out(pi: PiProcess) -> None:
    """Issue 27: ``result`` takes the FlowId ``open_form``/``call_ask_user`` returned, not text
    (a tool call id "deploy-1" is the flow "tool:deploy-1")."""
    flow_id = pi.call_ask_user({"questions": []}, tool_call_id="deploy-1")
    print(pi.result(flow_id).cancelled)  # fine
    pi.result("deploy-1")  # type: ignore[arg-type]
    pi.result(pi.open_form({"questions": []}).removeprefix("tool:"))  # type: ignore[arg-type]
