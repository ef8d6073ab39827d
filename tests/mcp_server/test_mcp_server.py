"""Tests for agentbench-mcp: tool schemas, sentence errors, pinning, claims, stdio, and a simulated phone end to end."""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from pytest_agentbench.device import claims
from pytest_agentbench.device.adb import Adb, AdbEndpoint, DeviceInfo, ShellResult
from pytest_agentbench.device.shellscript import as_script
from pytest_agentbench.errors import DeviceError
from pytest_agentbench.mcp_server import ServerConfig, build_server

DEVICE_TOOLS = {"observe", "tapOn", "inputText", "swipeOn", "pressButton", "launchApp", "terminateApp",
                "openLink", "homeScreen", "readLogs"}
PKG = "dev.jasonpearson.automobile.playground"
SERIAL = "127.0.0.1:40001"


def _node(text: str = "", *, cls: str = "android.widget.TextView", rid: str = "", bounds: str,
          clickable: bool = False, checkable: bool = False, checked: bool = False, focused: bool = False,
          pkg: str = PKG, children: str = "") -> str:
    flag = lambda value: "true" if value else "false"
    attrs = (
        f'index="0" text="{text}" resource-id="{rid}" class="{cls}" package="{pkg}" content-desc="" '
        f'checkable="{flag(checkable)}" checked="{flag(checked)}" clickable="{flag(clickable)}" enabled="true" '
        f'focusable="{flag(clickable or focused)}" focused="{flag(focused)}" scrollable="false" '
        f'long-clickable="false" password="false" selected="false" bounds="{bounds}"'
    )
    return f"<node {attrs}>{children}</node>" if children else f"<node {attrs} />"


def bug_screen(expected: int = 0, displayed: int = 0, bug: bool = False, *, field_focused: bool = False,
               clock: str = "12:30") -> bytes:
    """A bug-repro screen as `exec:` returns it: focus lines, the marker, the dump, the device's trailer."""
    body = (
        _node("Bug Reproduction Demo", bounds="[42,84][1038,254]")
        + _node("Enable Bug", cls="android.widget.Switch", rid=f"{PKG}:id/bug_toggle", clickable=True,
                checkable=True, checked=bug, bounds="[0,254][1080,434]")
        + _node("Add Item", cls="android.widget.Button", rid=f"{PKG}:id/add_item", clickable=True,
                bounds="[42,434][1038,584]")
        + _node("Reset", cls="android.widget.Button", clickable=True, bounds="[42,584][1038,734]")
        + _node(f"Expected count: {expected}", bounds="[42,734][1038,844]")
        + _node(f"Displayed count: {displayed}", bounds="[42,844][1038,954]")
        + _node("", cls="android.widget.EditText", rid=f"{PKG}:id/note", clickable=True, focused=field_focused,
                bounds="[42,954][1038,1124]")
    )
    status = _node(clock, pkg="com.android.systemui", bounds="[42,0][200,63]")
    root = _node(cls="android.widget.FrameLayout", bounds="[0,0][1080,2400]", children=body)
    xml = (f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{status}{root}"
           "</hierarchy>UI hierchary dumped to: /dev/tty")
    focus = f"  mCurrentFocus=Window{{2c1 u0 {PKG}/{PKG}.MainActivity}}\n"
    return (focus + "__agentbench_dump__\n" + xml).encode()


class CannedAdb(Adb):
    """The device-layer choke point with canned answers: screens in order, shell commands recorded."""

    def __init__(self, screens: list[bytes], devices: list[tuple[str, str]] | None = None,
                 shell_output: dict[str, ShellResult] | None = None) -> None:
        super().__init__(AdbEndpoint("127.0.0.1", 1))
        self.screens = list(screens)
        self.device_list = devices if devices is not None else [(SERIAL, "device")]
        self.shell_output = shell_output or {}
        self.commands: list[str] = []

    def devices(self) -> list[DeviceInfo]:
        return [DeviceInfo(serial, state) for serial, state in self.device_list]

    def exec_out(self, serial: str, args: Any, *, timeout_s: float = 30) -> bytes:
        self.commands.append(f"{serial} exec {as_script(args).text}")
        return self.screens.pop(0) if len(self.screens) > 1 else self.screens[0]

    def shell(self, serial: str, args: Any, *, timeout_s: float = 30, check: bool = True) -> ShellResult:
        text = as_script(args).text
        self.commands.append(f"{serial} shell {text}")
        result = self.shell_output.get(text.split(" ")[0], ShellResult("", 0))
        if check and result.exit_code:
            raise DeviceError(f"`{text}` exited {result.exit_code}", command=text, output=result.stdout,
                              exit_code=result.exit_code)
        return result

    def actions(self) -> list[str]:
        return [command.split(" shell ", 1)[1] for command in self.commands if " shell " in command]


