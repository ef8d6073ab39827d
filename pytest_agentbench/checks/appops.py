"""`appops`: the packages in an op's mode (`cmd appops query-op OP MODE`) before and after -> exactly one newly restricted -> Check.

```yaml
- kind: appops
  name: restricted
  op: RUN_ANY_IN_BACKGROUND
  package: com.example.testbed
  mode: ignore                # default: ignore (what Settings' battery "Restricted" sets)
```

Judges the whole difference (seed 001: "passes only if the testbed alone is newly restricted"):
the named package must be in the mode after the run and not before it, no other package may have
entered the mode, and none may have left it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.checks.base import Check, CheckContext, DeviceReads, Read, cut, failed, passed, snapshot_error, unreadable
from pytest_agentbench.device.shellscript import sh

KIND = "appops"
USES_BEFORE = True
MODES = ("allow", "ignore", "deny", "default", "foreground")
# AppOpsManager.opToDefaultMode where it is not `allow` (Android 14). Undoing an op means setting this
# mode, never `default`: MODE_DEFAULT is a mode of its own, and AppStateTracker treats any
# RUN_ANY_IN_BACKGROUND mode but `allow` as restricted.
_DEFAULT_MODES = {
    "WRITE_SMS": "ignore", "WRITE_SETTINGS": "default", "SYSTEM_ALERT_WINDOW": "default", "GET_USAGE_STATS": "default",
    "PROJECT_MEDIA": "ignore", "ACTIVATE_VPN": "ignore", "MOCK_LOCATION": "deny", "REQUEST_INSTALL_PACKAGES": "default",
    "MANAGE_IPSEC_TUNNELS": "deny", "WRITE_MEDIA_AUDIO": "deny", "WRITE_MEDIA_VIDEO": "deny",
    "WRITE_MEDIA_IMAGES": "deny", "READ_DEVICE_IDENTIFIERS": "deny", "MANAGE_EXTERNAL_STORAGE": "default",
    "INTERACT_ACROSS_PROFILES": "default", "ACTIVATE_PLATFORM_VPN": "ignore", "LOADER_USAGE_STATS": "default",
    "MANAGE_ONGOING_CALLS": "default", "MANAGE_CREDENTIALS": "default", "SCHEDULE_EXACT_ALARM": "default",
    "MANAGE_MEDIA": "default",
}


def default_mode(op: str) -> str:
    """The mode an op has for a package nobody set it for (AppOpsManager.opToDefaultMode): `allow` for most."""
    return _DEFAULT_MODES.get(op, "allow")


@dataclass(frozen=True)
class Spec:
    name: str
    op: str
    package: str
    mode: str = "ignore"

    def describe(self) -> str:
        return f"{self.package} newly in {self.op} mode {self.mode}, and no other package changed"


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of an `appops` entry beyond the schema's: none (its package, op and mode are the schema's patterns)."""
    return []


def parse(entry: Mapping[str, Any]) -> Spec:
    """A validated `verify.device` entry -> Spec."""
    return Spec(entry["name"], entry["op"], entry["package"], entry.get("mode", "ignore"))


def query_op_read(op: str, mode: str) -> Read:
    """The Read listing the packages whose `op` is in `mode` (shared with cleanup)."""
    return Read(f"appops:{op}:{mode}", sh("cmd", "appops", "query-op", op, mode))


def reads(spec: Spec) -> tuple[Read, ...]:
    return (query_op_read(spec.op, spec.mode),)


def parse_query_op(text: str) -> list[str]:
    """`cmd appops query-op` output -> the packages, sorted (`No operations.` is none).

    Raises:
        ValueError: The output is an error (`Error: Unknown operation string: X`).
    """
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith(("Error", "Exception", "java."))]
    if errors:
        raise ValueError(errors[0])
    return sorted(line for line in lines if line != "No operations.")


def packages_snapshot(raw: Any, op: str, mode: str) -> dict[str, Any]:
    what = f"the packages in {op} mode {mode} (cmd appops query-op)"
    problem = unreadable(raw, what)
    if problem:
        return snapshot_error(problem)
    try:
        return {"packages": parse_query_op(raw.text)}
    except ValueError as exc:
        return snapshot_error(f"{what} could not be read: {cut(exc, 200)}")


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    return packages_snapshot(device.get(reads(spec)[0].key), spec.op, spec.mode)


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Pass only if exactly the named package is newly in the mode and nothing else moved."""
    expected = spec.describe()
    for moment, data in (("before the run", before), ("after the run", after)):
        if data is None:
            return failed(KIND, spec.name, expected, f"there is no snapshot {moment}")
        if "error" in data:
            return failed(KIND, spec.name, expected, f"{moment}: {data['error']}")
    was, now = set(before["packages"]), set(after["packages"])  # type: ignore[index]
    entered, left = sorted(now - was), sorted(was - now)
    seen = f"in mode {spec.mode} before: {', '.join(sorted(was)) or 'none'}; after: {', '.join(sorted(now)) or 'none'}"
    problems = []
    if spec.package in was:
        problems.append(f"{spec.package} was already in mode {spec.mode} before the run")
    elif spec.package not in now:
        problems.append(f"{spec.package} is not in mode {spec.mode}")
    others = [package for package in entered if package != spec.package]
    if others:
        problems.append(f"also newly in mode {spec.mode}: {', '.join(others)}")
    if left:
        problems.append(f"no longer in mode {spec.mode}: {', '.join(left)}")
    if problems:
        return failed(KIND, spec.name, expected, "; ".join(problems) + f" ({seen})")
    return passed(KIND, spec.name, expected, seen)
