"""docs/fleet.md's security model against a real nats-server with per-user permissions: each
host's forwarder and the bridge get exactly ``FleetNames.forwarder_permissions`` /
``bridge_permissions``; an administrator made the streams."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import pytest
import pytest_asyncio
from nats.aio.client import Client
from nats.aio.msg import Msg

from pi_ask_sdk import BridgeClient, SubmitAccepted, SubmitNotSent, SubmitTimedOut
from pi_ask_sdk.fleet import Fleet, FleetNames, FleetPi, FleetSettings, NatsOptions
from pi_ask_sdk.fleet.connection import connect_nats, ensure_streams
from pi_ask_sdk.fleet.protocol import NatsPermissions
from pi_ask_sdk.serving import serve
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_server import NatsServer, nats_server

from .conftest import Host
from .kit import relay_answered, yes

NAMES = FleetNames()
FAKE = b'{"fake":true}'
PASSWORDS = {"admin": "admin-pw", "forward-a": "a-pw", "forward-b": "b-pw", "bridge": "bridge-pw"}


def _user(name: str, permissions: NatsPermissions | None) -> dict[str, object]:
    user: dict[str, object] = {"user": name, "password": PASSWORDS[name]}
    if permissions is not None:
        user["permissions"] = {
            "publish": {"allow": permissions["publish"]},
            "subscribe": {"allow": permissions["subscribe"]},
            "allow_responses": permissions["allow_responses"],
        }
    return user


CONFIG = "authorization " + json.dumps(
    {
        "users": [
            _user("admin", None),
            _user("forward-a", NAMES.forwarder_permissions("host-a")),
            _user("forward-b", NAMES.forwarder_permissions("host-b")),
            _user("bridge", NAMES.bridge_permissions("bridge")),
        ]
    }
)


def options(server: NatsServer, user: str, inbox: str) -> NatsOptions:
    return NatsOptions(
        server.url, user=user, password=PASSWORDS[user], inbox_prefix=NAMES.inbox(inbox)
    )


def _no_responses(permissions: NatsPermissions) -> NatsPermissions:
    permissions["allow_responses"] = False
    return permissions


NO_RESPONSES = "authorization " + json.dumps(
    {
        "users": [
            _user("admin", None),
            _user("forward-a", _no_responses(NAMES.forwarder_permissions("host-a"))),
            _user("bridge", NAMES.bridge_permissions("bridge")),
        ]
    }
)
"""A forwarder user that may not answer requests (``allow_responses`` left out)."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[NatsServer]:
    with nats_server(tmp_path / "nats", config=CONFIG) as started:
        yield started


async def _admin(server: NatsServer) -> Client:
    """The administrator's connection, after it made the streams."""
    nc = await connect_nats(NatsOptions(server.url, user="admin", password=PASSWORDS["admin"]))
    await ensure_streams(nc.jetstream(), NAMES, FleetSettings(), server.url)
    return nc


@pytest_asyncio.fixture
async def admin(server: NatsServer) -> AsyncIterator[Client]:
    nc = await _admin(server)
    yield nc
    await nc.close()


def violations(server: NatsServer) -> list[str]:
    """What the server logged as refused (it logs every permission violation)."""
    return [line for line in server.log if "Violation" in line]


