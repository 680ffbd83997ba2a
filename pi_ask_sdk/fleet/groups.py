"""Replica groups: several replicas of one bridge share the forms (``Fleet(..., group=...)``).

Each form goes to exactly one live replica of its group, chosen by rendezvous
(highest-random-weight) hashing of the form's flow subject over the group's live members:
every replica computes the same owner from the same members, with no coordination and no
store. A replica's view of its group is a ``Liveness`` table of the members' presence
heartbeats (the heartbeats every answering bridge already sends, now naming its group): a
member is gone ``PRESENCE_FACTOR`` of its heartbeat intervals after its last heartbeat, or at
once when it says goodbye.

Why hashing and not a JetStream work queue: the forms are already in FLOWS, one subject each,
and each replica already reads its Pis' forms (snapshot then tail) and its peers' heartbeats;
hashing adds no stream, no message and no round trip per form, so a group's throughput scales
with its replicas. What it gives up is a single arbiter: two replicas may briefly disagree on a
form's owner (one froze and resumed, one just joined). That can only make a form shown to two
replicas, never to none, and never answered twice: the host's one forwarder applies a request
at most once, and Pi refuses a second submit to an answered form (``flow_not_found``).

The rules (``NatsTransport`` applies them to its Pi's forms):

- a form is shown (its ``started``) by the replica that owns it, when it starts or when the
  replica's snapshot is read;
- a form a replica does not own is kept (its ``started``) while it is open; when the members
  change (one left or expired, one joined) the replica shows each kept form it now owns, as a
  replay;
- a form once shown stays shown until it ends (a replica never takes a form back from its
  handler): a member that joins takes over only forms not yet shown, as far as it knows, so a
  form open while a member joins may be shown to its old owner and to the newcomer; whichever
  answers first wins, the other's submit is refused.

Rendezvous hashing is stable: a member that leaves moves only its own forms (each to the
member that ranked second for it), one that joins takes only forms that now rank it first.
Groups apply to answerers only: an observer sees every form (``Fleet`` refuses a group with
``role="observer"``).
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import Callable, Iterable
from typing import Final

from pi_ask_sdk.errors import InvalidArgument

from .liveness import Liveness

__all__ = ["PRESENCE_FACTOR", "Group", "owner"]

PRESENCE_FACTOR: Final = 3.0
"""A bridge counts as gone this many of its heartbeat intervals after its last heartbeat."""


def _weight(member: str, key: str) -> bytes:
    return hashlib.blake2b(f"{member}\0{key}".encode(), digest_size=8).digest()


def owner(key: str, members: Iterable[str]) -> str:
    """The member that owns ``key`` (a form's flow subject): the one of highest weight
    (rendezvous hashing), ties broken by the member id. ``members`` must not be empty.

    Raises:
        InvalidArgument: ``members`` is empty (also a ``ValueError``).
    """
    best = max(members, key=lambda member: (_weight(member, key), member), default=None)
    if best is None:
        raise InvalidArgument("owner", "members", "at least one member", [])
    return best


class Group:
    """One replica's view of its group: itself (always a member) and the members heard from
    within their presence timeout. ``on_change()`` is called whenever the view changes.

    A replica also hears its own heartbeat (through the server). While it has not heard itself
    within one and a half of its heartbeat intervals (it was stopped, or its connection or the
    server is down) it counts nobody gone: the silence may be its own, not theirs. Once it
    hears itself again, each member (silent meanwhile or not) has a whole presence timeout
    from then to be heard (its heartbeats sent meanwhile may be lost, not late: a restarted
    server kept none), and is counted gone when that runs out unheard, however late this
    replica's own heartbeat is then. So a replica resumed after a freeze, or reconnected after
    a server restart, does not take every open form for a moment, and a busy one (its own
    heartbeat often late) still counts a dead member gone.

    A member's heartbeat names the hosts it answers for (``Fleet(hosts=[...])``): a form is
    owned among the members that answer for its host (``owns(key, host)``), as only they
    serve that host's Pis."""

    def __init__(self, name: str, me: str, on_change: Callable[[], None]) -> None:
        self.name = name
        self.me = me
        self._on_change = on_change
        self._members = Liveness(self._changed)  # itself among them
        self._unsure: set[str] = set()  # silent while this replica was not hearing itself
        # Given a whole presence timeout when this replica heard itself again after its own
        # heartbeat was late: gone when that runs out unheard, late or not (given once, so a
        # replica often late, a busy event loop, does not keep a dead member for ever).
        self._granted: set[str] = set()
        self._timeouts: dict[str, float] = {}  # each member's presence timeout
        self._hosts: dict[str, frozenset[str] | None] = {}  # the hosts it answers for (None: all)
        self._heard_self: float | None = None  # when it last heard itself (the loop's clock)
        self._interval = 0.0  # its own heartbeat interval
        self._view: tuple[str, ...] = (me,)

    def heard(self, member: str, interval: float, hosts: Iterable[str] | None = None) -> None:
        """A heartbeat of ``member`` (every ``interval`` seconds; answering for ``hosts``, None:
        every host), or this replica's own."""
        timeout = self._timeouts[member] = max(0.05, interval) * PRESENCE_FACTOR
        self._hosts[member] = None if hosts is None else frozenset(hosts)
        if member == self.me:
            # Its own heartbeat late: every member's sent meanwhile may be lost, not only those
            # whose timeout ran out (one about to would be counted gone in a moment).
            late = self._heard_self is not None and self._deaf()
            silent = self._members.keys if late else []
            self._heard_self = asyncio.get_running_loop().time()
            self._interval = max(0.05, interval)
            for other in {*self._unsure, *silent} - {self.me} - self._granted:
                self._granted.add(other)  # a whole presence timeout from now to be heard
                self._members.heard(other, self._timeouts.get(other, timeout))
        else:
            self._granted.discard(member)
        self._members.heard(member, timeout)

    def bye(self, member: str) -> None:
        """``member`` left."""
        self._unsure.discard(member)
        self._granted.discard(member)
        self._timeouts.pop(member, None)
        self._hosts.pop(member, None)
        if not self._members.forget(member):
            self._update()

    @property
    def members(self) -> tuple[str, ...]:
        """The live members, this replica among them, sorted."""
        return self._view

    def owns(self, key: str, host: str | None = None) -> bool:
        """Whether this replica owns ``key`` (a form's flow subject) now: among the members
        that answer for ``host`` (its host; None: among all), and itself."""
        members = self._view
        if host is not None:  # a member that does not answer for the host never serves it
            members = tuple(m for m in members if m == self.me or self._answers_for(m, host))
        return len(members) == 1 or owner(key, members) == self.me

    def _answers_for(self, member: str, host: str) -> bool:
        hosts = self._hosts.get(member)
        return hosts is None or host in hosts

    def close(self) -> None:
        """Stop every expiry; ``on_change`` is not called any more."""
        self._members.close()

    def _changed(self, member: str, alive: bool) -> None:
        if member != self.me:
            if alive:
                self._unsure.discard(member)
            elif self._deaf() and member not in self._granted:
                self._unsure.add(member)
            else:  # gone
                self._granted.discard(member)
        self._update()

    def _deaf(self) -> bool:
        """Whether its own heartbeat is late (not heard within one and a half intervals): a
        member that expires now may be unheard, not silent. (An outage silences both at once,
        an interval apart at most: as a member expires, three intervals after its last
        heartbeat, this replica's own is then late by two.)"""
        heard = self._heard_self
        return heard is None or asyncio.get_running_loop().time() - heard > 1.5 * self._interval

    def _update(self) -> None:
        others = {m for m in self._members.keys if m != self.me} | self._unsure
        view = tuple(sorted({self.me, *others}))
        if view != self._view:
            self._view = view
            self._on_change()
