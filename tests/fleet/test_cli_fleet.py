"""``pi-ask watch --nats`` and ``pi-ask doctor --nats`` against a real nats-server, a forwarder
following Python relays, and answering bridges."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
from collections.abc import AsyncIterator, Callable
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from pi_ask_sdk import AnswerBuilder, BridgeClient, FlowId, SubmitAccepted
from pi_ask_sdk.cli import main
from pi_ask_sdk.cli.doctor_fleet import fleet_checks, survey_fleet
from pi_ask_sdk.cli.watch_fleet import flow_id_of, watch_fleet
from pi_ask_sdk.fleet import Fleet, NatsOptions
from pi_ask_sdk.fleet.protocol import flow_token
from pi_ask_sdk.testing.nats_server import NatsServer, free_port
from tests.relay.fake_relay import FakeRelay

from .conftest import Host

FORM = {
    "title": "Deploy",
    "questions": [
        {
            "id": "go",
            "prompt": "Deploy now?",
            "options": [{"value": "yes", "label": "Yes"}, {"value": "no", "label": "No"}],
        }
    ],
}
WAIT = 20.0


def run_cli(*argv: str) -> tuple[int, str]:
    """``pi-ask <argv>`` in this process (its own event loop): status and stdout."""
    out = io.StringIO()
    with redirect_stdout(out):
        status = main(list(argv))
    return status, out.getvalue()


async def cli(*argv: str) -> tuple[int, str]:
    return await asyncio.to_thread(run_cli, *argv)


class Lines:
    """What a watch wrote, awaited line by line (bounded)."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._new = asyncio.Event()
        self.task: asyncio.Task[int] | None = None

    def write(self, text: str) -> None:
        self.seen.append(text)
        self._new.set()

    async def until(self, match: Callable[[str], bool], timeout: float = WAIT) -> str:
        async def find() -> str:
            checked = 0
            while True:
                for line in self.seen[checked:]:
                    if match(line):
                        return line
                checked = len(self.seen)
                if self.task is not None and self.task.done():
                    self.task.result()  # the watch's own error, if it failed
                    raise AssertionError(f"the watch ended; it wrote {self.seen}")
                self._new.clear()
                await self._new.wait()

        return await asyncio.wait_for(find(), timeout)


@contextlib.asynccontextmanager
async def watching(
    url: str, *, as_json: bool = False, forwarder_timeout: float = 10.0
) -> AsyncIterator[tuple[Lines, asyncio.Task[int]]]:
    lines = Lines()
    task = asyncio.get_running_loop().create_task(
        watch_fleet(
            NatsOptions(url),
            write=lines.write,
            as_json=as_json,
            forwarder_timeout=forwarder_timeout,
        )
    )
    task.add_done_callback(lambda _: lines._new.set())
    lines.task = task
    try:
        yield lines, task
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.wait_for(task, 30)


# --- doctor -------------------------------------------------------------------------------------


def test_doctor_names_an_unreachable_server_and_fails() -> None:
    url = f"nats://127.0.0.1:{free_port()}"  # nothing listens there
    status, out = run_cli("doctor", "--nats", url)
    assert status == 1
    assert f"[fail] nats server: cannot reach {url}: nothing answers there" in out
    status, out = run_cli("doctor", "--nats", url, "--json")
    report = json.loads(out)
    assert status == 1
    assert report["ok"] is False
    assert report["checks"][0]["status"] == "fail"


@pytest.mark.asyncio
async def test_doctor_says_no_forwarder_has_connected_when_the_streams_are_missing(
    nats_server: NatsServer,
) -> None:
    status, out = await cli("doctor", "--nats", nats_server.url, "--listen", "0.1")
    assert status == 1
    assert "[  ok] nats server" in out
    assert "[fail] streams: missing" in out
    assert "PIASK_FLOWS, PIASK_FORWARDERS" in out
    assert "run pi-ask forward --nats URL on each host" in out
    # another prefix is another fleet: its streams are not these
    status, out = await cli(
        "doctor", "--nats", nats_server.url, "--prefix", "other", "--listen", "0.1"
    )
    assert status == 1
    assert "OTHER_FLOWS" in out


