"""--agentbench-prove: one scenario of a suite (pass, a fail, fresh state) on a claimed phone -> preflight, the scenario, post-run reads, the suite's checks judged; no agent.

Each item goes through the same preflight, post-run reads and cleanup as a measured run
(`run.execute.finish_device_work`), so what is proven is what a run judges, and the phone is clean
afterwards. UI steps are calls to the built-in server's tools, run in process (MCP SDK `Client`
over `mcp_server.build_server`, pinned to the claimed phone); `adb` steps are device commands with
every word quoted; `seed` steps seed the phone as preflight does; a step's `capture:` keeps a value
from its output (a code random per run) for later steps and the answer. The judgement is `audit.prove.judge`.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import pytest

from pytest_agentbench.agents.plan import fill_placeholders
from pytest_agentbench.device.rootshell import known_su_form, rooted
from pytest_agentbench.device.shellscript import sh
from pytest_agentbench.errors import ProveFailed
from pytest_agentbench.pipeline import Scenario, judge_proof
from pytest_agentbench.report.text import cleanup_section
from pytest_agentbench.run.execute import DEVICE_STAGING_DIR, RunArtifacts, finish_device_work, plan_seeds
from pytest_agentbench.suite.instance import instance_label, instance_seed_text

if TYPE_CHECKING:
    from pytest_agentbench.pipeline import ProveStep
    from pytest_agentbench.checks.base import Check
    from pytest_agentbench.device.pool import ClaimedDevice
    from pytest_agentbench.suite import Suite

PROVE_FILE = "prove.json"
SECTION = "agentbench prove"
ADB_STEP_TIMEOUT_S = 60.0


def run_prove_item(item: pytest.Item) -> None:
    """Preflight, play the scenario, read the device, clean up, judge; raise ProveFailed when the proof fails."""
    suite: Suite = item.suite  # type: ignore[attr-defined]
    scenario: Scenario | None = item.scenario  # type: ignore[attr-defined]
    assert scenario is not None
    device: ClaimedDevice = item.funcargs["agentbench_device"]
    run_dir: Path = item.funcargs["agentbench_run_dir"]
    item.user_properties.append(("agentbench_run_dir", str(run_dir)))
    prepared = item.funcargs["agentbench_preflight"](suite, run_dir=run_dir)
    device.hand_over()
    played: list[dict[str, Any]] = []
    captured: dict[str, str] = {}
    problem = None
    try:
        problem = play(scenario, device, suite, played, captured)
    finally:
        state, cleanup = finish_device_work(device, suite, RunArtifacts(run_dir), prepared.device_before,
                                            prepared.device_baseline)
    # The answer may carry values the steps read off the device (a code random per run).
    answer = fill_placeholders(scenario.answer, captured) if scenario.answer is not None else None
    checks, judgement = judge_proof(suite, scenario, state, prepared.device_before, answer, cleanup)
    passed = problem is None and judgement.passed
    reason = f"the {scenario.item_name} scenario could not be played: {problem}" if problem else judgement.reason
    if not passed and suite.instance is not None and suite.instance.values:
        # Name the drawn instance and how to replay exactly it: a check may fail on one seed only.
        reason += f" (instance {instance_label(suite.name, suite.instance)}, {instance_seed_text(suite.instance)})"
    document = {"suite": suite.name, "scenario": scenario.item_name, "passed": passed, "reason": reason,
                "instance": suite.instance.to_json() if suite.instance is not None else None,
                "steps": played, "checks": [dataclasses.asdict(check) for check in checks], "cleanup": cleanup}
    (run_dir / PROVE_FILE).write_text(json.dumps(document, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    text = render(document, checks)
    item.add_report_section("call", SECTION, text)
    item.user_properties.append(("agentbench_prove", "passed" if passed else "failed"))
    if not passed:
        raise ProveFailed(f"{item.name}: {reason}\n{rerun_hint(item)}\n\n{text}")


def rerun_hint(item: pytest.Item) -> str:
    """The command that proves exactly this item's instance again: its node id, the seed and enough repeats to reach it."""
    suite: Suite = item.suite  # type: ignore[attr-defined]
    instance = suite.instance
    words = ["pytest", shlex.quote(item.nodeid), "--agentbench-prove"]
    if instance is not None:
        words += ["--agentbench-seed", str(instance.seed)]
        if instance.repeat > 1 or instance.values:
            words += ["--agentbench-repeat", str(instance.repeat)]
    return "rerun this instance: " + " ".join(words)


