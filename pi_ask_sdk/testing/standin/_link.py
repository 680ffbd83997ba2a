"""The link between the stand-in extension and its server: the socket variable, JSON lines,
and the trust checks (same uid, private directory)."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import struct
from collections.abc import Mapping
from pathlib import Path
from typing import Final

import msgspec

from pi_ask_sdk.transports.relay import check_relay_dir

__all__ = [
    "ENV_SOCKET",
    "ENV_TIMEOUT",
    "LINE_LIMIT",
    "check_private_dir",
    "decode_line",
    "encode_line",
    "same_user",
    "standin_extension_path",
]

ENV_SOCKET: Final = "PI_ASK_STANDIN_SOCKET"
"""The variable that names the server's socket to the extension (unset: the extension is off)."""

ENV_TIMEOUT: Final = "PI_ASK_STANDIN_TIMEOUT"
"""Seconds the extension waits for the server to acknowledge a request or answer a ping
(default 10): a stopped or silent server then fails the call instead of hanging Pi."""

LINE_LIMIT: Final = 256 * 1024 * 1024


def standin_extension_path() -> Path:
    """The absolute path of the shipped stand-in extension: ``pi -e <path>``."""
    return Path(__file__).resolve().with_name("pi-ask-standin.ts")


def encode_line(message: Mapping[str, object]) -> bytes:
    try:
        return msgspec.json.encode(message) + b"\n"
    except (UnicodeEncodeError, msgspec.EncodeError, TypeError):
        # Lone surrogates (legal in a JS string) cannot be UTF-8: escape them as JSON does.
        builtins = msgspec.to_builtins(message)
        return json.dumps(builtins, ensure_ascii=True, separators=(",", ":")).encode() + b"\n"


def decode_line(line: bytes) -> object:
    # The extension cuts nesting deeper than 64 levels, so a line never exhausts the recursion
    # limit here.
    try:
        return msgspec.json.decode(line)
    except msgspec.DecodeError:
        return json.loads(line)  # accepts lone-surrogate escapes, which msgspec refuses


def check_private_dir(path: Path) -> None:
    """The relay's rules for the socket's directory (``UnsafeRelayPath`` says what is wrong)."""
    check_relay_dir(path)


def same_user(writer: asyncio.StreamWriter) -> bool:
    sock = writer.get_extra_info("socket")
    option = getattr(socket, "SO_PEERCRED", None)
    if sock is None or option is None:
        return True  # no peer credentials here: the 0600 socket in a 0700 directory guards it
    try:
        raw = sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i"))
    except OSError:
        return True
    _pid, uid, _gid = struct.unpack("3i", raw)
    return bool(uid == os.getuid())
