"""Our harness for a real Pi: the public kit ``pi_ask_sdk.testing.realpi`` plus repo-only helpers.

The Pi flavours are the ones ``scripts/install-pi.sh`` installs under ``tests/integration``
(``node/`` and ``node-legacy/``, the same layout as the kit's cache), so the kit finds them with
``locate_pi(flavour, tests/integration)``. The host in Pi is the shipped stand-in, whose every
decision ``pi_ask_core.FlowHost`` makes in this test process (``pi_ask_sdk.testing.standin``).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping
from pathlib import Path
from typing import NoReturn

from pi_ask_sdk import (
    Answer,
    AnswerBuilder,
    BridgeEvent,
    ClientStream,
    FlowView,
)
from pi_ask_sdk.testing import UncheckedAnswer, unchecked_answer
from pi_ask_sdk.testing.realpi import (
    FAUX_MODEL,
    WAIT,
    Flavour,
    PiEnv,
    PiFailed,
    PiNotInstalled,
    PiProcess,
    locate_pi,
    make_private_dir,
    running_pi,
    single_question,
)
from pi_ask_sdk.testing.standin import standin_extension_path
from pi_ask_sdk.transports.relay import relay_extension_path

__all__ = [
    "FAUX_MODEL",
    "RELAY_TS",
    "ROOT",
    "STANDIN_TS",
    "TIMEOUT",
    "WAIT",
    "Flavour",
    "PiEnv",
    "PiFailed",
    "PiNotInstalled",
    "PiProcess",
    "choose",
    "flavour_from_env",
    "in_ci",
    "install_hint",
    "invalid_answer",
    "make_private_dir",
    "next_event",
    "next_flow",
    "pi_env",
    "running_pi",
    "settle",
    "single_question",
    "unavailable",
]

ROOT = Path(__file__).resolve().parents[2]
PI_DIR = ROOT / "tests" / "integration"
RELAY_TS = relay_extension_path()
STANDIN_TS = standin_extension_path()


def flavour_from_env(env: Mapping[str, str] | None = None) -> Flavour:
    value = (os.environ if env is None else env).get("PI_ASK_PI_FLAVOUR", "current") or "current"
    if value not in ("current", "legacy"):
        raise ValueError(f"PI_ASK_PI_FLAVOUR must be 'current' or 'legacy', not {value!r}")
    return "legacy" if value == "legacy" else "current"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason: str) -> NoReturn:
    """Skip the test outside CI; fail it loudly with ``CI=true``."""
    import pytest

    if in_ci():
        pytest.fail(f"CI=true: {reason}", pytrace=False)
    pytest.skip(reason)


def install_hint(flavour: Flavour) -> str:
    if flavour == "legacy":
        return "run `bash scripts/install-pi.sh --legacy` or `tox -e pi-legacy`"
    return "run `bash scripts/install-pi.sh` or `tox -e pi`"


def pi_env(flavour: Flavour) -> PiEnv:
    """Where node and Pi are for ``flavour``; ``PiNotInstalled`` says how to install it."""
    try:
        return locate_pi(flavour, PI_DIR)
    except PiNotInstalled as exc:
        raise PiNotInstalled(
            f"{exc}: {install_hint(flavour)}",
            problem=exc.problem,
            path=exc.path,
            command=exc.command,
        ) from None


# --- SDK helpers (bounded waits only) ------------------------------------------------------------

TIMEOUT = 5.0
"""Upper bound of one wait on the SDK side in the tests."""


async def next_flow(stream: ClientStream[FlowView], flow_id: str) -> FlowView:
    """The stream's view of ``flow_id``, skipping other forms; each wait bounded."""
    for _ in range(1000):
        view = await stream.next(timeout=TIMEOUT)
        if view.flow_id == flow_id:
            return view
    raise AssertionError(f"flow {flow_id} never started")


async def next_event(
    stream: ClientStream[BridgeEvent], kind: str, flow_id: str | None = None
) -> BridgeEvent:
    """The next event of ``kind`` (for ``flow_id`` when given); each wait bounded."""
    for _ in range(1000):
        event = await stream.next(timeout=TIMEOUT)
        if event.kind != kind:
            continue
        if event.kind == "started":
            found: str | None = event.flow.flow_id
        elif event.kind == "completed":
            found = event.flow_id
        else:
            found = None
        if flow_id is None or found == flow_id:
            return event
    raise AssertionError(f"no {kind} event for {flow_id}")


def choose(flow: FlowView, value: str) -> Answer:
    """Select option ``value`` of the form's first question (checked by the SDK)."""
    question = flow.questions[0]
    return AnswerBuilder(flow).select(question, question.option(value)).build()


def invalid_answer(flow: FlowView) -> UncheckedAnswer:
    """An answer the host refuses as ``invalid_answer`` (an option value the form lacks), built
    past the SDK's local checks on purpose."""
    return unchecked_answer(flow, {flow.questions[0].id: ["nope"]})


async def settle() -> None:
    """Let the event loop run callbacks that are already due (no waiting on time)."""
    await asyncio.sleep(0)
