"""agentbench-episode's `--device adb` -> the one online device, as seed 004's run_episode.py takes it, or a usage error that says why not."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_agentbench.agents.model.episode import EXIT_USAGE, main, the_one_online_device
from pytest_agentbench.errors import DeviceLost


class ListedDevices:
    def __init__(self, *devices: tuple[str, str], fails: bool = False) -> None:
        self.listed = [SimpleNamespace(serial=serial, state=state) for serial, state in devices]
        self.fails = fails

    def devices(self):
        if self.fails:
            raise DeviceLost("connection refused")
        return self.listed


@pytest.mark.parametrize(
    ("devices", "serial", "problem"),
    [
        ((("emulator-5554", "device"), ("R58M", "unauthorized")), "emulator-5554", ""),
        ((("R58M", "offline"),), None, "no online device (`adb devices` lists none); connect a phone or use --device sim"),
        ((("a", "device"), ("b", "device")), None, "2 online devices (a, b); name one with --device SERIAL"),
    ],
    ids=["one online", "none online", "two online"],
)
def test_the_one_online_device(devices, serial, problem) -> None:
    assert the_one_online_device(ListedDevices(*devices)) == (serial, problem)


def test_no_adb_server_is_said_with_the_fix() -> None:
    serial, problem = the_one_online_device(ListedDevices(fails=True))
    assert serial is None and "adb start-server" in problem


def test_device_adb_is_not_taken_for_a_serial(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_agentbench.agents.model import episode

    monkeypatch.setattr(episode, "Adb", lambda: ListedDevices(("a", "device"), ("b", "device")))
    assert main(["--task", "Turn on Wi-Fi.", "--device", "adb", "--model", "m"]) == EXIT_USAGE
    assert capsys.readouterr().err.strip() == "agentbench-episode: --device adb: 2 online devices (a, b); name one with --device SERIAL"