def config(tmp_path: Path, **env: str) -> ServerConfig:
    base = {"AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path / "claims"), "ANDROID_ADB_SERVER_PORT": "1"}
    return ServerConfig.from_environ({**base, **env})


def with_client(server: Any, body: Callable[[Client], Awaitable[Any]]) -> Any:
    async def run() -> Any:
        async with Client(server) as client:
            return await body(client)

    return asyncio.run(run())


async def call(client: Client, tool: str, **arguments: Any) -> tuple[bool, str]:
    result = await client.call_tool(tool, arguments)
    return bool(result.is_error), "\n".join(block.text for block in result.content)


# ---------------------------------------------------------------------------- schema


def test_exactly_the_device_tools_have_a_string_device_property(tmp_path: Path) -> None:
    server = build_server(config(tmp_path), adb=CannedAdb([bug_screen()]))

    async def body(client: Client) -> dict[str, dict]:
        return {tool.name: tool.input_schema for tool in (await client.list_tools()).tools}

    schemas = with_client(server, body)
    assert set(schemas) == DEVICE_TOOLS | {"listDevices"}
    with_device = {name for name, schema in schemas.items()
                   if schema.get("properties", {}).get("device", {}).get("type") == "string"}
    assert with_device == DEVICE_TOOLS
    assert "device" not in schemas["listDevices"].get("properties", {})


@pytest.mark.parametrize(("flag", "expected"), [("", False), ("0", False), ("1", True)])
def test_instructions_block_only_when_asked(tmp_path: Path, flag: str, expected: bool) -> None:
    server = build_server(config(tmp_path, AGENTBENCH_MCP_INSTRUCTIONS=flag), adb=CannedAdb([bug_screen()]))

    async def body(client: Client) -> str | None:
        return client.instructions

    instructions = with_client(server, body)
    assert bool(instructions) is expected
    if expected:
        assert "observe" in instructions


# ---------------------------------------------------------------------------- bad calls

BAD_CALLS = [
    ("observe", {"device": "emulator-9"}, "device 'emulator-9' is not available; this server is pinned to 127.0.0.1:40001"),
    ("tapOn", {"index": 42}, "index 42 is out of range: the last observe listed 8 elements (0-7); call observe again"),
    ("tapOn", {"index": -1}, "index -1 is out of range"),
    ("tapOn", {"text": "Ad Item"}, "no element with text 'Ad Item'; did you mean 'Add Item'?; visible texts: 12:30, Bug Reproduction Demo, Enable Bug, Add Item, Reset"),
    ("tapOn", {"id": "nope"}, "no element with id 'nope'; ids on screen: add_item, bug_toggle, note"),
    ("tapOn", {}, "tapOn needs one of index, text or id"),
    ("tapOn", {"index": 1, "text": "Reset"}, "tapOn takes only one of index, text, id, but got index and text"),
    ("tapOn", {"index": "first"}, "malformed arguments for tapOn: index: input should be a valid integer"),
    ("tapOn", {"txt": "Reset"}, "malformed arguments for tapOn: unknown argument 'txt'; tapOn takes index, text, id, device"),
    ("tapOn", {"x": 5}, "tapOn at a point needs both x and y"),
    ("tapOn", {"x": 5, "y": 5, "index": 1}, "tapOn takes either a point (x, y) or one of index, text, id, not both"),
    ("tapOn", {"x": -1, "y": 5}, "point -1,5 is off the screen; x and y are pixels from the top left corner"),
    ("tapOn", {"x": 5000, "y": 5}, "point 5000,5 is off the screen, which is 1080x"),
    ("pressButton", {"button": "bak"}, "malformed arguments for pressButton: button: input should be 'back'"),
    ("pressButton", {}, "malformed arguments for pressButton: button: field required"),
    ("swipeOn", {"direction": "up", "fromX": 1}, "swipeOn takes either direction or fromX/fromY/toX/toY, not both"),
    ("swipeOn", {"fromX": 1}, "swipeOn needs a direction"),
    ("launchApp", {"packageName": "rm -rf"}, "'rm -rf' is not a package name"),
    ("openLink", {"url": "not a url"}, "'not a url' is not a URL"),
    ("inputText", {"text": "hi"}, "no text field is focused; pass the index or id of the field to type into"),
    ("inputText", {"text": ""}, "inputText needs a non-empty text"),
    ("listDevices", {"device": SERIAL}, "malformed arguments for listDevices: unknown argument 'device'; listDevices takes no arguments"),
]


@pytest.mark.parametrize(("tool", "arguments", "sentence"), BAD_CALLS, ids=[f"{t}-{i}" for i, (t, _, _) in enumerate(BAD_CALLS)])
def test_bad_calls_are_sentences_and_the_server_keeps_serving(tmp_path: Path, tool: str, arguments: dict, sentence: str) -> None:
    adb = CannedAdb([bug_screen()])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)

    async def body(client: Client) -> tuple[tuple[bool, str], tuple[bool, str]]:
        await call(client, "observe")
        bad = await call(client, tool, **arguments)
        return bad, await call(client, "observe")

    (is_error, text), (next_error, next_text) = with_client(server, body)
    assert is_error, text
    assert text.startswith(sentence), text
    assert "Traceback" not in text and "Error executing tool" not in text
    assert not next_error and "Bug Reproduction Demo" in next_text
    assert not any(a.startswith("input") for a in adb.actions()), "a refused call must not touch the phone"


