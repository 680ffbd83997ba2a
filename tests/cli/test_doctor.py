"""pi-ask doctor: Pis whose relay listens elsewhere, Pis without the relay, and --json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_ask_sdk.cli.doctor import Check, doctor, run_checks
from pi_ask_sdk.cli.processes import PiProcessInfo, find_pi_processes


def private(path: Path) -> Path:
    path.mkdir(parents=True)
    path.chmod(0o700)
    return path


def by_what(checks: list[Check], what: str) -> Check:
    [found] = [check for check in checks if check.what == what]
    return found


def test_a_relay_in_another_directory_is_the_reason_nothing_is_found(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    pi = PiProcessInfo(4242, (theirs / "pi-4242.sock",), theirs)
    checks = run_checks(ours, [pi])
    check = by_what(checks, "pi 4242")
    assert check.status == "warn"
    detail = check.detail
    assert "If this is the Pi you mean to reach, run with" in detail
    assert f"its relay listens in {theirs}, but this shell looks in {ours}" in detail
    assert "(where no relay listens)" in detail
    assert f"PI_ASK_RELAY_DIR={theirs}" in detail
    assert f"--socket {theirs / 'pi-4242.sock'}" in detail
    assert "RelayTransport" not in detail  # CLI advice names CLI flags


def test_a_pi_without_the_relay_is_named_with_the_fix(tmp_path: Path) -> None:
    ours = private(tmp_path / "ours")
    checks = run_checks(ours, [PiProcessInfo(7, (), tmp_path / "elsewhere"), PiProcessInfo(8)])
    seven = by_what(checks, "pi 7")
    assert seven.status == "warn"
    assert "Pi (pid 7) runs without the relay" in seven.detail
    assert 'pi -e "$(pi-ask relay-path)"' in seven.detail
    assert f"selects the relay directory {tmp_path / 'elsewhere'}" in seven.detail
    eight = by_what(checks, "pi 8")
    assert "relay directory" not in eight.detail


def test_a_pi_whose_relay_is_here_adds_nothing(tmp_path: Path) -> None:
    ours = tmp_path / "ours"
    checks = run_checks(ours, [PiProcessInfo(9, (ours / "pi-9.sock",), ours)])
    assert not [check for check in checks if check.what == "pi 9"]


def test_without_proc_the_doctor_says_it_cannot_look(tmp_path: Path) -> None:
    checks = run_checks(tmp_path / "ours", None)
    assert by_what(checks, "pi processes").detail == ("cannot list processes here (no /proc)")
    assert find_pi_processes(tmp_path) is None


@pytest.mark.parametrize("ours_exists", [True, False])
def test_an_unrelated_pi_with_its_relay_elsewhere_is_a_warning_not_a_failure(
    tmp_path: Path, ours_exists: bool
) -> None:
    """Issue 27: another Pi (another user's sandbox, a CI job) whose relay listens in another
    directory is nothing wrong with this setup: doctor warns and exits 0 (it exited 1)."""
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    if ours_exists:
        private(ours)
    lines: list[str] = []
    pi = PiProcessInfo(4242, (theirs / "pi-4242.sock",), theirs)
    status = doctor(lines.append, ours, processes=[pi])
    failed = [line for line in lines if line.startswith("[fail]")]
    assert status == (1 if failed else 0), lines
    assert not [line for line in failed if "pi 4242" in line], lines
    assert [line for line in lines if line.startswith("[warn] pi 4242: relay directory mismatch")]


def test_json_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    lines: list[str] = []
    status = doctor(
        lines.append, ours, as_json=True, processes=[PiProcessInfo(5, (theirs / "pi-5.sock",))]
    )
    [text] = lines
    report = json.loads(text)
    failed = [check for check in report["checks"] if check["status"] == "fail"]
    assert status == (1 if failed else 0)
    assert report["ok"] is (not failed)
    assert report["relayDir"] == str(ours)
    assert {"status": "warn", "what": "pi 5"}.items() <= report["checks"][-1].items()
    assert all(set(check) == {"status", "what", "detail"} for check in report["checks"])


def test_find_pi_processes_reads_sockets_and_environment_from_proc(tmp_path: Path) -> None:
    """A fake /proc: a live process of ours titled ``pi`` that listens on a relay socket."""
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "net").mkdir()
    relay = private(tmp_path / "relay")
    pid = os.getppid()  # alive, and not this process
    entry = proc / str(pid)
    (entry / "fd").mkdir(parents=True)
    (entry / "comm").write_text("pi\n")
    (entry / "cmdline").write_bytes(b"pi\0\0\0")
    (entry / "environ").write_bytes(f"HOME=/x\0PI_ASK_RELAY_DIR={relay}\0".encode())
    os.symlink("socket:[424242]", entry / "fd" / "5")
    os.symlink("pipe:[1]", entry / "fd" / "6")
    other = proc / "1"  # not Pi
    (other / "fd").mkdir(parents=True)
    (other / "comm").write_text("init\n")
    (other / "cmdline").write_bytes(b"/sbin/init\0")
    sock = relay / f"pi-{pid}.sock"
    bound = relay / f".pi-{pid}.new"  # the name the relay bound, then renamed to sock
    (proc / "net" / "unix").write_text(
        "Num       RefCount Protocol Flags    Type St Inode Path\n"
        f"0000000000000000: 00000002 00000000 00010000 0001 01 424242 {bound}\n"
        "0000000000000000: 00000002 00000000 00000000 0001 03 424243 /tmp/not-listening\n"
    )
    assert find_pi_processes(proc) == [PiProcessInfo(pid, (sock,), relay)]


def test_find_pi_processes_on_this_machine_does_not_fail() -> None:
    found = find_pi_processes()
    if found is None:
        pytest.skip("no /proc on this system: nothing to list")
    assert os.getpid() not in [info.pid for info in found]  # this process is never listed


@pytest.mark.parametrize("exists", [True, False])
def test_a_directory_too_long_for_a_relay_socket_fails(tmp_path: Path, exists: bool) -> None:
    # a Pi's relay there disables itself: its socket path would not fit in 107 bytes
    long = tmp_path / ("d" * max(1, 100 - len(os.fsencode(tmp_path))))
    if exists:
        private(long)
    check = by_what(run_checks(long, []), "relay directory")
    assert check.status == "fail"
    assert "longer than the 107 bytes a Unix socket path may have" in check.detail
    assert "Set PI_ASK_RELAY_DIR to a shorter directory" in check.detail


def test_a_line_break_in_a_far_path_cannot_forge_a_check_line(tmp_path: Path) -> None:
    # A directory name may hold a line break; a Pi's relay directory (or a relay's cwd) is shown
    # on its own check's line, the break as an escape.
    ours, theirs = tmp_path / "ours", tmp_path / "x\n[  ok] answerers: 3"
    lines: list[str] = []
    doctor(lines.append, ours, processes=[PiProcessInfo(5, (theirs / "pi-5.sock",), theirs)])
    output = "\n".join(lines).splitlines()
    assert not [line for line in output if line.startswith("[  ok] answerers")]
    [pi_line] = [line for line in output if line.startswith("[warn] pi 5:")]
    assert "x\\n[  ok] answerers: 3" in pi_line