@contextlib.asynccontextmanager
async def two_hosts(
    tmp_path: Path, nats_server: NatsServer, host: Host
) -> AsyncIterator[tuple[FakeRelay, FakeRelay, Host]]:
    """``host`` ("h1") and a second host "h2", one Pi and a forwarder each: (h1's Pi, h2's Pi,
    the second host)."""
    second = Host(tmp_path / "relays2", nats_server.url, "h2")
    second.directory.mkdir(mode=0o700)
    try:
        relay = await host.start_pi()
        other = await second.start_pi()
        await host.start_forwarder()
        await second.start_forwarder()
        yield relay, other, second
    finally:
        await second.close()


@pytest.mark.asyncio
async def test_doctor_reports_hosts_pis_open_forms_and_answerers(
    tmp_path: Path, nats_server: NatsServer, host: Host
) -> None:
    async with two_hosts(tmp_path, nats_server, host) as (relay, other, _):
        relay.open_form(FORM, "one")
        relay.open_form(FORM, "two")
        async with Fleet(nats_server.url, heartbeat=0.2) as fleet:
            await fleet.wait_pi("h1", relay.pid)
            await fleet.wait_pi("h2", other.pid)
            status, out = await cli("doctor", "--nats", nats_server.url, "--json")
            report = json.loads(out)
            assert status == 0, out
            assert report["ok"] is True
            hosts = {h["host"]: h for h in report["fleet"]["hosts"]}
            assert sorted(hosts) == ["h1", "h2"]
            assert hosts["h1"]["forwarder"] is True
            assert hosts["h2"]["forwarder"] is True
            [pi] = hosts["h1"]["pis"]
            assert (pi["pid"], pi["openForms"], pi["piVersion"]) == (relay.pid, 2, "fake")
            assert [p["pid"] for p in hosts["h2"]["pis"]] == [other.pid]
            assert report["fleet"]["openForms"] == 2
            assert report["fleet"]["answerers"] == [fleet.bridge_id]
            status, text = await cli("doctor", "--nats", nats_server.url)
            assert status == 0
            assert "[  ok] pis: 2 Pi(s) up on 2 host(s), 2 open form(s)\n" in text
            assert "[  ok] stream PIASK_FORWARDERS:" in text
            assert f"1 answering bridge(s) alive: {fleet.bridge_id}" in text
        # the bridge said goodbye: no answerer, a warning, not a failure
        status, text = await cli("doctor", "--nats", nats_server.url, "--listen", "0.1")
        assert status == 0
        assert (
            "[warn] answerers: no answering bridge is alive: headless Pis answer their forms "
            "with the fallback, and a Pi started by pi-ask try waits for a bridge"
        ) in text


@pytest.mark.asyncio
async def test_doctor_fails_a_host_whose_forwarder_is_gone_while_its_pis_are_up(
    tmp_path: Path, nats_server: NatsServer, host: Host
) -> None:
    async with two_hosts(tmp_path, nats_server, host) as (relay, other, second):
        async with Fleet(nats_server.url, role="observer") as fleet:
            await fleet.wait_pi("h1", relay.pid)
            await fleet.wait_pi("h2", other.pid)
        await host.stop_forwarder()  # the Pi stays up in the fleet: a restart finds it again
        found = await survey_fleet(NatsOptions(nats_server.url), listen=0.1)
        checks = {check.what: check for check in fleet_checks(found)}
        assert checks["host h1"].status == "fail"
        assert "its forwarder is not connected; 1 Pi(s) shown up" in checks["host h1"].detail
        # only h2's Pi can be answered; h1's is counted apart
        assert (checks["pis"].status, checks["pis"].detail) == (
            "ok",
            "1 Pi(s) up on 1 host(s), 0 open form(s); 1 Pi(s) up on 1 host(s) whose "
            "forwarder is gone cannot be answered",
        )
        await second.stop_forwarder()
        found = await survey_fleet(NatsOptions(nats_server.url), listen=0.1)
        checks = {check.what: check for check in fleet_checks(found)}
        assert (checks["pis"].status, checks["pis"].detail) == (
            "warn",
            "2 Pi(s) up on 2 host(s) whose forwarder is gone cannot be answered",
        )
        status, _ = await cli("doctor", "--nats", nats_server.url, "--listen", "0.1")
        assert status == 1


