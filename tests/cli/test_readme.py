"""The README's promises: its first lines are the two commands, and its code example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def test_first_lines_are_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    block = lines[lines.index("```bash") + 1 : lines.index("```bash") + 3]
    assert lines.index("```bash") < 4
    assert block[0].split("#")[0].strip().endswith("pi-ask demo")
    assert block[1].split("#")[0].strip() == "bash scripts/test-all.sh"
    assert (README.parent / "scripts" / "test-all.sh").is_file()


def test_python_example_runs_and_answers_with_a_value(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered ['no']"
