"""The fleet end to end on a real nats-server: a forwarder per host, bridges over NATS."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    BridgeClient,
    FlowView,
    SubmitAccepted,
    SubmitRejected,
)
from pi_ask_sdk.fleet import Fleet, FleetPi, FleetPiNotFound, NatsTransport, pi_transport
from pi_ask_sdk.forms import F
from pi_ask_sdk.outcomes import SessionEnded
from pi_ask_sdk.serving import serve
from pi_ask_sdk.sync import SyncBridgeClient
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer

from .conftest import Host


def yes(flow: FlowView[F]) -> Answer[F]:
    question = flow.question("deploy")
    return AnswerBuilder(flow).select(question, question.value("yes")).build()


@pytest.mark.asyncio
async def test_a_late_bridge_sees_the_open_forms_and_never_a_completed_one(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handles = [relay.open_form(yes_no_params(), f"call-{n}") for n in range(5)]
    async with BridgeClient(fleet.transport("h1", relay.pid)) as first:
        stream = first.flows()
        flows = [await stream.next(timeout=10) for _ in range(5)]
        assert sorted(f.tool_call_id or "" for f in flows) == [f"call-{n}" for n in range(5)]
        done = [f for f in flows if f.tool_call_id in ("call-1", "call-3")]
        for flow in done:
            outcome = await first.respond(flow, yes(flow), timeout=10)
            assert isinstance(outcome, SubmitAccepted)
    async with BridgeClient(fleet.transport("h1", relay.pid)) as late:
        # open() returns once the snapshot is in: the three forms still open, as replays
        assert sorted(f.tool_call_id or "" for f in late.open_flows.values()) == [
            "call-0",
            "call-2",
            "call-4",
        ]
        assert all(f.replay for f in late.open_flows.values())
    assert [h.is_open for h in handles] == [True, False, True, False, True]


@pytest.mark.asyncio
async def test_serve_reaches_every_pi_of_every_host_including_later_ones(
    host: Host, fleet: Fleet, tmp_path: object, nats_server: object
) -> None:
    other = Host(host.directory.parent / "relays2", host.url, "h2")
    other.directory.mkdir(mode=0o700)
    try:
        first = await host.start_pi()
        await host.start_forwarder()
        await other.start_forwarder()
        seen: asyncio.Queue[tuple[str, int, str]] = asyncio.Queue()

        async def handler(client: BridgeClient, pi: FleetPi) -> None:
            async for flow in client.flows():
                outcome = await client.respond(flow, yes(flow), timeout=10)
                assert isinstance(outcome, SubmitAccepted)
                await seen.put((pi.host, pi.pid, flow.tool_call_id or ""))

        stop = asyncio.Event()
        serving = asyncio.create_task(serve(handler, fleet, stop=stop))
        first.open_form(yes_no_params(), "a")
        assert await asyncio.wait_for(seen.get(), 10) == ("h1", first.pid, "a")
        later = await other.start_pi()  # a Pi (on another host) that starts later
        await fleet.wait_pi("h2", later.pid)
        later.open_form(yes_no_params(), "b")
        assert await asyncio.wait_for(seen.get(), 10) == ("h2", later.pid, "b")
        assert sorted((p.host, p.pid) for p in await fleet.pis()) == [
            ("h1", first.pid),
            ("h2", later.pid),
        ]
        stop.set()
        await asyncio.wait_for(serving, 10)
    finally:
        await other.close()


@pytest.mark.asyncio
async def test_a_pi_that_exits_ends_its_bridge_and_is_not_found_afterwards(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    relay.open_form(yes_no_params(), "x")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        events = client.events()
        flow = await client.flows().next(timeout=10)
        ticket_flow = flow
        await host.exit_pi(relay.pid)
        event = await events.next(timeout=10)
        while not isinstance(event, SessionEnded):
            event = await events.next(timeout=10)
        assert event.reason == "disconnected"
        outcome = await client.respond(ticket_flow, yes(ticket_flow), timeout=5)
        assert not isinstance(outcome, SubmitAccepted)
    with pytest.raises(FleetPiNotFound):
        async with BridgeClient(fleet.transport("h1", relay.pid)):
            pass


@pytest.mark.asyncio
async def test_a_session_end_resets_the_view_and_the_next_session_is_served(
    host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    relay.open_form(yes_no_params(), "old")
    async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
        events = client.events()
        flows = client.flows()
        flow = await flows.next(timeout=10)
        await relay.end_session("new")
        first = await events.next(timeout=10)
        while not isinstance(first, SessionEnded):
            first = await events.next(timeout=10)
        assert first.reason == "session_ended"
        assert dict(client.open_flows) == {}
        await host.wait_followed(relay.pid)
        relay.open_form(yes_no_params(), "new")
        fresh = await flows.next(timeout=10)
        assert fresh.tool_call_id == "new"
        outcome = await client.respond(fresh, yes(fresh), timeout=10)
        assert isinstance(outcome, SubmitAccepted)
        late = await client.respond(flow, yes(flow), timeout=5)
        assert not isinstance(late, SubmitAccepted)


@pytest.mark.asyncio
async def test_two_bridges_answering_one_form_get_one_acceptance(host: Host, fleet: Fleet) -> None:
    """Two bridges (two fleet connections) race on one form: exactly one is accepted, the
    other is refused by the host (flow_not_found), never both."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    async with (
        Fleet(host.url, heartbeat=0.2) as other_fleet,
        BridgeClient(fleet.transport("h1", relay.pid)) as a,
        BridgeClient(other_fleet.transport("h1", relay.pid)) as b,
    ):
        flows_a, flows_b = a.flows(), b.flows()
        for n in range(10):
            relay.open_form(yes_no_params(), f"race-{n}")
            fa = await flows_a.next(timeout=10)
            fb = await flows_b.next(timeout=10)
            assert fa.flow_id == fb.flow_id
            # Sent together: a submit returns once its result is in (the forwarder's reply),
            # after which the other bridge may already know the form completed.
            ta, tb = await asyncio.gather(a.submit(fa, yes(fa)), b.submit(fb, yes(fb)))
            oa, ob = await asyncio.gather(
                a.await_result(ta, timeout=10), b.await_result(tb, timeout=10)
            )
            accepted = [o for o in (oa, ob) if isinstance(o, SubmitAccepted)]
            refused = [o for o in (oa, ob) if isinstance(o, SubmitRejected)]
            assert len(accepted) == 1, (oa, ob)
            assert len(refused) == 1, (oa, ob)
            assert refused[0].error == "flow_not_found", (oa, ob)