@pytest.mark.asyncio
async def test_watch_shows_open_forms_then_forms_as_they_start_and_complete(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    relay.open_form(FORM, "before")
    await fleet.wait_pi("h1", relay.pid)
    tag = f"[h1 pi {relay.pid}]"
    async with watching(nats_server.url) as (lines, _):
        await lines.until(lambda line: line == f"{tag} up: Pi fake in /fake")
        await lines.until(lambda line: line.startswith(f'{tag} started tool:before "Deploy" (al'))
        relay.open_form(FORM, "after")
        live = await lines.until(lambda line: line.startswith(f"{tag} started tool:after"))
        assert "already open" not in live
        assert "Deploy now?" in live
        async with BridgeClient(fleet.transport("h1", relay.pid)) as client:
            flow = client.open_flows[FlowId("tool:after")]
            question = flow.question("go")
            answer = AnswerBuilder(flow).select(question, question.value("yes")).build()
            assert isinstance(await client.respond(flow, answer, timeout=WAIT), SubmitAccepted)
        done = await lines.until(lambda line: line.startswith(f"{tag} completed tool:after"))
        assert "yes" in done
        await lines.until(lambda line: line.startswith(f"{tag} pi-agent-ask:submit-result"))
        await host.exit_pi(relay.pid)
        await lines.until(lambda line: line.startswith(f"{tag} gone tool:before: ended without"))
        await lines.until(lambda line: line == f"{tag} gone: the Pi exited or its relay closed")
    assert not any("tool:after" in line and "gone" in line for line in lines.seen)


@pytest.mark.asyncio
async def test_watch_says_when_a_hosts_forwarder_goes_silent_and_when_it_is_back(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    relay = await host.start_served_pi(fleet)
    async with watching(nats_server.url, forwarder_timeout=1.5) as (lines, _):
        await lines.until(lambda line: line == f"[h1 pi {relay.pid}] up: Pi fake in /fake")
        await host.stop_forwarder()  # silent from now on (its Pi stays up in FLOWS)
        gone = await lines.until(lambda line: line.startswith("[h1] forwarder gone"))
        assert "no heartbeat for 1.5 s; its 1 Pi(s) shown up cannot be answered" in gone
        await host.start_forwarder()
        await lines.until(lambda line: line.startswith("[h1] forwarder back"))


@pytest.mark.asyncio
async def test_watch_says_a_session_ended_and_a_vouching_forwarder_restart_says_nothing(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    relay = await host.start_served_pi(fleet)
    tag = f"[h1 pi {relay.pid}]"
    async with watching(nats_server.url) as (lines, _):
        await lines.until(lambda line: line == f"{tag} up: Pi fake in /fake")
        relay.open_form(FORM, "old")
        await lines.until(lambda line: line.startswith(f"{tag} started tool:old"))
        await relay.end_session("new")  # the forwarder: state up again, with a new epoch
        await lines.until(
            lambda line: line == f"{tag} session ended: its forms are reset (new epoch)"
        )
        await host.wait_followed(relay.pid)
        relay.open_form(FORM, "kept")
        await lines.until(lambda line: line.startswith(f"{tag} started tool:kept"))
        # A forwarder restart that finds its forms still open keeps the epoch: no line (it
        # publishes the Pi's state before the relay's events, so before this form's start).
        await host.stop_forwarder()
        await host.start_forwarder()
        await host.wait_followed(relay.pid)
        relay.open_form(FORM, "after-restart")
        await lines.until(lambda line: line.startswith(f"{tag} started tool:after-restart"))
    mine = [line for line in lines.seen if line.startswith(tag)]
    assert sum(line.startswith(f"{tag} up:") for line in mine) == 1, mine
    assert sum(line.startswith(f"{tag} session ended") for line in mine) == 1, "\n".join(mine)


@pytest.mark.asyncio
async def test_watch_json_says_a_session_ended_with_the_states_epoch_and_session_id(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    relay = await host.start_served_pi(fleet)
    async with watching(nats_server.url, as_json=True) as (lines, _):
        up = json.loads(await lines.until(lambda line: json.loads(line).get("state") == "up"))
        await relay.end_session("new")
        ended = json.loads(await lines.until(lambda line: "sessionEnded" in json.loads(line)))
    assert (up["host"], up["pid"], up["cwd"]) == ("h1", relay.pid, "/fake")
    assert isinstance(up["epoch"], str)
    assert up["epoch"]
    assert "sessionId" in up
    assert (ended["host"], ended["pid"], ended["state"]) == ("h1", relay.pid, "up")
    assert ended["sessionEnded"] is True
    assert ended["epoch"] != up["epoch"]


@pytest.mark.asyncio
@pytest.mark.parametrize("as_json", [False, True])
async def test_watch_says_when_the_server_is_lost_and_when_it_is_back(
    nats_server: NatsServer, host: Host, as_json: bool
) -> None:
    relay = await host.start_pi()
    await host.start_forwarder()
    url = nats_server.url
    lost = '{"server": "lost"}' if as_json else f"server lost: reconnecting to {url}"
    back = '{"server": "back"}' if as_json else f"server back: {url}"
    async with watching(url, as_json=as_json) as (lines, _):
        await lines.until(lambda line: str(relay.pid) in line and "up" in line)
        nats_server.kill()
        await lines.until(lambda line: line == lost)
        nats_server.start()  # same port, same store
        await lines.until(lambda line: line == back)
        relay.open_form(FORM, "after")  # and it still watches
        await lines.until(lambda line: "tool:after" in line)
    # once each, and no "lost" when the watch itself closes
    assert (lines.seen.count(lost), lines.seen.count(back)) == (1, 1), lines.seen


@pytest.mark.asyncio
async def test_watch_json_lines_name_host_pid_and_channel(
    nats_server: NatsServer, host: Host, fleet: Fleet
) -> None:
    relay = await host.start_served_pi(fleet)
    async with watching(nats_server.url, as_json=True) as (lines, _):
        await lines.until(lambda line: json.loads(line).get("state") == "up")
        relay.open_form(FORM, "j")
        line = await lines.until(lambda line: json.loads(line).get("channel") is not None)
    record = json.loads(line)
    assert (record["host"], record["pid"], record["replay"]) == ("h1", relay.pid, False)
    assert record["channel"] == "pi-agent-ask:started"
    assert record["data"]["flowId"] == "tool:j"


@pytest.mark.asyncio
async def test_watch_without_the_fleets_streams_says_so(nats_server: NatsServer) -> None:
    status = await asyncio.to_thread(main, ["watch", "--nats", nats_server.url, "--duration", "1"])
    assert status == 3  # a runtime error, as watch without any relay


@pytest.mark.asyncio
async def test_watch_ends_after_its_duration(nats_server: NatsServer, host: Host) -> None:
    await host.start_pi()
    await host.start_forwarder()
    status, out = await cli("watch", "--nats", nats_server.url, "--duration", "0.5")
    assert status == 0
    assert out.startswith(f"watching the fleet at {nats_server.url}")


def test_a_flow_token_reads_back_to_its_flow_id() -> None:
    for flow_id in ("tool:a", "x" * 96, "\u00e9\U0001f600", "a\ud800b"):
        assert flow_id_of(flow_token(flow_id)) == flow_id
    assert flow_id_of(flow_token("y" * 200)) is None  # hashed: not readable back
