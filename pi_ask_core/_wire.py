"""Internal: the base of the wire Structs (``pi_ask_core.protocol`` and the modules beside it
that define payloads of their own)."""

from __future__ import annotations

from msgspec import Struct

__all__ = ["WireStruct"]


class WireStruct(Struct, frozen=True, kw_only=True, rename="camel", gc=False):
    """Base of all wire Structs: camelCase keys, keyword construction, immutable.

    Not tracked by the garbage collector (``gc=False``, inherited): a payload is a tree of
    values and never refers back to itself, so the collector has nothing to find in one, and
    each host call makes dozens of them.
    """
