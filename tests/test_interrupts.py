"""The tests that send SIGINT hold when the suite itself runs with SIGINT ignored (issue 27).

An ignored SIGINT is inherited across exec (``trap '' INT`` before pytest, some CI runners, a
``nohup``); a child started from such a suite never raises ``KeyboardInterrupt``, and each of
these tests waited for its bound and failed, leaving its child running. Each now starts its
child with ``tests.interrupts.default_sigint``, and kills it if the test fails.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"

# The ones that need no real Pi (tests/integration/test_try_papercuts.py has the real-Pi one).
FAST_SIGINT_TESTS = (
    "tests/relay/test_cli_answer.py::test_ctrl_c_while_asking_exits_130_cleanly_and_sends_nothing",
    "tests/examples/test_examples.py::test_console_bridge_ends_at_one_ctrl_c_with_130",
    "tests/examples/test_doc_snippets.py::test_standin_server_snippet_serves_until_ctrl_c",
    "tests/cli/test_try_install.py",
)


def test_every_test_module_that_sends_sigint_restores_it_for_its_children() -> None:
    senders = sorted(
        path.relative_to(ROOT).as_posix()
        for path in TESTS.rglob("test_*.py")
        if path.name != Path(__file__).name
        and re.search(r"(send_signal|killpg|kill)\([^)]*SIGINT", path.read_text(encoding="utf-8"))
    )
    assert senders == [
        "tests/cli/test_try_install.py",
        "tests/examples/test_doc_snippets.py",
        "tests/examples/test_examples.py",
        "tests/integration/test_try_papercuts.py",
        "tests/relay/test_cli_answer.py",
    ]
    for name in senders:
        text = (ROOT / name).read_text(encoding="utf-8")
        assert "preexec_fn=default_sigint" in text, name
    covered = {test.split("::")[0] for test in FAST_SIGINT_TESTS}
    assert covered == set(senders) - {"tests/integration/test_try_papercuts.py"}


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_the_sigint_tests_pass_with_sigint_ignored(tmp_path: Path) -> None:
    """As ``trap '' INT; pytest ...``: before, each of them failed after its bound."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *FAST_SIGINT_TESTS],
        cwd=ROOT,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
        preexec_fn=_ignore_sigint,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert re.search(r"\b\d+ passed\b", done.stdout), done.stdout[-3000:]
    assert "skipped" not in done.stdout
