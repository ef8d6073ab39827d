"""What the jobs' apps must be on an image (Chrome, DeskClock, Messages, Photos, start times) -> reads and the problems in their output.

Each probe is chosen by what a suite's checks read (their kind and package) or what it seeds, not
by the suite's name; the facts a job needs of one app version (the key Chrome keeps a switch in,
DeskClock's city ids) are kept here with the app they describe.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks import sqlite
from pytest_agentbench.checks.base import RawRead, Read, app_path, cut
from pytest_agentbench.device.shellscript import sh
from pytest_agentbench.doctor.bugle import database_reads, database_tables, schema_line
from pytest_agentbench.doctor.needs import Needs
from pytest_agentbench.doctor.root import as_root
from pytest_agentbench.suite import Suite

CHROME = "com.android.chrome"
DESKCLOCK = "com.android.deskclock"
MESSAGES = "com.google.android.apps.messaging"
PHOTOS = "com.google.android.apps.photos"

#: Chrome reads its command line from here on a userdebug image; `--disable-fre` skips the first-run screens.
CHROME_COMMAND_LINE = "/data/local/tmp/chrome-command-line"
CHROME_PREFERENCES = "app_chrome/Default/Preferences"
#: Chrome 129 moved "Always use secure connections" to the balanced HTTPS-First key (seed 001).
BALANCED_MODE_SINCE = 129
SECURE_KEYS = ("https_first_balanced_mode_enabled", "https_only_mode_enabled")
#: DeskClock builds whose city list is known: versionName -> city name -> id (from its cities list).
DESKCLOCK_CITY_IDS: Mapping[str, Mapping[str, str]] = {
    # The simulated DeskClock (sim/apps/clock.py), where clock-world-clock is proven.
    "14": {"Amsterdam": "C1", "Athens": "C2", "Auckland": "C3", "Bangkok": "C4", "Berlin": "C5", "Buenos Aires":
           "C6", "Cairo": "C7", "Chicago": "C8", "Dubai": "C9", "Hong Kong": "C10", "Honolulu": "C11",
           "Istanbul": "C12", "Johannesburg": "C13", "Lisbon": "C14", "London": "C15", "Los Angeles": "C16",
           "Madrid": "C17", "Mexico City": "C18", "Mumbai": "C19", "New York": "C20", "Paris": "C21", "Rome":
           "C22", "Sao Paulo": "C23", "Seoul": "C24", "Singapore": "C25", "Sydney": "C26", "Tokyo": "C27",
           "Toronto": "C28", "Zurich": "C29"},
}
#: Photos builds whose editor was proven to offer "Save copy" (photos-crop's prove runs).
PHOTOS_SAVE_COPY_PROVEN = {"6.72.0.608390436": "the simulated Photos"}
SMS_ROLE = "android.app.role.SMS"
MEDIA_IMAGES = "content://media/external/images/media"
START_LOG_TAGS = ("ActivityTaskManager:I", "ActivityManager:I")


@dataclass(frozen=True)
class Installed:
    """A needed package as the device has it: versionName (None: not installed) and the dumpsys text."""

    version: str | None
    dumpsys: str = ""


@dataclass(frozen=True)
class Probe:
    """One app's requirements: when it applies, its reads (plain and as root), and its judge."""

    name: str
    applies: Callable[[Suite, Needs], bool]
    reads: Callable[[Suite, Needs], tuple[Read, ...]]
    root_reads: Callable[[Suite, Needs, str], tuple[Read, ...]]
    judge: Callable[[Suite, Needs, Mapping[str, RawRead], Mapping[str, Installed]], list[str]]


def _none(*_args: Any) -> tuple[Read, ...]:
    return ()


def _major(version: str | None) -> int | None:
    match = re.match(r"(\d+)", version or "")
    return int(match[1]) if match else None


def _check_paths(entry: Mapping[str, Any]) -> list[str]:
    paths = [entry["path"]] if isinstance(entry.get("path"), str) else []
    return paths + [alt["path"] for alt in entry.get("anyOf") or () if isinstance(alt, Mapping) and "path" in alt]


def _resolve(document: Any, path: str) -> bool:
    for part in path.split("."):
        if not isinstance(document, Mapping) or part not in document:
            return False
        document = document[part]
    return True


# ----------------------------------------------------------------------------- Chrome


def _chrome_reads(suite: Suite, needs: Needs) -> tuple[Read, ...]:
    return (Read("doctor:chrome:command-line", sh("cat", CHROME_COMMAND_LINE)),)


def _chrome_root_reads(suite: Suite, needs: Needs, form: str) -> tuple[Read, ...]:
    return (Read("doctor:chrome:preferences", as_root(form, "cat", app_path(CHROME, CHROME_PREFERENCES))),)


