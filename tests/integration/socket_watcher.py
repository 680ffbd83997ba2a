"""Connects to a relay socket the moment its name appears (``python -m
tests.integration.socket_watcher PATH BURST``), in a process of its own so that nothing else
delays it: for each new socket at ``PATH`` it connects ``BURST`` times at once, then prints
``<ok> <refused> <missing>`` (each connect's outcome; ``missing``: the name went before the
connect) and waits for the next one. It spins (no event tells that a name appeared) and stops
at end of input on stdin.

A socket is new when its relay session is. The name's inode and ctime tell when to look (they
change as a name is unlinked too, and a new socket may get the inode just freed, with a ctime
of the same clock tick), and the ``sessionId`` of the hello the first accepted connect reads
tells a going socket (the one last reported) from a new one.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys

HELLO_WAIT = 10.0
"""Bound of the wait for a hello on an accepted connection."""


def session_of(sock: socket.socket) -> str:
    """The ``sessionId`` of the hello the relay sends first on ``sock``; "" when none comes (a
    connection the closing relay never took)."""
    sock.settimeout(HELLO_WAIT)
    try:
        with sock.makefile("rb") as reader:
            hello = json.loads(reader.readline())
        return str(hello["sessionId"])
    except (OSError, ValueError, KeyError, TypeError):
        return ""


def main(path: str, burst: int) -> None:
    last: tuple[int, int] | None = None
    reported = ""
    while True:
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
            return  # end of input: the test is done
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            last = None  # what appears next is new, whatever its inode and ctime
            continue
        seen = (st.st_ino, st.st_ctime_ns)
        if seen == last:
            continue
        last = seen
        counts = {"ok": 0, "refused": 0, "missing": 0}
        accepted: list[socket.socket] = []
        for _ in range(burst):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
            except ConnectionRefusedError:
                counts["refused"] += 1
                sock.close()
            except FileNotFoundError:
                counts["missing"] += 1
                sock.close()
            else:
                counts["ok"] += 1
                accepted.append(sock)
        try:
            session = session_of(accepted[0]) if accepted else ""
        finally:
            for sock in accepted:
                sock.close()
        if not counts["refused"] and session in ("", reported):
            last = None  # the last socket as its name goes: look again at what comes next
            continue
        reported = session
        print(counts["ok"], counts["refused"], counts["missing"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
