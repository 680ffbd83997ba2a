"""The TypeScript test host against the spec's examples (extensions/conformance.ts).

It needs node >= 22.18 (type stripping): the node 22 of the current flavour, also when the
legacy flavour is under test. The spec is ``../shared/spec/examples.json`` relative to the repo,
or ``$PI_ASK_SPEC_DIR/examples.json``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.integration.pi_process import (
    CONFORMANCE_TS,
    ROOT,
    PiEnv,
    PiNotInstalled,
    pi_env,
    unavailable,
)

pytestmark = pytest.mark.pi


def examples_path() -> Path:
    spec_dir = os.environ.get("PI_ASK_SPEC_DIR")
    base = Path(spec_dir) if spec_dir else ROOT.parent / "shared" / "spec"
    return base / "examples.json"


def test_ts_host_passes_the_spec_examples(pi_installation: PiEnv) -> None:
    examples = examples_path()
    if not examples.is_file():
        unavailable(f"spec examples not found at {examples} (set PI_ASK_SPEC_DIR)")
    try:
        node22 = pi_installation if pi_installation.flavour == "current" else pi_env("current")
    except PiNotInstalled as exc:
        unavailable(f"conformance.ts needs node 22: {exc}")
        raise
    proc = subprocess.run(
        [node22.node, str(CONFORMANCE_TS), str(examples)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0, output
    summary = proc.stdout.strip().splitlines()[-1]
    passed, failed = (int(part.split()[0]) for part in summary.split(", "))
    assert failed == 0, output
    assert passed > 0, output
