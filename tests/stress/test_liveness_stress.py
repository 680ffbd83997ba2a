"""Stress on liveness: an answerer that reads a big backlog slowly (a slow link) answers no ping
for longer than the limit and is not dropped; one that reads nothing at all is, whatever the
backlog. Real Pi, real relay, bare clients on small socket buffers; every wait is bounded.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pi_ask_sdk import FlowId
from tests.integration.pi_process import TIMEOUT, PiEnv, PiProcess, running_pi
from tests.integration.test_headless import call, tool_end
from tests.integration.test_liveness import (
    DROPPED_WITHIN,
    GRACE_MS,
    LIMITS,
    NO_ANSWERER,
    PING_TIMEOUT_MS,
    SLACK,
)

from .test_relay_stress import MB, RawClient, big_form, raw_client

pytestmark = pytest.mark.pi

FORMS = 10
"""Big forms open when the client joins: about 10 MB of replays, far more than socket buffers."""
PONG_HELLO = {"type": "hello", "version": 1, "role": "answerer", "pong": 1}


@pytest.fixture
def backlog_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> Iterator[tuple[PiProcess, list[FlowId]]]:
    """A headless Pi with the liveness test's short limits and ``FORMS`` 1 MB forms open."""
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, extra_env=LIMITS
    ) as pi:
        opened = [pi.open_form(big_form(MB), tool_call_id=f"big-{n}") for n in range(FORMS)]
        yield pi, opened


def read_slowly_until_welcome(client: RawClient, deadline: float) -> list[dict[str, Any]]:
    """Read 32 KiB at a time with short pauses (about 3 MB/s at best) up to the welcome; each
    line is parsed once."""
    seen: list[dict[str, Any]] = []
    scanned = 0
    welcomed = False
    while not welcomed:
        assert time.monotonic() < deadline, f"{len(seen)} lines only"
        assert client.read_some(32 * 1024, TIMEOUT) > 0, "the slow reader was dropped"
        end = client.buffer.rfind(b"\n")
        if end >= scanned:
            new = [json.loads(line) for line in client.buffer[scanned:end].split(b"\n") if line]
            welcomed = any(m.get("type") == "welcome" for m in new)
            seen += new
            scanned = end + 1
        time.sleep(0.01)  # a slow link: not a synchronisation
    client.buffer = client.buffer[scanned:]
    return seen


def test_an_answerer_reading_a_big_backlog_slowly_is_not_dropped(
    backlog_pi: tuple[PiProcess, list[FlowId]],
) -> None:
    pi, opened = backlog_pi
    with raw_client(pi.socket_path, rcvbuf=4096) as slow:
        slow.send(PONG_HELLO)  # an answerer at once; its replays are still to be read
        started = time.monotonic()
        seen = read_slowly_until_welcome(slow, started + 20 * TIMEOUT)
        took = time.monotonic() - started
        assert took > 2 * PING_TIMEOUT_MS / 1000  # silent for longer than the limit
        replays = [m for m in seen if m.get("type") == "event"]
        assert [m["data"]["flowId"] for m in replays] == opened
        # What was queued behind the backlog: pings, and no goodbye.
        welcome = [m.get("type") for m in seen].index("welcome")
        assert {m["type"] for m in seen[welcome + 1 :] + slow.lines()} <= {"ping"}
        slow.send({"type": "pong"})
        assert pi.relay_clients()[0] == 1  # still an answerer
        slow.buffer = b""
        slow.read_until(lambda got: any(m.get("type") == "ping" for m in got))  # pinged on
    for flow_id in opened:
        assert pi.cancel_form(flow_id)


def test_an_answerer_that_reads_nothing_is_dropped_whatever_its_backlog(
    backlog_pi: tuple[PiProcess, list[FlowId]],
) -> None:
    pi, opened = backlog_pi
    with raw_client(pi.socket_path, rcvbuf=4096) as frozen:
        frozen.send(PONG_HELLO)  # then reads nothing: a stopped process with 10 MB waiting
        since = call(pi, "frozen-backlog")
        called = time.monotonic()
        bound = DROPPED_WITHIN + GRACE_MS / 1000 + SLACK
        record = tool_end(pi, "frozen-backlog", since, timeout=bound)
        assert time.monotonic() - called < bound
        assert record.get("isError") is True
        assert NO_ANSWERER in json.dumps(record["result"])
    for flow_id in opened:
        assert pi.cancel_form(flow_id)
