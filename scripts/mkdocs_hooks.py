"""MkDocs hooks (``hooks:`` in mkdocs.yml): the site's home page is PYPI.md, the page a pip user
reads, followed by a map of the site.

It is made here rather than kept as docs/index.md because docs/ is also shipped in the wheel for
``pi-ask docs``, where every top-level page is a guide read in a terminal.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mkdocs.config.defaults import MkDocsConfig
    from mkdocs.structure.files import Files

ROOT = Path(__file__).resolve().parents[1]

GENERATED = {"index.md"}
"""The pages this hook adds to docs/ (the nav test counts them as existing)."""

SITE_MAP = """
## On this site

- The guides, under *Guides* in the menu: the pages `pi-ask docs` prints, starting with
  [writing a bridge](bridges.md).
- The [API reference](api/index.md), built from the docstrings: the bridge library
  (`pi_ask_sdk`), its test tooling (`pi_ask_sdk.testing`) and the core (`pi_ask_core`).
"""


def home_page() -> str:
    """PYPI.md and the site map."""
    return (ROOT / "PYPI.md").read_text(encoding="utf-8") + SITE_MAP


def on_files(files: Files, config: MkDocsConfig) -> Files:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "index.md", content=home_page()))
    return files