@pytest.mark.asyncio
async def test_the_forwarder_answers_for_its_relays_only_while_a_bridge_lives(
    host: Host, nats_server: object
) -> None:
    relay = await host.start_pi()
    forwarder = await host.start_forwarder()
    await host.wait_followed(relay.pid)
    assert forwarder.relay_role == "observer"
    await relay.wait_answerers(0)
    observer = Fleet(host.url, role="observer")
    async with observer:
        await relay.wait_answerers(0)  # an observing bridge never makes a form wait
        async with Fleet(host.url, heartbeat=0.2) as bridge:
            await relay.wait_answerers(1, timeout=10)
            assert forwarder.answering_bridges == [bridge.bridge_id]
        # a bridge that closes says bye: the forwarder drops the role at once
        await relay.wait_answerers(0, timeout=10)
        # a bridge that vanishes without a word expires after three heartbeats
        gone = Fleet(host.url, heartbeat=0.2)
        await gone.open()
        await relay.wait_answerers(1, timeout=10)
        await gone.nc.close()  # no bye
        await relay.wait_answerers(0, timeout=10)
        await gone.close()


@pytest.mark.asyncio
async def test_the_sync_facade_answers_a_fleet_pi(host: Host, fleet: Fleet) -> None:
    """SyncBridgeClient over a transport with its own connection (made on the sync client's
    private loop), driven from a worker thread while this loop runs the host."""
    relay = await host.start_pi()
    await host.start_forwarder()
    await fleet.wait_pi("h1", relay.pid)
    handle = relay.open_form(yes_no_params(), "sync")

    def bridge() -> object:
        with SyncBridgeClient(pi_transport(host.url, "h1", relay.pid), timeout=20) as client:
            flow = client.flows().next(timeout=20)
            assert flow.tool_call_id == "sync"
            return client.respond(flow, yes(flow), timeout=20)

    outcome = await asyncio.wait_for(asyncio.to_thread(bridge), 60)
    assert isinstance(outcome, SubmitAccepted)
    assert handle.state == "completed"


