"""The relay transport is importable from pi_ask_sdk.transports, but only loaded on use."""

from __future__ import annotations

import subprocess
import sys


def test_importing_the_sdk_does_not_load_the_socket_machinery() -> None:
    code = (
        "import sys, pi_ask_sdk\n"
        "assert 'pi_ask_sdk.transports.relay' not in sys.modules\n"
        "from pi_ask_sdk.transports import RelayTransport\n"
        "assert RelayTransport.__module__ == 'pi_ask_sdk.transports.relay'\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