def render(document: dict[str, Any], checks: list[Check]) -> str:
    """The prove item's report: the judgement, every check (expected, seen), the steps and cleanup."""
    instance = document.get("instance") or {}
    shown = f" on {params_text}" if (params_text := instance.get("label")) else ""
    seed = f" (seed {instance['seed']}, r{instance['repeat']})" if instance else ""
    lines = [f"{document['suite']}[{document['scenario']}]{shown}{seed}: {'PROVEN' if document['passed'] else 'NOT PROVEN'}",
             f"  {document['reason']}", "Checks:"]
    for check in checks:
        label = f"{check.kind} {check.name}" if check.name not in (None, check.kind, "answer", "screen") else check.kind
        lines.append(f"  {'ok  ' if check.passed else 'FAIL'} {label}: expected {check.expected}")
        lines.append(f"       seen: {check.seen}")
    if document["steps"]:
        lines.append("Steps:")
        lines += [f"  {'ok  ' if step['ok'] else 'FAIL'} {step['step']}: {' '.join(step['result'].split())[:160]}"
                  for step in document["steps"]]
    lines += cleanup_section(document["cleanup"])
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- playing a scenario


def play(scenario: Scenario, device: ClaimedDevice, suite: Suite, played: list[dict[str, Any]],
         captured: dict[str, str] | None = None) -> str | None:
    """Run the scenario's steps on the phone; returns why it could not be played, or None.

    Args:
        scenario: The scenario.
        device: The claimed device (its claim handed over: the in-process server claims it).
        suite: The suite (placeholders `{device}`, `{packageName}`).
        played: Receives one entry per step (step, ok, result).
        captured: Receives the values the steps' `capture:` kept (name -> value).
    """
    if not scenario.steps:
        return None
    return anyio.run(_play, scenario.steps, device, suite, played, captured if captured is not None else {})


async def _play(steps: tuple[ProveStep, ...], device: ClaimedDevice, suite: Suite, played: list[dict[str, Any]],
                captured: dict[str, str]) -> str | None:
    from mcp import Client

    from pytest_agentbench.mcp_server import SERVER_NAME, ServerConfig, build_server

    config = dataclasses.replace(ServerConfig.from_environ(os.environ), pinned_serial=device.serial,
                                 endpoint=device.adb.endpoint, log_dir=None, data_dir=None, db_dir=None, socket_dir=None)
    values: dict[str, str] = {"device": device.serial, "packageName": suite.app.package_name}
    async with Client(build_server(config, adb=device.adb)) as client:
        for number, step in enumerate(steps, start=1):
            if step.wait is not None:
                await anyio.sleep(step.wait)
                continue
            if step.seed is not None:
                ok, text = await anyio.to_thread.run_sync(_seed, device, step)
                played.append({"step": step.describe(), "ok": ok, "result": text})
                if not ok:
                    return f"step {number} ({step.describe()}) failed: {text[:300]}"
                continue
            if step.times == 0:
                # A drawn count of none: this instance needs no such call (already on the right screen).
                played.append({"step": step.describe(), "ok": True, "result": "skipped: times 0"})
                continue
            if step.adb:
                # A scenario's `su 0 ...` runs in the device's su form, like the harness's own root commands.
                words = rooted(sh(*(fill_placeholders(word, values) for word in step.adb)),
                               known_su_form(device.adb, device.serial))
                result = await anyio.to_thread.run_sync(
                    lambda: device.adb.shell(device.serial, words, check=False, timeout_s=ADB_STEP_TIMEOUT_S))
                ok, text = result.exit_code == 0, result.stdout.strip()
                played.append({"step": step.describe(), "ok": ok, "result": text})
                if not ok:
                    return f"step {number} ({step.describe()}) exited {result.exit_code}: {text[:300]}"
            else:
                tool = step.tool.removeprefix(f"mcp__{SERVER_NAME}__")  # type: ignore[union-attr]
                for _ in range(step.times - 1):
                    await client.call_tool(tool, fill_placeholders(dict(step.args), values))
                answer = await client.call_tool(tool, fill_placeholders(dict(step.args), values))
                text = "\n".join(getattr(block, "text", "") for block in answer.content)
                ok = bool(answer.is_error) == step.expect_error
                played.append({"step": step.describe(), "ok": ok, "result": text})
                if not ok:
                    outcome = "failed" if answer.is_error else "succeeded, but the step expects an error"
                    return f"step {number} ({step.describe()}) {outcome}: {' '.join(text.split())[:300]}"
            if step.capture is not None:
                value = step.capture.find(text)
                if value is None:
                    return (f"step {number} ({step.describe()}): capture {step.capture.name!r} found no match of "
                            f"/{step.capture.pattern}/ in: {' '.join(text.split())[:300]}")
                values[step.capture.name] = captured[step.capture.name] = value
    return None


def _seed(device: ClaimedDevice, step: ProveStep) -> tuple[bool, str]:
    """A seed step: push its files, run its command (the same route preflight's seeds take)."""
    assert step.seed is not None
    plan = plan_seeds((step.seed,), staging_dir=DEVICE_STAGING_DIR)
    for remote, data in plan.files:
        device.adb.push(device.serial, data, remote, mode=0o644)
    ((_, command),) = plan.steps
    command = rooted(command, known_su_form(device.adb, device.serial))
    result = device.adb.shell(device.serial, command, check=False, timeout_s=ADB_STEP_TIMEOUT_S)
    return result.exit_code == 0, result.stdout.strip() or f"exit {result.exit_code}"
