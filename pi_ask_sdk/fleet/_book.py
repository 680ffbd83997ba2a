"""The forwarder's submit book: which submits it has sent (de-duplication) and whose result
is whose (routing a relay's submit-result to the bridge transport that sent the submit, and
to the reply subjects of its direct requests)."""

from __future__ import annotations

from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Literal

SubmitKey = tuple[int, str, str, str, str]
"""(pid, bridge transport id, flow id, request id, submit id): one submit of one bridge (its
re-sends carry the same submit id; a submit sent again under the same request id after its
verdict, another)."""

Seen = Literal["new", "in_flight"] | bytes


@dataclass(slots=True)
class Route:
    """Where a submit's result goes: the reply subjects of the direct requests that wait for
    it, and (``store``) its transport's subject in RESULTS, for a submit that came through
    SUBMITS."""

    transport_id: str
    submit_id: str
    replies: list[str] = field(default_factory=list)
    store: bool = True
    unsure: bool = False
    """A re-sent copy this forwarder gave to Pi without knowing its first one: a
    ``flow_not_found`` for it may be the first one's doing (still on its way to Pi then), so
    it is not passed on."""


class SubmitBook:
    """Bounded (``size`` most recent submits) memory of submits and their results.

    The default, 4,096 (about 2.3 MiB at most: some 580 bytes a submit with its result), keeps
    a forwarder's memory flat under steady load. It only has to catch what slips past the
    rest: JetStream stores a re-sent submit (same ``Nats-Msg-Id``) once within the stream's
    ``duplicate_window`` (120 s), a bridge re-sends only within its ``send_timeout`` (5 s; a
    direct submit's re-sent copy comes 2 s after it), and a stored submit is acknowledged
    before the relay gets it, so JetStream does not deliver it again once sent. (65,536 kept
    some 37 MiB, grown form by form: bench/fleet.py.)"""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._done: OrderedDict[SubmitKey, Route | bytes] = OrderedDict()
        self._routes: dict[tuple[int, str, str], deque[SubmitKey]] = {}

    def seen(self, key: SubmitKey) -> Seen:
        """``"new"`` for a submit never sent, ``"in_flight"`` for one sent and not yet answered,
        else the body of the submit-result it got (to send again, unchanged)."""
        entry = self._done.get(key)
        if entry is None:
            return "new"
        return "in_flight" if isinstance(entry, Route) else entry

    def sent(
        self, key: SubmitKey, submit_id: str = "", reply: str | None = None, *, unsure: bool = False
    ) -> None:
        """``key`` was sent to the relay; its result will be routed to its transport (and to
        ``reply``, a direct request's reply subject). ``unsure``: a re-sent copy whose first
        one this book never saw (``Route.unsure``)."""
        pid, transport_id, flow_id, request_id, _ = key
        route = Route(transport_id, submit_id, unsure=unsure)
        if reply:
            route.replies.append(reply)
            route.store = False  # answered on its reply subject alone
        self._done[key] = route
        if len(self._done) > self._size:
            self._done.popitem(last=False)
        self._routes.setdefault((pid, request_id, flow_id), deque()).append(key)

    def wait(self, key: SubmitKey, reply: str | None) -> None:
        """``key``, in flight, came again: its result goes to ``reply`` too (a direct
        request's), or, for a copy from SUBMITS (``None``), to RESULTS as well."""
        entry = self._done.get(key)
        if isinstance(entry, Route):
            if reply:
                entry.replies.append(reply)
            else:
                entry.store = True

    def unsent(self, key: SubmitKey) -> None:
        """Sending ``key`` failed: forget it (a re-delivery may try again)."""
        self._done.pop(key, None)
        pid, _, flow_id, request_id, _ = key
        queue = self._routes.get((pid, request_id, flow_id))
        if queue is not None:
            rest = [entry for entry in queue if entry != key]
            if rest:
                self._routes[(pid, request_id, flow_id)] = deque(rest)
            else:
                del self._routes[(pid, request_id, flow_id)]

    def answered(
        self, pid: int, request_id: str, flow_id: str, body: bytes, *, not_found: bool = False
    ) -> Route | None:
        """Where this result goes: the oldest unanswered submit with these ids (the relay
        answers one connection's submits in order), or None if none of ours, or if it is a
        ``flow_not_found`` (``not_found``) for an unsure copy: then nobody is told, and the
        submit stays unanswered (a copy of it coming again is not answered either)."""
        route_key = (pid, request_id, flow_id)
        queue = self._routes.get(route_key)
        if not queue:
            return None
        key = queue.popleft()
        if not queue:
            del self._routes[route_key]
        entry = self._done.get(key)
        if isinstance(entry, Route):
            if entry.unsure and not_found:
                return None
            self._done[key] = body
            return entry
        # Fell out of the bounded book while in flight: its transport is in the key.
        return Route(key[1], "")

    def forget_pid(self, pid: int) -> None:
        """The Pi is gone, or its relay connection was: none of its outstanding submits will
        be answered (copies of them that come again are not given to Pi, nor answered)."""
        for route in [route for route in self._routes if route[0] == pid]:
            del self._routes[route]

    def outstanding(self) -> int:
        """How many taken submits still wait for their submit-result."""
        return sum(len(queue) for queue in self._routes.values())