def test_failed_launch_lists_installed_apps(tmp_path: Path) -> None:
    adb = CannedAdb([bug_screen()], shell_output={
        "monkey": ShellResult("** No activities found to run, monkey aborted.\n", 252),
        "pm": ShellResult(f"package:android\npackage:com.android.settings\npackage:{PKG}\n", 0),
    })
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, text = with_client(server, lambda client: call(client, "launchApp", packageName="com.example.missing"))
    assert is_error
    assert text == (f"app 'com.example.missing' is not installed or has no launcher activity; installed apps: "
                    f"com.android.settings, {PKG}")


def test_a_refused_command_becomes_a_sentence(tmp_path: Path) -> None:
    adb = CannedAdb([bug_screen()], shell_output={"input": ShellResult("Error: Injecting to another application requires INJECT_EVENTS permission", 1)})
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, text = with_client(server, lambda client: call(client, "pressButton", button="back"))
    assert is_error
    assert text == ("the device refused `input keyevent KEYCODE_BACK` (exit 1): "
                    "Error: Injecting to another application requires INJECT_EVENTS permission")


# ---------------------------------------------------------------------------- actions


@pytest.mark.parametrize(
    ("arguments", "tap"),
    [
        ({"text": "Add Item"}, "input tap 540 509"),
        ({"text": "add item"}, "input tap 540 509"),         # case-insensitive only as a fallback
        ({"id": "bug_toggle"}, "input tap 540 344"),
        ({"id": f"{PKG}:id/bug_toggle"}, "input tap 540 344"),
        ({"index": 3}, "input tap 540 509"),                 # 0 clock, 1 title, 2 switch, 3 Add Item
        ({"text": "Expected count: 0"}, "input tap 540 789"),
    ],
)
def test_tap_targets_map_to_the_dump_bounds(tmp_path: Path, arguments: dict, tap: str) -> None:
    adb = CannedAdb([bug_screen(), bug_screen(), bug_screen(1, 1)])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)

    async def body(client: Client) -> tuple[bool, str]:
        await call(client, "observe")
        return await call(client, "tapOn", **arguments)

    is_error, text = with_client(server, body)
    assert not is_error, text
    assert adb.actions() == [tap]


