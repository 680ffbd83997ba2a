"""The ```python blocks of the README, PYPI.md (the long description) and docs/*.md, each
with an id (``bridges_7``: the seventh block of docs/bridges.md), dedented.

tests/typing checks every one with mypy --strict; tests/examples/test_doc_snippets.py (and, for
the blocks that need a real Pi, tests/integration/test_doc_snippets_real_pi.py) runs every one.
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", ROOT / "PYPI.md", *sorted((ROOT / "docs").glob("*.md"))]
_SNIPPET = re.compile(r"^(?P<indent>[ \t]*)```python\n(?P<code>.*?)^(?P=indent)```", re.M | re.S)


def doc_snippets() -> dict[str, str]:
    """Every ```python block of the README and docs/, by id, in document order."""
    found = {}
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for number, match in enumerate(_SNIPPET.finditer(text), start=1):
            found[f"{doc.stem}_{number}"] = textwrap.dedent(match["code"])
    return found
