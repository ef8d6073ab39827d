"""A loaded Suite + (seed, repeat index) -> the Suite of one seeded task instance, its param values filled in.

The values come from `params.instance_values` (SHA-256 of seed, suite, repeat and param name).
They fill `{name}` in the prompt text and in every string of the suite mapping that
`load.fillable` names (preflight values, verify strings, failure patterns, the system prompt,
and any key added later such as device checks); the typed specs are then rebuilt from the
filled mapping, so nothing downstream needs to know about params. The run-time placeholders
(`{deviceSerial}`, `{packageName}`, `{runDirectory}`) stay for the run to fill.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from pytest_agentbench.errors import SuiteError
from pytest_agentbench.suite import params
from pytest_agentbench.suite.params import Instance
from pytest_agentbench.suite.load import Suite, build_suite, fillable
from pytest_agentbench.suite.spaces import device_spaces

DEFAULT_SEED = params.DEFAULT_SEED


def instantiate(suite: Suite, *, seed: int = DEFAULT_SEED, repeat: int = 1, values: Mapping[str, str | int] | None = None) -> Suite:
    """The suite of one seeded instance: values drawn, placeholders filled, typed specs rebuilt.

    Args:
        suite: The suite as loaded (validated, so every placeholder is declared or run-time).
        seed: The session seed (``--agentbench-seed``).
        repeat: The repeat index, 1 for ``r1``.
        values: Recorded values to use instead of drawing them (a saved run re-rendered: the run
            is judged on what it was asked, even if the declaration changed since).

    Returns:
        A Suite whose ``instance`` says which instance it is and whose ``template`` is the suite
        as declared (for the digest); without params only those two fields differ.

    Raises:
        ValueError: A bad seed or repeat index (the suite itself was validated on load).
        SuiteError: A drawn value a seed or a package field cannot take (a number that is no phone number).
    """
    declared = suite.declared
    if values is None:
        values = params.instance_values(declared.raw.get("params"), seed=seed, suite=declared.name, repeat=repeat)
    else:
        params.instance_values(None, seed=seed, suite=declared.name, repeat=repeat)  # the same checks of seed and repeat
        values = dict(values)
    shown = params.shown_values(declared.raw.get("params"), values)
    instance = Instance(repeat=repeat, seed=seed, id=params.instance_id(repeat, values), values=values,
                        shown=shown if shown.keys() != values.keys() else {})
    if not values:
        return replace(declared, instance=instance, template=declared)
    data = fill_mapping(declared.raw, values)
    problems = filled_seed_problems(data) + filled_package_problems(data)
    if problems:
        raise SuiteError(declared.path, [f"instance {instance.id} (seed {seed}) draws a value a phone cannot take: {problem}"
                                         for problem in problems])
    prompt_text = params.fill(declared.prompt_text, values).value
    # The checks learn which of their values were drawn, and what each could have been, from the declaration.
    built = build_suite(declared.path, data, declared.line, declared.app, declared.prompt_path, prompt_text,
                        spaces=device_spaces(declared.raw))
    return replace(built, instance=instance, template=declared)


_PHONE_NUMBER = re.compile(r"^\+?[0-9]{3,15}$")
_PHOTO_NAME = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.-]*\.png$")
_PACKAGE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_]*(\.[A-Za-z][A-Za-z0-9_]*)+$")


def filled_seed_problems(data: Mapping[str, Any]) -> list[str]:
    """The seed values a filled suite mapping gives (preflight and prove `seed` steps), checked as the schema checks literal ones.

    The schema lets a seed's number, photo name and size, and a job's package and id, be a `{param}`;
    once drawn, each must be what the phone takes: a phone number, a .png name, a side of 1 to 4096
    pixels, a package name, a job id.
    """
    preflight = data.get("preflight") if isinstance(data.get("preflight"), Mapping) else {}
    entries = [(f"preflight.seed[{index}]", entry) for index, entry in enumerate(preflight.get("seed") or [])]
    prove = data.get("prove") if isinstance(data.get("prove"), Mapping) else {}
    for where, scenario in [("prove.pass", prove.get("pass")), *((f"prove.fail[{i}]", f) for i, f in enumerate(prove.get("fail") or []))]:
        for index, step in enumerate((scenario or {}).get("steps") or []):
            if isinstance(step, Mapping) and "seed" in step:
                entries.append((f"{where}.steps[{index}].seed", step["seed"]))
    problems = []
    for where, entry in entries:
        sms, photo = (entry.get("sms"), entry.get("photo")) if isinstance(entry, Mapping) else (None, None)
        job = entry.get("job") if isinstance(entry, Mapping) else None
        if isinstance(job, Mapping):
            if not _PACKAGE_NAME.match(str(job.get("package"))):
                problems.append(f"{where}.job.package: expected an Android package name, got {job.get('package')!r}")
            if not str(job.get("id")).isdigit() or int(str(job.get("id"))) > 2**31 - 1:
                problems.append(f"{where}.job.id: expected a job id from 0 to 2147483647, got {job.get('id')!r}")
        if isinstance(sms, Mapping) and not _PHONE_NUMBER.match(str(sms.get("from"))):
            problems.append(f"{where}.sms.from: expected a phone number of digits, got {sms.get('from')!r}")
        if isinstance(photo, Mapping):
            if not _PHOTO_NAME.match(str(photo.get("name"))):
                problems.append(f"{where}.photo.name: expected a file name ending in .png, got {photo.get('name')!r}")
            for side in ("width", "height"):
                value = str(photo.get(side))
                if not value.isdigit() or not 1 <= int(value) <= 4096:
                    problems.append(f"{where}.photo.{side}: expected an integer from 1 to 4096, got {photo.get(side)!r}")
    return problems


def filled_package_problems(data: Mapping[str, Any]) -> list[str]:
    """The package names a filled suite mapping gives where the schema lets one be a `{param}`: every `package` of a
    check or cleanup step (nested ones included, as a `fromPrefs` or a report's `shows`) and each `pmClear`."""
    found: list[tuple[str, Any]] = []

    def walk(value: Any, where: str) -> None:
        if isinstance(value, Mapping):
            for key, inner in value.items():
                if key in ("package", "pmClear") and isinstance(inner, str):
                    found.append((f"{where}.{key}", inner))
                else:
                    walk(inner, f"{where}.{key}")
        elif isinstance(value, list):
            for index, inner in enumerate(value):
                walk(inner, f"{where}[{index}]")

    verify = data.get("verify") if isinstance(data.get("verify"), Mapping) else {}
    walk(verify.get("device") or [], "verify.device")
    walk(data.get("cleanup") or [], "cleanup")
    return [f"{where}: expected an Android package name, got {value!r}"
            for where, value in found if not _PACKAGE_NAME.match(value)]


def fill_mapping(raw: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a suite mapping with `values` filled into its fillable parts (`load.fillable`); other keys stay as written."""
    filled = params.fill(fillable(raw), values).value
    data = dict(raw)
    for key, value in filled.items():
        # Only claude.appendSystemPrompt is fillable inside `claude`; its other keys are kept.
        data[key] = {**raw[key], **value} if key == "claude" else value
    return data


def item_name(suite: Suite, *, repeats: int) -> str:
    """The pytest item name of an instance: the suite name, with `[<instance id>]` when there are repeats or params.

    A single run of a suite without params keeps the plain name (`wifi-on`), so node ids of
    ordinary sessions do not change; every other run names its instance (`bug-repro[r3]`,
    `contacts-add[r3-42-Bob]`).
    """
    instance = suite.instance
    if instance is None or (repeats <= 1 and not instance.values):
        return suite.name
    return f"{suite.name}[{instance.id}]"


def prove_item_name(suite: Suite, scenario: str, *, repeats: int) -> str:
    """The pytest item name of one prove scenario of an instance: `wifi-on[prove-pass]`, or with the
    instance id first when the suite has params or there are repeats (`clock-world-clock[r2-1f2e3d4c-prove-fresh]`)."""
    instance = suite.instance
    if instance is None or (repeats <= 1 and not instance.values):
        return f"{suite.name}[{scenario}]"
    return f"{suite.name}[{instance.id}-{scenario}]"


def instance_label(suite_name: str, instance: Mapping[str, Any] | Instance | None) -> str:
    """How reports name a run's instance: `clock-world-clock[city=Tokyo,snooze=20]` (the drawn values),
    `bug-repro[r3]` for a later repeat of a suite without params, else the bare name.

    Takes a loaded Instance or result.json's `instance` block, so the terminal, JSON and HTML
    reports name instances alike. The seed is not in the label: show it beside (`instance_seed_text`).
    """
    if instance is None:
        return suite_name
    if isinstance(instance, Instance):
        text, repeat = instance.values_text, instance.repeat
    else:
        text, repeat = instance.get("label") or params.values_text(instance.get("values") or {}), instance.get("repeat")
    if text:
        return f"{suite_name}[{text}]"
    # A suite without params: its first run keeps the plain name, as its node id does.
    return f"{suite_name}[r{repeat}]" if isinstance(repeat, int) and repeat > 1 else suite_name


def instance_seed_text(instance: Mapping[str, Any] | Instance | None) -> str:
    """`seed 7, r3`: what reruns exactly this instance (`--agentbench-seed 7`, the third repeat); empty without an instance."""
    if instance is None:
        return ""
    seed, repeat = (instance.seed, instance.repeat) if isinstance(instance, Instance) else (instance.get("seed"), instance.get("repeat"))
    return f"seed {seed}, r{repeat}"
