"""Issue 3's acceptance lines, run through the real adb command line against a simulated phone."""

from __future__ import annotations

import os

import pytest

from pytest_agentbench.device.uiautomator import parse_hierarchy


pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")

PLAYGROUND = "dev.jasonpearson.automobile.playground"
BUG_REPRO_LINK = "automobile://playground/demos/bugs/repro"


@pytest.fixture(scope="module")
def phone(module_adb_server):
    from pytest_agentbench.sim.fleet import SimFleet

    with SimFleet(count=1, adb=module_adb_server.client()) as fleet:
        yield fleet


@pytest.fixture
def adb_cli(phone, module_adb_server):
    serial = phone.serials[0]

    def run(*args: str, input_bytes: bytes | None = None):
        return module_adb_server.run_adb("-s", serial, *args, input_bytes=input_bytes)

    return run


def test_getprop_sdk_is_a_number(adb_cli):
    completed = adb_cli("shell", "getprop", "ro.build.version.sdk")
    assert completed.returncode == 0
    assert completed.stdout.strip().isdigit()


@pytest.mark.parametrize(("command", "exit_code"), [("true", 0), ("false", 1), ("nosuchcmd", 127)])
def test_shell_exit_codes(adb_cli, command, exit_code):
    assert adb_cli("shell", command).returncode == exit_code


def test_exec_out_uiautomator_dump_to_tty(adb_cli):
    completed = adb_cli("exec-out", "uiautomator", "dump", "/dev/tty")
    assert completed.returncode == 0
    assert completed.stdout.startswith(b"<?xml")
    assert b"<hierarchy" in completed.stdout
    assert completed.stdout.rstrip().endswith(b"UI hierchary dumped to: /dev/tty")


def test_push_pull_3mb_byte_identical(adb_cli, tmp_path):
    source = tmp_path / "big.bin"
    source.write_bytes(os.urandom(3 * 1024 * 1024))
    assert adb_cli("push", str(source), "/sdcard/big.bin").returncode == 0
    copy = tmp_path / "copy.bin"
    assert adb_cli("pull", "/sdcard/big.bin", str(copy)).returncode == 0
    assert copy.read_bytes() == source.read_bytes()


def test_exec_out_screencap_is_a_png(adb_cli):
    completed = adb_cli("exec-out", "screencap", "-p")
    assert completed.returncode == 0
    assert completed.stdout.startswith(b"\x89PNG\r\n\x1a\n")
    assert completed.stdout.endswith(b"IEND\xaeB`\x82")


def _dump(adb_cli):
    completed = adb_cli("exec-out", "uiautomator", "dump", "/dev/tty")
    assert completed.returncode == 0
    return parse_hierarchy(completed.stdout)


def _texts(nodes) -> list[str]:
    return [node.text for node in nodes if node.text]


def _open_link(adb_cli, uri: str) -> None:
    completed = adb_cli("shell", "am", "start", "-a", "android.intent.action.VIEW", "-d", uri)
    assert completed.returncode == 0, completed.stdout


PREFS = {
    "onboarding_prefs": '<boolean name="onboarding_completed" value="true" />',
    "auth_prefs": '<boolean name="is_authenticated" value="true" />',
}


def test_playground_bug_repro_flow(adb_cli, tmp_path):
    assert adb_cli("shell", "pm", "clear", PLAYGROUND).returncode == 0
    _open_link(adb_cli, BUG_REPRO_LINK)
    texts = _texts(_dump(adb_cli))
    assert "Bug Reproduction Demo" not in texts
    assert any("onboarding" in text.lower() or "welcome" in text.lower() for text in texts), texts

    for name, entry in PREFS.items():
        local = tmp_path / f"{name}.xml"
        local.write_text(f"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n    {entry}\n</map>\n")
        staged = f"/data/local/tmp/{name}.xml"
        assert adb_cli("push", str(local), staged).returncode == 0
        copied = adb_cli("shell", f"run-as {PLAYGROUND} mkdir -p shared_prefs && run-as {PLAYGROUND} cp {staged} shared_prefs/{name}.xml")
        assert copied.returncode == 0, copied.stdout
    _open_link(adb_cli, BUG_REPRO_LINK)
    nodes = _dump(adb_cli)
    texts = _texts(nodes)
    assert "Bug Reproduction Demo" in texts

    def tap(label: str) -> None:
        (node,) = [node for node in nodes if node.text == label or node.content_desc == label]
        x, y = node.center
        assert adb_cli("shell", "input", "tap", str(x), str(y)).returncode == 0

    tap("Enable Bug")
    nodes = _dump(adb_cli)
    tap("Add Item")
    texts = _texts(_dump(adb_cli))
    assert "Expected count: 1" in texts
    assert "Displayed count: 0" in texts
