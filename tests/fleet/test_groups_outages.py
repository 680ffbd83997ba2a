"""One replica's view of its group (``pi_ask_sdk.fleet.groups.Group``) through outages, as a
unit on a virtual clock: each test scripts when this replica hears each member's heartbeat (its
own among them) and checks who it counts gone, and when. A member counted gone while alive has
its open forms shown twice; one kept while dead has them shown to nobody.

The clock is an event loop's: it jumps to the next timer when nothing is ready, so a scenario
of tens of seconds runs at once, the same way every time."""

from __future__ import annotations

import asyncio
import selectors
from collections.abc import Callable, Coroutine, Iterable
from typing import Any

from pi_ask_sdk.fleet.groups import Group


class _Jumping(selectors.DefaultSelector):
    """A selector that never waits: a wait for I/O moves the loop's clock to the next timer."""

    def __init__(self) -> None:
        super().__init__()
        self.clock = 0.0

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        events = super().select(0)
        if not events:
            if timeout is None:
                raise RuntimeError("nothing ready and no timer: the scenario cannot end")
            self.clock += timeout
        return events


class VirtualLoop(asyncio.SelectorEventLoop):
    """An event loop on a virtual clock (``_Jumping``)."""

    def __init__(self) -> None:
        self._jumping = _Jumping()
        super().__init__(self._jumping)

    def time(self) -> float:
        return self._jumping.clock


class View:
    """A replica ``me`` of group "g", and every change of its view with its time."""

    def __init__(self, me: str) -> None:
        self.changes: list[tuple[float, tuple[str, ...]]] = []
        self.group = Group("g", me, self._changed)

    def _changed(self) -> None:
        self.changes.append((asyncio.get_running_loop().time(), self.group.members))

    def left(self, member: str) -> list[float]:
        """When ``member`` left the view (each time it was in it, then not)."""
        times: list[float] = []
        was = False
        for when, members in self.changes:
            if was and member not in members:
                times.append(when)
            was = member in members
        return times


def heard(view: View, member: str, interval: float, times: Iterable[float]) -> None:
    """``view``'s replica hears ``member``'s heartbeat (every ``interval`` s) at ``times``."""
    loop = asyncio.get_running_loop()
    for when in times:
        loop.call_at(when, view.group.heard, member, interval)


def run(scenario: Callable[[], Coroutine[Any, Any, None]]) -> None:
    loop = VirtualLoop()
    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()


def every(start: float, end: float, interval: float = 1.0) -> list[float]:
    return [start + n * interval for n in range(int((end - start) / interval) + 1)]


def test_a_member_silent_across_a_short_outage_has_a_whole_timeout_once_it_hears_itself() -> None:
    """The server is down from 2.5 s to 3.9 s (a restart): both replicas (heartbeat 1 s,
    presence timeout 3 s) lose the heartbeats sent meanwhile. "me" reconnects and hears itself
    at 4.0 s, two seconds late; "b" reconnects a little later (its beat at 4.1 s is sent before
    it is back), and its next one is heard at 5.15 s (each period is a sleep and a publish: a
    little over 1 s). "b" fell silent while "me" was deaf, so it has a whole timeout from 4.0 s
    to be heard (the docs' promise), and is never counted gone: counted gone at 5.1 s, its
    open forms would be shown here too."""

    async def scenario() -> None:
        view = View("me")
        try:
            heard(view, "me", 1.0, [0.0, 1.0, 2.0, *every(4.0, 12.0)])
            heard(view, "b", 1.0, [0.1, 1.1, 2.1, *every(5.15, 12.15)])
            await asyncio.sleep(13)  # (virtual time: the scenario's length)
            assert view.left("b") == []
            assert view.group.members == ("b", "me")
        finally:
            view.group.close()

    run(scenario)


def test_a_dead_member_is_gone_though_its_own_heartbeat_is_late_at_each_expiry() -> None:
    """ "me" is busy (a handler that blocks its event loop about 1.5 s at a time): it hears its
    own heartbeat (1 s) 1.4 s, then 1.65 s apart, in turns, and a member's expiry may run just
    before its late heartbeat is read. "d" died at 0 s. "me" is deaf at d's expiry (3.0 s), so
    "d" has a whole timeout from when "me" next hears itself (3.05 s); when that has run out
    "d" is gone, however late "me"'s own heartbeat is then. Kept, its forms are shown by
    nobody while "me" stays busy; "b" (alive, heard every second) stays."""

    async def scenario() -> None:
        view = View("me")
        try:
            mine = sorted(every(0.0, 30.0, 3.05) + every(1.4, 30.0, 3.05))
            heard(view, "me", 1.0, mine)
            heard(view, "b", 1.0, every(0.2, 30.0))
            heard(view, "d", 1.0, [0.0])
            await asyncio.sleep(31)  # (virtual time: the scenario's length)
            (gone,) = view.left("d")
            assert 6.0 <= gone <= 6.1  # a whole timeout (3 s) from 3.05 s
            assert view.left("b") == []
        finally:
            view.group.close()

    run(scenario)


def test_after_a_long_outage_a_member_that_never_comes_back_is_gone_the_others_stay() -> None:
    """Three replicas (heartbeat 1 s); the server is down from 2.5 s to 6.0 s, past every
    presence timeout. "me" hears itself again at 6.2 s, "b" is back at 6.4 s, "c" died during
    the outage. Neither "b" nor "c" is counted gone while "me" is deaf; "c" is gone a whole
    timeout after "me" hears itself (9.2 s: its open forms are shown then), "b" never."""

    async def scenario() -> None:
        view = View("me")
        try:
            heard(view, "me", 1.0, [0.0, 1.0, 2.0, *every(6.2, 15.2)])
            heard(view, "b", 1.0, [0.1, 1.1, 2.1, *every(6.4, 15.4)])
            heard(view, "c", 1.0, [0.2, 1.2, 2.2])
            await asyncio.sleep(16)  # (virtual time: the scenario's length)
            assert view.left("b") == []
            (gone,) = view.left("c")
            assert abs(gone - 9.2) < 0.01
            assert view.group.members == ("b", "me")
        finally:
            view.group.close()

    run(scenario)


def test_a_dead_member_that_beats_more_often_is_gone_three_of_its_intervals_after() -> None:
    """Members may beat at different intervals: "m" (0.2 s) dies after 5.05 s while "me"
    (1 s) hears itself every second. "m" is gone three of its own intervals after its last
    heartbeat (5.65 s: the docs' promise for a killed replica), not once "me"'s own
    heartbeat would be late, and stays gone."""

    async def scenario() -> None:
        view = View("me")
        try:
            heard(view, "me", 1.0, every(0.0, 15.0))
            heard(view, "m", 0.2, every(0.05, 5.05, 0.2))
            await asyncio.sleep(16)  # (virtual time: the scenario's length)
            (gone,) = view.left("m")
            assert abs(gone - 5.65) < 0.01
            assert view.group.members == ("me",)
        finally:
            view.group.close()

    run(scenario)