def _chrome_judge(suite: Suite, needs: Needs, reads: Mapping[str, RawRead], installed: Mapping[str, Installed]) -> list[str]:
    problems = []
    flag = reads.get("doctor:chrome:command-line")
    if flag is None or flag.status != 0 or "--disable-fre" not in flag.text:
        problems.append(
            f"Chrome's first-run screens are not turned off ({CHROME_COMMAND_LINE} has no --disable-fre): "
            f"adb shell \"echo '_ --disable-fre --no-default-browser-check --no-first-run' > {CHROME_COMMAND_LINE}\" "
            "(read on a userdebug image)")
    version = installed.get(CHROME, Installed(None)).version
    major = _major(version)
    preferences = reads.get("doctor:chrome:preferences")
    document = None
    if preferences is not None and preferences.status == 0:
        try:
            document = json.loads(preferences.text)
        except ValueError:
            document = None
    for entry in needs.checks_of("jsonFile", CHROME):
        paths = _check_paths(entry)
        secure = [path for path in paths if path in SECURE_KEYS]
        if secure and major is not None:
            key = SECURE_KEYS[0] if major >= BALANCED_MODE_SINCE else SECURE_KEYS[1]
            if key not in secure:
                problems.append(f"Chrome {version} keeps \"Always use secure connections\" in {key}, which check "
                                f"{entry['name']} does not read: add {{path: {key}, equals: true}} to its anyOf")
        for path in paths:
            head = path.split(".", 1)[0]
            if path not in SECURE_KEYS and isinstance(document, Mapping) and head in document and not _resolve(document, path):
                problems.append(f"Chrome {version}'s Preferences has {head} but not {path}: check {entry['name']} "
                                "reads a key path this Chrome does not write; find the keyword's path in the file and fix the check")
    return problems


# ----------------------------------------------------------------------------- Clock


def _clock_judge(suite: Suite, needs: Needs, reads: Mapping[str, RawRead], installed: Mapping[str, Installed]) -> list[str]:
    problems = []
    version = installed.get(DESKCLOCK, Installed(None)).version
    for entry in needs.checks_of("sharedPreferences", DESKCLOCK):
        # The city id is one member of the list: `token` (a drawn id) or `contains` (a fixed one).
        key = next((key for key in ("token", "contains") if isinstance(entry.get(key), str)), None)
        if "list" not in entry or key is None:
            continue
        wanted = entry[key]
        cities = DESKCLOCK_CITY_IDS.get(version or "")
        if cities is None:
            problems.append(f"DeskClock {version}'s city ids are unknown: find the id of the city the job asks for in this "
                            f"build's city list, set check {entry['name']}'s {key} to it, prove the suite "
                            f"(`--agentbench-prove -k {suite.name}`) and add the build to doctor/apps.py DESKCLOCK_CITY_IDS")
            continue
        named = next((city for city, city_id in cities.items() if city_id == wanted), None)
        asked = [city for city in cities if re.search(rf"\b{re.escape(city)}\b", suite.prompt_text)]
        if named is None or (asked and named not in asked):
            right = ", ".join(f"{city} is {cities[city]}" for city in asked) or "see its city list"
            problems.append(f"check {entry['name']} looks for city id {wanted}, which is "
                            f"{named or 'not in the list'} in DeskClock {version} ({right}): fix its {key}")
    return problems


# ----------------------------------------------------------------------------- Messages


def _messages_reads(suite: Suite, needs: Needs) -> tuple[Read, ...]:
    return (Read("doctor:sms:role", sh("cmd", "role", "get-role-holders", SMS_ROLE)),
            Read("doctor:sms:setting", sh("settings", "get", "secure", "sms_default_application")))


def _messages_root_reads(suite: Suite, needs: Needs, form: str) -> tuple[Read, ...]:
    return tuple(read for entry in needs.checks_of("sqlite", MESSAGES) for read in database_reads(sqlite.parse(entry), form))


def default_sms_holder(role: RawRead | None, setting: RawRead | None) -> str | None:
    """The default SMS app: the SMS role's holder (Android 10+), else the secure setting; None when neither says."""
    if role is not None and role.status == 0 and role.text.strip():
        return role.text.strip().split(";")[0].strip()
    if setting is not None and setting.status == 0 and setting.text.strip() not in ("", "null"):
        return setting.text.strip()
    return None


