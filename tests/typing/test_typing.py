"""Typing pass/fail cases, checked with mypy ``--strict --warn-unused-ignores`` plus what
docs/bridges.md recommends to bridges (``warn_unreachable``, ``enable_error_code =
truthy-bool``).

``pass/*.py`` are realistic bridge snippets that must type-check clean. Each ``fail/*.py`` marks
every line mypy must reject with ``# type: ignore[<code>]``, and is checked twice:

* as it is, it must be clean: with ``warn_unused_ignores`` a line that stopped failing is an
  ``unused-ignore`` error, and an ignore naming another code than the error it hides is reported;
* with the ignores stripped (a copy, same line numbers), the errors mypy reports must be exactly
  the annotated (line, code) pairs: none missing, none extra, no other code.

mypy runs in-process (``mypy.api.run``) from a scratch directory with an explicit config (the
project's config excludes ``tests/typing/`` on purpose): two runs per session sharing one cache.
These tests belong to the tox ``typing`` env; without mypy they fail rather than skip.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# This folder is no package (its cases are mypy inputs): the shared snippet reader is imported
# as ``tests.doc_snippets``, which needs the repository root on sys.path.
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.doc_snippets import doc_snippets  # noqa: E402

PASS_FILES = sorted((HERE / "pass").glob("*.py"))
FAIL_FILES = sorted((HERE / "fail").glob("*.py"))
SNIPPETS = list(doc_snippets().items())

_IGNORE = re.compile(r"[ \t]*#[ \t]*type:[ \t]*ignore(?:\[(?P<codes>[^\]]*)\])?")
_LINE = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<severity>error|note): (?P<text>.*)$")
_CODE = re.compile(r"^(?P<message>.*?)\s+\[(?P<code>[a-z0-9-]+)\]$")

_CONFIG = """\
[mypy]
strict = True
warn_unused_ignores = True
warn_unreachable = True
enable_error_code = truthy-bool
python_version = 3.10
mypy_path = {stubs}
cache_dir = {cache}
show_error_codes = True
show_column_numbers = False
pretty = False
color_output = False
error_summary = False
"""


@dataclass(frozen=True)
class Error:
    path: Path
    line: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.path.name}:{self.line}: [{self.code}] {self.message}"


@dataclass(frozen=True)
class MypyRun:
    files: tuple[Path, ...]
    errors: tuple[Error, ...]
    report: str
    status: int

    def errors_in(self, path: Path) -> list[Error]:
        return [error for error in self.errors if error.path == path]

    def stray_errors(self) -> list[Error]:
        return [error for error in self.errors if error.path not in self.files]


class Mypy:
    """Runs mypy in-process from ``workdir`` (so the source tree is not taken as cwd modules:
    ``pi_ask_sdk`` is found on ``sys.path`` like an installed package, ``pi_ask_wire`` in
    ``stubs/`` through ``mypy_path``)."""

    def __init__(self, workdir: Path) -> None:
        try:
            from mypy import api
        except ImportError as exc:  # pragma: no cover - depends on the environment
            pytest.fail(
                f"mypy is not installed ({exc}); the typing tests need it: run them in the tox "
                "`typing` env or `pip install -e .[typing]`.",
                pytrace=False,
            )
        self._api = api
        self.workdir = workdir
        self.config = workdir / "mypy.ini"
        self.config.write_text(
            _CONFIG.format(stubs=ROOT / "stubs", cache=workdir / "cache"), encoding="utf-8"
        )

    def run(self, files: Sequence[Path]) -> MypyRun:
        before = os.getcwd()
        os.chdir(self.workdir)
        try:
            stdout, stderr, status = self._api.run(
                ["--config-file", str(self.config), *(str(path) for path in files)]
            )
        finally:
            os.chdir(before)
        if status not in (0, 1) or stderr.strip():
            pytest.fail(f"mypy did not run (status {status}):\n{stderr}\n{stdout}", pytrace=False)
        errors: list[Error] = []
        for line in stdout.splitlines():
            found = _LINE.match(line)
            if found is None:
                pytest.fail(f"unexpected mypy output line: {line!r}\n{stdout}", pytrace=False)
            if found["severity"] != "error":
                continue
            text = _CODE.match(found["text"])
            code, message = ("", found["text"]) if text is None else (text["code"], text["message"])
            path = (self.workdir / found["path"]).resolve()
            errors.append(Error(path, int(found["line"]), code, message))
        return MypyRun(tuple(p.resolve() for p in files), tuple(errors), stdout, status)


def declared_errors(path: Path) -> set[tuple[int, str]]:
    """The (line, code) pairs a fail file declares with ``# type: ignore[code, ...]``."""
    pairs: set[tuple[int, str]] = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        for found in _IGNORE.finditer(line):
            codes = [code.strip() for code in (found["codes"] or "").split(",") if code.strip()]
            assert codes, f"{path.name}:{number}: a bare `# type: ignore` must name its code"
            pairs.update((number, code) for code in codes)
    return pairs


