"""The per-host forwarder of the fleet over NATS JetStream (docs/fleet.md).

``Forwarder`` (``pi-ask forward --nats URL [--host-id NAME]``) follows every relay of its host,
as ``serve_every_pi`` does (Pis that start later too), publishes each relay event unchanged to
the host's subjects, takes the submits bridges publish for its Pis (each once: de-duplicated by
transport, flow and request id) and publishes each submit-result for the transport that sent
it. It is an answerer to its relays only while an answering bridge heartbeats. Needs the extra
``pi-ask-sdk[nats]``.
"""

from __future__ import annotations

from ._book import SubmitBook, SubmitKey
from ._forwarder import Forwarder, default_host_id

__all__ = ["Forwarder", "SubmitBook", "SubmitKey", "default_host_id"]
