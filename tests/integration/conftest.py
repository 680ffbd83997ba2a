"""Fixtures for the real-Pi integration tests.

The Pi flavour comes from ``PI_ASK_PI_FLAVOUR`` (``current``: Pi 1.6.0 on node 22, the default;
``legacy``: Pi 0.74.2 on node 20). Outside CI a missing Pi skips these tests with the command
that installs it; with ``CI=true`` a missing Pi fails them loudly. One ``TMPDIR`` is shared by
every Pi of the session (jiti's transpile cache halves start-up).
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

# The harness is imported as ``tests.integration.pi_process`` (also by bench/relay.py), which
# needs the repository root on sys.path however pytest was started.
_ROOT = str(Path(__file__).resolve().parents[2])
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

from tests.integration.pi_process import (  # noqa: E402
    PiEnv,
    PiNotInstalled,
    PiProcess,
    flavour_from_env,
    pi_env,
    running_pi,
    unavailable,
)


@pytest.fixture(scope="session")
def pi_installation() -> PiEnv:
    flavour = flavour_from_env()
    try:
        return pi_env(flavour)
    except PiNotInstalled as exc:
        unavailable(str(exc))
        raise  # unreachable: unavailable() skips or fails


@pytest.fixture(scope="session")
def shared_tmp(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("pitmp")
    path.chmod(0o700)
    return path


@pytest.fixture(scope="module")
def module_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PiProcess]:
    """One Pi (relay + test host) shared by the tests of a module."""
    with running_pi(pi_installation, tmp_path_factory.mktemp("pi"), shared_tmp=shared_tmp) as pi:
        yield pi


@pytest.fixture
def fresh_pi(
    pi_installation: PiEnv, shared_tmp: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[PiProcess]:
    """A Pi of the test's own (for tests that end its session or its life)."""
    with running_pi(pi_installation, tmp_path_factory.mktemp("pi"), shared_tmp=shared_tmp) as pi:
        yield pi