def stripped(path: Path, into: Path) -> Path:
    """A copy of ``path`` in ``into`` without its ignores (same name, same line numbers)."""
    copy = into / path.name
    text = path.read_text(encoding="utf-8")
    copy.write_text(_IGNORE.sub("", text), encoding="utf-8")
    return copy.resolve()


def _show(errors: Sequence[Error] | set[tuple[int, str]]) -> str:
    return "\n".join(f"  {error}" for error in sorted(errors, key=str)) or "  (none)"


@pytest.fixture(scope="session")
def mypy(tmp_path_factory: pytest.TempPathFactory) -> Mypy:
    return Mypy(tmp_path_factory.mktemp("mypy"))


@pytest.fixture(scope="session")
def as_is(mypy: Mypy) -> MypyRun:
    """One run over every pass file and every fail file as written."""
    return mypy.run([*PASS_FILES, *FAIL_FILES])


@pytest.fixture(scope="session")
def without_ignores(mypy: Mypy) -> tuple[MypyRun, dict[Path, Path]]:
    """One run over the fail files with their ignores stripped; maps each original to its copy."""
    into = mypy.workdir / "stripped"
    into.mkdir()
    copies = {path: stripped(path, into) for path in FAIL_FILES}
    return mypy.run(list(copies.values())), copies


def test_there_are_cases() -> None:
    assert len(PASS_FILES) >= 3
    assert len(FAIL_FILES) >= 4
    names = [path.name for path in (*PASS_FILES, *FAIL_FILES)]
    assert len(set(names)) == len(names), "pass/ and fail/ file names must differ (module names)"


@pytest.mark.parametrize("path", PASS_FILES, ids=lambda path: path.name)
def test_pass_file_is_clean(as_is: MypyRun, path: Path) -> None:
    assert not declared_errors(path), f"{path.name} must not need a `# type: ignore`"
    errors = as_is.errors_in(path)
    assert not errors, f"mypy --strict rejects {path.name}:\n{_show(errors)}"


@pytest.mark.parametrize("path", FAIL_FILES, ids=lambda path: path.name)
def test_fail_file_is_clean_with_its_ignores(as_is: MypyRun, path: Path) -> None:
    """Every ignore is used, and names the code of what it hides."""
    assert declared_errors(path), f"{path.name} declares no expected error"
    errors = as_is.errors_in(path)
    assert not errors, (
        f"{path.name} as written is not clean (an `unused-ignore` means a negative case "
        f"stopped failing):\n{_show(errors)}"
    )


@pytest.mark.parametrize("path", FAIL_FILES, ids=lambda path: path.name)
def test_fail_file_errors_are_exactly_the_annotated_ones(
    without_ignores: tuple[MypyRun, dict[Path, Path]], path: Path
) -> None:
    run, copies = without_ignores
    errors = run.errors_in(copies[path])
    expected = declared_errors(path)
    reported = {(error.line, error.code) for error in errors}
    missing = sorted(expected - reported)
    unexpected = [error for error in errors if (error.line, error.code) not in expected]
    assert reported == expected, (
        f"{path.name}: expected errors not reported: {missing}\n"
        f"reported but not annotated:\n{_show(unexpected)}"
    )


@pytest.mark.parametrize("path", PASS_FILES, ids=lambda path: path.name)
def test_pass_file_runs(path: Path) -> None:
    """The pass cases are real bridges: they also run (against FakeHost) without error."""
    import runpy

    runpy.run_path(str(path), run_name="__main__")


@pytest.fixture(scope="session")
def snippets_run(mypy: Mypy) -> tuple[MypyRun, dict[str, Path]]:
    """One run over every doc snippet, each written out as a module of its own."""
    into = mypy.workdir / "snippets"
    into.mkdir()
    paths = {}
    for name, code in SNIPPETS:
        path = into / f"snippet_{name.replace('-', '_')}.py"
        path.write_text(code, encoding="utf-8")
        paths[name] = path.resolve()
    return mypy.run(list(paths.values())), paths


def test_docs_have_snippets() -> None:
    names = [name for name, _ in SNIPPETS]
    assert any(name.startswith("README") for name in names)
    assert sum(name.startswith("bridges") for name in names) >= 4


@pytest.mark.parametrize("name", [name for name, _ in SNIPPETS])
def test_doc_snippet_passes_strict(
    snippets_run: tuple[MypyRun, dict[str, Path]], name: str
) -> None:
    run, paths = snippets_run
    errors = run.errors_in(paths[name])
    code = dict(SNIPPETS)[name]
    assert not errors, f"doc snippet {name} fails mypy --strict:\n{_show(errors)}\n{code}"
    assert not run.stray_errors(), _show(run.stray_errors())


def test_no_errors_outside_the_cases(
    as_is: MypyRun, without_ignores: tuple[MypyRun, dict[Path, Path]]
) -> None:
    """Errors in anything the cases import (the SDK, the stubs) would make the cases moot."""
    stray = [*as_is.stray_errors(), *without_ignores[0].stray_errors()]
    assert not stray, f"mypy reports errors outside the typing cases:\n{_show(stray)}"
    assert as_is.status == 0, as_is.report