def test_action_reports_the_new_screen_or_that_nothing_changed(tmp_path: Path) -> None:
    # observe, tapOn's fresh look, the look after the tap; then Reset sees the last screen stay.
    adb = CannedAdb([bug_screen(), bug_screen(), bug_screen(1, 1)])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)

    async def body(client: Client) -> list[tuple[bool, str]]:
        return [await call(client, "observe"), await call(client, "tapOn", text="Add Item"),
                await call(client, "tapOn", text="Reset")]

    observed, changed, unchanged = with_client(server, body)
    assert observed[1].splitlines()[0] == f"foreground: {PKG}/.MainActivity"
    assert changed[1].startswith('tapped Button "Add Item" at 540,509; the screen now shows:\nforeground:')
    assert '"Expected count: 1"' in changed[1]
    assert unchanged[1] == 'tapped Button "Reset" at 540,659; the screen did not change'


def test_raw_observe_and_tap_at_a_point_for_agents_that_build_their_own_list(tmp_path: Path) -> None:
    # agentbench-agent's path: the raw tree, then a tap at the point it computed from it.
    adb = CannedAdb([bug_screen(), bug_screen(1, 1)])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)

    async def body(client: Client) -> list[tuple[bool, str]]:
        return [await call(client, "observe", raw=True), await call(client, "tapOn", x=540, y=509)]

    (raw_error, raw), (tap_error, tapped) = with_client(server, body)
    assert not raw_error and raw.startswith(f"foreground: {PKG}/.MainActivity\n<?xml")
    assert raw.endswith("</hierarchy>"), "the device's trailing status text is cut off"
    assert not tap_error and tapped.startswith("tapped 540,509; the screen now shows:")
    assert adb.actions() == ["input tap 540 509"]


def test_a_status_bar_clock_tick_is_not_a_change(tmp_path: Path) -> None:
    adb = CannedAdb([bug_screen(), bug_screen(clock="12:31")])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)

    async def body(client: Client) -> tuple[bool, str]:
        await call(client, "observe")
        return await call(client, "tapOn", index=4)

    assert with_client(server, body) == (False, 'tapped Button "Reset" at 540,659; the screen did not change')


@pytest.mark.parametrize(
    ("text", "command"),
    [
        ("hello world", "input text hello%sworld"),
        ("a'b; rm -rf /", "input text 'a'\"'\"'b;%srm%s-rf%s/'"),
        ("$(reboot)", "input text '$(reboot)'"),
    ],
)
def test_input_text_escapes_spaces_and_shell_characters(tmp_path: Path, text: str, command: str) -> None:
    adb = CannedAdb([bug_screen(field_focused=True)])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, _ = with_client(server, lambda client: call(client, "inputText", text=text))
    assert not is_error
    assert adb.actions() == [command]


def test_input_text_into_a_field_taps_it_first_in_one_round_trip(tmp_path: Path) -> None:
    adb = CannedAdb([bug_screen()])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, _ = with_client(server, lambda client: call(client, "inputText", text="x", id="note"))
    assert not is_error
    assert adb.actions() == ["input tap 540 1039 && input text x"]


@pytest.mark.parametrize(
    ("arguments", "command"),
    [
        ({"direction": "up"}, "input swipe 540 1920 540 480 300"),
        ({"direction": "left"}, "input swipe 864 1200 216 1200 300"),
        ({"fromX": 1, "fromY": 2, "toX": 3, "toY": 4}, "input swipe 1 2 3 4 300"),
    ],
)
def test_swipes(tmp_path: Path, arguments: dict, command: str) -> None:
    adb = CannedAdb([bug_screen()])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, _ = with_client(server, lambda client: call(client, "swipeOn", **arguments))
    assert not is_error
    assert adb.actions() == [command]


@pytest.mark.parametrize(
    ("tool", "arguments", "command"),
    [
        ("pressButton", {"button": "enter"}, "input keyevent KEYCODE_ENTER"),
        ("homeScreen", {}, "input keyevent KEYCODE_HOME"),
        ("launchApp", {"packageName": PKG}, f"monkey -p {PKG} -c android.intent.category.LAUNCHER 1"),
        ("terminateApp", {"packageName": PKG}, f"am force-stop {PKG}"),
        ("openLink", {"url": "automobile://playground/demos"},
         "am start -a android.intent.action.VIEW -d automobile://playground/demos"),
        ("readLogs", {"tag": "Courier"}, "logcat -d -v threadtime -s Courier"),
    ],
)
def test_commands_sent_for_each_tool(tmp_path: Path, tool: str, arguments: dict, command: str) -> None:
    adb = CannedAdb([bug_screen()])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, text = with_client(server, lambda client: call(client, tool, **arguments))
    assert not is_error, text
    assert adb.actions() == [command]