def _messages_judge(suite: Suite, needs: Needs, reads: Mapping[str, RawRead], installed: Mapping[str, Installed]) -> list[str]:
    problems = []
    holder = default_sms_holder(reads.get("doctor:sms:role"), reads.get("doctor:sms:setting"))
    if holder != MESSAGES:
        problems.append(f"Messages is not the default SMS app (it is {holder or 'nobody'}): "
                        f"adb shell cmd role add-role-holder {SMS_ROLE} {MESSAGES}")
    for entry in needs.checks_of("sqlite", MESSAGES):
        spec = sqlite.parse(entry)
        tables, problem = database_tables(spec, reads)
        if problem:
            problems.append(problem)
            continue
        result = schema_line(tables, spec, suite.name)
        if result.problem:
            problems.append(result.problem)
    return problems


# ----------------------------------------------------------------------------- Photos


def _photos_reads(suite: Suite, needs: Needs) -> tuple[Read, ...]:
    return (Read("doctor:media:query", sh("content", "query", "--uri", MEDIA_IMAGES, "--projection", "_id")),)


def _photos_judge(suite: Suite, needs: Needs, reads: Mapping[str, RawRead], installed: Mapping[str, Installed]) -> list[str]:
    problems = []
    query = reads.get("doctor:media:query")
    if query is None or query.status != 0 or re.search(r"Error|Exception|Could not find provider", query.text):
        problems.append(f"MediaStore does not answer `content query --uri {MEDIA_IMAGES}` "
                        f"({cut(query.text if query else 'not read', 120)}): the seeded photo cannot be scanned or checked")
    package = suite.app.package_name
    version = installed.get(package, Installed(None)).version
    if package == PHOTOS and version is not None and version not in PHOTOS_SAVE_COPY_PROVEN:
        problems.append(f"Photos {version}'s editor is not proven to crop with \"Save copy\": prove {suite.name} "
                        f"(`--agentbench-prove -k {suite.name}`) and add the build to doctor/apps.py PHOTOS_SAVE_COPY_PROVEN")
    return problems


def _uses_media(suite: Suite, needs: Needs) -> bool:
    return bool(needs.checks_of("media")) or any(type(seed).__name__ == "PhotoSeed" for seed in suite.preflight.seed)


def _uses_sms(suite: Suite, needs: Needs) -> bool:
    return MESSAGES in needs.packages or any(type(seed).__name__ == "SmsSeed" for seed in suite.preflight.seed)


PROBES: tuple[Probe, ...] = (
    Probe("chrome", lambda suite, needs: bool(needs.checks_of("jsonFile", CHROME)), _chrome_reads, _chrome_root_reads, _chrome_judge),
    Probe("clock", lambda suite, needs: bool(needs.checks_of("sharedPreferences", DESKCLOCK)), _none, _none, _clock_judge),
    Probe("messages", _uses_sms, _messages_reads, _messages_root_reads, _messages_judge),
    Probe("photos", _uses_media, _photos_reads, _none, _photos_judge),
)


# ----------------------------------------------------------------------------- start time


def start_log_read() -> Read:
    """The ActivityManager lines of the log: `Displayed PKG/ACTIVITY ...: +1s234ms` for each app drawn since boot."""
    return Read("doctor:start-log", sh("logcat", "-d", "-b", "main", "-b", "system", "-s", *START_LOG_TAGS))


_DISPLAYED = re.compile(r"Displayed (?P<package>[\w.]+)/\S+?(?: for user \d+)?: \+(?:(?P<s>\d+)s)?(?P<ms>\d+)ms")


def last_start_ms(log: str, package: str) -> int | None:
    """How long the app's last launch took to draw (`Displayed` line), in ms; None when the log has none."""
    times = [int(match["s"] or 0) * 1000 + int(match["ms"]) for match in _DISPLAYED.finditer(log) if match["package"] == package]
    return times[-1] if times else None


def settle_problem(suite: Suite, start_ms: int | None) -> str | None:
    """Whether the suite's settleSeconds covers the start time measured on this device."""
    if start_ms is None or start_ms / 1000 <= suite.preflight.settle_seconds:
        return None
    return (f"{suite.app.package_name} took {start_ms / 1000:.1f} s to draw its start screen here, preflight.settleSeconds "
            f"is {suite.preflight.settle_seconds:g}: raise it to {math.ceil(start_ms / 1000) + 1}")


def parse_installed(path: RawRead | None, dumpsys: RawRead | None) -> Installed:
    """`pm path PKG` + `dumpsys package PKG` -> Installed (version None when `pm path` found nothing)."""
    if path is None or path.status != 0 or "package:" not in path.text:
        return Installed(None)
    text = (dumpsys.text if dumpsys is not None else "").split("Hidden system packages:", 1)[0]
    match = re.search(r"^\s*versionName=(.+)$", text, re.MULTILINE)
    return Installed(match[1].strip() if match else "unknown", text)
