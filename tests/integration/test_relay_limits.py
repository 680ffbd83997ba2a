"""The relay's millisecond variables (Pi's environment) with odd values: each is a whole number
of milliseconds in its documented range, whatever is given (docs/relay.md, *Variables*).

A fraction is rounded up (the hello carries integers: a bridge cannot read ``"pingMs": 250.5``), a
value beyond what a Node timer holds is the longest a timer takes (a longer one would fire at
once: pings every millisecond, a grace period of none), and a value that is no number is the
default, said once on Pi's stderr, naming the variable.
"""

from __future__ import annotations

import time
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

from pi_ask_sdk.transports.relay import RelayTransport, relay_extension_path
from tests.integration.pi_process import TIMEOUT, PiEnv, PiProcess, running_pi
from tests.integration.test_headless import call, tool_end
from tests.integration.test_liveness import Raw, answerer

pytestmark = pytest.mark.pi

LONGEST = 2**31 - 1
"""The longest delay a Node timer takes (about 24.8 days)."""


def started(
    env: PiEnv, shared_tmp: Path, tmp_path: Path, limits: dict[str, str]
) -> AbstractContextManager[PiProcess]:
    return running_pi(env, tmp_path / "pi", shared_tmp=shared_tmp, extra_env=limits)


@pytest.mark.asyncio
async def test_a_fraction_is_rounded_and_a_bridge_connects(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    limits = {"PI_ASK_RELAY_PING_MS": "250.5", "PI_ASK_RELAY_PING_TIMEOUT_MS": "1000.25"}
    with started(pi_installation, shared_tmp, tmp_path, limits) as pi:
        async with pi.client(hello_timeout=TIMEOUT) as client:  # its hello decodes
            assert isinstance(client.transport, RelayTransport)
            assert client.transport.hello is not None
            assert client.transport.hello.ping_ms == 251
        raw = Raw(pi.socket_path, None)
        try:
            assert (raw.hello["pingMs"], raw.hello["pingTimeoutMs"]) == (251, 1001)
        finally:
            raw.close()


def test_huge_values_are_the_longest_a_timer_takes(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    huge = "1e12"
    limits = {
        name: huge
        for name in (
            "PI_ASK_RELAY_PING_MS",
            "PI_ASK_RELAY_PING_TIMEOUT_MS",
            "PI_ASK_RELAY_GRACE_MS",
            "PI_ASK_RELAY_STALL_MS",
        )
    }
    with started(pi_installation, shared_tmp, tmp_path, limits) as pi:
        first = Raw(pi.socket_path, answerer(1))
        try:
            assert first.hello["pingMs"] == LONGEST
            assert first.hello["pingTimeoutMs"] == 2 * LONGEST
            since = call(pi, "patient")
            seen = first.read()
            assert seen["data"]["flowId"] == "tool:patient"
            # no ping comes (a timer of 1e12 ms fires every millisecond) ...
            first.sock.settimeout(0.5)
            with pytest.raises(TimeoutError):
                first.read()
        finally:
            first.close()
        # ... and the form waits for the next answerer (a grace of 1e12 ms is not none)
        time.sleep(0.5)
        assert "tool:patient" in pi.open_flow_ids()
        second = Raw(pi.socket_path, answerer(1))
        try:
            assert second.replays == ["tool:patient"]
        finally:
            second.close()
        assert pi.cancel_form("tool:patient")
        assert tool_end(pi, "patient", since).get("isError") is False
    assert not [line for line in pi.stderr_lines if "TimeoutOverflowWarning" in line]


@pytest.mark.parametrize("value", ["abc", "-5", "5s"])
def test_a_value_that_is_no_number_of_milliseconds_is_the_default_and_said_so(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path, value: str
) -> None:
    limits = {"PI_ASK_RELAY_PING_MS": value, "PI_ASK_RELAY_GRACE_MS": value}
    with started(pi_installation, shared_tmp, tmp_path, limits) as pi:
        raw = Raw(pi.socket_path, None)
        try:
            assert raw.hello["pingMs"] == 5000
        finally:
            raw.close()
    said = [line for line in pi.stderr_lines if "[pi-ask-relay]" in line]
    for name, default in (("PI_ASK_RELAY_PING_MS", 5000), ("PI_ASK_RELAY_GRACE_MS", 5000)):
        expected = f"[pi-ask-relay] {name}={value!r}".replace("'", '"')
        mentions = [line for line in said if line.startswith(expected)]
        assert len(mentions) == 1, said
        assert f"using the default, {default}" in mentions[0]


TIMER_CENSUS = Path(__file__).parent / "extensions" / "timer-census.ts"


def test_the_relays_timers_end_with_its_session(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    with running_pi(
        pi_installation,
        tmp_path / "pi",
        shared_tmp=shared_tmp,
        relay=False,  # loaded here, after the census
        extra_args=["-e", str(TIMER_CENSUS), "-e", str(relay_extension_path())],
        extra_env={"PI_ASK_RELAY_PING_MS": "50"},
    ) as pi:
        pi.wait_socket()
        for _ in range(3):
            raw = Raw(pi.socket_path, answerer(1))
            try:
                assert raw.read() == {"type": "ping"}  # (its interval runs)
            finally:
                raw.close()
            pi.new_session()
            pi.wait_socket()
    census = [
        (said.split()[1], int(said.rsplit("=", 1)[1]))
        for said in pi.stderr_lines
        if said.startswith("[timer-census]")
    ]
    # each session runs the one ping timer, and none is left of the sessions before (Pi 0.74
    # keeps an earlier session's handlers: the census may run after the relay listened)
    listening = [n for when, n in census if when == "listening"]
    assert len(listening) >= 4, census
    assert set(listening) == {1}, census
    assert all(n <= 1 for _, n in census), census
