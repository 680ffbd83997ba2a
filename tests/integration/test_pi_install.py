"""Pi packages and own hosts: the relay installed once with `pi install "$(pi-ask relay-path)"`
(docs/real-pi.md) loads without `-e`; the kit drives a host extension of your own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

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


FIXED_HOST = """
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";
import { Type } from "typebox";

// A host that answers every ask_user at once, to check the kit's own-host path only.
export default function (pi: ExtensionAPI): void {
    pi.registerTool({
        name: "ask_user",
        label: "Ask user",
        description: "test double",
        parameters: Type.Object({}, { additionalProperties: true }),
        async execute() {
            const details = { cancelled: true, mode: "submit", questions: [], answers: {} };
            return { content: [{ type: "text" as const, text: JSON.stringify(details) }], details };
        },
    });
}
"""


def test_own_host_extension_is_driven_by_tool_calls(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path: Path
) -> None:
    from tests.integration.pi_process import running_pi, single_question

    host = tmp_path / "own-host.ts"
    host.write_text(FIXED_HOST)
    with running_pi(
        pi_installation, tmp_path / "pi", shared_tmp=shared_tmp, host_extension=host
    ) as pi:
        assert str(host) in pi.command_line()
        assert pi.standin is None  # no stand-in server: the host is theirs
        flow_id = pi.open_form(single_question())
        assert flow_id.startswith("tool:pi-ask-call-")
        result = pi.result(flow_id)
        assert result.cancelled
        assert result.answers == {}
        commands = pi.request({"type": "get_commands"})["data"]["commands"]
        names = {c["name"] for c in cast("list[dict[str, str]]", commands)}
        assert not any(n.startswith("pi-ask-test") for n in names)  # faux model only
