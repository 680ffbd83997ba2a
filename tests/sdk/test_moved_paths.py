"""The old import paths of the test tooling still work for one release, each with a
``DeprecationWarning`` naming the new path, and the pytest plugin is never registered twice.

Each check runs in a fresh interpreter: a shim warns when it is first imported, and this process
may have imported it already.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ENV = {
    **os.environ,
    "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
}

IMPORT_OLD = textwrap.dedent(
    """
    import warnings
    warnings.simplefilter("always")
    with warnings.catch_warnings(record=True) as seen:
        import {old} as old
    import {new} as new
    assert [w.category for w in seen] == [DeprecationWarning], [str(w.message) for w in seen]
    message = str(seen[0].message)
    assert "{old} is deprecated" in message and "import {new} instead" in message, message
    assert seen[0].filename == __file__, seen[0].filename  # the importing line, not importlib
    names = list(new.__all__)
    assert names and list(old.__all__) == names
    assert all(getattr(old, name) is getattr(new, name) for name in names)
    with warnings.catch_warnings(record=True) as again:
        import {old}
    assert again == [], "warns once"
    """
)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("pi_ask_sdk.standin", "pi_ask_sdk.testing.standin"),
        ("pi_ask_sdk.realpi", "pi_ask_sdk.testing.realpi"),
    ],
)
def test_an_old_module_path_resolves_with_a_warning(tmp_path: Path, old: str, new: str) -> None:
    script = tmp_path / "old_path.py"
    script.write_text(IMPORT_OLD.format(old=old, new=new))
    done = subprocess.run(
        [sys.executable, str(script)], env=ENV, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr


PLUGIN_TEST = textwrap.dedent(
    """
    def test_the_fixtures_are_there(pi_ask_host, pi_ask_order):
        assert pi_ask_host.order == pi_ask_order == "completed_first"
    """
)


@pytest.mark.parametrize("autoload", [True, False])
def test_a_conftest_naming_the_old_plugin_path_gets_the_plugin_once(
    tmp_path: Path, autoload: bool
) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["pi_ask_sdk.pytest_plugin"]\n')
    (tmp_path / "test_bridge.py").write_text(PLUGIN_TEST)
    env = dict(ENV)
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # only the conftest names the plugin
    else:
        env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-W", "always", "-rw"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    # registered twice, pytest would refuse the second registration or its options
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout
    assert "pi_ask_sdk.pytest_plugin is deprecated" in done.stdout
    assert "import pi_ask_sdk.testing.pytest_plugin instead" in done.stdout


def test_the_old_plugin_path_respects_no_pi_ask(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["pi_ask_sdk.pytest_plugin"]\n')
    (tmp_path / "test_bridge.py").write_text(PLUGIN_TEST)
    env = {**ENV, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:pi_ask"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "fixture 'pi_ask_host' not found" in done.stdout