class Attacker:
    """A raw NATS client with someone's credentials, recording what the server refused."""

    def __init__(self) -> None:
        self.refused: list[str] = []
        self.nc: Client | None = None
        self._changed = asyncio.Event()

    async def connect(self, server: NatsServer, user: str, inbox: str) -> Client:
        async def on_error(exc: Exception) -> None:
            self.refused.append(str(exc).lower())
            self._changed.set()

        self.nc = await nats.connect(
            server.url,
            user=user,
            password=PASSWORDS[user],
            inbox_prefix=NAMES.inbox(inbox),
            error_cb=on_error,
            allow_reconnect=False,
        )
        return self.nc

    async def publish_refused(self, subject: str) -> None:
        """A JetStream publish on ``subject`` is never stored: no acknowledgement comes, and
        the server says it refused it."""
        assert self.nc is not None
        with pytest.raises(nats.errors.TimeoutError):
            await self.nc.jetstream().publish(subject, FAKE, timeout=1.0)
        await self.wait_refused(f'publish to "{subject.lower()}"')

    async def wait_refused(self, text: str, timeout: float = 10.0) -> None:
        """Until the server's refusal naming ``text`` has reached the error callback (it comes
        asynchronously, as its own task in nats-py)."""

        async def heard() -> None:
            while not any(text in refusal for refusal in self.refused):
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(heard(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no refusal naming {text!r}: {self.refused}") from None


async def _host(tmp_path: Path, server: NatsServer, host_id: str, user: str) -> Host:
    made = Host(tmp_path / host_id, server.url, host_id)
    made.directory.mkdir(mode=0o700)
    made.options = options(server, user, host_id)
    return made


async def _stored(admin: Client, subject: str) -> bool:
    """Whether FLOWS or FORWARDERS holds the attacker's message on ``subject`` (the admin
    looks)."""
    js = admin.jetstream()
    for stream in (NAMES.flows_stream, NAMES.forwarders_stream):
        with contextlib.suppress(nats.js.errors.NotFoundError):
            if (await js.get_last_msg(stream, subject)).data == FAKE:
                return True
    return False


@pytest.mark.asyncio
async def test_a_host_cannot_fake_another_hosts_forms_nor_take_its_submits(
    tmp_path: Path, server: NatsServer, admin: Client
) -> None:
    host_a = await _host(tmp_path, server, "host-a", "forward-a")
    host_b = await _host(tmp_path, server, "host-b", "forward-b")
    attacker = Attacker()
    try:
        pi_b = await host_b.start_pi()
        await host_a.start_pi()
        await host_a.start_forwarder(setup=False)
        await host_b.start_forwarder(setup=False)
        # (host B's forwarder is away longer than the default forwarder_timeout here)
        patient = FleetSettings(forwarder_timeout=300.0)
        bridge = options(server, "bridge", "bridge")
        async with Fleet(bridge, setup=False, heartbeat=0.2, settings=patient) as fleet:
            await fleet.wait_pi("host-b", pi_b.pid)
            handle = pi_b.open_form(yes_no_params(), "b-form")
            async with BridgeClient(fleet.transport("host-b", pi_b.pid)) as client:
                flow = await client.flows().next(timeout=10)
                # host B's forwarder is away: the bridge's submit is not sent (nothing stored)
                await host_b.stop_forwarder()
                outcome = await client.respond(flow, yes(flow), request_id="r-b", timeout=10)
                assert isinstance(outcome, SubmitNotSent), outcome

                assert violations(server) == []  # the prescribed permissions suffice
                nc = await attacker.connect(server, "forward-a", "host-a")
                pid = pi_b.pid
                # host A cannot publish host B's Pi, forms or results ...
                for subject in (
                    NAMES.state("host-b", pid),
                    NAMES.flow("host-b", pid, "tool:fake"),
                    NAMES.result("host-b", pid),
                    NAMES.forwarder("host-b"),  # ... nor take host B's lease
                    NAMES.submit("host-b", pid),  # ... nor submit (answer) for it
                    NAMES.bridge("fake-answerer"),  # ... nor pose as an answering bridge
                ):
                    await attacker.publish_refused(subject)
                    assert not await _stored(admin, subject), subject
                # ... nor take its submits, nor read its replies
                stolen: list[bytes] = []

                async def steal(msg: Msg) -> None:
                    stolen.append(msg.data)

                await nc.subscribe(NAMES.host_submits("host-b"), cb=steal)
                await nc.subscribe(NAMES.inbox("host-b") + ".>", cb=steal)
                await attacker.wait_refused(
                    f'subscription to "{NAMES.host_submits("host-b").lower()}"'
                )
                await attacker.wait_refused(f'subscription to "{NAMES.inbox("host-b").lower()}')

                # host B's forwarder comes back; the retry is answered
                back = await host_b.start_forwarder(setup=False)
                await back.wait_taking_submits(20)
                outcome = await client.respond(flow, yes(flow), request_id="r-b", timeout=20)
                assert isinstance(outcome, SubmitAccepted), outcome
                assert stolen == []
                assert relay_answered(pi_b, flow.flow_id) == 1
                assert not handle.is_open
                assert all(
                    m.get("type") != "emit" for r in host_a.relays.values() for m in r.received
                )
    finally:
        if attacker.nc is not None:
            await attacker.nc.close()
        await host_a.close()
        await host_b.close()


async def _never(msg: Msg) -> None:
    raise AssertionError(f"a submit reached the wrong host: {msg.subject}")


@pytest.mark.asyncio
async def test_the_bridge_permissions_serve_forms_and_cannot_fake_forwarders(
    tmp_path: Path, server: NatsServer, admin: Client
) -> None:
    host_a = await _host(tmp_path, server, "host-a", "forward-a")
    attacker = Attacker()
    try:
        relay = await host_a.start_pi()
        await host_a.start_forwarder(setup=False)
        answered: asyncio.Queue[tuple[str, int, str]] = asyncio.Queue()

        async def handler(client: BridgeClient, pi: FleetPi) -> None:
            async for flow in client.flows():
                outcome = await client.respond(flow, yes(flow), timeout=10)
                assert isinstance(outcome, SubmitAccepted), outcome
                await answered.put((pi.host, pi.pid, flow.tool_call_id or ""))

        stop = asyncio.Event()
        async with Fleet(options(server, "bridge", "bridge"), setup=False, heartbeat=0.2) as fleet:
            serving = asyncio.create_task(serve(handler, fleet, stop=stop))
            try:
                # the forwarder hears the bridge's presence: the relay gets an answerer
                await relay.wait_answerers(1, 10)
                handle = relay.open_form(yes_no_params(), "served")
                assert await asyncio.wait_for(answered.get(), 15) == ("host-a", relay.pid, "served")
                assert not handle.is_open
            finally:
                stop.set()
                await asyncio.wait_for(serving, 10)

        assert violations(server) == []  # the prescribed permissions suffice
        nc = await attacker.connect(server, "bridge", "bridge")
        pid = relay.pid
        for subject in (
            NAMES.state("host-a", pid),
            NAMES.flow("host-a", pid, "tool:fake"),
            NAMES.result("host-a", pid),
            NAMES.forwarder("host-a"),
        ):
            await attacker.publish_refused(subject)
            assert not await _stored(admin, subject), subject
        await nc.subscribe(NAMES.host_submits("host-a"), cb=_never)
        await attacker.wait_refused(f'subscription to "{NAMES.host_submits("host-a").lower()}"')
    finally:
        if attacker.nc is not None:
            await attacker.nc.close()
        await host_a.close()


@pytest.mark.asyncio
async def test_a_forwarder_that_may_not_answer_requests_never_tells_a_false_outcome(
    tmp_path: Path,
) -> None:
    """A forwarder user without ``allow_responses``: the server refuses its reply to the
    bridge's submit. The bridge is told nothing false: it times out ("may have been applied",
    SubmitTimedOut), and Pi got the submit once (the forwarder needs ``allow_responses``:
    ``forwarder_permissions`` grants it)."""
    with nats_server(tmp_path / "nats", config=NO_RESPONSES) as server:
        admin = await _admin(server)
        host_a = await _host(tmp_path, server, "host-a", "forward-a")
        try:
            relay = await host_a.start_pi()
            forwarder = await host_a.start_forwarder(setup=False)
            await forwarder.wait_taking_submits(20)
            bridge = options(server, "bridge", "bridge")
            async with Fleet(bridge, setup=False, heartbeat=0.2) as fleet:
                await fleet.wait_pi("host-a", relay.pid)
                handle = relay.open_form(yes_no_params(), "refused-reply")
                transport = fleet.transport("host-a", relay.pid, send_timeout=1.0)
                async with BridgeClient(transport) as client:
                    flow = await client.flows().next(timeout=10)
                    outcome = await client.respond(flow, yes(flow), timeout=2)
            assert isinstance(outcome, SubmitTimedOut), outcome
            assert relay_answered(relay, flow.flow_id) == 1
            assert not handle.is_open
            refused = f'Publish Violation - Subject "{NAMES.inbox("bridge")}.'
            assert [line for line in violations(server) if refused not in line] == []
            assert any(refused in line for line in violations(server))  # its reply, refused
        finally:
            await host_a.close()
            await admin.close()
