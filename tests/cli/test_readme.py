"""The README's promises: its first lines are the two commands, its code example runs, and it
reads on PyPI (no relative links); the package metadata a registry shows is complete."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"


def test_first_lines_are_the_two_setup_commands() -> None:
    lines = README.read_text(encoding="utf-8").splitlines()
    block = lines[lines.index("```bash") + 1 : lines.index("```bash") + 3]
    assert lines.index("```bash") < 4
    assert block[0].split("#")[0].strip().endswith("pi-ask demo")
    assert block[1].split("#")[0].strip() == "bash scripts/test-all.sh"
    assert (README.parent / "scripts" / "test-all.sh").is_file()


def test_python_example_runs_and_answers_with_a_value(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    [code] = re.findall(r"```python\n(.*?)```", text, flags=re.S)
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "answered ['no']"


def test_no_link_is_relative_so_pypi_shows_no_dead_link() -> None:
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)]*)\)", text) + re.findall(r"(?:src|href)=\"([^\"]*)\"", text)
    assert targets, "the README links to Pi's npm page at least"
    assert [t for t in targets if not t.startswith(("https://", "http://", "#"))] == []


def test_every_guide_the_readme_names_is_shipped() -> None:
    named = set(re.findall(r"`pi-ask docs ([a-z-]+)`", README.read_text(encoding="utf-8")))
    assert named == {p.stem for p in (README.parent / "docs").glob("*.md")}


def test_license_file_and_metadata_agree() -> None:
    license_text = (README.parent / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License")
    meta = metadata.metadata("pi-ask-sdk")
    assert meta["License-Expression"] == "MIT"
    assert "LICENSE" in (meta.get_all("License-File") or [])


def test_classifiers_name_every_python_the_matrix_tests() -> None:
    classifiers = metadata.metadata("pi-ask-sdk").get_all("Classifier") or []
    versions = {c.rsplit(" ", 1)[1] for c in classifiers if re.fullmatch(r".*:: 3\.\d+", c)}
    tox = (README.parent / "tox.ini").read_text(encoding="utf-8")
    [env_list] = re.findall(r"^env_list = (.*)$", tox, flags=re.M)
    envs = set(re.findall(r"\bpy3(\d+)\b", env_list))
    assert versions == {f"3.{minor}" for minor in envs} == {"3.10", "3.11", "3.12", "3.13"}
    assert "Typing :: Typed" in classifiers
    assert any(c.startswith("Development Status ::") for c in classifiers)


def _layout_sections() -> dict[str, str]:
    """The README's layout block, split by its top-level entries (``pi_ask_core/`` ...)."""
    text = README.read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    sections: dict[str, str] = {}
    current = ""
    for line in block.splitlines():
        head = re.match(r"^(\S+/)\s", line)
        if head:
            current = head.group(1)
        sections[current] = sections.get(current, "") + line + "\n"
    return sections


@pytest.mark.parametrize("package", ["pi_ask_core", "pi_ask_sdk"])
def test_layout_names_every_module_and_only_modules_that_exist(package: str) -> None:
    root = README.parent / package
    described = _layout_sections()[f"{package}/"]
    modules = {
        path.name
        for path in root.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py") and "node_modules" not in path.parts
    }
    named = set(re.findall(r"\b(\w+\.py)\b", described))
    assert sorted(modules - named) == [], "modules the README's layout does not name"
    assert sorted(named - modules) == [], "modules the README's layout names that do not exist"
    folders = {path.name for path in root.rglob("*") if path.is_dir()}
    missing = set(re.findall(r"\b(\w+)/", described.split("/", 1)[1])) - folders
    assert sorted(missing) == [], "folders the README's layout names that do not exist"


def test_layout_names_every_test_folder() -> None:
    described = _layout_sections()["tests/"]
    folders = {
        path.name
        for path in (README.parent / "tests").iterdir()
        if path.is_dir() and path.name[0] not in "._"
    }
    # Each folder opens an item of the list (after "tests/" or a "·").
    named = set(re.findall(r"(?:^tests/|·)\s*(\w+)/", described, re.MULTILINE))
    assert sorted(folders - named) == [], "test folders the README's layout does not name"
    assert sorted(named - folders) == [], "test folders the README's layout names that do not exist"


PYPI = README.parent / "PYPI.md"


def test_the_long_description_starts_with_what_a_pip_user_does() -> None:
    """PyPI shows PYPI.md: first ``pip install pi-ask-sdk``, ``pi-ask demo``, ``pi-ask try``;
    nothing only a checkout has (``pip install -e .``, scripts/)."""
    meta = metadata.metadata("pi-ask-sdk")
    assert meta["Description-Content-Type"] == "text/markdown"
    description = meta.get_payload()  # type: ignore[attr-defined]
    assert isinstance(description, str)
    assert description.strip() == PYPI.read_text(encoding="utf-8").strip()
    lines = description.splitlines()
    block = lines[lines.index("```bash") + 1 : lines.index("```bash") + 4]
    assert lines.index("```bash") < 4
    assert [line.split("#")[0].strip() for line in block] == [
        "pip install pi-ask-sdk",
        "pi-ask demo",
        "pi-ask try",
    ]
    assert "-e ." not in description
    assert "scripts/" not in description
    targets = re.findall(r"\]\(([^)]*)\)", description)
    assert targets
    assert [t for t in targets if not t.startswith(("https://", "http://", "#"))] == []
    named = set(re.findall(r"`pi-ask docs ([a-z-]+)`", description))
    assert named == {p.stem for p in (README.parent / "docs").glob("*.md")}


def test_the_long_description_shows_the_readme_example() -> None:
    def example(path: Path) -> str:
        [code] = re.findall(r"```python\n(.*?)```", path.read_text(encoding="utf-8"), flags=re.S)
        return str(code)

    assert example(PYPI) == example(README)


def test_development_section_names_every_tox_env() -> None:
    section = README.read_text(encoding="utf-8").split("## Development", 1)[1]
    tox = (README.parent / "tox.ini").read_text(encoding="utf-8")
    [env_list] = re.findall(r"^env_list = (.*)$", tox, flags=re.M)
    envs = [env.strip() for env in env_list.split(",")]
    missing = [env for env in envs if f"`{env}`" not in section and not env.startswith("py3")]
    assert missing == []
    assert "`py310`-`py313`" in section


def test_metadata_publishes_no_guessed_address() -> None:
    # The project has no public address yet: what the package says about itself is true, and
    # its guides are reached with `pi-ask docs`, which the long description names.
    meta = metadata.metadata("pi-ask-sdk")
    assert meta.get_all("Project-URL") is None
    assert meta.get_all("Home-page") is None
    assert "`pi-ask docs NAME` prints one" in PYPI.read_text(encoding="utf-8")
