"""The stress suite runs on real Pis, with the integration suite's harness and fixtures.

Outside CI a missing Pi skips these tests with the command that installs it
(`bash scripts/install-pi.sh`, or `tox -e stress`); with ``CI=true`` they must run.
"""

from __future__ import annotations

from tests.integration.conftest import (  # noqa: F401  (fixtures, re-exported for this folder)
    fresh_pi,
    module_pi,
    pi_installation,
    shared_tmp,
)
