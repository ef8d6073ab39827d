"""Preflight's rarer branches on the simulated phone, each shown passing and refusing.

`app.apkPath` installs and hash-checks the APK, a device without `sha256sum` stops the run, a
foreground user other than 0 is refused before anything is changed, and the agent CLI version
falls back to `--version` only when the stream names none.
"""

from __future__ import annotations

import hashlib
import stat
import sys
from pathlib import Path

import pytest
from phoneadb import PhoneAdb

from pytest_agentbench.baseline.server_build import agent_cli_version
from pytest_agentbench.errors import DeviceUnavailable, PreflightError
from pytest_agentbench.run.preflight import run_preflight
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.suite import AppSpec, PreflightSpec

PLAYGROUND = "dev.jasonpearson.automobile.playground"
NO_SETTLE = PreflightSpec(clear_app_data=True, shared_preferences={}, launch_uri=None, settle_seconds=0, start_screen_includes=())


def _apk(tmp_path: Path, package: str, version_code: int = 7) -> Path:
    # The simulated package manager reads a key=value manifest in place of a real APK.
    path = tmp_path / f"{package}.apk"
    path.write_text(f"package={package}\nversionName=2.{version_code}\nversionCode={version_code}\nlabel=Counter\n", encoding="utf-8")
    return path


def test_an_apk_is_installed_and_its_installed_base_apk_hash_checked(tmp_path: Path) -> None:
    adb = PhoneAdb(Phone())
    apk = _apk(tmp_path, "dev.agentbench.counter")
    result = run_preflight(adb, "sim", app=AppSpec("dev.agentbench.counter", apk), preflight=NO_SETTLE, run_dir=tmp_path / "run")
    sha = hashlib.sha256(apk.read_bytes()).hexdigest()
    assert result.app_build == {"versionName": "2.7", "versionCode": 7, "apkSha256": sha[:16]}
    assert adb.phone.packages["dev.agentbench.counter"].version_code == 7
    assert f"installed base APK matches sha256 {sha[:16]}" in (tmp_path / "run" / "preflight.log").read_text(encoding="utf-8")
    # The device was read in the same round trip as the install.
    assert result.device_fingerprint["sdk"] == "34"


def test_an_apk_built_for_another_package_is_refused(tmp_path: Path) -> None:
    adb = PhoneAdb(Phone())
    apk = _apk(tmp_path, "dev.agentbench.other")
    with pytest.raises(PreflightError, match=r"the installed base APK of dev\.jasonpearson\.automobile\.playground \([0-9a-f]{16}\) is not .*built for another package"):
        run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, apk), preflight=NO_SETTLE, run_dir=tmp_path / "run")


def test_a_device_without_sha256sum_stops_the_run(tmp_path: Path) -> None:
    phone = Phone()
    phone.fs.remove("/system/bin/sha256sum")
    assert phone.shell("sha256sum /system/bin/sh").exit_code == 127
    with pytest.raises(PreflightError, match="the device cannot hash the installed APK .*install the app yourself and remove app.apkPath"):
        run_preflight(PhoneAdb(phone), "sim", app=AppSpec("dev.agentbench.counter", _apk(tmp_path, "dev.agentbench.counter")),
                      preflight=NO_SETTLE, run_dir=tmp_path / "run")


@pytest.mark.parametrize("with_apk", [False, True], ids=["reset", "install"])
def test_a_foreground_user_other_than_0_is_refused_before_anything_changes(tmp_path: Path, with_apk: bool) -> None:
    phone = Phone()
    assert phone.shell("am switch-user 10").exit_code == 0
    phone.launch(PLAYGROUND)
    apk = _apk(tmp_path, PLAYGROUND, version_code=99) if with_apk else None
    adb = PhoneAdb(phone)
    with pytest.raises(DeviceUnavailable, match="the foreground user is 10, not the primary user 0.*am switch-user 0"):
        run_preflight(adb, "sim", app=AppSpec(PLAYGROUND, apk), preflight=NO_SETTLE, run_dir=tmp_path / "run")
    # Nothing was stopped, cleared or installed.
    assert PLAYGROUND in phone.runtimes
    assert phone.packages[PLAYGROUND].version_code != 99
    assert not any("pm clear" in command for command in phone.command_log if "grep" not in command)
    # And the primary user runs.
    phone.shell("am switch-user 0")
    run_preflight(PhoneAdb(phone), "sim", app=AppSpec(PLAYGROUND, None), preflight=NO_SETTLE, run_dir=tmp_path / "again")


def _cli(tmp_path: Path, body: str) -> str:
    path = tmp_path / "fake-claude"
    path.write_text(f"#!{sys.executable}\nimport sys\n{body}\n", encoding="utf-8")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize(
    ("stream_version", "body", "expected"),
    [
        ("2.1.197", "raise SystemExit('--version must not run when the stream names the CLI')", "2.1.197"),
        (None, "print('9.9.9 (Claude Code)')", "9.9.9"),
        (None, "sys.exit(2)", "unknown"),
        (None, "print('')", "unknown"),
    ],
    ids=["the stream's version wins", "fallback to --version", "--version fails", "--version prints nothing"],
)
def test_the_cli_version_falls_back_to_version_only_when_the_stream_names_none(tmp_path: Path, stream_version, body, expected) -> None:
    claude = _cli(tmp_path, body)
    cache: dict = {}
    assert agent_cli_version(stream_version, claude, cache) == expected
    assert agent_cli_version(stream_version, claude, cache) == expected  # cached, the same answer
    assert agent_cli_version(None, str(tmp_path / "missing-cli"), cache) == "unknown"
