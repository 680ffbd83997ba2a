"""The fleet's delivery rules, in one place: one road per submit, applied at most once.

A bridge's submit is a core NATS request on ``<p>.<host>.<pid>.submit`` to the host's one
forwarder (its lease: ``protocol``); nothing stores it. The forwarder's link to that Pi keeps a
``Ledger`` of the submits it gave to Pi, keyed by flow id, request id and the submit's bytes, so
that the same submit sent again (a retry) is never given to Pi twice; the reply to each request
is the host's submit-result, or a ``not_sent`` status when the forwarder surely did not give it
to Pi.

The bridge side (``NatsTransport.send``), for one submit:

====================================  ==================================  ====================
the bridge sees                       it means                            ``respond`` returns
====================================  ==================================  ====================
no forwarder of the host alive        nothing sent (it waited up to       ``SubmitNotSent``
within ``send_timeout``               ``send_timeout`` for one)           (safe to retry)
the server: no responders (503)       nobody received it: sent again      (as its next reply)
and the host's forwarder heartbeats   (a forwarder that has just taken
again within ``send_timeout``         the host beats before it takes
                                      submits)
the server: no responders (503), no   nothing sent (the forwarder has     ``SubmitNotSent``
heartbeat (but a goodbye) within      gone)
``send_timeout``
a ``not_sent`` reply                  the forwarder did not give it to    ``SubmitNotSent``
                                      Pi (no such Pi followed, its
                                      relay refused, not a submit)
a submit-result                       Pi's verdict (or the ledger's       ``SubmitAccepted`` /
                                      record of it, for a retry)          ``SubmitRejected``
no reply within ``send_timeout``      unknown: it may have been applied   ``SubmitTimedOut``
                                      (a late reply is still delivered)   once the respond's own
                                                                          timeout has passed
                                                                          after that (at most
                                                                          ``send_timeout`` + it
                                                                          in all); a retry with
                                                                          the same request id is
                                                                          safe
the Pi's session ends, or the Pi or   its pending submits end             ``SubmitLost``
its forwarder goes (``disconnected``)
====================================  ==================================  ====================

The forwarder side (``Ledger``), for one request, by the state of its key (flow id, request id,
submit bytes):

===============  ==========================================  ==============================
state of the key  the forwarder                               then
===============  ==========================================  ==============================
(none)           gives the submit to Pi, keeps the request's   ``in_flight``
                 reply subject
``in_flight``    keeps this request's reply subject too: it    ``in_flight``
                 waits for the first's verdict
``in_flight``,   Pi's verdict comes: answers every kept reply  ``answered`` (the verdict kept)
verdict comes    subject with it (and publishes it for
                 watchers)
``answered``     answers from the ledger (the same verdict,    ``answered``
                 unchanged); Pi is not asked again
``in_flight``,   the relay cannot take it (its connection      (none): answers ``not_sent``
send fails       closed): nothing was given to Pi
``in_flight``,   the Pi's relay connection ends (the verdict   (none): nobody is answered;
connection ends  will never come): its bridges get            the bridges' transports end
                 ``SubmitLost`` with the new epoch
===============  ==========================================  ==============================

A corrected answer sent again under the same request id after a verdict is another submit (its
bytes differ): it is given to Pi, as a relay would. The ledger keeps the ``size`` most recent
answered submits (a retry comes within a bridge's respond timeout, seconds later), and nothing of
a Pi after the Pi is gone. A forwarder that is killed takes its ledger with it: a submit in
flight then gets no reply (``SubmitTimedOut``); its retry, to the next forwarder, is given to Pi,
which refuses it (``flow_not_found``) if the first one reached it, so nothing is applied twice.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict, deque
from dataclasses import dataclass, field
from typing import Final, Literal

import msgspec

from pi_ask_core import SUBMIT, Skipped, SubmitEvent, decode_event
from pi_ask_sdk.transports.relay import replace_lone_surrogates

__all__ = ["NOT_SENT", "Ledger", "SubmitKey", "decode_submit", "encode_submit"]

NOT_SENT: Final = "not_sent"
"""The ``Header.STATUS`` of a reply that says the forwarder did not give the submit to Pi."""

_ENCODER: Final = msgspec.json.Encoder()

SubmitKey = tuple[str, str, bytes]
"""(flow id, request id, digest of the submit's bytes): one submit, whatever its retries."""


def encode_submit(payload: SubmitEvent) -> bytes:
    """A submit's JSON; a lone surrogate is written as a ``\\udXXX`` escape (the host judges it),
    as the relay transport does. The same submit always has the same bytes (its retries too)."""
    try:
        return _ENCODER.encode(payload)
    except UnicodeEncodeError:
        return json.dumps(
            msgspec.to_builtins(payload), ensure_ascii=True, separators=(",", ":")
        ).encode()


def decode_submit(body: bytes) -> SubmitEvent | Skipped:
    """A request's submit, or why it is none. A lone surrogate escape (a bridge's text, written
    as JavaScript would) becomes U+FFFD, the one decode rule for such text, as for relay input."""
    event = decode_event(SUBMIT, body)
    if not isinstance(event, SubmitEvent) and b"\\u" in body:
        event = decode_event(SUBMIT, replace_lone_surrogates(body))
    return event


def submit_key(event: SubmitEvent, body: bytes) -> SubmitKey:
    """The ledger's key of ``event`` (sent as ``body``)."""
    return (event.flow_id, event.request_id, hashlib.sha256(body).digest()[:16])


@dataclass(slots=True)
class _InFlight:
    replies: list[str] = field(default_factory=list)


Seen = Literal["new"] | _InFlight | bytes


class Ledger:
    """One Pi's submits, as its link gave them to Pi: in flight (the reply subjects waiting for
    the verdict) or answered (the verdict, to answer a retry with). The module's docstring
    draws its transitions."""

    def __init__(self, size: int = 4096) -> None:
        self._size = size
        self._in_flight: dict[SubmitKey, _InFlight] = {}
        self._answered: OrderedDict[SubmitKey, bytes] = OrderedDict()
        # The relay answers one connection's submits in order: the oldest in flight with these
        # ids is the one a verdict answers.
        self._order: dict[tuple[str, str], deque[SubmitKey]] = {}

    def take(self, key: SubmitKey, reply: str) -> Seen:
        """A request for ``key``, to answer on ``reply``: ``"new"`` (now in flight: give it to
        Pi), the in-flight entry it now waits with, or the verdict to answer it with."""
        answered = self._answered.get(key)
        if answered is not None:
            return answered
        waiting = self._in_flight.get(key)
        if waiting is not None:
            waiting.replies.append(reply)
            return waiting
        self._in_flight[key] = _InFlight([reply])
        self._order.setdefault(key[:2], deque()).append(key)
        return "new"

    def unsent(self, key: SubmitKey) -> list[str]:
        """Giving ``key`` to Pi failed: forgotten; returns the reply subjects to tell so."""
        waiting = self._in_flight.pop(key, None)
        order = self._order.get(key[:2])
        if order is not None:
            with_key = [k for k in order if k != key]
            if with_key:
                self._order[key[:2]] = deque(with_key)
            else:
                del self._order[key[:2]]
        return [] if waiting is None else waiting.replies

    def answered(self, flow_id: str, request_id: str, verdict: bytes) -> list[str]:
        """Pi's verdict on the oldest submit in flight with these ids: kept; returns the reply
        subjects waiting for it (none for a verdict on nobody's submit)."""
        order = self._order.get((flow_id, request_id))
        if not order:
            return []
        key = order.popleft()
        if not order:
            del self._order[(flow_id, request_id)]
        waiting = self._in_flight.pop(key, None)
        self._answered[key] = verdict
        if len(self._answered) > self._size:
            self._answered.popitem(last=False)
        return [] if waiting is None else waiting.replies

    def connection_lost(self) -> int:
        """The relay connection ended: no verdict will come for what is in flight (the relay
        marks it another connection's); forgotten. Returns how many were."""
        lost = len(self._in_flight)
        self._in_flight.clear()
        self._order.clear()
        return lost

    @property
    def in_flight(self) -> int:
        """How many submits wait for their verdict."""
        return len(self._in_flight)
