"""The docs' snippets that need a real Pi (docs/real-pi.md), run as written: the rest run in
tests/examples/test_doc_snippets.py. Pi comes from the cache the real-Pi envs install into
(``PI_ASK_PI_CACHE``), so nothing is installed here."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.doc_snippets import doc_snippets
from tests.integration.pi_process import PiEnv, flavour_from_env

pytestmark = pytest.mark.pi

SNIPPETS = doc_snippets()
BOUND = 180


def run(tmp_path: Path, script: str, code: str, *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / script
    path.write_text(code, encoding="utf-8")
    return subprocess.run(
        [sys.executable, *args, str(path)],
        cwd=tmp_path,
        env={**os.environ, "PI_ASK_PI_FLAVOUR": flavour_from_env()},
        capture_output=True,
        text=True,
        timeout=BOUND,
        check=False,
    )


def test_the_real_pi_fixture_snippet_passes(pi_installation: PiEnv, tmp_path: Path) -> None:
    done = run(
        tmp_path,
        "test_snippet.py",
        SNIPPETS["real-pi_2"],
        *("-m", "pytest", "-q", "-p", "no:cacheprovider", "--pi-ask-real-pi"),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "skipped" not in done.stdout


def test_the_real_pi_context_snippet_cancels_a_form(pi_installation: PiEnv, tmp_path: Path) -> None:
    done = run(tmp_path, "snippet.py", SNIPPETS["real-pi_3"] + "\ndemo()\n")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "True\n"
