"""The forwarder's submit book: which submits it has sent (de-duplication) and whose result
is whose (routing a relay's submit-result to the bridge transport that sent the submit)."""

from __future__ import annotations

from collections import OrderedDict, deque
from typing import Final, Literal

SubmitKey = tuple[int, str, str, str]
"""(pid, bridge transport id, flow id, request id): one submit of one bridge."""

_IN_FLIGHT: Final = b""

Seen = Literal["new", "in_flight"] | bytes


class SubmitBook:
    """Bounded (``size`` most recent submits) memory of submits and their results.

    The default, 4,096 (about 2.3 MiB at most: some 580 bytes a submit with its result), keeps
    a forwarder's memory flat under steady load. It only has to catch what slips past the
    rest: JetStream stores a re-sent submit (same ``Nats-Msg-Id``) once within the stream's
    ``duplicate_window`` (120 s), a bridge re-sends only within its ``send_timeout`` (5 s), and
    a submit is acknowledged before the relay gets it, so JetStream does not deliver it
    again once sent. (65,536 kept some 37 MiB, grown form by form: bench/fleet.py.)"""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._done: OrderedDict[SubmitKey, bytes] = OrderedDict()
        self._routes: dict[tuple[int, str, str], deque[tuple[str, SubmitKey]]] = {}

    def seen(self, key: SubmitKey) -> Seen:
        """``"new"`` for a submit never sent, ``"in_flight"`` for one sent and not yet answered,
        else the body of the submit-result it got (to send again, unchanged)."""
        result = self._done.get(key)
        if result is None:
            return "new"
        return "in_flight" if result is _IN_FLIGHT else result

    def sent(self, key: SubmitKey) -> None:
        """``key`` was sent to the relay; its result will be routed to its transport."""
        self._done[key] = _IN_FLIGHT
        if len(self._done) > self._size:
            self._done.popitem(last=False)
        pid, transport_id, flow_id, request_id = key
        self._routes.setdefault((pid, request_id, flow_id), deque()).append((transport_id, key))

    def unsent(self, key: SubmitKey) -> None:
        """Sending ``key`` failed: forget it (a re-delivery may try again)."""
        self._done.pop(key, None)
        pid, _, flow_id, request_id = key
        queue = self._routes.get((pid, request_id, flow_id))
        if queue is not None:
            with_key = [entry for entry in queue if entry[1] != key]
            if with_key:
                self._routes[(pid, request_id, flow_id)] = deque(with_key)
            else:
                del self._routes[(pid, request_id, flow_id)]

    def answered(self, pid: int, request_id: str, flow_id: str, body: bytes) -> str | None:
        """The transport id whose submit this result answers (the oldest unanswered with these
        ids: the relay answers one connection's submits in order), or None if none of ours."""
        route = (pid, request_id, flow_id)
        queue = self._routes.get(route)
        if not queue:
            return None
        transport_id, key = queue.popleft()
        if not queue:
            del self._routes[route]
        if key in self._done:
            self._done[key] = body
        return transport_id

    def forget_pid(self, pid: int) -> None:
        """The Pi is gone: none of its outstanding submits will be answered."""
        for route in [route for route in self._routes if route[0] == pid]:
            del self._routes[route]

    def outstanding(self) -> int:
        """How many taken submits still wait for their submit-result."""
        return sum(len(queue) for queue in self._routes.values())
