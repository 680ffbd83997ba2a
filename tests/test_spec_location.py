"""The one way the suite (and bench/core.py) finds the spec's ``examples.json``: ``spec_dir()``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import spec_examples
from tests.spec_examples import EXAMPLES, spec_dir


def test_the_variable_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_ASK_SPEC_DIR", str(tmp_path))
    assert spec_dir() == tmp_path


def test_the_sdist_copy_comes_before_the_checkout_neighbour(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PI_ASK_SPEC_DIR", raising=False)
    root = tmp_path / "project"
    monkeypatch.setattr(spec_examples, "_ROOT", root)
    assert spec_dir() == tmp_path / "shared" / "spec"  # no copy: beside the checkout
    (root / "spec").mkdir(parents=True)
    (root / "spec" / "examples.json").write_text("{}")
    assert spec_dir() == root / "spec"


def test_the_examples_loaded_are_the_file_found() -> None:
    with (spec_dir() / "examples.json").open(encoding="utf-8") as handle:
        assert json.load(handle) == EXAMPLES
    assert EXAMPLES["validations"]  # the spec's examples, not an empty stand-in