# ---------------------------------------------------------------------------- devices and claims


@pytest.mark.parametrize(
    ("devices", "device", "outcome"),
    [
        ([(SERIAL, "device")], "", "ok"),
        ([(SERIAL, "device"), ("emulator-5554", "device")], "", "several devices are online (127.0.0.1:40001, emulator-5554); pass one of them as device"),
        ([(SERIAL, "device"), ("emulator-5554", "device")], SERIAL, "ok"),
        ([(SERIAL, "offline")], SERIAL, "device '127.0.0.1:40001' is not online; online devices: none; call listDevices"),
        ([], "", "no device is online; connect one and call listDevices"),
    ],
)
def test_unpinned_server_resolves_the_device(tmp_path: Path, devices: list, device: str, outcome: str) -> None:
    server = build_server(config(tmp_path), adb=CannedAdb([bug_screen()], devices=devices))
    is_error, text = with_client(server, lambda client: call(client, "observe", device=device))
    if outcome == "ok":
        assert not is_error and "Add Item" in text
    else:
        assert is_error and text == outcome


@pytest.mark.parametrize(
    ("pinned", "expected"),
    [
        (SERIAL, "127.0.0.1:40001 device (this server serves only this device)"),
        ("emulator-5556", "emulator-5556 not connected (this server serves only this device)"),
        ("", "127.0.0.1:40001 device\nemulator-5554 offline"),
    ],
)
def test_list_devices_shows_only_the_pinned_phone(tmp_path: Path, pinned: str, expected: str) -> None:
    adb = CannedAdb([bug_screen()], devices=[(SERIAL, "device"), ("emulator-5554", "offline")])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=pinned), adb=adb)
    assert with_client(server, lambda client: call(client, "listDevices")) == (False, expected)


def test_claim_taken_at_first_device_call_and_released_at_exit(tmp_path: Path) -> None:
    cfg = config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL, AGENTBENCH_SOCKET_DIR=str(tmp_path / "sock"))
    server = build_server(cfg, adb=CannedAdb([bug_screen()]))
    path = claims.claim_path(SERIAL, scope=cfg.endpoint.scope, root=cfg.claim_root)

    async def body(client: Client) -> tuple[bool, bool, list[str]]:
        await call(client, "listDevices")
        before = path.exists()
        await call(client, "observe")
        return before, path.exists(), path.read_text().splitlines()

    before, during, lines = with_client(server, body)
    assert (before, during) == (False, True)
    assert lines[0] == str(os.getpid())
    assert str(tmp_path / "sock") in lines[2]
    assert not path.exists()


def test_a_device_held_by_another_session_is_refused(tmp_path: Path) -> None:
    cfg = config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL)
    adb = CannedAdb([bug_screen()])
    other = claims.acquire_claim(SERIAL, scope=cfg.endpoint.scope, root=cfg.claim_root, socket_path="/tmp/other.sock")
    try:
        server = build_server(cfg, adb=adb)
        is_error, text = with_client(server, lambda client: call(client, "observe"))
        assert other.still_held()
    finally:
        other.release()
    assert is_error
    assert text.startswith(f"device {SERIAL} is held by another session")
    assert text.endswith("This server cannot use the device until that session ends.")
    assert adb.commands == []


# ---------------------------------------------------------------------------- stdio


