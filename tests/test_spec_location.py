"""The one way the suite (and bench/core.py) finds the spec's ``examples.json``: ``spec_dir()``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests import spec_examples
from tests.spec_examples import EXAMPLES, copy_dir, spec_dir


def test_the_variable_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_ASK_SPEC_DIR", str(tmp_path))
    assert spec_dir() == tmp_path


def test_the_spec_beside_the_checkout_comes_before_the_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PI_ASK_SPEC_DIR", raising=False)
    root = tmp_path / "project"
    monkeypatch.setattr(spec_examples, "_ROOT", root)
    assert spec_dir() == root / "spec"  # a clean clone or an unpacked sdist: its own copy
    beside = tmp_path / "shared" / "spec"
    beside.mkdir(parents=True)
    (beside / "examples.json").write_text("{}")
    assert spec_dir() == beside


def test_the_copy_the_repository_carries_is_the_spec() -> None:
    """Where the spec itself is at hand (a checkout with ../shared, $PI_ASK_SPEC_DIR), the
    copy in spec/ must be byte for byte the same: update it with
    ``cp ../shared/spec/examples.json spec/``."""
    copy = copy_dir() / "examples.json"
    assert copy.is_file()
    assert copy.read_bytes() == (spec_dir() / "examples.json").read_bytes()


def test_the_examples_loaded_are_the_file_found() -> None:
    with (spec_dir() / "examples.json").open(encoding="utf-8") as handle:
        assert json.load(handle) == EXAMPLES
    assert EXAMPLES["validations"]  # the spec's examples, not an empty stand-in