@pytest.mark.asyncio
async def test_a_refused_connection_fails_at_once_saying_nothing_answers() -> None:
    from pi_ask_sdk.fleet import FleetUnavailable, NatsOptions
    from pi_ask_sdk.testing.nats_server import free_port

    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens: refused at once
    # (well before connect_timeout: that bound is for a server that accepts, not one refusing)
    with pytest.raises(FleetUnavailable) as caught:
        await asyncio.wait_for(Fleet(NatsOptions(url, connect_timeout=30.0)).open(), 10)
    assert caught.value.detail == (
        "nothing answers there (connection refused: is nats-server running, and is the URL right?)"
    )
    assert isinstance(caught.value.__cause__, ConnectionRefusedError)


@pytest.mark.asyncio
async def test_a_refusing_server_beside_a_live_one_is_skipped(host: Host) -> None:
    from pi_ask_sdk.fleet import NatsOptions
    from pi_ask_sdk.testing.nats_server import free_port

    refusing = f"nats://127.0.0.1:{free_port()}"
    for url in (f"{refusing},{host.url}", f"{host.url},{refusing}"):
        async with Fleet(NatsOptions(url, connect_timeout=10.0), role="observer") as fleet:
            assert await fleet.pis() == []


@pytest.mark.asyncio
async def test_a_server_that_accepts_but_never_answers_is_a_typed_error_in_bounded_time() -> None:
    from pi_ask_sdk.fleet import FleetUnavailable, NatsOptions

    held: list[asyncio.StreamWriter] = []

    async def mute(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)  # accepted, never a word (no INFO)

    server = await asyncio.start_server(mute, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        with pytest.raises(FleetUnavailable, match="no server answered within 1 s"):
            await asyncio.wait_for(
                Fleet(NatsOptions(f"nats://127.0.0.1:{port}", connect_timeout=1.0)).open(), 10
            )
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


def test_pi_ask_forward_without_a_server_exits_3_saying_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from pi_ask_sdk.cli import main
    from pi_ask_sdk.testing.nats_server import free_port

    url = f"nats://127.0.0.1:{free_port()}"
    assert main(["forward", "--nats", url, "--host-id", "h1"]) == 3
    err = capsys.readouterr().err
    assert f"pi-ask forward: The fleet at {url} is unavailable: nothing answers there" in err


def test_pi_ask_forward_without_jetstream_says_to_start_the_server_with_js(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from pi_ask_sdk.cli import main
    from pi_ask_sdk.testing.nats_server import NatsServer

    class WithoutJetStream(NatsServer):
        def command(self) -> list[str]:
            return [arg for arg in super().command() if arg != "-js"]

    with WithoutJetStream(tmp_path / "store") as server:
        assert main(["forward", "--nats", server.url, "--host-id", "h1"]) == 3
    err = capsys.readouterr().err
    assert (
        f"pi-ask forward: The fleet at {server.url} is unavailable: JetStream does not answer "
        "(ServiceUnavailableError): start nats-server with -js."
    ) in err


def test_pi_ask_forward_needs_a_server_url(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_ask_sdk.cli import main

    monkeypatch.delenv("PI_ASK_NATS", raising=False)
    assert main(["forward", "--host-id", "h1"]) == 2
    assert "pi-ask forward: usage error: the NATS server is needed" in capsys.readouterr().err


@pytest.mark.asyncio
async def test_no_command_prints_the_password_or_token_of_its_url(
    host: Host, nats_server: NatsServer, tmp_path: Path
) -> None:
    """``pi-ask forward``, ``watch --nats`` and ``doctor --nats`` given a URL with a user and
    password (and a refused one with a token) name the server, never the credential."""
    from pi_ask_sdk.testing.nats_server import free_port

    from .kit import ForwarderProcess

    port = nats_server.url.rsplit(":", 1)[1]
    url = f"nats://alice:s3cret-pw@127.0.0.1:{port}"
    forwarder = ForwarderProcess(url, "h1", host.directory)
    forwarder.start()
    try:
        await forwarder.wait_log("pi-ask forward: host h1 -> ")
        log = list(forwarder.log)
    finally:
        forwarder.stop()
    assert "127.0.0.1" in "".join(log)
    _, out = await asyncio.to_thread(_cli, "doctor", "--nats", url)
    refused = f"nats://s3cret-token@127.0.0.1:{free_port()}"
    status, refused_out = await asyncio.to_thread(_cli, "forward", "--nats", refused)
    assert status == 3, refused_out
    _, watch_out = await asyncio.to_thread(_cli, "watch", "--nats", url, "--duration", "0.5")
    for text in (*log, out, refused_out, watch_out):
        assert "s3cret" not in text, text


def _cli(*argv: str) -> tuple[int, str]:
    """``pi-ask <argv>`` in this process: status, and stdout and stderr together."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from pi_ask_sdk.cli import main

    out = io.StringIO()
    with redirect_stdout(out), redirect_stderr(out):
        status = main(list(argv))
    return status, out.getvalue()


@pytest.mark.asyncio
async def test_pi_ask_forward_says_what_it_follows_and_exits_130_on_ctrl_c(host: Host) -> None:
    """It names its relay directory and each Pi it picks up; Ctrl-C (SIGINT) stops it with
    130, as the help says; SIGTERM with 0."""
    import signal

    from .kit import ForwarderProcess

    relay = await host.start_pi()
    forwarder = ForwarderProcess(host.url, "h1", host.directory)
    forwarder.start()
    try:
        await forwarder.wait_log(f"host h1: following the relays in {host.directory}")
        await forwarder.wait_log(f"following Pi {relay.pid}")
        assert await asyncio.to_thread(forwarder.interrupt) == 130
    finally:
        forwarder.kill()
    forwarder.start()
    try:
        await forwarder.wait_log("taking the submits of host h1", timeout=60)
        process = forwarder.process
        assert process is not None
        process.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(process.wait, 20) == 0
    finally:
        forwarder.kill()


@pytest.mark.asyncio
async def test_serve_looks_again_at_a_pi_whose_open_failed(
    host: Host, fleet: Fleet, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Pi whose new transport fails to open (its snapshot not in time; on a cluster, a
    stream electing its leader answers 503 meanwhile) is served once an open succeeds:
    ``serve`` looks at it again while it is up and its forwarder alive (it used to be left
    unserved for good)."""
    relay = await host.start_served_pi(fleet)
    made: list[FleetPi] = []

    def transport(pi: FleetPi) -> NatsTransport:
        made.append(pi)  # the first one cannot open in time (its snapshot needs a round trip)
        return fleet.transport(pi.host, pi.pid, open_timeout=0.0 if len(made) == 1 else 10.0)

    monkeypatch.setattr(fleet, "pi_transport", transport)
    served = asyncio.Event()

    async def handler(client: BridgeClient, pi: FleetPi) -> None:
        served.set()
        await asyncio.Event().wait()  # (serving until serve stops: cancelled then)

    stop = asyncio.Event()
    serving = asyncio.get_running_loop().create_task(serve(handler, fleet, stop=stop))
    try:
        await asyncio.wait_for(served.wait(), 10)
    finally:
        stop.set()
        await asyncio.wait_for(serving, 10)
    assert [pi.pid for pi in made] == [relay.pid, relay.pid]


@pytest.mark.asyncio
async def test_serve_with_hosts_serves_only_those_hosts_pis(
    host: Host, nats_server: NatsServer
) -> None:
    """``Fleet(hosts=["h2"])``: only h2's forwarder counts this bridge, so ``serve`` serves
    h2's Pis and never h1's (whose forms another bridge answers), neither at the start nor when
    it looks at every Pi up again."""
    other = Host(host.directory.parent / "relays2", host.url, "h2")
    other.directory.mkdir(mode=0o700)
    try:
        mine = await other.start_pi()
        theirs = await host.start_pi()
        await host.start_forwarder()
        await other.start_forwarder()
        calls: list[tuple[str, int]] = []
        served_again = asyncio.Event()

        async def handler(client: BridgeClient, pi: FleetPi) -> None:
            calls.append((pi.host, pi.pid))
            if len(calls) >= 2:
                served_again.set()  # h2's handler ended and was served again: a full look

        async with Fleet(nats_server.url, hosts=["h2"], heartbeat=0.2) as scoped:
            await scoped.wait_pi("h1", theirs.pid)
            await scoped.wait_pi("h2", mine.pid)
            stop = asyncio.Event()
            serving = asyncio.create_task(serve(handler, scoped, stop=stop))
            try:
                await asyncio.wait_for(served_again.wait(), 10)
            finally:
                stop.set()
                await asyncio.wait_for(serving, 10)
        assert set(calls) == {("h2", mine.pid)}
    finally:
        await other.close()
