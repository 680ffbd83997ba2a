"""Loads the spec's machine-readable examples (``examples.json``).

Where it is, in this order: ``$PI_ASK_SPEC_DIR`` when set; else ``spec/`` at the project root,
the copy the sdist carries (so an unpacked sdist runs its own tests); else ``../shared/spec``
beside the repository checkout, as on CI.
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
    bundled = _ROOT / "spec"
    if (bundled / "examples.json").is_file():
        return bundled
    return _ROOT.parent / "shared" / "spec"


SPEC_DIR = spec_dir()


def load_examples() -> dict[str, Any]:
    path = SPEC_DIR / "examples.json"
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


EXAMPLES = load_examples()
