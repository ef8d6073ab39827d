"""Fidelity: the pinned @mobilenext/mobile-mcp, over MCP stdio, drives a simulated phone behind a private real adb server."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.device.uiautomator import parse_hierarchy


pytest.importorskip("pytest_agentbench.sim.phone", reason="the simulated Android (sim/phone.py) is not there yet")

PLAYGROUND = "dev.jasonpearson.automobile.playground"
NPM_CACHE = Path(os.environ.get("AGENTBENCH_NPM_CACHE", "~/.cache/agentbench/npm")).expanduser()
MOBILE_MCP_ENTRY = NPM_CACHE / "node_modules" / "@mobilenext" / "mobile-mcp" / "lib" / "index.js"
NODE = shutil.which("node")

pytestmark = [
    pytest.mark.skipif(NODE is None, reason="node is not installed (mobile-mcp is a Node.js program)"),
    pytest.mark.skipif(
        not MOBILE_MCP_ENTRY.is_file(),
        reason=f"@mobilenext/mobile-mcp is not installed under {NPM_CACHE} (npm install --prefix {NPM_CACHE} @mobilenext/mobile-mcp@1.0.4)",
    ),
]

PREFS = {
    "onboarding_prefs": '<boolean name="onboarding_completed" value="true" />',
    "auth_prefs": '<boolean name="is_authenticated" value="true" />',
}


@pytest.fixture(scope="module")
def fleet(module_adb_server):
    from pytest_agentbench.sim.fleet import SimFleet

    with SimFleet(count=1, adb=module_adb_server.client()) as fleet:
        yield fleet


def _seed_playground(fleet) -> None:
    """Prefs written as preflight would: pushed, then copied in with run-as, in two round trips per file."""
    adb, serial = fleet.adb, fleet.serials[0]
    adb.shell(serial, ["pm", "clear", PLAYGROUND])
    for name, entry in PREFS.items():
        staged = f"/data/local/tmp/{name}.xml"
        body = f"<?xml version='1.0' encoding='utf-8' standalone='yes' ?>\n<map>\n    {entry}\n</map>\n"
        adb.push(serial, body.encode(), staged)
        adb.shell(serial, Script.join([
            sh("run-as", PLAYGROUND, "mkdir", "-p", "shared_prefs"),
            sh("run-as", PLAYGROUND, "cp", staged, f"shared_prefs/{name}.xml"),
        ], sep="&&"))


def _server_parameters(module_adb_server, log_dir: Path):
    from mcp.client.stdio import StdioServerParameters

    env = module_adb_server.env()
    env.update(
        MOBILEMCP_DISABLE_TELEMETRY="1",
        # mobile_open_url refuses non-http schemes unless told otherwise; the Playground uses automobile://.
        MOBILEMCP_ALLOW_UNSAFE_URLS="1",
        HOME=str(log_dir),  # whatever it caches goes to the test's directory, not the user's home
    )
    # mobile-mcp runs `adb` from PATH; the private server's adb directory comes first in env["PATH"].
    keep = {key: env[key] for key in (
        "PATH", "HOME", "ANDROID_ADB_SERVER_PORT", "ANDROID_ADB_SERVER_ADDRESS",
        "MOBILEMCP_DISABLE_TELEMETRY", "MOBILEMCP_ALLOW_UNSAFE_URLS",
    )}
    return StdioServerParameters(command=NODE, args=[str(MOBILE_MCP_ENTRY)], env=keep, cwd=str(log_dir))


def _text(result) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


async def _call(session, name: str, arguments: dict) -> str:
    result = await session.call_tool(name, arguments, read_timeout_seconds=60)
    text = _text(result)
    assert not result.is_error, f"{name}({arguments}) failed: {text}"
    return text


def _elements(listing: str) -> list[dict]:
    """mobile-mcp's JSON element listing (after its "Found these elements on screen: " lead-in)."""
    import json

    start = listing.find("[")
    assert start >= 0, f"no element list in: {listing[:500]}"
    return json.loads(listing[start:])