def test_stdio_server_lists_tools_answers_errors_and_logs(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "AGENTBENCH_DEVICE_SERIAL": SERIAL,
        "AGENTBENCH_LOG_DIR": str(tmp_path / "logs"),
        "AGENTBENCH_DATA_DIR": str(tmp_path / "data"),
        "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path / "claims"),
        "ANDROID_ADB_SERVER_PORT": "1",
    }
    params = StdioServerParameters(command=sys.executable, args=["-m", "pytest_agentbench.mcp_server"], env=env)

    async def body(client: Client) -> tuple[set[str], tuple[bool, str], tuple[bool, str]]:
        names = {tool.name for tool in (await client.list_tools()).tools}
        return names, await call(client, "observe", device="emulator-9"), await call(client, "listDevices")

    names, refused, listing = with_client(params, body)
    assert names == DEVICE_TOOLS | {"listDevices"}
    assert refused == (True, f"device 'emulator-9' is not available; this server is pinned to {SERIAL}")
    assert listing[0] and "adb server" in listing[1]
    log = (tmp_path / "logs" / "agentbench-mcp.log").read_text()
    assert "agentbench-mcp starting" in log and "emulator-9" in log
    assert (tmp_path / "data").is_dir()


# ---------------------------------------------------------------------------- simulated phone, end to end


def _line(observe_text: str, needle: str) -> str:
    """The element line mentioning needle (an action result's first line is its summary, not an element)."""
    return next(line for line in observe_text.splitlines() if needle in line and line[:1].isdigit())


def test_bug_repro_end_to_end_on_the_simulated_phone(tmp_path: Path, sim_phone: Any) -> None:
    fleet, adb_server = sim_phone
    serial = fleet.serials[0]
    cfg = config(tmp_path, AGENTBENCH_DEVICE_SERIAL=serial, ANDROID_ADB_SERVER_PORT=str(adb_server.port),
                 ANDROID_ADB_SERVER_ADDRESS="127.0.0.1")
    adb = adb_server.client()
    server = build_server(cfg, adb=adb)

    async def body(client: Client) -> dict[str, tuple[bool, str]]:
        steps = {"open": await call(client, "openLink", url="automobile://playground/demos/bugs/repro"),
                 "observe": await call(client, "observe")}
        trips = adb.round_trips
        steps["bug"] = await call(client, "tapOn", text="Enable Bug")
        steps["bug_trips"] = (False, str(adb.round_trips - trips))
        steps["add"] = await call(client, "tapOn", text="Add Item")
        steps["again"] = await call(client, "tapOn", text="add item")
        steps["devices"] = await call(client, "listDevices")
        steps["wrong"] = await call(client, "tapOn", text="Ad Item")
        steps["final"] = await call(client, "observe")
        return steps

    steps = with_client(server, body)
    assert {name for name, (error, _) in steps.items() if error} == {"wrong"}, steps
    observed = steps["observe"][1]
    assert observed.splitlines()[0].startswith(f"foreground: {PKG}/")
    assert '"Bug Reproduction Demo"' in observed and "<node" not in observed
    assert "Switch:unchecked" in _line(observed, '"Enable Bug"')
    assert "Switch:checked" in _line(steps["bug"][1], '"Enable Bug"')
    # tapOn by text: a fresh dump, the tap, the dump after it.
    assert int(steps["bug_trips"][1]) == 3
    final = steps["final"][1]
    assert '"Expected count: 2"' in final and '"Displayed count: 0"' in final
    assert '"Status: Bug triggered: UI did not update"' in final
    assert steps["devices"] == (False, f"{serial} device (this server serves only this device)")
    assert steps["wrong"][0] and "did you mean 'Add Item'?" in steps["wrong"][1]


def test_stdio_server_drives_the_phone_and_releases_its_claim(tmp_path: Path, sim_phone: Any) -> None:
    fleet, adb_server = sim_phone
    serial = fleet.serials[0]
    env = {**adb_server.env(), "AGENTBENCH_DEVICE_SERIAL": serial,
           "AUTOMOBILE_ADB_SERVER_COORDINATION_DIR": str(tmp_path / "claims"),
           "AGENTBENCH_LOG_DIR": str(tmp_path / "logs")}
    cfg = ServerConfig.from_environ(env)
    claim = claims.claim_path(serial, scope=cfg.endpoint.scope, root=cfg.claim_root)
    params = StdioServerParameters(command=sys.executable, args=["-m", "pytest_agentbench.mcp_server"], env=env)

    async def body(client: Client) -> tuple[tuple[bool, str], tuple[bool, str], bool]:
        launched = await call(client, "launchApp", packageName="com.android.settings")
        unchanged = await call(client, "launchApp", packageName="com.android.settings")
        return launched, unchanged, claim.exists()

    launched, unchanged, held = with_client(params, body)
    assert launched[0] is False and '"Network & internet"' in launched[1]
    assert unchanged == (False, "launched com.android.settings; the screen did not change")
    assert held
    assert not claim.exists(), "the claim must be released when the server exits"


