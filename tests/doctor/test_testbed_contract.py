"""The testbed contract (doctor/testbed_contract.json): docs/testbed-app.md's tables say the same, and the simulated testbed meets it."""

from __future__ import annotations

import re
from pathlib import Path

from phoneadb import PhoneAdb
from pytest_agentbench.device.uiautomator import app_texts, parse_hierarchy
from pytest_agentbench.doctor.testbed import check_installed_build, load_contract, screen_problems
from pytest_agentbench.sim.apps import testbed as sim_testbed
from pytest_agentbench.sim.apps import testbed_qa
from pytest_agentbench.sim.apps.model import EVENT_LOG
from pytest_agentbench.sim.phone import Phone

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "testbed-app.md"


def _tables(text: str) -> dict[str, list[list[str]]]:
    """Each markdown table under a `## ` heading -> its rows (cells stripped, header and rule dropped)."""
    tables: dict[str, list[list[str]]] = {}
    heading = ""
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:].strip()
        elif line.startswith("|") and not re.fullmatch(r"\|[-| ]+\|", line):
            tables.setdefault(heading, []).append([cell.strip() for cell in line.strip("|").split(" | ")])
    return {name: rows[1:] for name, rows in tables.items()}


def _codes(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell)


def test_the_doc_tables_are_the_contract() -> None:
    contract = load_contract()
    tables = _tables(DOC.read_text(encoding="utf-8"))
    package = {row[0]: _codes(row[1])[0] for row in tables["The package"]}
    assert package == {"package": contract["package"], "label": contract["label"],
                       "debuggable": str(contract["debuggable"]).lower(), "deep link prefix": contract["deepLinkPrefix"]}
    screens = [(_codes(row[0])[0], (_codes(row[1]) or [None])[0], _codes(row[2]), _codes(row[3])) for row in tables["Screens"]]
    assert screens == [(s["route"], s["deepLink"], s["texts"], s["ids"]) for s in contract["screens"]]
    prefs = {_codes(row[0])[0]: (_codes(row[1])[0], _codes(row[2])[0]) for row in tables["Preferences"]}
    assert prefs == {key: (rule["type"], rule["pattern"]) for key, rule in contract["preferences"]["keys"].items()}
    assert f"`shared_prefs/{contract['preferences']['file']}.xml`" in DOC.read_text(encoding="utf-8")
    written = {_codes(row[0])[0]: (_codes(row[1])[0], _codes(row[2])[0]) for row in tables["Preferences a suite writes"]}
    assert written == {key: (rule["type"], rule["default"]) for key, rule in contract["preferences"]["suiteKeys"].items()}
    logs = [tuple(_codes(row[0]) + _codes(row[1]) + _codes(row[2])) for row in tables["Log lines"]]
    assert logs == [(line["tag"], line["priority"], line["pattern"]) for line in contract["logLines"]]
    events = {_codes(row[0])[0]: _codes(row[1]) for row in tables["Event log"]}
    assert events == contract["eventLog"]["events"]
    assert f"`{contract['eventLog']['path']}`" in DOC.read_text(encoding="utf-8")
    wake = [(_codes(row[0])[0], _codes(row[1])[0]) for row in tables["Wake lock"]]
    assert wake == [(contract["wakeLock"]["tag"], contract["wakeLock"]["type"])]


def test_the_simulated_testbed_declares_what_the_contract_names() -> None:
    contract = load_contract()
    app = sim_testbed.TestbedApp
    assert (app.package, app.label, app.debuggable, app.deep_link_prefix) == (
        contract["package"], contract["label"], contract["debuggable"], contract["deepLinkPrefix"])
    assert {screen["route"] for screen in contract["screens"]} <= set(app.screens)
    assert sim_testbed.PREFS == contract["preferences"]["file"] == testbed_qa.PREFS
    assert testbed_qa.FORM_BUTTON == contract["preferences"]["suiteKeys"]["form_button"]["default"]
    assert EVENT_LOG == contract["eventLog"]["path"]
    assert sim_testbed.WAKE_LOCK_TAG == contract["wakeLock"]["tag"]
    source = Path(sim_testbed.__file__).read_text() + Path(testbed_qa.__file__).read_text()
    logged = set(re.findall(r'(?:log_event|_log_cart)\((?:ctx, )?"(\w+)"', source))
    assert logged == set(contract["eventLog"]["events"])
    assert set(re.findall(r'ctx\.log\("(\w+)"', source)) == {line["tag"] for line in contract["logLines"]}


def test_the_simulated_testbed_meets_the_contract_on_a_device() -> None:
    adb = PhoneAdb()
    assert check_installed_build(adb, "sim", sleep=lambda _s: None).problems == ()


def test_the_screens_reached_by_use_show_their_contract_texts() -> None:
    contract = load_contract()
    phone = Phone()
    for screen in contract["screens"]:
        link = screen["deepLink"] or contract["deepLinkPrefix"] + screen["route"]
        phone.shell(f"am start -a android.intent.action.VIEW -d {link}")
        xml = phone.shell("uiautomator dump /dev/tty").stdout.decode()
        assert screen_problems({**screen, "deepLink": link}, xml, contract["package"]) == [], screen["route"]
        assert app_texts(parse_hierarchy(xml), contract["package"])


def test_a_build_missing_a_screen_text_or_id_is_named() -> None:
    contract = load_contract()
    phone = Phone()
    phone.shell("am start -a android.intent.action.VIEW -d agentbench://testbed/forms")
    xml = phone.shell("uiautomator dump /dev/tty").stdout.decode()
    screen = {**contract["screens"][2], "texts": ["Create account", "Sign up"], "ids": ["email", "phone"]}
    assert screen_problems(screen, xml, contract["package"]) == [
        "agentbench://testbed/forms shows no 'Sign up'",
        "agentbench://testbed/forms has no resource id dev.agentbench.testbed:id/phone"]
