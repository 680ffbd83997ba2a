"""What the benchmarks share: the 3-question form, and import timing in fresh interpreters."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

THREE_QUESTIONS = {
    "title": "Plan",
    "questions": [
        {
            "id": "goal",
            "label": "Goal",
            "prompt": "Pick goal",
            "options": [{"value": "fast", "label": "Fast"}, {"value": "safe", "label": "Safe"}],
        },
        {
            "id": "constraints",
            "label": "Constraints",
            "prompt": "Pick constraints",
            "type": "multi",
            "options": [
                {"value": "small", "label": "Small diff"},
                {"value": "tests", "label": "Add tests"},
            ],
        },
        {
            "id": "scope",
            "label": "Scope",
            "prompt": "Pick scope",
            "options": [
                {"value": "docs", "label": "Docs", "description": "Docs only"},
                {"value": "code", "label": "Code", "recommended": False},
            ],
        },
    ],
}

THREE_ANSWERS = {
    "goal": {"values": ["fast"], "note": "keep it quick"},
    "constraints": {"values": ["tests", "small"], "optionNotes": {"tests": "unit only"}},
    "scope": {"values": ["code"]},
}

# Installed packages import from cached bytecode; so must ours, whatever PYTHONDONTWRITEBYTECODE
# says in this shell (a first, unmeasured import writes the cache).
IMPORT_ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def import_time(modules: str) -> float:
    """Seconds that ``import <modules>`` takes in a fresh interpreter."""
    code = f"import time; t = time.perf_counter(); import {modules}; print(time.perf_counter() - t)"
    out = subprocess.run(
        [sys.executable, "-c", code],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=IMPORT_ENV,
    )
    return float(out.stdout)


def compare_imports(floor: str, ours: str, samples: int) -> tuple[float, float]:
    """Median seconds of ``import <floor>`` and ``import <ours>``, in interleaved runs."""
    base: list[float] = []
    measured: list[float] = []
    import_time(ours)  # warm the bytecode cache
    for _ in range(samples):
        base.append(import_time(floor))
        measured.append(import_time(ours))
    return statistics.median(base), statistics.median(measured)
