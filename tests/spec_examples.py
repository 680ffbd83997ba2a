"""Loads the spec's machine-readable examples (``examples.json``).

Where it is, in this order: ``$PI_ASK_SPEC_DIR`` when set; else ``../shared/spec`` beside the
repository checkout (the spec itself, as on CI); else ``spec/`` at the project root, the copy
the repository and its sdist carry (so a clean clone builds and an unpacked sdist runs its own
tests). tests/test_spec_location.py keeps that copy equal to the spec beside the checkout.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parents[1]


def spec_dir() -> Path:
    """The directory holding ``examples.json`` (see the module docstring)."""
    explicit = os.environ.get("PI_ASK_SPEC_DIR")
    if explicit:
        return Path(explicit)
    beside = _ROOT.parent / "shared" / "spec"
    if (beside / "examples.json").is_file():
        return beside
    return copy_dir()


def copy_dir() -> Path:
    """The repository's own copy of the spec examples (``spec/``)."""
    return _ROOT / "spec"


SPEC_DIR = spec_dir()


def load_examples() -> dict[str, Any]:
    path = SPEC_DIR / "examples.json"
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


EXAMPLES = load_examples()