# ---------------------------------------------------------------------------- several matches (issue 19 F)


def search_screen(*, rows: tuple[str, ...] = ("London",)) -> bytes:
    """Clock's city search after typing "London": the field holds the text, result rows below it."""
    body = _node("London", cls="android.widget.EditText", rid=f"{PKG}:id/city_search", clickable=True, focused=True,
                 bounds="[0,200][1080,350]")
    for number, row in enumerate(rows):
        top = 400 + number * 150
        body += _node(row, cls="android.widget.TextView", clickable=True, bounds=f"[0,{top}][1080,{top + 150}]")
    root = _node(cls="android.widget.FrameLayout", bounds="[0,0][1080,2400]", children=body)
    xml = (f"<?xml version='1.0' encoding='UTF-8' standalone='yes' ?><hierarchy rotation=\"0\">{root}"
           "</hierarchy>")
    focus = f"  mCurrentFocus=Window{{2c1 u0 {PKG}/{PKG}.MainActivity}}\n"
    return (focus + "__agentbench_dump__\n" + xml).encode()


def _ui(text: str, cls: str = "android.widget.TextView", *, y: int = 0, pkg: str = PKG, clickable: bool = False):
    from pytest_agentbench.device.uiautomator import UiNode
    return UiNode(0, text, "", "", cls, pkg, False, False, clickable, True, clickable, False, False, False, False, False,
                  (0, y, 100, y + 50))


FIELD = _ui("London", "android.widget.EditText", y=0, clickable=True)
ROW = _ui("London", y=100, clickable=True)
ROW_TEXT = _ui("London", y=200)
OTHER_ROW = _ui("London", y=300, clickable=True)
SYSTEM = _ui("London", y=400, pkg="com.android.systemui")


@pytest.mark.parametrize(
    ("matches", "to_type", "chosen"),
    [
        ([FIELD, ROW], False, ROW),                  # a tap means the result, not the field typed into
        ([ROW, FIELD], False, ROW),
        ([FIELD, ROW_TEXT], False, ROW_TEXT),        # even a row whose text node is not clickable itself
        ([FIELD, ROW], True, FIELD),                 # typing means the field
        ([SYSTEM, ROW], False, ROW),                 # the app over the system UI
        ([FIELD, ROW, OTHER_ROW], False, [ROW, OTHER_ROW]),   # still two: ambiguous
        ([ROW, ROW_TEXT], False, ROW),               # one actionable among non-editables
        ([FIELD], False, FIELD),                     # the only match, even a field
    ],
    ids=["field-and-row", "row-and-field", "field-and-row-text", "typing", "system-ui", "two-rows", "actionable",
         "only-field"],
)
def test_pick_node_prefers_the_non_editable_match_for_a_tap(matches: list, to_type: bool, chosen: Any) -> None:
    from pytest_agentbench.mcp_server.server import pick_node
    assert pick_node(matches, to_type=to_type) == chosen


def test_tap_on_text_typed_in_a_search_field_taps_the_result_row(tmp_path: Path) -> None:
    adb = CannedAdb([search_screen(), search_screen(), search_screen()])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, text = with_client(server, lambda client: call(client, "tapOn", text="London"))
    assert not is_error, text
    assert adb.actions() == ["input tap 540 475"]


def test_a_tap_still_ambiguous_is_an_error_naming_the_candidates(tmp_path: Path) -> None:
    adb = CannedAdb([search_screen(rows=("London", "London"))])
    server = build_server(config(tmp_path, AGENTBENCH_DEVICE_SERIAL=SERIAL), adb=adb)
    is_error, text = with_client(server, lambda client: call(client, "tapOn", text="London"))
    assert is_error
    assert "2 elements match text 'London', so the target is ambiguous" in text
    assert 'TextView "London" at 540,475' in text and 'TextView "London" at 540,625' in text
    assert "tap one of them by index" in text
    assert adb.actions() == []
