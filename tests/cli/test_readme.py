"""The README's promises: its first lines are the two commands, its code example runs, and it
reads on PyPI (no relative links); the package metadata a registry shows is complete."""

from __future__ import annotations

import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

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


def _layout() -> list[tuple[str, str]]:
    """The README's layout tree as (entry, its text): an entry is a folder at the start of a
    line (``pi_ask_sdk/``, or ``  transports/`` under the entry above it) and its text runs to
    the next entry."""
    text = README.read_text(encoding="utf-8")
    block = text.split("## Layout", 1)[1].split("```", 2)[1]
    entries: list[tuple[str, str]] = []
    top = ""
    for line in block.splitlines():
        head = re.match(r"^( ?)( ?)(\w+/)(?=\s)", line)
        if head and not head.group(1):
            top = head.group(3)
            entries.append((top, line[head.end() :]))
        elif head and head.group(2):
            entries.append((top + head.group(3), line[head.end() :]))
        elif entries:
            entry, described = entries[-1]
            entries[-1] = (entry, described + "\n" + line)
    return entries


def test_every_file_and_folder_the_layout_names_exists() -> None:
    """Each ``name/``, ``name.py`` or ``folder/name.ts`` in an entry's text is inside that
    entry's folder."""
    entries = _layout()
    assert [entry for entry, _ in entries][:2] == ["pi_ask_core/", "pi_ask_sdk/"]
    path = r"(?<![\w./-])((?:[\w-]+/)*[\w-]+(?:/|\.(?:py|pyi|ts|md|json|sh)))(?![\w/.-])"
    named = [(entry, name) for entry, described in entries for name in re.findall(path, described)]
    assert len(named) > 20
    missing = [
        f"{entry}{name}" for entry, name in named if not (README.parent / entry / name).exists()
    ]
    assert missing == []
    assert [entry for entry, _ in entries if not (README.parent / entry).is_dir()] == []


def test_the_layout_names_every_subpackage_and_test_folder() -> None:
    entries = dict(_layout())
    packages = {
        f"pi_ask_sdk/{path.parent.name}/"
        for path in (README.parent / "pi_ask_sdk").glob("*/__init__.py")
    }
    assert sorted(packages - set(entries)) == [], "subpackages the layout does not name"
    folders = {
        f"{path.name}/"
        for path in (README.parent / "tests").iterdir()
        if path.is_dir() and path.name[0] not in "._"
    }
    named = set(re.findall(r"(?<![\w/])(\w+/)", entries["tests/"]))
    assert sorted(folders - named) == [], "test folders the layout does not name"


def test_where_a_change_goes_names_only_paths_that_exist() -> None:
    """The list after the tree: each path it quotes (NAME stands for the new one) is there."""
    section = README.read_text(encoding="utf-8").split("Where a change goes:", 1)[1]
    section = section.split("\n## ", 1)[0]
    for change in (
        "A new transport",
        "A new CLI flag",
        "A new question kind",
        "A new fleet feature",
        "A new test double",
    ):
        assert f"**{change}" in section
    paths = [p for p in re.findall(r"`([^`\s]+)`", section) if "/" in p]
    assert len(paths) > 10
    missing = [p for p in paths if not (README.parent / p.split("/NAME/")[0]).exists()]
    assert missing == []


def test_the_readme_says_how_long_the_test_command_takes_and_what_it_needs() -> None:
    section = README.read_text(encoding="utf-8").split("## Development", 1)[1]
    assert re.search(r"`bash scripts/test-all\.sh` takes about \d+ minutes", section)
    for script in ("install-pi.sh", "install-sshd.sh", "install-browser.sh"):
        assert f"`scripts/{script}`" in section
        assert (README.parent / "scripts" / script).is_file()
    for need in ("npm registry", "pyenv", "3.10", "3.13", "sshd", "Chromium"):
        assert need in section


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
