"""A Suite -> what it needs from a device (packages and why, root and why, its device checks), derived from the suite alone.

Nothing here is a table of suite names: the packages come from `app.packageName`, every
`package`/`packageName` a check, cleanup step or prove step names (`fromPrefs` and `shows`
included), the appops check's package; root comes from the check kinds that read private
storage as root, the SMS seeds and the root cleanup steps. A new suite gets its lines without
an edit here.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_agentbench.suite import Suite

#: Check kinds that read an app's private storage with `su` (checks/base.root_file_read).
ROOT_CHECK_KINDS = frozenset({"jsonFile", "sharedPreferences", "sqlite", "eventLog"})
#: Cleanup steps that run with `su` (checks/cleanup.py).
ROOT_CLEANUP_STEPS = frozenset({"restoreProp"})
#: Seed kinds whose command runs with `su` (run/seed.py: only root and the default SMS app write SMS).
ROOT_SEEDS = frozenset({"sms"})


@dataclass(frozen=True)
class Needs:
    """What a suite needs: package -> why (in first-seen order), why it needs root (empty: it does not), its checks."""

    packages: Mapping[str, tuple[str, ...]]
    root: tuple[str, ...]
    checks: tuple[Mapping[str, Any], ...]

    def checks_of(self, kind: str, package: str | None = None) -> tuple[Mapping[str, Any], ...]:
        """The suite's device checks of one kind (on one package)."""
        return tuple(entry for entry in self.checks if entry.get("kind") == kind
                     and (package is None or entry.get("package") == package))


def _packages_in(value: Any, keys: tuple[str, ...] = ("package", "packageName")) -> Iterator[str]:
    """Every string under a `package`/`packageName` key, at any depth (fromPrefs, shows, restoreAppop ...)."""
    if isinstance(value, Mapping):
        for key, inner in value.items():
            if key in keys and isinstance(inner, str):
                yield inner
            elif key == "pmClear" and isinstance(inner, str):
                yield inner
            else:
                yield from _packages_in(inner, keys)
    elif isinstance(value, (list, tuple)):
        for inner in value:
            yield from _packages_in(inner, keys)


def suite_needs(suite: Suite) -> Needs:
    """What `suite` needs from a device, from its app, checks, seeds, cleanup and prove steps."""
    packages: dict[str, list[str]] = {}

    def need(package: str, why: str) -> None:
        reasons = packages.setdefault(package, [])
        if why not in reasons:
            reasons.append(why)

    need(suite.app.package_name, "the suite's app")
    checks = tuple(suite.verify.device)
    for entry in checks:
        for package in _packages_in(entry):
            need(package, f"check {entry.get('name', entry.get('kind'))}")
    for step in suite.cleanup:
        for package in _packages_in(step):
            need(package, "cleanup")
    for package in _packages_in(suite.prove or {}):
        need(package, "its UI steps")
    root: list[str] = []
    for entry in checks:
        if entry.get("kind") in ROOT_CHECK_KINDS or _packages_in_from_prefs(entry):
            root.append(f"check {entry.get('name')} reads private storage as root")
    for seed in suite.preflight.seed:
        kind = type(seed).__name__.removesuffix("Seed").lower()
        if kind in ROOT_SEEDS:
            root.append("the SMS seeds are inserted as root")
            break
    for step in suite.cleanup:
        if ROOT_CLEANUP_STEPS & set(step):
            root.append(f"cleanup {next(iter(ROOT_CLEANUP_STEPS & set(step)))} runs as root")
    return Needs({package: tuple(reasons) for package, reasons in packages.items()}, tuple(dict.fromkeys(root)), checks)


def _packages_in_from_prefs(entry: Mapping[str, Any]) -> bool:
    """Whether a check reads another app's preferences (`fromPrefs`, `shows`: read as root)."""
    def walk(value: Any) -> bool:
        if isinstance(value, Mapping):
            return any(key in ("fromPrefs", "shows") or walk(inner) for key, inner in value.items())
        if isinstance(value, (list, tuple)):
            return any(walk(inner) for inner in value)
        return False
    return walk(entry)
