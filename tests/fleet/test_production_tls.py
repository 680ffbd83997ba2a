"""The fleet over TLS (a test CA made at test time, ``tls://`` with ``tls_ca``) with users
that authenticate by nkey (a seed file) or by a ``.creds`` file (decentralised auth: operator,
account and user JWTs), each limited to what ``FleetNames.forwarder_permissions`` /
``bridge_permissions`` give it. An administrator user made the streams. Every wait is
bounded."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path

import nats
import nats.errors
import pytest
import pytest_asyncio
from nats.aio.client import Client
from nats.aio.msg import Msg

from pi_ask_sdk import BridgeClient, SubmitAccepted
from pi_ask_sdk.fleet import Fleet, FleetNames, FleetSettings, FleetUnavailable, NatsOptions
from pi_ask_sdk.fleet.connection import connect_nats
from pi_ask_sdk.fleet.protocol import NatsPermissions
from pi_ask_sdk.testing import yes_no_params
from pi_ask_sdk.testing.nats_auth import (
    Operator,
    TlsFiles,
    authorization_config,
    make_tls,
    nkey_user,
)
from pi_ask_sdk.testing.nats_server import NatsServer, nats_server

from .kit import all_done, relay_answered, yes
from .production import SettingsHost

NAMES = FleetNames()
# (host-b's forwarder never runs: its Pis must not be reported gone meanwhile)
SETTINGS = FleetSettings(forwarder_timeout=300.0)
USERS: dict[str, NatsPermissions | None] = {
    "admin": None,
    "forward-a": NAMES.forwarder_permissions("host-a"),
    "forward-b": NAMES.forwarder_permissions("host-b"),
    "bridge": NAMES.bridge_permissions("bridge"),
}
INBOX = {"admin": "admin", "forward-a": "host-a", "forward-b": "host-b", "bridge": "bridge"}


@dataclass
class Secured:
    """A nats-server serving TLS with the four users of ``USERS``, each authenticated by
    ``auth`` ("nkey" or "creds"); ``options(user)`` connects as one of them."""

    server: NatsServer
    tls: TlsFiles
    auth: str
    files: dict[str, Path]

    def options(self, user: str, *, tls_ca: Path | None = None) -> NatsOptions:
        ca = str(tls_ca or self.tls.ca)
        inbox = NAMES.inbox(INBOX[user])
        if self.auth == "nkey":
            return NatsOptions(
                self.server.url, tls_ca=ca, nkey=str(self.files[user]), inbox_prefix=inbox
            )
        return NatsOptions(
            self.server.url, tls_ca=ca, creds=str(self.files[user]), inbox_prefix=inbox
        )

    def violations(self) -> list[str]:
        return [line for line in self.server.log if "Violation" in line]


@pytest.fixture(params=["nkey", "creds"])
def secured(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Secured]:
    tls = make_tls(tmp_path / "tls")
    keys = tmp_path / "keys"
    if request.param == "nkey":
        made = {name: nkey_user(keys, name, allowed) for name, allowed in USERS.items()}
        config = authorization_config(user.entry for user in made.values())
        files = {name: user.seed_file for name, user in made.items()}
    else:
        operator = Operator(keys)
        files = {name: operator.user(name, allowed) for name, allowed in USERS.items()}
        config = operator.config()
    with nats_server(tmp_path / "nats", tls=tls, config=config) as server:
        yield Secured(server, tls, request.param, files)


@pytest_asyncio.fixture
async def admin(secured: Secured) -> AsyncIterator[None]:
    """The administrator made the streams (a ``Fleet`` that sets up): the users of the
    forwarders and the bridge may not."""
    async with Fleet(secured.options("admin"), settings=SETTINGS):
        pass
    yield


def _host(tmp_path: Path, secured: Secured, host: str, user: str) -> SettingsHost:
    return SettingsHost(tmp_path / host, secured.options(user), host, SETTINGS)


@pytest.mark.asyncio
async def test_a_forwarder_and_a_bridge_work_over_tls_with_their_permissions(
    tmp_path: Path, secured: Secured, admin: None
) -> None:
    """host-a's forwarder (user forward-a) and a bridge (user bridge), over ``tls://``: the
    bridge sees host-a's Pi and form and answers it once; the server logs no violation."""
    host = _host(tmp_path, secured, "host-a", "forward-a")
    try:
        relay = await host.start_pi()
        await host.start_forwarder(setup=False)
        bridge = secured.options("bridge")
        assert bridge.url.startswith("tls://")
        async with Fleet(bridge, setup=False, settings=SETTINGS, heartbeat=0.2) as fleet:
            await fleet.wait_pi("host-a", relay.pid)
            handle = relay.open_form(yes_no_params(), "tls-form")
            async with BridgeClient(fleet.transport("host-a", relay.pid)) as client:
                flow = await client.flows().next(timeout=20)
                outcome = await client.respond(flow, yes(flow), timeout=20)
                assert isinstance(outcome, SubmitAccepted), outcome
            await all_done([handle], 20)
        assert relay_answered(relay, handle.flow_id) == 1
        assert secured.violations() == []
    finally:
        await host.close()


