"""Tests for sim/fleet.py and sim/cli.py: phones attached to a real private adb server, and the agentbench-sim process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_agentbench.device.adb import Adb, AdbEndpoint
from pytest_agentbench.errors import DeviceUnavailable
from pytest_agentbench.sim import cli
from pytest_agentbench.sim.fleet import SimFleet

from adbserver import free_port, free_port_run

pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")


def _states(adb: Adb) -> dict[str, str]:
    return {info.serial: info.state for info in adb.devices()}


def test_fleet_attaches_phones_as_devices_and_detaches_them(private_adb_server):
    adb = private_adb_server.client()
    with SimFleet(count=2, adb=adb) as fleet:
        assert len(fleet.serials) == len(set(fleet.serials)) == 2
        assert all(serial.startswith("127.0.0.1:") for serial in fleet.serials)
        states = _states(adb)
        assert [states.get(serial) for serial in fleet.serials] == ["device", "device"]
        for serial, phone in zip(fleet.serials, fleet.phones):
            model = adb.shell(serial, ["getprop", "ro.product.model"]).stdout.strip()
            assert model == phone.banner_props["ro.product.model"]
        counts = fleet.command_counts()
        assert counts[fleet.serials[0]]["shell"] >= 1
    assert not set(fleet.serials) & set(_states(adb))
    fleet.stop()  # a second stop is harmless


def test_fleet_on_given_ports(private_adb_server):
    port = free_port()
    with SimFleet(count=1, adb=private_adb_server.client(), first_port=port) as fleet:
        assert fleet.serials == [f"127.0.0.1:{port}"]


def _wait_for_state(adb: Adb, serial: str, state: str, timeout_s: float = 15) -> None:
    deadline = time.monotonic() + timeout_s
    while _states(adb).get(serial) != state:
        assert time.monotonic() < deadline, f"{serial} never became {state}: {_states(adb)}"
        time.sleep(0.05)


def test_wait_online_reattaches_a_restarted_phone(private_adb_server):
    from pytest_agentbench.sim.transport import PhoneServer

    adb = private_adb_server.client()
    with SimFleet(count=1, adb=adb) as fleet:
        serial, port = fleet.serials[0], fleet.servers[0].port
        fleet.servers[0].stop()
        _wait_for_state(adb, serial, "offline")
        fleet.servers[0] = PhoneServer(fleet.phones[0], port=port).start()
        # adb may keep a restarted network device offline for 8-10 s; the fleet reconnects it if so.
        fleet.wait_online(timeout_s=20)
        assert _states(adb)[serial] == "device"
        assert adb.shell(serial, ["echo", "back"]).stdout == "back\n"


def test_wait_online_gives_up_with_the_states_it_saw(private_adb_server):
    adb = private_adb_server.client()
    with SimFleet(count=1, adb=adb) as fleet:
        fleet.servers[0].stop()
        _wait_for_state(adb, fleet.serials[0], "offline")
        with pytest.raises(DeviceUnavailable, match=f"{fleet.serials[0]} is (offline|missing)"):
            fleet.wait_online(timeout_s=0.5)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"count": 0}, "at least one phone"),
        ({"count": 1, "first_port": 5555}, "emulator range"),
        ({"count": 3, "first_port": 5552}, "emulator range"),
    ],
)
def test_fleet_rejects_bad_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        SimFleet(adb=Adb(AdbEndpoint("127.0.0.1", free_port())), **kwargs)


def test_fleet_that_cannot_start_an_adb_server_leaves_nothing_running(tmp_path):
    adb = Adb(AdbEndpoint("127.0.0.1", free_port()), adb_path=str(tmp_path / "no-adb-here"))
    with pytest.raises(DeviceUnavailable):
        SimFleet(count=1, adb=adb)


def test_fleet_latency_reaches_the_phone(private_adb_server):
    with SimFleet(count=1, latency_ms=5, adb=private_adb_server.client()) as fleet:
        assert all(server.latency_ms == 5 for server in fleet.servers)


# ---------------------------------------------------------------- the agentbench-sim command


@pytest.mark.parametrize(
    "argv",
    [["--port", "5560"], ["--port", "x"], ["--port", "70000"], ["--count", "0"], ["--latency-ms", "-1"], ["--latency-ms", "fast"]],
)
def test_cli_rejects_bad_options(argv, capsys):
    with pytest.raises(SystemExit) as raised:
        cli.build_parser().parse_args(argv)
    assert raised.value.code == 2
    assert "Invalid" in capsys.readouterr().err


def _cli_argv() -> list[str]:
    # The installed console script when there is one (what users run), else the module.
    script = Path(sys.executable).with_name("agentbench-sim")
    return [str(script)] if script.exists() else [sys.executable, "-m", "pytest_agentbench.sim.cli"]


def _start_cli(server, *args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [*_cli_argv(), *args],
        env=server.env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )


def _wait_for_file(path: Path, process: subprocess.Popen, timeout_s: float = 60) -> list[str]:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if process.poll() is not None:
            raise AssertionError(f"agentbench-sim exited {process.returncode}: {process.stderr.read()}")
        if time.monotonic() > deadline:
            raise AssertionError("agentbench-sim did not write its serial file")
        time.sleep(0.05)
    return path.read_text().split()


def _group_gone(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return True
    return False


@pytest.mark.parametrize("stop_signal", [signal.SIGTERM, signal.SIGINT])
def test_cli_serves_until_signalled_and_leaves_nothing_behind(private_adb_server, tmp_path, stop_signal):
    port = free_port_run(2)
    serial_file = tmp_path / "serials.txt"
    process = _start_cli(private_adb_server, "--port", str(port), "--count", "2", "--serial-file", str(serial_file), "--report-commands")
    try:
        serials = _wait_for_file(serial_file, process)
        assert serials == [f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"]
        connect = private_adb_server.run_adb("connect", f"127.0.0.1:{port}")
        assert b"connected to" in connect.stdout
        sdk = private_adb_server.run_adb("-s", serials[0], "shell", "getprop", "ro.build.version.sdk")
        assert sdk.returncode == 0 and sdk.stdout.strip().isdigit()
        process.send_signal(stop_signal)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    assert process.returncode == 0, stderr
    assert stdout.split() == serials
    assert f"{serials[0]}: " in stderr and "shell=" in stderr
    assert "getprop ro.build.version.sdk" in stderr  # --report-commands lists what was served
    assert _group_gone(process.pid)
    assert not serial_file.exists()
    assert not set(serials) & set(_states(private_adb_server.client()))


def test_cli_reports_a_busy_port(private_adb_server):
    with SimFleet(count=1, adb=private_adb_server.client()) as fleet:
        busy = fleet.servers[0].port
        completed = subprocess.run(
            [*_cli_argv(), "--port", str(busy)],
            env=private_adb_server.env(), capture_output=True, text=True, timeout=60,
        )
    assert completed.returncode == 1
    assert completed.stderr.startswith("agentbench-sim: ")


def test_cli_stops_the_adb_server_it_started(tmp_path):
    adb_port = free_port()
    env = {**os.environ, "ANDROID_ADB_SERVER_PORT": str(adb_port), "HOME": str(tmp_path)}
    env.pop("ADB_SERVER_SOCKET", None)
    env.pop("ANDROID_ADB_SERVER_ADDRESS", None)
    serial_file = tmp_path / "serials.txt"
    process = subprocess.Popen(
        [*_cli_argv(), "--serial-file", str(serial_file)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
    )
    client = Adb(AdbEndpoint("127.0.0.1", adb_port))
    try:
        _wait_for_file(serial_file, process)
        assert client.server_running(), "agentbench-sim starts an adb server when none listens"
        process.send_signal(signal.SIGTERM)
        process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
        if client.server_running():
            client.kill_server()
            pytest.fail("the adb server agentbench-sim started outlived it")
    assert process.returncode == 0
