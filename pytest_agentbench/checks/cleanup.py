"""A suite's checks and `cleanup:` steps -> the sources cleanup watches; their before/after reads -> undo commands; a re-read -> what was left.

Pure. The sources are those the checks read (contacts, SMS, MediaStore, settings, app-ops) and
those the `cleanup:` steps name. What the run added is the difference between the before- and the
after-read; it is undone with the provider's own delete, `settings put|delete` and `cmd appops
set`; then the suite's steps run in order; then the sources are read again and anything that is
not as it was before is reported (`cleanup left: ...`). Cleanup never changes a verdict.

```yaml
cleanup:
  - restoreSetting: {namespace: global, key: wifi_on}      # put back the value it had before the run
  - restoreAppop: {package: com.example.testbed, op: RUN_ANY_IN_BACKGROUND}
  - restoreProp: {name: persist.sys.timezone}              # a system property, put back as root
  - contentDelete: {uri: "content://com.android.contacts/raw_contacts", where: "display_name='Pickup'"}
  - pmClear: com.google.android.apps.messaging
  - adb: [am, force-stop, com.example.testbed]             # one command, every word quoted
```
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks import appops as appops_kind
from pytest_agentbench.checks import devicewide
from pytest_agentbench.checks.base import DeviceReads, RawRead, Read, cut, unreadable
from pytest_agentbench.checks.provider import parse_rows, provider_error, query_read
from pytest_agentbench.device.shellscript import Script, sh
from pytest_agentbench.suite.seed import PhotoSeed, SeedStep, SmsSeed

CONTACTS_URI = "content://com.android.contacts/raw_contacts"
SMS_URI = "content://sms"
IMAGES_URI = "content://media/external/images/media"
_AUTHORITY_SOURCES = {"com.android.contacts": "contacts", "sms": "sms", "mms-sms": "sms", "mms": "sms", "media": "media"}


@dataclass(frozen=True)
class Tracker:
    """One watched source.

    Attributes:
        source: `rows` (provider rows by id), `setting` (one key), `settings-query` (rows name/value),
            `appops-mode` (packages in an op's mode), `appop` (one package's op mode), `prop` (a
            system property); every run also watches `processes`, `appops-all` and `files`
            (`checks/devicewide.py`: the whole phone's processes, app-ops and shared storage).
        label: How reports name it (`contacts`, `settings global wifi_on`).
        read: The Read that shows its state.
        params: What undo needs (uri, root, namespace, key, op, mode, package).
    """

    source: str
    label: str
    read: Read
    params: tuple[tuple[str, Any], ...] = ()

    def param(self, name: str) -> Any:
        return dict(self.params)[name]


@dataclass(frozen=True)
class Action:
    """One undo command and what it undoes; `must_succeed` False when a failure is harmless (the re-read tells)."""

    description: str
    script: Script
    must_succeed: bool = True


def rows_tracker(label: str, uri: str, *, root: bool = False) -> Tracker:
    return Tracker("rows", label, query_read(uri, ("_id",), root=root), (("uri", uri), ("root", root)))


def setting_tracker(namespace: str, key: str) -> Tracker:
    read = Read(f"setting:{namespace}:{key}", sh("settings", "get", namespace, key))
    return Tracker("setting", f"settings {namespace} {key}", read, (("namespace", namespace), ("key", key)))


def settings_query_tracker(uri: str, where: str | None) -> Tracker:
    namespace = uri.rstrip("/").rsplit("/", 1)[-1]
    label = f"settings {namespace}" + (f" where {where}" if where else "")
    return Tracker("settings-query", label, query_read(uri, ("name", "value"), where=where),
                   (("namespace", namespace),))


def appops_mode_tracker(op: str, mode: str) -> Tracker:
    return Tracker("appops-mode", f"app-ops {op} {mode}", appops_kind.query_op_read(op, mode), (("op", op), ("mode", mode)))


def appop_tracker(package: str, op: str) -> Tracker:
    read = Read(f"appop:{package}:{op}", sh("cmd", "appops", "get", package, op))
    return Tracker("appop", f"app-op {op} of {package}", read, (("package", package), ("op", op)))


def prop_tracker(name: str) -> Tracker:
    return Tracker("prop", f"property {name}", Read(f"prop:{name}", sh("getprop", name)), (("name", name),))


def device_wide_trackers() -> tuple[Tracker, ...]:
    """What every run watches whatever its checks name: processes first (killed before anything is put back), app-ops, shared storage."""
    return tuple(Tracker(source, devicewide.LABELS[source], devicewide.SOURCES[source][0]) for source in devicewide.SOURCES)


def trackers_for(check_entries: Iterable[Mapping[str, Any]], steps: Iterable[Mapping[str, Any]],
                 seeds: Iterable[SeedStep] = ()) -> tuple[Tracker, ...]:
    """The sources cleanup watches for a suite: those its device checks read, those its steps restore, those its seeds fill.

    Args:
        check_entries: The suite's validated `verify.device` entries.
        steps: Its validated `cleanup:` steps.
        seeds: Its `preflight.seed` steps (seeded SMS and photos are removed after the run).

    Returns:
        The trackers, one per source.
    """
    found: dict[str, Tracker] = {}

    def add(tracker: Tracker) -> None:
        found.setdefault(tracker.read.key, tracker)

    for seed in seeds:
        if isinstance(seed, SmsSeed):
            add(rows_tracker("SMS", SMS_URI, root=True))
        elif isinstance(seed, PhotoSeed):
            add(rows_tracker("MediaStore images", IMAGES_URI))

    for entry in check_entries:
        kind = entry.get("kind")
        if kind == "content":
            authority = entry["uri"].split("://", 1)[-1].split("/", 1)[0]
            source = _AUTHORITY_SOURCES.get(authority)
            if source == "contacts":
                add(rows_tracker("contacts", CONTACTS_URI))
            elif source == "sms":
                add(rows_tracker("SMS", SMS_URI, root=True))
            elif source == "media":
                add(rows_tracker("MediaStore images", IMAGES_URI))
            elif authority == "settings":
                add(settings_query_tracker(entry["uri"], entry.get("where")))
        elif kind == "media":
            add(rows_tracker("MediaStore images", entry.get("uri", IMAGES_URI)))
        elif kind == "appops":
            add(appops_mode_tracker(entry["op"], entry.get("mode", "ignore")))
    for step in steps:
        if "restoreSetting" in step:
            add(setting_tracker(step["restoreSetting"]["namespace"], step["restoreSetting"]["key"]))
        elif "restoreAppop" in step:
            add(appop_tracker(step["restoreAppop"]["package"], step["restoreAppop"]["op"]))
        elif "restoreProp" in step:
            add(prop_tracker(step["restoreProp"]["name"]))
    return tuple(found.values())


# ----------------------------------------------------------------------------- state of a source


def _state(tracker: Tracker, raw: RawRead | None) -> tuple[Any, str | None]:
    """A tracker's state from its read: (state, None) or (None, why it is unknown)."""
    if tracker.source in devicewide.SOURCES and raw is not None and raw.status is not None:
        try:
            return devicewide.parse_source(tracker.source, raw), None
        except ValueError as exc:
            return None, f"{tracker.label} could not be read: {cut(exc, 200)}"
    problem = unreadable(raw, tracker.label)
    if problem:
        return None, problem
    text = raw.text  # type: ignore[union-attr]
    if tracker.source in ("rows", "settings-query"):
        error = provider_error(text)
        if error:
            return None, error
        columns = ("_id",) if tracker.source == "rows" else ("name", "value")
        try:
            rows = parse_rows(text, columns)
        except ValueError as exc:
            return None, f"{tracker.label} did not parse: {exc}"
        if tracker.source == "rows":
            return sorted({str(row["_id"]) for row in rows}, key=_numeric), None
        return {str(row["name"]): row["value"] for row in rows}, None
    if tracker.source == "setting":
        value = text.strip()
        return (None if value == "null" else value), None
    if tracker.source == "prop":
        return text.strip(), None
    if tracker.source == "appops-mode":
        try:
            return appops_kind.parse_query_op(text), None
        except ValueError as exc:
            return None, f"{tracker.label}: {cut(exc, 200)}"
    return appop_modes(text, tracker.param("op")), None


def _numeric(value: str) -> tuple[int, str]:
    return (int(value), "") if value.isdigit() else (0, value)


def appop_modes(text: str, op: str) -> tuple[str | None, str]:
    """`cmd appops get PKG OP` -> (the uid mode or None, the package mode in force).

    AppOpsService prints a uid mode as `Uid mode: OP: mode` before the package's own `OP: mode`
    line (both can exist: `Uid mode: READ_CLIPBOARD: foreground` then `READ_CLIPBOARD: deny; time=...`).
    A package op nothing set has the `Default mode: X` printed after `No operations.`, else the
    op's AOSP default. `default` (MODE_DEFAULT) is a mode of its own, not "untouched".
    """
    uid_mode: str | None = None
    package_mode: str | None = None
    fallback = appops_kind.default_mode(op)
    for line in text.splitlines():
        line = line.strip()
        at_uid = line.startswith("Uid mode: ")
        if at_uid:
            line = line[len("Uid mode: "):]
        if line.startswith(f"{op}: "):
            mode = line[len(op) + 2:].split(";", 1)[0].split(" (", 1)[0].strip()
            if at_uid:
                uid_mode = mode
            elif package_mode is None:
                package_mode = mode
        elif line.startswith("Default mode: "):
            fallback = line[len("Default mode: "):].strip()
    return uid_mode, package_mode if package_mode is not None else fallback


def _appop_sentence(label: str, was: tuple[str | None, str], now: tuple[str | None, str]) -> list[str]:
    left = []
    if now[0] != was[0]:
        left.append(f"{label} (uid mode) is {now[0] or 'unset'}, was {was[0] or 'unset'}")
    if now[1] != was[1]:
        left.append(f"{label} is {now[1]}, was {was[1]}")
    return left


# ----------------------------------------------------------------------------- undo


def _content_delete(uri: str, where: str | None, *, root: bool) -> Script:
    args = ["content", "delete", "--uri", uri] + (["--where", where] if where else [])
    return sh(*(["su", "0"] if root else []), *args)


def undo_actions(tracker: Tracker, before: Any, after: Any) -> list[Action]:
    """The commands that put a source back from `after` to `before` (both known states)."""
    if tracker.source in devicewide.SOURCES:
        undo = devicewide.SOURCES[tracker.source][2]
        return [Action(item.description, item.script, item.must_succeed) for item in undo(before, after)]
    if tracker.source == "rows":
        uri, root = tracker.param("uri"), tracker.param("root")
        added = [row_id for row_id in after if row_id not in set(before)]
        return [Action(f"delete {tracker.label} row _id={row_id}", _content_delete(uri, f"_id={row_id}", root=root))
                for row_id in added]
    if tracker.source == "setting":
        return _setting_actions(tracker.param("namespace"), {tracker.param("key"): before}, {tracker.param("key"): after})
    if tracker.source == "settings-query":
        return _setting_actions(tracker.param("namespace"), before, after)
    if tracker.source == "appops-mode":
        op, mode = tracker.param("op"), tracker.param("mode")
        # Back to the op's own default mode (which drops the setting), never to MODE_DEFAULT.
        default = appops_kind.default_mode(op)
        actions = [Action(f"reset {op} of {package} (newly {mode}) to its default {default}",
                          sh("cmd", "appops", "set", package, op, default))
                   for package in after if package not in before]
        actions += [Action(f"set {op} of {package} back to {mode}", sh("cmd", "appops", "set", package, op, mode))
                    for package in before if package not in after]
        return actions
    if tracker.source == "prop":
        if before == after:
            return []
        name = tracker.param("name")
        return [Action(f"set property {name} back to {before!r}", sh("su", "0", "setprop", name, before))]
    # restoreAppop: each level back at its own level (`--uid` for the uid mode), never a uid mode written as a package's.
    package, op = tracker.param("package"), tracker.param("op")
    (uid_before, package_before), (uid_after, package_after) = before, after
    actions = []
    if uid_before != uid_after:
        # An unset uid mode comes back by setting the op's default mode, which drops the entry.
        target = uid_before if uid_before is not None else appops_kind.default_mode(op)
        actions.append(Action(f"set the uid mode of {op} of {package} back to {uid_before or 'unset'}",
                              sh("cmd", "appops", "set", "--uid", package, op, target)))
    if package_before != package_after:
        actions.append(Action(f"set {op} of {package} back to {package_before}",
                              sh("cmd", "appops", "set", package, op, package_before)))
    return actions


def _setting_actions(namespace: str, before: Mapping[str, Any], after: Mapping[str, Any]) -> list[Action]:
    actions = []
    for key in sorted(set(before) | set(after)):
        was, now = before.get(key), after.get(key)
        if was == now:
            continue
        if was is None:
            actions.append(Action(f"delete setting {namespace} {key} (was unset)", sh("settings", "delete", namespace, key)))
        else:
            actions.append(Action(f"put setting {namespace} {key} back to {was}", sh("settings", "put", namespace, key, was)))
    return actions


def step_actions(steps: Iterable[Mapping[str, Any]]) -> list[Action]:
    """The suite's own steps that are commands (`contentDelete`, `pmClear`, `adb`), in order."""
    actions = []
    for step in steps:
        if "contentDelete" in step:
            spec = step["contentDelete"]
            actions.append(Action(f"contentDelete {spec['uri']}" + (f" where {spec['where']}" if spec.get("where") else ""),
                                  _content_delete(spec["uri"], spec.get("where"), root=bool(spec.get("root")))))
        elif "pmClear" in step:
            actions.append(Action(f"pm clear {step['pmClear']}", sh("pm", "clear", step["pmClear"])))
        elif "adb" in step:
            actions.append(Action("adb shell " + " ".join(step["adb"]), sh(*step["adb"])))
    return actions


@dataclass(frozen=True)
class CleanupPlan:
    """What cleanup will run, and the sources it could not compare (and so leaves alone)."""

    actions: tuple[Action, ...]
    unknown: tuple[str, ...]


def plan_cleanup(trackers: Sequence[Tracker], steps: Sequence[Mapping[str, Any]], before: DeviceReads | None,
                 after: DeviceReads | None) -> CleanupPlan:
    """Undo what the run added (from before vs after), then the suite's command steps.

    Args:
        trackers: The watched sources.
        steps: The suite's `cleanup:` steps.
        before: The reads at the end of preflight.
        after: The reads after the run.

    Returns:
        The actions in order, and a sentence per source whose change could not be computed.
    """
    actions: list[Action] = []
    unknown: list[str] = []
    for tracker in trackers:
        was, why_before = _state(tracker, before.get(tracker.read.key) if before else None)
        now, why_after = _state(tracker, after.get(tracker.read.key) if after else None)
        if why_before or why_after:
            unknown.append(f"{tracker.label} was not compared: {why_before or why_after}")
            continue
        actions += undo_actions(tracker, was, now)
    # A command two sources ask for (a suite's app-op and the phone-wide app-ops) runs once, where it came first.
    seen: set[str] = set()
    unique = [action for action in actions if not (action.script.text in seen or seen.add(action.script.text))]
    return CleanupPlan(tuple(unique + step_actions(steps)), tuple(unknown))


def leftovers(trackers: Sequence[Tracker], before: DeviceReads | None, reread: DeviceReads) -> list[str]:
    """What a source shows after cleanup that it did not show before the run, one sentence each."""
    left = []
    for tracker in trackers:
        was, why_before = _state(tracker, before.get(tracker.read.key) if before else None)
        now, why_now = _state(tracker, reread.get(tracker.read.key))
        if why_before:
            continue
        if why_now:
            left.append(f"{tracker.label} could not be read after cleanup: {why_now}")
        elif tracker.source in devicewide.SOURCES:
            left += devicewide.SOURCES[tracker.source][3](was, now)
        elif tracker.source == "rows":
            extra = [row_id for row_id in now if row_id not in set(was)]
            if extra:
                left.append(f"{tracker.label}: rows {', '.join('_id=' + i for i in extra)} added by the run are still there")
        elif tracker.source in ("setting", "settings-query"):
            was_map = was if tracker.source == "settings-query" else {tracker.param("key"): was}
            now_map = now if tracker.source == "settings-query" else {tracker.param("key"): now}
            for key in sorted(set(was_map) | set(now_map)):
                if was_map.get(key) != now_map.get(key):
                    namespace = tracker.param("namespace")
                    left.append(f"settings {namespace} {key} is {_shown(now_map.get(key))}, was {_shown(was_map.get(key))}")
        elif tracker.source == "appops-mode":
            if set(now) != set(was):
                left.append(f"{tracker.label}: {', '.join(sorted(now)) or 'none'}, was {', '.join(sorted(was)) or 'none'}")
        elif tracker.source == "appop":
            left += _appop_sentence(tracker.label, was, now)
        elif now != was:
            left.append(f"{tracker.label} is {now}, was {was}")
    return left


def _shown(value: Any) -> str:
    return "unset" if value is None else repr(value)
