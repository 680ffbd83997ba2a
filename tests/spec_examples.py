"""Loads the spec's machine-readable examples (``shared/spec/examples.json``).

The file lives beside the repository (``../shared``), as on CI; ``PI_ASK_SPEC_DIR`` overrides.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

_DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "spec"
SPEC_DIR = Path(os.environ.get("PI_ASK_SPEC_DIR", _DEFAULT))


def load_examples() -> dict[str, Any]:
    path = SPEC_DIR / "examples.json"
    with path.open(encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


EXAMPLES = load_examples()
