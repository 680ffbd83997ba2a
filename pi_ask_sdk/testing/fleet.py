"""``FakeFleet``: test a fleet bridge's handler without a NATS server.

A fleet bridge runs ``serve(handler, fleet)`` (``pi_ask_sdk.serving``), which calls
``handler(client, pi)`` for every Pi of every host. ``FakeFleet`` is a source ``serve`` takes
in the fleet's place: each of its Pis is a ``FakeHost`` (a real ``FlowHost``, so every rule is
the core's), reported as the ``FleetPi`` a real fleet would hand the handler::

    fleet = FakeFleet()
    pi = fleet.add_pi("build-1", 4242)                  # a FakeHost
    stop = asyncio.Event()
    serving = asyncio.create_task(serve(handler, fleet, stop=stop))
    handle = pi.open(yes_no_params("deploy"), tool_call_id="c1")
    result = await fleet.completed("build-1", 4242, handle, timeout=5)
    stop.set()
    await serving

Forms opened before the handler's client connects are replayed to it, as a real forwarder
does; ``remove_pi`` is the Pi exiting (its session ends, its client is disconnected), and
``add_pi`` again with the same host and pid is the Pi found again (served again). Needs the
``nats`` extra (``FleetPi`` is the fleet's), but no server.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from pi_ask_core import COMPLETED, AskResult, FlowHandle
from pi_ask_sdk.errors import InvalidArgument
from pi_ask_sdk.fleet import FleetPi
from pi_ask_sdk.transports.base import Transport

from ._fake_host import AckOrder, FakeHost

__all__ = ["FakeFleet"]


class FakeFleet:
    """A fleet of ``FakeHost``s, one per Pi (``host``, ``pid``), that ``serve`` takes as its
    source (``follow``, ``pi_key``, ``pi_transport``, as ``Fleet``).

    Args:
        order: The ``FakeHost`` order of every Pi added (``"completed_first"`` or
            ``"ack_first"``; bridges must work with both).
        poll: How often ``follow`` looks at the Pis again when nothing changed (a Pi whose
            client ended is served again at the next look, as with a real fleet).
    """

    def __init__(self, *, order: AckOrder = "completed_first", poll: float = 0.1) -> None:
        self._order: AckOrder = order
        self._poll = poll
        self._pis: dict[tuple[str, int], tuple[FleetPi, FakeHost]] = {}
        self._changed = asyncio.Event()

    # --- the fleet's Pis ---

    def add_pi(
        self, host: str, pid: int, *, cwd: str = "/work", pi_version: str = "fake"
    ) -> FakeHost:
        """A Pi comes up on ``host``: its ``FakeHost``, to open forms on.

        Raises:
            InvalidArgument: A Pi ``pid`` is up on ``host`` already.
        """
        key = (host, pid)
        if key in self._pis:
            raise InvalidArgument("FakeFleet.add_pi", "pid", "a Pi not up yet", pid)
        fake = FakeHost(order=self._order)
        pi = FleetPi(host, pid, cwd, pi_version, session_id=f"fake-{host}-{pid}")
        self._pis[key] = (pi, fake)
        self._changed.set()
        return fake

    def pi(self, host: str, pid: int) -> FakeHost:
        """The ``FakeHost`` of Pi ``pid`` on ``host``.

        Raises:
            InvalidArgument: No such Pi is up.
        """
        entry = self._pis.get((host, pid))
        if entry is None:
            raise InvalidArgument("FakeFleet.pi", "pid", f"a Pi up on {host!r}", pid)
        return entry[1]

    def remove_pi(self, host: str, pid: int) -> None:
        """The Pi exits: its session ends and its client is disconnected (its handler's
        ``flows()`` ends).

        Raises:
            InvalidArgument: No such Pi is up.
        """
        fake = self.pi(host, pid)
        del self._pis[(host, pid)]
        fake.end_session()
        fake.disconnect()
        self._changed.set()

    @property
    def pis(self) -> list[FleetPi]:
        """The Pis up now, as the handler is given them."""
        return [pi for pi, _ in self._pis.values()]

    async def completed(
        self, host: str, pid: int, flow: FlowHandle, *, timeout: float
    ) -> AskResult:
        """Wait until ``flow`` (opened on Pi ``pid`` of ``host``) completed; its result.

        Raises:
            TimeoutError: It did not complete within ``timeout`` seconds.
            InvalidArgument: No such Pi is up.
        """
        fake = self.pi(host, pid)
        done = asyncio.Event()

        def on_completed(_: object) -> None:
            if not flow.is_open:
                done.set()

        unsubscribe = fake.bus.on(COMPLETED, on_completed)
        try:
            if flow.is_open:
                try:
                    await asyncio.wait_for(done.wait(), timeout)
                except asyncio.TimeoutError:
                    raise TimeoutError(
                        f"form {flow.flow_id} on Pi {pid} of {host!r} did not complete "
                        f"within {timeout} s"
                    ) from None
        finally:
            unsubscribe()
        result = flow.result
        if result is None:  # closed without completed: disposed, or the session ended
            raise TimeoutError(f"form {flow.flow_id} went away without completing")
        return result

    # --- the source serve() follows ---

    async def follow(self, found: Callable[[FleetPi], bool], stop: asyncio.Event) -> None:
        """Every Pi up, now and at each change or look, until ``stop`` is set."""
        while not stop.is_set():
            self._changed.clear()
            for pi, _ in list(self._pis.values()):
                found(pi)
            waits = [
                asyncio.ensure_future(self._changed.wait()),
                asyncio.ensure_future(stop.wait()),
            ]
            try:
                await asyncio.wait(waits, timeout=self._poll, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for wait in waits:
                    wait.cancel()

    def pi_key(self, pi: FleetPi) -> tuple[str, int]:
        """The Pi's host and pid."""
        return (pi.host, pi.pid)

    def pi_transport(self, pi: FleetPi) -> Transport:
        """A new transport to the Pi's ``FakeHost``.

        Raises:
            InvalidArgument: The Pi is not up.
        """
        return self.pi(pi.host, pi.pid).transport()
