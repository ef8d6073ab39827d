"""A small test app for the simulated phone whose buttons change what device checks read, and suites that check it.

"Checks Lab" (`dev.agentbench.checklab`, not debuggable: its files are reachable only as root) has
one screen of buttons; each changes one source a check kind reads, the way an app would:

| Button          | Changes                                                                        |
|-----------------|--------------------------------------------------------------------------------|
| Save contact    | a contact "Pickup 4821", phone +1 555-123-0001 (the editor adds the +1)        |
| Send SMS        | a sent SMS to +15551230001                                                      |
| Square copy     | an 800x800 image crop.png in MediaStore (the original beach.png is seeded)     |
| Restrict        | RUN_ANY_IN_BACKGROUND ignore for the lab itself                                 |
| Secure on       | app_chrome/Default/Preferences: https_first_balanced_mode_enabled true         |
| Add Tokyo       | shared_prefs/clocks.xml: world_clocks gains Asia/Tokyo                          |
| Open chats      | databases/lab.db: conversations Alice and Bob, no pin (created if missing)     |
| Pin Alice       | databases/lab.db: a row in pinned for Alice's conversation                      |
| Submit bad/ok   | files/events.jsonl: submit valid=false / valid=true                             |
| Wi-Fi on        | the global setting wifi_on = 1                                                  |

`lab_phone(index)` is a SimFleet phone factory: the built-in apps plus the lab, with the original
photo seeded in MediaStore. The lab's own files appear when its buttons are used (suites clear its
data in preflight), so the fresh state has none of them.
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from pytest_agentbench.sim.apps import BUILTIN_APPS, App, AppContext, Screen
from pytest_agentbench.sim.apps.model import read_shared_prefs, write_shared_prefs
from pytest_agentbench.sim.phone import Phone
from pytest_agentbench.sim.system.appops import mode_from_text
from pytest_agentbench.sim.ui import Button, Text, Title

LAB = "dev.agentbench.checklab"
PREFS_PATH = "app_chrome/Default/Preferences"
DATABASE = "databases/lab.db"
ORIGINAL_PHOTO = "beach.png"


def lab_database(pinned: tuple[int, ...] = ()) -> bytes:
    """Messages-like tables: conversations, and pins in their own table (seed 001's trap)."""
    connection = sqlite3.connect(":memory:")
    connection.executescript(
        "CREATE TABLE conversations (_id INTEGER PRIMARY KEY, name TEXT, archived INTEGER DEFAULT 0);"
        "CREATE TABLE pinned (conversation_id INTEGER REFERENCES conversations(_id), pinned_at INTEGER);"
        "INSERT INTO conversations (_id, name) VALUES (1, 'Alice'), (2, 'Bob');"
    )
    for conversation in pinned:
        connection.execute("INSERT INTO pinned VALUES (?, 1700000000)", (conversation,))
    connection.commit()
    data = connection.serialize()
    connection.close()
    return data


class CheckLabApp(App):
    package = LAB
    label = "Checks Lab"
    activity = f"{LAB}.MainActivity"
    version_name = "1.0"
    version_code = 1
    debuggable = False
    system = False
    min_sdk = 24
    start_route = "main"
    screens = {
        "main": Screen("main", (
            Title("Checks Lab"),
            Button("Save contact", "save_contact"),
            Button("Send SMS", "send_sms"),
            Button("Square copy", "square_copy"),
            Button("Restrict", "restrict"),
            Button("Secure on", "secure_on"),
            Button("Add Tokyo", "add_tokyo"),
            Button("Open chats", "open_chats"),
            Button("Pin Alice", "pin_alice"),
            Button("Submit bad", "submit", arg="bad"),
            Button("Submit ok", "submit", arg="ok"),
            Button("Wi-Fi on", "wifi_on"),
            Text("Done: {done}"),
        )),
    }

    def initial_state(self) -> dict[str, object]:
        return {"done": "nothing"}

    def _done(self, ctx: AppContext, what: str) -> None:
        ctx.state["done"] = what

    def tap_save_contact(self, ctx: AppContext, arg: str) -> None:
        ctx.phone.add_contact("Pickup 4821", "+1 555-123-0001")
        self._done(ctx, "contact")

    def tap_send_sms(self, ctx: AppContext, arg: str) -> None:
        ctx.phone.add_sms("+15551230001", "Code 4821", box="sent")
        self._done(ctx, "sms")

    def tap_square_copy(self, ctx: AppContext, arg: str) -> None:
        ctx.phone.add_photo(800, 800, name="crop.png", owner=LAB)
        self._done(ctx, "crop")

    def tap_restrict(self, ctx: AppContext, arg: str) -> None:
        ctx.phone.appops.set_mode(LAB, "RUN_ANY_IN_BACKGROUND", mode_from_text("ignore"))
        self._done(ctx, "restricted")

    def tap_secure_on(self, ctx: AppContext, arg: str) -> None:
        document = json.loads(ctx.read_file(PREFS_PATH) or b"{}")
        document["https_first_balanced_mode_enabled"] = True
        ctx.write_file(PREFS_PATH, json.dumps(document).encode())
        self._done(ctx, "secure")

    def tap_add_tokyo(self, ctx: AppContext, arg: str) -> None:
        values = read_shared_prefs(ctx.phone, LAB, "clocks")
        values["world_clocks"] = tuple(sorted({*values.get("world_clocks", ()), "Asia/Tokyo"}))  # type: ignore[misc]
        write_shared_prefs(ctx.phone, LAB, "clocks", values)
        self._done(ctx, "tokyo")

    def tap_open_chats(self, ctx: AppContext, arg: str) -> None:
        if ctx.read_file(DATABASE) is None:
            ctx.write_file(DATABASE, lab_database())
        self._done(ctx, "chats")

    def tap_pin_alice(self, ctx: AppContext, arg: str) -> None:
        ctx.write_file(DATABASE, lab_database(pinned=(1,)))
        self._done(ctx, "pinned")

    def tap_submit(self, ctx: AppContext, arg: str) -> None:
        ctx.log_event("submit", valid=arg == "ok")
        self._done(ctx, f"submit {arg}")

    def tap_wifi_on(self, ctx: AppContext, arg: str) -> None:
        ctx.put_setting("global", "wifi_on", "1")
        self._done(ctx, "wifi")


def seed_lab(phone: Phone) -> None:
    """What a fixture seeds host-side before any run: the original 1200-px photo."""
    phone.add_photo(1200, 900, name=ORIGINAL_PHOTO)


def lab_phone(index: int = 0, **overrides: Any) -> Phone:
    """A phone with the built-in apps and the lab installed and seeded (a SimFleet phone_factory)."""
    phone = Phone(serial_hint=f"lab{index}", apps=[*(cls() for cls in BUILTIN_APPS), CheckLabApp()], **overrides)
    seed_lab(phone)
    return phone


# ----------------------------------------------------------------------------- suites


def tap(text: str) -> dict[str, Any]:
    return {"tool": "tapOn", "args": {"text": text}}


#: Five device checks, one per button of the pass scenario (the perf script's suite, too).
FIVE_CHECKS: list[dict[str, Any]] = [
    {"kind": "content", "name": "saved-contact", "uri": "content://com.android.contacts/data/phones",
     "projection": ["display_name", "data1"], "match": {"display_name": "Pickup 4821", "data1": {"digits": "555-123-0001"}},
     "new": True, "count": 1},
    {"kind": "jsonFile", "name": "secure-connections", "package": LAB, "file": PREFS_PATH,
     "anyOf": [{"path": "https_first_balanced_mode_enabled", "equals": True}, {"path": "https_only_mode_enabled", "equals": True}]},
    {"kind": "sqlite", "name": "pinned-alice", "package": LAB, "database": "lab.db",
     "query": "SELECT c.name FROM conversations c JOIN pinned p ON p.conversation_id = c._id", "rows": [["Alice"]]},
    {"kind": "appops", "name": "restricted", "op": "RUN_ANY_IN_BACKGROUND", "package": LAB},
    {"kind": "media", "name": "cropped", "original": {"displayName": ORIGINAL_PHOTO, "width": 1200},
     "added": {"count": 1, "square": True, "maxSide": 800}},
]
PASS_STEPS = [tap("Save contact"), tap("Secure on"), tap("Pin Alice"), tap("Restrict"), tap("Square copy")]


def lab_suite(name: str, **overrides: Any) -> dict[str, Any]:
    """A suite on the lab app with FIVE_CHECKS, a prove block and a replay plan's answer."""
    suite: dict[str, Any] = {
        "name": name,
        "platform": "android",
        "prompt": "../prompts/lab.txt",
        "app": {"packageName": LAB},
        "preflight": {"clearAppData": True, "settleSeconds": 0},
        "claude": {"timeoutSeconds": 120},
        "verify": {"answerIncludes": ["LAB: done"], "device": FIVE_CHECKS},
        "prove": {
            "pass": {"steps": PASS_STEPS, "answer": "LAB: done"},
            "fail": [
                {"name": "no-pin", "check": "pinned-alice", "reasonIncludes": "returned 0 rows", "answer": "LAB: done",
                 "steps": [tap("Open chats") if step == tap("Pin Alice") else step for step in PASS_STEPS]},
            ],
        },
    }
    for key, value in overrides.items():
        # Settings blocks merge; a prove block replaces the default one.
        if isinstance(value, dict) and isinstance(suite.get(key), dict) and key != "prove":
            suite[key] = {**suite[key], **value}
        else:
            suite[key] = value
    return suite


def write_project(root, suites: dict[str, dict[str, Any]], plans: dict[str, dict[str, Any]] | None = None,
                  *, ini: str = "") -> Any:
    """A benchmark project: pytest.ini, benchmark/agent/{suites,plans,prompts}; returns the root."""
    import yaml

    agent = root / "benchmark" / "agent"
    for directory in ("suites", "plans", "prompts"):
        (agent / directory).mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text("[pytest]\n" + ini, encoding="utf-8")
    (agent / "prompts" / "lab.txt").write_text("Use the Checks Lab on {deviceSerial}, then answer LAB: done.\n", encoding="utf-8")
    for name, suite in suites.items():
        (agent / "suites" / f"{name}.yml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    for name, plan in (plans or {}).items():
        (agent / "plans" / f"{name}.yml").write_text(yaml.safe_dump(plan, sort_keys=False), encoding="utf-8")
    return root


def phone_sources(phone: Phone) -> dict[str, Any]:
    """What cleanup must leave as it found it, read host-side: contacts, SMS, threads, images, Wi-Fi, restricted apps."""
    ignore = mode_from_text("ignore")
    return {
        "contacts": phone.content_query("content://com.android.contacts/raw_contacts", ["_id", "display_name"]),
        "sms": phone.content_query("content://sms", ["_id", "address", "body"]),
        "threads": phone.content_query("content://sms/conversations"),
        "images": phone.content_query("content://media/external/images/media", ["_id", "_display_name", "width"]),
        "wifi_on": phone.settings["global"].get("wifi_on"),
        "restricted": sorted(phone.appops.packages_in_mode("RUN_ANY_IN_BACKGROUND", ignore)),
    }
