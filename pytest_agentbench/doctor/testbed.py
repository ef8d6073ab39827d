"""The testbed app's contract (testbed_contract.json) + an installed build -> what the build breaks of it.

The contract is the one description of `dev.agentbench.testbed` that the jobs rely on; the
simulated testbed is held to it by a test, `docs/testbed-app.md` is checked against it by a
test, and the doctor checks an installed build against it here: the package is debuggable
(`run-as` reads its storage), each deep-linked screen opens with its texts and resource ids,
the preference keys exist after a first start, the courier line is in the log, and the event
log is at its path. The check starts the app (the state every testbed job starts it in) and,
when it had no data before, clears its data again afterwards, so the phone is left as found.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import TYPE_CHECKING, Any

import defusedxml.ElementTree as SafeET

from pytest_agentbench.checks.base import Read, cut
from pytest_agentbench.checks.read import read_device
from pytest_agentbench.device.shellscript import sh
from pytest_agentbench.device.uiautomator import app_texts, extract_hierarchy, parse_hierarchy
from pytest_agentbench.errors import DeviceError

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb

CONTRACT_FILE = "testbed_contract.json"


@lru_cache(maxsize=1)
def load_contract() -> Mapping[str, Any]:
    """The testbed contract as shipped with the plugin."""
    return json.loads(resources.files("pytest_agentbench.doctor").joinpath(CONTRACT_FILE).read_text(encoding="utf-8"))


def contract_package() -> str:
    return str(load_contract()["package"])


# ----------------------------------------------------------------------------- pure judges


def screen_problems(screen: Mapping[str, Any], xml: str, package: str) -> list[str]:
    """What a dump of one deep-linked screen lacks of the contract: its texts and resource ids."""
    nodes = parse_hierarchy(xml)
    texts = app_texts(nodes, package)
    missing = [text for text in screen["texts"] if text not in texts]
    ids = {node.resource_id for node in nodes}
    missing_ids = [name for name in screen["ids"] if f"{package}:id/{name}" not in ids]
    problems = []
    if missing:
        problems.append(f"{screen['deepLink']} shows no {', '.join(repr(t) for t in missing)}")
    if missing_ids:
        problems.append(f"{screen['deepLink']} has no resource id {', '.join(f'{package}:id/{n}' for n in missing_ids)}")
    return problems


def parse_prefs(xml: str) -> dict[str, tuple[str, str]]:
    """A SharedPreferences file -> name -> (tag, value text)."""
    root = SafeET.fromstring(xml)
    values = {}
    for element in root:
        name = element.get("name")
        if name is not None:
            values[name] = (element.tag, element.get("value") if element.get("value") is not None else (element.text or ""))
    return values


def prefs_problems(text: str, status: int | None, contract: Mapping[str, Any]) -> tuple[list[str], dict[str, str]]:
    """The preference keys the contract names, after a first start: (problems, key -> value)."""
    spec = contract["preferences"]
    where = f"shared_prefs/{spec['file']}.xml"
    if status != 0:
        return [f"no {where} after a first start ({cut(text, 100) or f'exit {status}'})"], {}
    try:
        values = parse_prefs(text)
    except Exception:  # noqa: BLE001 - defusedxml raises several types; any of them means "not a prefs file"
        return [f"{where} is not a SharedPreferences XML file"], {}
    problems, found = [], {}
    for key, rule in spec["keys"].items():
        if key not in values:
            problems.append(f"{where} has no {key}")
            continue
        tag, value = values[key]
        if tag != rule["type"] or not re.fullmatch(rule["pattern"], value):
            problems.append(f"{where} {key} is <{tag}> {value!r}, the contract says <{rule['type']}> matching {rule['pattern']}")
            continue
        found[key] = value
    return problems, found


def log_problems(text: str, contract: Mapping[str, Any], prefs: Mapping[str, str]) -> list[str]:
    """The contract's log lines in a `logcat -d -s TAG` output, their captured value equal to the preference."""
    problems = []
    for line in contract["logLines"]:
        matches = [re.search(line["pattern"], entry.split(f"{line['tag']}", 1)[1].lstrip(" :").rstrip())
                   for entry in text.splitlines() if f" {line['priority']} {line['tag']}" in entry]
        values = [match[1] for match in matches if match]
        if not values:
            problems.append(f"no log line {line['priority']}/{line['tag']} matching {line['pattern']!r} after a start")
        elif line.get("group") in prefs and prefs[line["group"]] not in values:
            problems.append(f"the {line['tag']} log line's code {values[-1]} is not the preference {line['group']}")
    return problems


