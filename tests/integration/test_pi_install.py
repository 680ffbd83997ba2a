"""The relay installed once as a Pi package (`pi install "$(pi-ask relay-path)"`, docs/real-pi.md)
loads on every start without `-e`."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_ask_sdk.transports.relay import relay_extension_path
from tests.integration.pi_process import PiEnv, PiProcess

pytestmark = pytest.mark.pi


def test_relay_installed_as_a_pi_package_listens_without_dash_e(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    pi = PiProcess(
        pi_installation,
        tmp_path / "pi",
        shared_tmp=shared_tmp,
        relay=False,  # no -e for the relay
        test_host=False,
        installed_packages=True,
    )
    pi.install_package(str(relay_extension_path()))
    settings = json.loads((pi.agent_dir / "settings.json").read_text())
    assert len(settings["packages"]) == 1
    assert "-e" not in pi.command_line()
    with pi:
        socket = pi.wait_socket()
        assert socket == pi.relay_dir / f"pi-{pi.pid}.sock"
        assert pi.request({"type": "get_state"})["success"] is True
