"""The blocking facade, driven from the test thread while the client runs on its own loop."""

from __future__ import annotations

import pytest

from pi_ask_sdk import (
    AnswerBuilder,
    Cancel,
    ClientNotOpen,
    FlowAlreadyAnswered,
    FlowAlreadyCompleted,
    SubmitAccepted,
    SubmitLost,
    SubmitNotSent,
    SubmitTimedOut,
    SyncBridgeClient,
    WaitTimeout,
)
from pi_ask_sdk.testing import FakeHost, yes_no_params

from .conftest import TIMEOUT


def test_sync_client_answers_a_form(fake: FakeHost) -> None:
    with fake.sync_client(timeout=TIMEOUT) as client:
        flows = client.flows()
        fake.open(yes_no_params(), tool_call_id="c1")  # emitted on this thread, handed over
        flow = flows.next(timeout=TIMEOUT)
        deploy = flow.question("deploy")
        answer = AnswerBuilder(flow).select(deploy, deploy.value("no")).build()
        outcome = client.respond(flow, answer, timeout=TIMEOUT)
        assert isinstance(outcome, SubmitAccepted)
        assert outcome.completion.result.answers["deploy"].values == ["no"]
        # Resending after this client's own submit was accepted: what respond's docs promise.
        with pytest.raises(FlowAlreadyAnswered):
            client.submit(flow, Cancel.of(flow))
        with pytest.raises(FlowAlreadyAnswered):
            client.respond(flow, Cancel.of(flow))
        assert client.open_flows == {}
        # A flow completed by someone else (Pi's own user) is not this client's answer.
        handle = fake.open(yes_no_params(), tool_call_id="c2")
        other = flows.next(timeout=TIMEOUT)
        fake.cancel(handle)
        with pytest.raises(FlowAlreadyCompleted):
            client.submit(other, Cancel.of(other))
        assert client.respond(other, Cancel.of(other)) == SubmitNotSent(
            other.flow_id, "flow_completed"
        )
    assert len(fake.submits) == 1


def test_sync_waits_are_bounded_and_typed(fake: FakeHost) -> None:
    with fake.sync_client(timeout=TIMEOUT) as client:
        events = client.events()
        with pytest.raises(WaitTimeout):
            events.next(timeout=0.01)
        fake.open(yes_no_params(), tool_call_id="c1")
        flow = client.flows().next(timeout=TIMEOUT)
        fake.host.close()  # no acknowledgement will come
        ticket = client.submit(flow, Cancel.of(flow))
        assert client.await_result(ticket, timeout=0.01) == SubmitTimedOut(ticket, 0.01)
        fake.end_session()
        lost = client.await_result(ticket, timeout=TIMEOUT)
        assert lost == SubmitLost(ticket, "session_ended")


def test_sync_client_must_be_started() -> None:
    client = SyncBridgeClient(FakeHost().transport())
    with pytest.raises(ClientNotOpen):
        client.flows()
    client.close()  # closing a never-started client is harmless
