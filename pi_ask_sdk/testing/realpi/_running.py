"""Context managers that start a Pi and always stop it, and a ready-made form."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

from typing_extensions import TypedDict, Unpack

from pi_ask_sdk.testing._params import AskParams
from pi_ask_sdk.testing.standin import StandinThread

from ._install import Flavour, PiEnv, install_pi, locate_pi
from ._process import PiProcess

__all__ = ["PiOptions", "RealPiOptions", "real_pi", "running_pi", "single_question"]


class RealPiOptions(TypedDict, total=False):
    """``PiProcess`` options (see there) that ``real_pi`` passes on."""

    shared_tmp: Path | None
    relay_dir: Path | None
    relay: bool
    test_host: bool
    standin: StandinThread | None
    present_single_as_multi: bool
    extra_env: Mapping[str, str] | None
    extra_args: Sequence[str]
    installed_packages: bool


class PiOptions(RealPiOptions, total=False):
    """Every ``PiProcess`` option after ``env`` and ``workdir`` (``running_pi`` passes them on)."""

    host_extension: Path | None


@contextmanager
def running_pi(env: PiEnv, workdir: Path, **options: Unpack[PiOptions]) -> Iterator[PiProcess]:
    """A started Pi whose relay listens (when loaded); always stopped afterwards."""
    pi = PiProcess(env, workdir, **options)
    try:
        pi.start()
        if pi.relay:
            pi.wait_socket()
        yield pi
    finally:
        pi.stop()


@contextmanager
def real_pi(
    *,
    flavour: Flavour = "current",
    cache_dir: Path | None = None,
    install: bool = True,
    host_extension: Path | None = None,
    **options: Unpack[RealPiOptions],
) -> Iterator[PiProcess]:
    """A real Pi with the relay and a host, in a private temporary directory; always stopped.

    Installs the pinned Pi into ``cache_dir`` first unless ``install=False`` (then it must be
    there). ``host_extension``: your own ``pi-agent-ask`` instead of the stand-in host.
    Other keyword arguments go to ``PiProcess``.
    """
    import tempfile

    env = install_pi(flavour, cache_dir) if install else locate_pi(flavour, cache_dir)
    # A short path: Unix socket paths are limited to about 100 bytes.
    with (
        tempfile.TemporaryDirectory(prefix="pi-ask-real-pi-") as tmp,
        running_pi(env, Path(tmp), host_extension=host_extension, **options) as pi,
    ):
        yield pi


def single_question(qid: str = "q", *, required: bool = False) -> AskParams:
    """A one-question single-choice form (ask_user input): options ``a`` (Alpha), ``b`` (Beta)."""
    return {
        "title": "Choose",
        "questions": [
            {
                "id": qid,
                "prompt": "Which one?",
                "required": required,
                "options": [
                    {"value": "a", "label": "Alpha"},
                    {"value": "b", "label": "Beta", "recommended": True},
                ],
            }
        ],
    }