def _center_of(listing: str, *, text: str | None = None, type_suffix: str | None = None) -> tuple[int, int]:
    for element in _elements(listing):
        if text is not None and text not in (element.get("text"), element.get("label")):
            continue
        if type_suffix is not None and not str(element.get("type", "")).endswith(type_suffix):
            continue
        box = element["coordinates"]
        return box["x"] + box["width"] // 2, box["y"] + box["height"] // 2
    raise AssertionError(f"no element with text={text!r} type={type_suffix!r} in: {listing[:1500]}")


def test_mobile_mcp_drives_the_sim(fleet, module_adb_server, tmp_path):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import stdio_client

    serial = fleet.serials[0]
    phone = fleet.phones[0]
    _seed_playground(fleet)

    async def scenario() -> None:
        with open(tmp_path / "mobile-mcp.stderr", "w") as errlog:
            async with stdio_client(_server_parameters(module_adb_server, tmp_path), errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    tools = {tool.name for tool in (await session.list_tools()).tools}
                    assert {"mobile_list_available_devices", "mobile_list_elements_on_screen",
                            "mobile_click_on_screen_at_coordinates", "mobile_type_keys", "mobile_press_button"} <= tools

                    devices = await _call(session, "mobile_list_available_devices", {})
                    assert serial in devices

                    await _call(session, "mobile_open_url", {"device": serial, "url": "automobile://playground/demos/bugs/repro"})
                    listing = await _call(session, "mobile_list_elements_on_screen", {"device": serial, "format": "json"})
                    texts = {element.get("text") for element in _elements(listing)}
                    assert {"Bug Reproduction Demo", "Expected count: 0", "Displayed count: 0"} <= texts
                    x, y = _center_of(listing, text="Add Item")
                    await _call(session, "mobile_click_on_screen_at_coordinates", {"device": serial, "x": x, "y": y})
                    # The sim's own state, not mobile-mcp's word: the tap reached the app.
                    assert "Expected count: 1" in phone.screen_xml()
                    assert "Displayed count: 1" in phone.screen_xml()

                    await _call(session, "mobile_open_url", {"device": serial, "url": "automobile://playground/login"})
                    listing = await _call(session, "mobile_list_elements_on_screen", {"device": serial, "format": "json"})
                    x, y = _center_of(listing, type_suffix="EditText")
                    await _call(session, "mobile_click_on_screen_at_coordinates", {"device": serial, "x": x, "y": y})
                    await _call(session, "mobile_type_keys", {"device": serial, "text": "hi there", "submit": False})
                    (field,) = [node for node in parse_hierarchy(phone.screen_xml()) if node.focused]
                    assert field.text == "hi there"

                    # As on a phone, the first BACK closes the keyboard and the second leaves the screen.
                    await _call(session, "mobile_press_button", {"device": serial, "button": "BACK"})
                    assert not [node for node in parse_hierarchy(phone.screen_xml()) if node.focused]
                    await _call(session, "mobile_press_button", {"device": serial, "button": "BACK"})
                    assert 'text="hi there"' not in phone.screen_xml()

    try:
        asyncio.run(asyncio.wait_for(scenario(), timeout=180))
    finally:
        _stop_processes_with_home(tmp_path)
    served = " | ".join(phone.command_log)
    assert "input tap" in served and "input text" in served and "input keyevent" in served



def _stop_processes_with_home(home: Path) -> None:
    """Stop what mobile-mcp left running for this test (its `mobilecli daemon` detaches into its own group).

    Only processes whose HOME is this test's own directory are touched.
    """
    marker = f"HOME={home}".encode()
    groups = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker in (entry / "environ").read_bytes().split(b"\0"):
                groups.add(os.getpgid(int(entry.name)))
        except (OSError, ProcessLookupError):
            continue
    groups.discard(os.getpgrp())
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGTERM)
    deadline = time.monotonic() + 5
    while groups and time.monotonic() < deadline:
        groups = {group for group in groups if _group_alive(group)}
        time.sleep(0.05)
    for group in groups:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(group, signal.SIGKILL)


def _group_alive(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    return True