@pytest.mark.asyncio
async def test_a_wrong_ca_is_refused_with_a_clear_fleet_unavailable(
    tmp_path: Path, secured: Secured
) -> None:
    """A bridge that trusts another CA cannot connect: ``FleetUnavailable`` naming the URL
    and the certificate check, never a hang, never the credentials."""
    other = make_tls(tmp_path / "other-ca")
    options = secured.options("bridge", tls_ca=other.ca)
    with pytest.raises(FleetUnavailable) as caught:
        await asyncio.wait_for(Fleet(options, setup=False).open(), 30)
    message = str(caught.value)
    assert secured.server.url in message
    assert "certificate" in message.lower(), message
    assert str(secured.files["bridge"]) not in message
    with pytest.raises(FleetUnavailable):
        await asyncio.wait_for(connect_nats(options), 30)


class Reader:
    """A raw NATS client with one user's credentials, recording what the server refused."""

    def __init__(self) -> None:
        self.refused: list[str] = []
        self._changed = asyncio.Event()
        self.nc: Client | None = None

    async def connect(self, secured: Secured, user: str) -> Client:
        async def on_error(exc: Exception) -> None:
            self.refused.append(str(exc).lower())
            self._changed.set()

        options = secured.options(user)
        self.nc = await nats.connect(
            options.url,
            tls=options.ssl_context(),
            nkeys_seed=options.nkey,
            user_credentials=options.creds,
            inbox_prefix=options.inbox_prefix,
            error_cb=on_error,
            allow_reconnect=False,
        )
        return self.nc

    async def wait_refused(self, text: str, timeout: float = 10.0) -> None:
        async def heard() -> None:
            while not any(text in refusal for refusal in self.refused):
                self._changed.clear()
                await self._changed.wait()

        try:
            await asyncio.wait_for(heard(), timeout)
        except asyncio.TimeoutError:
            raise AssertionError(f"no refusal naming {text!r}: {self.refused}") from None


@pytest.mark.asyncio
async def test_a_user_cannot_read_another_hosts_subjects(
    tmp_path: Path, secured: Secured, admin: None
) -> None:
    """host-a's forwarder user subscribes to each subject only host-b's forwarder may read
    (host-b's submits and direct requests, its inbox), and the bridge user to host-a's and
    host-b's: the server refuses every one and delivers nothing, though the administrator
    publishes on each."""
    own = set(NAMES.forwarder_permissions("host-a")["subscribe"])
    others = [s for s in NAMES.forwarder_permissions("host-b")["subscribe"] if s not in own]
    assert others  # the helpers give each host subjects of its own
    attempts = [("forward-a", subject) for subject in others]
    attempts += [("bridge", subject) for subject in others]
    attempts += [
        ("bridge", s)
        for s in NAMES.forwarder_permissions("host-a")["subscribe"]
        if s not in NAMES.bridge_permissions("bridge")["subscribe"]
    ]
    readers: list[Reader] = []
    admin_nc = await connect_nats(secured.options("admin"))
    try:
        received: list[str] = []

        async def record(msg: Msg) -> None:
            received.append(msg.subject)

        for user, subject in attempts:
            reader = Reader()
            readers.append(reader)
            nc = await reader.connect(secured, user)
            await nc.subscribe(subject, cb=record)
            await nc.flush(5)
            await reader.wait_refused(f'subscription to "{subject.lower()}"')
        for _user, subject in attempts:
            await admin_nc.publish(subject.replace("*", "1").replace(">", "x"), b"secret")
        await admin_nc.flush(5)
        for reader in readers:  # a round trip each: anything delivered has arrived by now
            assert reader.nc is not None
            with contextlib.suppress(nats.errors.Error):
                await reader.nc.flush(5)
        assert received == []
        assert len([v for v in secured.violations() if "Subscription Violation" in v]) >= len(
            attempts
        )
    finally:
        for reader in readers:
            if reader.nc is not None:
                await reader.nc.close()
        await admin_nc.close()
