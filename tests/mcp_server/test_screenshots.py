"""Per-call screenshots: the file names and index, pairing them with the transcript, and the built-in server taking them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from test_mcp_server import PKG, CannedAdb, bug_screen, call, config, with_client

from pytest_agentbench.device.capture import png_problem
from pytest_agentbench.mcp_server import build_server
from pytest_agentbench.run.invocation import server_environment
from pytest_agentbench.servers import agentbench_profile, mobile_mcp_profile
from pytest_agentbench.servers.screenshots import INDEX_NAME, CallShot, pair_calls, read_index, screenshot_name


@pytest.mark.parametrize(
    ("order", "tool", "name"),
    [(1, "tapOn", "0001-tapOn.png"), (12345, "observe", "12345-observe.png"), (3, "../x y", "0003-___x_y.png"), (2, "", "0002-tool.png")],
    ids=["plain", "past-9999", "unsafe", "empty"],
)
def test_screenshot_names_keep_the_call_order(order: int, tool: str, name: str) -> None:
    assert screenshot_name(order, tool) == name


def _shot(order: int, tool: str, **arguments: Any) -> CallShot:
    return CallShot(order, tool, arguments, True, screenshot_name(order, tool))


@pytest.mark.parametrize(
    ("calls", "shots", "paired"),
    [
        ([("observe", {}), ("tapOn", {"text": "A"})], [_shot(1, "observe"), _shot(2, "tapOn", text="A")], [1, 2]),
        # The permissions stopped the middle call: the server never saw it.
        ([("observe", {}), ("tapOn", {"text": "A"}), ("observe", {})], [_shot(1, "observe"), _shot(2, "observe")], [1, None, 2]),
        # Claude's own tool and another server's tool are in the transcript only.
        ([("Bash", {"command": "ls"}), ("observe", {})], [_shot(1, "observe")], [None, 1]),
        # The same call twice pairs in order, each entry once.
        ([("tapOn", {"text": "A"}), ("tapOn", {"text": "A"})], [_shot(1, "tapOn", text="A"), _shot(2, "tapOn", text="A")], [1, 2]),
        # Arguments must agree, not only the tool.
        ([("tapOn", {"text": "B"})], [_shot(1, "tapOn", text="A")], [None]),
        ([("observe", {})], [], [None]),
    ],
    ids=["one-to-one", "denied-call", "not-this-server", "repeated-call", "other-arguments", "no-index"],
)
def test_calls_pair_with_the_servers_index_in_order(calls, shots, paired) -> None:
    assert [shot.order if shot else None for shot in pair_calls(calls, shots)] == paired


def test_a_damaged_index_line_is_skipped(tmp_path: Path) -> None:
    good = _shot(1, "observe").to_json()
    (tmp_path / INDEX_NAME).write_text(f"{good}\nnot json\n{{\"order\": \"x\"}}\n{_shot(2, 'tapOn', text='A').to_json()}", encoding="utf-8")
    assert [shot.order for shot in read_index(tmp_path)] == [1, 2]
    assert read_index(tmp_path / "missing") == []


@pytest.mark.parametrize(
    ("profile", "screenshots", "expected"),
    [(agentbench_profile(), True, "1"), (agentbench_profile(), False, None), (mobile_mcp_profile(), True, None)],
    ids=["asked", "not-asked", "server-cannot"],
)
def test_the_harness_asks_only_its_own_server_and_only_for_the_page(tmp_path: Path, profile, screenshots: bool, expected) -> None:
    env = server_environment(profile, run_dir=tmp_path, serial="s", server_instructions=False, environ={}, screenshots=screenshots)
    assert env.get("AGENTBENCH_SCREENSHOTS") == expected


def test_an_inherited_switch_is_scrubbed() -> None:
    assert agentbench_profile().scrubs("AGENTBENCH_SCREENSHOTS")


# ----------------------------------------------------------------------------- the built-in server


def test_the_server_photographs_the_phone_after_each_device_call(tmp_path: Path, sim_phone: Any) -> None:
    fleet, adb_server = sim_phone
    serial = fleet.serials[0]
    data = tmp_path / "data"
    base = dict(AGENTBENCH_DEVICE_SERIAL=serial, ANDROID_ADB_SERVER_PORT=str(adb_server.port), ANDROID_ADB_SERVER_ADDRESS="127.0.0.1",
                AGENTBENCH_DATA_DIR=str(data))
    screencaps = {}
    phone = fleet.phones[0]
    for switch in ("0", "1"):
        served = len(phone.command_log)
        adb = adb_server.client()
        server = build_server(config(tmp_path, AGENTBENCH_SCREENSHOTS=switch, **base), adb=adb)

        async def body(client: Client) -> list[tuple[bool, str]]:
            return [await call(client, "openLink", url="automobile://playground/demos/bugs/repro"),
                    await call(client, "listDevices"),
                    await call(client, "tapOn", text="Ad Item"),
                    await call(client, "tapOn", text="Add Item")]

        answers = with_client(server, body)
        screencaps[switch] = [command for command in phone.command_log[served:] if "screencap" in command]
        assert [error for error, _ in answers] == [False, False, True, False]
        if switch == "0":
            assert not (data / "screenshots").exists()
    shots = read_index(data / "screenshots")
    assert [(s.order, s.tool, s.ok, s.file) for s in shots] == [
        (1, "openLink", True, "0001-openLink.png"), (2, "listDevices", True, None),
        (3, "tapOn", False, "0003-tapOn.png"), (4, "tapOn", True, "0004-tapOn.png"),
    ]
    assert shots[2].arguments == {"text": "Ad Item"}
    for shot in shots:
        if shot.file:
            assert png_problem((data / "screenshots" / shot.file).read_bytes()) is None
    # One screencap round trip per device call, none for listDevices, none at all when off.
    assert screencaps["0"] == [] and len(screencaps["1"]) == 3, screencaps


def test_a_failed_screenshot_never_changes_the_answer(tmp_path: Path) -> None:
    adb = CannedAdb([bug_screen()])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL="127.0.0.1:40001", AGENTBENCH_SCREENSHOTS="1",
                                 AGENTBENCH_DATA_DIR=str(tmp_path / "data")), adb=adb)
    error, text = with_client(server, lambda client: call(client, "observe"))
    assert not error and '"Bug Reproduction Demo"' in text
    (shot,) = read_index(tmp_path / "data" / "screenshots")
    assert shot.file is None and "screenshot failed" in shot.problem
    assert json.loads((tmp_path / "data" / "screenshots" / INDEX_NAME).read_text())["problem"] == shot.problem
