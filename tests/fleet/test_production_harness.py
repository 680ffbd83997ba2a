"""The production-shape harness of ``pi_ask_sdk.testing``: a 3-node nats-server cluster
(``nats_server.NatsCluster``), TLS made at test time, nkey users and ``.creds`` users
(``nats_auth``). Real servers; every wait bounded."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import ssl
import stat
import subprocess
from pathlib import Path

import nats
import nats.errors
import pytest
from nats.js.api import StreamConfig

from pi_ask_sdk.fleet import FleetNames
from pi_ask_sdk.testing.errors import NatsServerError
from pi_ask_sdk.testing.nats_auth import (
    NkeyPair,
    Operator,
    authorization_config,
    make_tls,
    nkey_user,
    permissions_block,
)
from pi_ask_sdk.testing.nats_server import NatsCluster, nats_cluster, nats_server

NAMES = FleetNames()


@pytest.mark.asyncio
async def test_the_cluster_forms_and_its_streams_follow_their_leader(tmp_path: Path) -> None:
    """Three nodes routed to each other with one JetStream meta leader once ``start``
    returns; a 3-replica stream's leader is found by name, killed, and the leadership moves;
    the node started again rejoins; clients given every URL reach the cluster."""
    with nats_cluster(tmp_path / "c") as cluster:
        assert len(cluster.urls) == 3
        assert cluster.url == ",".join(cluster.urls)
        meta = await asyncio.to_thread(cluster.meta_leader)
        assert meta in (0, 1, 2)
        for i, node in enumerate(cluster.nodes):
            routes = node.monitor("routez")["routes"]
            assert isinstance(routes, list)
            assert {r["remote_name"] for r in routes} == {f"n{j}" for j in range(3) if j != i}
        nc = await nats.connect(servers=cluster.urls, name="probe")
        try:
            js = nc.jetstream()
            await js.add_stream(StreamConfig(name="S", subjects=["s.>"], num_replicas=3))
            await js.publish("s.1", b"kept")
            leader = await asyncio.to_thread(cluster.wait_stream_leader, "S", timeout=20)
            info = await js.stream_info("S")
            assert info.cluster is not None
            assert cluster.index_of(str(info.cluster.leader)) == leader
            assert await asyncio.to_thread(cluster.node_of, "probe") in (0, 1, 2)

            cluster.kill(leader)
            assert not cluster.nodes[leader].running
            moved = await asyncio.to_thread(
                cluster.wait_stream_leader, "S", other_than=leader, timeout=30
            )
            assert moved != leader
            await asyncio.to_thread(cluster.start_node, leader)
            assert cluster.nodes[leader].running
            assert (await js.get_last_msg("S", "s.1")).data == b"kept"
        finally:
            await nc.close()
    assert not any(node.running for node in cluster.nodes)


def test_the_cluster_stops_and_cleans_up_even_when_the_test_fails(tmp_path: Path) -> None:
    """Everything the harness started is stopped, a paused node too, and the nodes'
    directories are removed, when the body raises."""
    processes: list[subprocess.Popen[bytes] | None] = []

    def fail() -> None:
        with nats_cluster(tmp_path / "c") as cluster:
            cluster.pause(1)
            processes.extend(node.process for node in cluster.nodes)
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        fail()
    assert len(processes) == 3
    assert all(p is not None and p.poll() is not None for p in processes)
    assert list((tmp_path / "c").iterdir()) == []


def test_a_cluster_that_cannot_form_says_why_within_its_bound(tmp_path: Path) -> None:
    """A node that cannot start (its client port taken) makes ``start`` raise
    ``NatsServerError`` with the server's words, and the started nodes are stopped."""
    cluster = NatsCluster(tmp_path / "c", ready_timeout=5)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", cluster.nodes[2].port))
        taken.listen()
        with pytest.raises(NatsServerError) as caught, cluster:
            pass
    assert "address already in use" in str(caught.value)
    assert not any(node.running for node in cluster.nodes)


