"""Connects to a relay socket the moment its name appears (``python -m
tests.integration.socket_watcher PATH BURST``), in a process of its own so that nothing else
delays it: for each new socket at ``PATH`` (a new inode, or the same one renamed in again) it
connects ``BURST`` times at once, then prints ``<ok> <refused> <missing>`` (each connect's
outcome; ``missing``: the name went before the connect) and waits for the next one. It spins
(no event tells that a name appeared) and stops at end of input on stdin."""

from __future__ import annotations

import os
import select
import socket
import sys


def main(path: str, burst: int) -> None:
    last: tuple[int, int] | None = None
    while True:
        if select.select([sys.stdin], [], [], 0)[0] and not sys.stdin.readline():
            return  # end of input: the test is done
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            continue
        seen = (st.st_ino, st.st_ctime_ns)
        if seen == last:
            continue
        last = seen
        counts = {"ok": 0, "refused": 0, "missing": 0}
        for _ in range(burst):
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                sock.connect(path)
                counts["ok"] += 1
            except ConnectionRefusedError:
                counts["refused"] += 1
            except FileNotFoundError:
                counts["missing"] += 1
            finally:
                sock.close()
        if counts["missing"] == burst:
            continue  # the name was going (its inode changes as it is unlinked): no new socket
        print(counts["ok"], counts["refused"], counts["missing"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
