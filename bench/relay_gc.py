"""The GC diagnostics of bench/relay.py, the same in both measuring processes (stdlib only).

``GcWatch`` records every collection (its generation, start and pause) through ``gc.callbacks``
while it is active: a callback that runs only when a collection runs, so the timed loop itself
does nothing extra. ``report`` attributes the collections to the timed round trips they fell in
(from each round trip's start and length) and sums them up as a JSON-able dict, with the
process's CPU time per round trip.
"""

from __future__ import annotations

import gc
import time


class GcWatch:
    """Collections as ``(generation, start, pause)`` in ``perf_counter`` seconds."""

    def __init__(self) -> None:
        self.collections: list[tuple[int, float, float]] = []
        self._started = 0.0
        # gen-0 count: tracked allocations minus deallocations since the last collection
        self._young = 0
        self._first = 0
        self._last = 0
        self._cpu = 0.0

    def _callback(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._young += gc.get_count()[0]
            self._started = time.perf_counter()
        else:
            self.collections.append(
                (info["generation"], self._started, time.perf_counter() - self._started)
            )

    def __enter__(self) -> GcWatch:
        self.collections.clear()
        self._young = 0
        self._first = gc.get_count()[0]
        gc.callbacks.append(self._callback)
        self._cpu = time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self._cpu = time.process_time() - self._cpu
        self._last = gc.get_count()[0]
        gc.callbacks.remove(self._callback)

    def report(self, starts: list[float], samples: list[float]) -> dict[str, object]:
        """Collections per generation inside the timed round trips, their total and longest
        pause (ms), and how many of the slowest 1% of round trips held a collection."""
        per_gen = [0, 0, 0]
        total = longest = 0.0
        hit: set[int] = set()
        ends = [s + d for s, d in zip(starts, samples, strict=True)]
        i = 0
        for gen, begun, pause in sorted(self.collections, key=lambda c: c[1]):
            while i < len(starts) and ends[i] < begun:
                i += 1
            if i == len(starts) or starts[i] > begun:
                continue  # between round trips (bookkeeping of the loop), not timed
            hit.add(i)
            per_gen[gen] += 1
            total += pause
            longest = max(longest, pause)
        worst = max(1, len(samples) // 100)
        slowest = sorted(range(len(samples)), key=samples.__getitem__)[-worst:]
        return {
            # this process's CPU time (user + system) per round trip, in microseconds
            "cpu_us_per_rt": self._cpu * 1e6 / max(1, len(samples)),
            # what each round trip leaves on the gen-0 count (allocations of gc-tracked objects
            # minus their deallocations): it is what makes gen-0 collections come
            "gen0_per_rt": (self._young + self._last - self._first) / max(1, len(samples)),
            "collections": per_gen,
            "pause_ms": total * 1e3,
            "max_pause_ms": longest * 1e3,
            "slowest_1pct": len(slowest),
            "slowest_1pct_with_gc": sum(1 for s in slowest if s in hit),
        }