def event_problems(text: str, status: int | None, contract: Mapping[str, Any], opened: Sequence[str]) -> list[str]:
    """The event log at its path after the screens were opened: JSON lines with ts, event, screen; a screen_opened each."""
    spec = contract["eventLog"]
    if status != 0:
        return [f"no event log at {spec['path']} after a first start ({cut(text, 100) or f'exit {status}'})"]
    events = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            return [f"{spec['path']} line {number} is not JSON: {cut(line, 80)}"]
        if not isinstance(event, dict) or not {"ts", "event", "screen"} <= set(event):
            return [f"{spec['path']} line {number} lacks ts, event or screen: {cut(line, 80)}"]
        events.append(event)
    shown = {event["screen"] for event in events if event["event"] in spec["afterFirstStart"]}
    missing = [route for route in opened if route not in shown]
    return [f"{spec['path']} has no screen_opened for {', '.join(missing)}"] if missing else []


# ----------------------------------------------------------------------------- device


@dataclass(frozen=True)
class TestbedCheck:
    """What the contract check found: problems (empty: the build meets the contract), the cold start's TotalTime in ms."""

    problems: tuple[str, ...]
    start_ms: int | None = None


_TOTAL_TIME = re.compile(r"^TotalTime:\s*(\d+)", re.MULTILINE)


def check_installed_build(adb: Adb, serial: str, *, settle_s: float = 1.0,
                          sleep: Callable[[float], None] = time.sleep) -> TestbedCheck:
    """Open every deep-linked screen of the installed testbed and read what the contract promises after a first start.

    Args:
        adb: The device layer.
        serial: The device.
        settle_s: Seconds to let each screen draw before its dump.
        sleep: The wait (tests pass a no-op).

    Returns:
        The problems found and the first cold start's TotalTime (ms) when `am start -W` printed it.
    """
    contract = load_contract()
    package = contract["package"]
    prefs_file = f"shared_prefs/{contract['preferences']['file']}.xml"
    had_data = adb.shell(serial, sh("run-as", package, "ls", prefs_file), check=False)
    if "not debuggable" in had_data.stdout:
        return TestbedCheck((f"{package} is not a debuggable build: the contract needs one (`run-as` reads and seeds its "
                             "storage); build the debug variant",))
    problems: list[str] = []
    start_ms = None
    opened: list[str] = []
    try:
        for screen in contract["screens"]:
            if not screen.get("deepLink"):
                continue
            started = adb.shell(serial, sh("am", "start", "-W", "-a", "android.intent.action.VIEW", "-d", screen["deepLink"]),
                                check=False)
            total = _TOTAL_TIME.search(started.stdout)
            if start_ms is None and total:
                start_ms = int(total[1])
            if started.exit_code != 0 or "Error" in started.stdout:
                problems.append(f"{screen['deepLink']} does not open: {cut(started.stdout, 120)}")
                continue
            sleep(settle_s)
            opened.append(screen["route"])
            try:
                xml = extract_hierarchy(adb.exec_out(serial, ["uiautomator", "dump", "/dev/tty"], timeout_s=30))
            except (ValueError, DeviceError) as exc:
                problems.append(f"{screen['deepLink']}: the screen could not be dumped ({cut(str(exc), 100)})")
                continue
            problems += screen_problems(screen, xml, package)
        reads = (Read("doctor:testbed:prefs", sh("run-as", package, "cat", prefs_file)),
                 Read("doctor:testbed:events", sh("run-as", package, "cat", contract["eventLog"]["path"])),
                 Read("doctor:testbed:log", sh("logcat", "-d", "-s", *(line["tag"] for line in contract["logLines"]))))
        found = read_device(adb, serial, reads).reads
        prefs = found.get("doctor:testbed:prefs")
        pref_problems, values = prefs_problems(prefs.text if prefs else "", prefs.status if prefs else None, contract)
        problems += pref_problems
        log = found.get("doctor:testbed:log")
        problems += log_problems(log.text if log else "", contract, values)
        events = found.get("doctor:testbed:events")
        problems += event_problems(events.text if events else "", events.status if events else None, contract, opened)
    finally:
        # Back as found: stopped, and without data when it had none (the state every testbed job starts from).
        adb.shell(serial, sh("am", "force-stop", package), check=False)
        if had_data.exit_code != 0:
            adb.shell(serial, sh("pm", "clear", package), check=False)
        adb.shell(serial, sh("input", "keyevent", "KEYCODE_HOME"), check=False)
    return TestbedCheck(tuple(problems), start_ms)
