"""The documentation site's configuration holds together without mkdocs installed (`tox -e docs`
builds it with --strict; these checks run in the fast suite): the nav names only pages that
exist, every guide and API page is in the nav, every API page documents a module that imports,
and the build needs no network."""

from __future__ import annotations

import ast
import importlib
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CONFIG = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")


def _hooks() -> ModuleType:
    """scripts/mkdocs_hooks.py (it imports mkdocs only when the site is built)."""
    spec = importlib.util.spec_from_file_location("mkdocs_hooks", ROOT / "scripts/mkdocs_hooks.py")
    assert spec is not None
    assert spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    return hooks


def _nav_pages() -> list[str]:
    nav = CONFIG.split("\nnav:\n", 1)[1]
    return re.findall(r"^\s+- (?:[^:\n]+: )?(\S+\.md)\s*$", nav, flags=re.M)


def _api_pages() -> list[Path]:
    return sorted((DOCS / "api").rglob("*.md"))


def test_nav_names_only_pages_that_exist() -> None:
    pages = _nav_pages()
    assert "index.md" in pages
    assert len(pages) == len(set(pages)), "a page named twice in the nav"
    generated = set(_hooks().GENERATED)  # the pages the hook adds (its home page)
    missing = [page for page in pages if page not in generated and not (DOCS / page).is_file()]
    assert missing == []


def test_every_guide_and_api_page_is_in_the_nav() -> None:
    pages = set(_nav_pages())
    guides = {path.name for path in DOCS.glob("*.md")}
    api = {path.relative_to(DOCS).as_posix() for path in _api_pages()}
    assert guides, "docs/ holds the guides"
    assert sorted(guides - pages) == [], "guides the site's nav leaves out"
    assert sorted(api - pages) == [], "API pages the site's nav leaves out"


def test_the_home_page_is_the_long_description() -> None:
    home: str = _hooks().home_page()
    assert home.startswith((ROOT / "PYPI.md").read_text(encoding="utf-8"))
    for target in re.findall(r"\]\(([^)#]+\.md)(?:#[^)]*)?\)", home):
        assert (DOCS / target).is_file(), target


@pytest.mark.parametrize(
    "page",
    [page for page in _api_pages() if page.name != "index.md"],  # (the overview: prose only)
    ids=lambda path: path.relative_to(DOCS).as_posix(),
)
def test_every_api_page_documents_a_module_that_exists(page: Path) -> None:
    # Found, not imported: the fleet's modules need the nats extra to import (mkdocstrings
    # reads the source, so the site builds without it). A target is a module, or a name in a
    # module's __all__ (read from its source).
    targets = re.findall(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), flags=re.M)
    assert targets, f"{page} documents no module"
    for target in targets:
        if importlib.util.find_spec(target) is not None:
            continue
        module, _, name = target.rpartition(".")
        spec = importlib.util.find_spec(module)
        assert spec is not None, target
        assert spec.origin is not None, target
        assert name in _exports(Path(spec.origin)), target


def _exports(source: Path) -> list[str]:
    """The names a module's ``__all__ = [...]`` lists, read from its source."""
    for node in ast.parse(source.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
    return []


def test_the_build_needs_no_network() -> None:
    # mkdocstrings fetches an inventory for each `inventories:`/`import:` entry; themes fetch
    # nothing at build time, and `font: false` keeps the pages from loading web fonts.
    assert "inventories:" not in CONFIG
    assert not re.search(r"^\s+import:", CONFIG, flags=re.M)
    assert re.search(r"^\s+font: false", CONFIG, flags=re.M)
    assert re.search(r"^strict: true$", CONFIG, flags=re.M)
