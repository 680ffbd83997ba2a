"""``pi-ask docs [NAME]``: the guides, shipped inside the package so they read the same offline
and on PyPI (whose page cannot follow the README's relative links).

The wheel carries ``docs/*.md`` as ``pi_ask_sdk/docs/`` (``force-include`` in pyproject.toml);
an editable install or a source checkout reads the repository's ``docs/`` instead.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from .text import json_line
from .usage import usage_error

__all__ = ["guide_names", "guides_dir", "show_guide"]


def guides_dir() -> Path | None:
    """Where the guides are: the package's ``docs/``, else the source checkout's."""
    shipped = resources.files("pi_ask_sdk") / "docs"
    if isinstance(shipped, Path) and shipped.is_dir():
        return shipped
    checkout = Path(__file__).resolve().parents[2] / "docs"
    return checkout if checkout.is_dir() else None


def guide_names() -> list[str]:
    directory = guides_dir()
    return [] if directory is None else sorted(path.stem for path in directory.glob("*.md"))


def show_guide(name: str | None) -> int:
    """Print guide ``name`` (or the list of guides); 2 for a name that is not a guide."""
    directory = guides_dir()
    names = guide_names()
    if directory is None or not names:
        print("pi-ask docs: no guides found in this installation", file=sys.stderr)
        return 3
    if name is None:
        print("guides (pi-ask docs NAME):")
        for each in names:
            print(f"  {each}")
        return 0
    stem = name.removesuffix(".md")
    if stem not in names:
        return usage_error("docs", f"no guide {json_line(name)}; one of: {', '.join(names)}")
    sys.stdout.write((directory / f"{stem}.md").read_text(encoding="utf-8"))
    return 0
