"""The floor of bench/relay.py: a bare asyncio client on a relay socket, in a process of its own.

Run by ``bench/relay.py`` only (``python bench/relay_floor.py < job.json``). It reads a job
``{"socket": path, "warm": [line, ...], "lines": [line, ...]}`` (each line a complete
newline-terminated ``emit`` of a submit, with its ``requestId``), connects with its own event
loop, waits for the relay's hello, sends the warm-up lines untimed, then times each line: write
it, read lines (an ``asyncio.Protocol``, the leanest asyncio client; ``StreamReader`` is slower
than the SDK's own protocol) until the ``submit-result`` carrying its ``requestId``. Nothing
else runs in this process (no SDK, no harness threads), and GC stays on, as in the SDK's
process. It prints ``{"samples": [seconds, ...], "gc": {...}}``: the timed round trips and the
collections that fell in them (``relay_gc.GcWatch``, the same instrumentation as the SDK's).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from relay_gc import GcWatch

TIMEOUT = 10.0
"""Seconds for connecting and the hello; each line adds 50 ms to the job's deadline."""


class FloorProtocol(asyncio.Protocol):
    """The leanest asyncio client: frame lines, resolve the waiting round trip on its
    ``submit-result`` (matched by requestId), ignore every other line."""

    def __init__(self) -> None:
        self.buffer = b""
        self.marker = b""
        self.waiter: asyncio.Future[None] | None = None
        self.hello: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if b"\n" not in data:
            return
        *lines, self.buffer = self.buffer.split(b"\n")
        if not self.hello.done():
            self.hello.set_result(None)
        waiter = self.waiter
        if waiter is None or waiter.done():
            return
        for line in lines:
            if self.marker in line and b"submit-result" in line:
                waiter.set_result(None)
                return

    def connection_lost(self, exc: Exception | None) -> None:
        error = RuntimeError(f"the relay closed the floor's connection ({exc})")
        for future in (self.hello, self.waiter):
            if future is not None and not future.done():
                future.set_exception(error)


def marker_of(line: bytes) -> bytes:
    request_id = json.loads(line)["data"]["requestId"]
    return b'"requestId":' + json.dumps(request_id, separators=(",", ":")).encode()


async def measure(socket: str, warm: list[bytes], lines: list[bytes]) -> dict[str, object]:
    loop = asyncio.get_running_loop()
    transport, protocol = await loop.create_unix_connection(FloorProtocol, socket)
    try:
        await protocol.hello  # the hello line; replays are ignored like any other line
        out: list[float] = []
        starts: list[float] = []
        clock = time.perf_counter
        for line in warm:
            protocol.marker = marker_of(line)
            waiter = protocol.waiter = loop.create_future()
            transport.write(line)
            await waiter
        with GcWatch() as watch:
            for line in lines:
                protocol.marker = marker_of(line)
                waiter = protocol.waiter = loop.create_future()
                start = clock()
                transport.write(line)
                await waiter
                out.append(clock() - start)
                starts.append(start)
        return {"samples": out, "gc": watch.report(starts, out)}
    finally:
        transport.close()


def main() -> int:
    job = json.load(sys.stdin)
    warm = [line.encode() for line in job["warm"]]
    lines = [line.encode() for line in job["lines"]]
    # One deadline for the whole job (a per-round-trip wait_for would add a task per round trip).
    deadline = TIMEOUT + 0.05 * (len(warm) + len(lines))
    result = asyncio.run(asyncio.wait_for(measure(job["socket"], warm, lines), deadline))
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