def _plain_hello(port: int) -> tuple[dict[str, object], bytes]:
    """The server's INFO, then what it answers a plain-text CONNECT and PING."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        reader = sock.makefile("rb")
        info = reader.readline()
        assert info.startswith(b"INFO ")
        sock.sendall(b'CONNECT {"verbose":false}\r\nPING\r\n')
        try:
            answer = reader.read(200)
        except (ConnectionResetError, TimeoutError):
            answer = b""
        return json.loads(info[5:]), answer


@pytest.mark.asyncio
async def test_tls_refuses_plain_connections_and_takes_its_ca(tmp_path: Path) -> None:
    """A server given ``tls`` requires it: a plain-text client gets no PONG; nats-py trusting
    the test CA connects by ``tls://``; trusting another CA it is refused."""
    tls = make_tls(tmp_path / "tls")
    assert stat.S_IMODE(os.stat(tls.key).st_mode) == 0o600
    with nats_server(tmp_path / "s", tls=tls) as server:
        assert server.url.startswith("tls://")
        info, answer = await asyncio.to_thread(_plain_hello, server.port)
        assert info.get("tls_required") is True
        assert b"PONG" not in answer
        nc = await nats.connect(server.url, tls=ssl.create_default_context(cafile=str(tls.ca)))
        assert nc.is_connected
        await nc.close()
        other = make_tls(tmp_path / "other")
        errors: list[Exception] = []
        refused = asyncio.Event()

        async def on_error(exc: Exception) -> None:
            errors.append(exc)
            refused.set()

        # (nats-py reports the refused certificate to its error callback and keeps trying)
        trying = asyncio.ensure_future(
            nats.connect(
                server.url,
                tls=ssl.create_default_context(cafile=str(other.ca)),
                error_cb=on_error,
                max_reconnect_attempts=1,
            )
        )
        try:
            await asyncio.wait_for(refused.wait(), 10)
        finally:
            trying.cancel()
            with contextlib.suppress(asyncio.CancelledError, nats.errors.Error):
                await trying
        assert any(isinstance(e, ssl.SSLCertVerificationError) for e in errors), errors


@pytest.mark.asyncio
async def test_nkey_users_connect_by_their_seed_and_keep_to_their_permissions(
    tmp_path: Path,
) -> None:
    """An nkey user's seed file is 0600 and what nats-py (its nkeys) signs with; the server
    takes it (so the entry's public key is the seed's), refuses a key it does not know, and
    holds the user to the permission helper's lists."""
    bridge = nkey_user(tmp_path / "keys", "bridge", NAMES.bridge_permissions("bridge"))
    stranger = nkey_user(tmp_path / "keys", "stranger")
    assert stat.S_IMODE(os.stat(bridge.seed_file).st_mode) == 0o600
    seed = bridge.seed_file.read_bytes().strip()
    assert seed.startswith(b"SU")
    assert bridge.public_key.startswith("U")
    assert seed.decode() not in repr(bridge) + str(bridge.entry)
    assert bridge.entry["permissions"] == permissions_block(NAMES.bridge_permissions("bridge"))
    with nats_server(tmp_path / "s", config=authorization_config([bridge.entry])) as server:
        refused: list[str] = []
        heard = asyncio.Event()

        async def on_error(exc: Exception) -> None:
            refused.append(str(exc).lower())
            if "permissions violation" in refused[-1]:
                heard.set()

        nc = await nats.connect(
            server.url,
            nkeys_seed=str(bridge.seed_file),
            inbox_prefix=NAMES.inbox("bridge"),
            error_cb=on_error,
        )
        await nc.publish("piask.h1.1.state", b"fake")  # a forwarder's subject
        # (nats-py calls the error callback from a task of its own, after the refusal)
        await asyncio.wait_for(heard.wait(), 10)
        await nc.close()
        with pytest.raises((nats.errors.Error, asyncio.TimeoutError, OSError)):
            await asyncio.wait_for(
                nats.connect(
                    server.url,
                    nkeys_seed=str(stranger.seed_file),
                    max_reconnect_attempts=1,
                    allow_reconnect=False,
                ),
                10,
            )


@pytest.mark.asyncio
async def test_creds_users_of_an_operator_use_jetstream(tmp_path: Path) -> None:
    """Decentralised auth: the operator's configuration runs JetStream for its account; a
    user's ``.creds`` (0600, no key in ``repr``) connects and creates a stream; a limited
    user is held to its permissions."""
    operator = Operator(tmp_path / "creds")
    admin = operator.user("admin")
    bridge = operator.user("bridge", NAMES.bridge_permissions("bridge"))
    assert stat.S_IMODE(os.stat(admin).st_mode) == 0o600
    pair = NkeyPair("user")
    assert pair.seed() not in repr(pair)
    assert pair.public_key in repr(pair)
    assert operator.account.seed() not in repr(operator)
    with nats_server(tmp_path / "s", config=operator.config()) as server:
        nc = await nats.connect(server.url, user_credentials=str(admin))
        await nc.jetstream().add_stream(StreamConfig(name="S", subjects=["s.>"]))
        await nc.close()
        refused: list[str] = []
        heard = asyncio.Event()

        async def on_error(exc: Exception) -> None:
            refused.append(str(exc).lower())
            if "permissions violation" in refused[-1]:
                heard.set()

        limited = await nats.connect(
            server.url,
            user_credentials=str(bridge),
            inbox_prefix=NAMES.inbox("bridge"),
            error_cb=on_error,
        )
        await limited.publish("piask.h1.1.state", b"fake")
        await asyncio.wait_for(heard.wait(), 10)
        await limited.close()
