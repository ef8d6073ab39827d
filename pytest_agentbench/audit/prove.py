"""A suite's `prove:` block -> its scenarios (pass, each fail, the fresh state); a scenario's checks -> whether the proof holds and why not.

Pure. Seed 001: "before a model ran, every check was driven by hand ... a pass state and a fail
state for every distinct way it reports a failure". A pass scenario must pass every check; a fail
scenario must fail exactly the check it names, with a reason containing its word; the fresh state
(preflight, then nothing) must fail every check, or the suite can pass with no action.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pytest_agentbench.audit.verdict import failed_reason
from pytest_agentbench.suite.capture import Capture
from pytest_agentbench.checks.seed import SeedStep, parse_seed

if TYPE_CHECKING:
    from pytest_agentbench.checks.base import Check
    from pytest_agentbench.suite import Suite

ScenarioKind = Literal["pass", "fail", "fresh"]


@dataclass(frozen=True)
class ProveStep:
    """One step of a scenario: a tool call of the built-in server, an adb command, a host-side seed, or a wait."""

    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    expect_error: bool = False
    adb: tuple[str, ...] = ()
    wait: float | None = None
    seed: SeedStep | None = None
    capture: Capture | None = None
    #: How many times the tool call is made in a row (`times:`, a count the instance may draw).
    times: int = 1

    def describe(self) -> str:
        if self.tool is not None:
            call = f"{self.tool}({', '.join(f'{key}={value!r}' for key, value in self.args.items())})"
            return call if self.times == 1 else f"{call} x{self.times}"
        if self.adb:
            return "adb shell " + " ".join(self.adb)
        if self.seed is not None:
            return f"seed {self.seed.describe()}"
        return f"wait {self.wait}s"


@dataclass(frozen=True)
class Scenario:
    """One prove scenario of a suite.

    Attributes:
        kind: pass, fail or fresh.
        name: `pass`, `fresh`, or the fail scenario's name.
        steps: What drives the phone after preflight.
        answer: The final answer the scenario gives the answer and report checks (None: none).
        check: For a fail scenario, the check that must fail.
        reason_includes: For a fail scenario, a word that check's reason must contain.
    """

    kind: ScenarioKind
    name: str
    steps: tuple[ProveStep, ...] = ()
    answer: str | None = None
    check: str | None = None
    reason_includes: str | None = None

    @property
    def item_name(self) -> str:
        """`prove-pass`, `prove-fresh`, `prove-fail-<name>`: the pytest item's parameter."""
        return f"prove-{self.kind}" if self.kind != "fail" else f"prove-fail-{self.name}"


def _times(value: Any) -> int:
    # A template's `{param}` has no count yet (1); an instance's is the drawn number, as text.
    return int(value) if isinstance(value, int) or str(value).isdigit() else 1


def _steps(raw: Sequence[Mapping[str, Any]]) -> tuple[ProveStep, ...]:
    steps = []
    for step in raw:
        capture = Capture(step["capture"]["name"], step["capture"]["pattern"]) if step.get("capture") else None
        if "tool" in step:
            steps.append(ProveStep(tool=step["tool"], args=dict(step.get("args") or {}), expect_error=bool(step.get("expect_error")),
                                   capture=capture, times=_times(step.get("times", 1))))
        elif "adb" in step:
            steps.append(ProveStep(adb=tuple(step["adb"]), capture=capture))
        elif "seed" in step:
            steps.append(ProveStep(seed=parse_seed(step["seed"])))
        else:
            steps.append(ProveStep(wait=float(step["wait"])))
    return tuple(steps)


def scenarios_of(suite: Suite) -> tuple[Scenario, ...]:
    """The suite's scenarios in item order: pass, each fail, fresh (only fresh without a `prove:` block)."""
    fresh = Scenario("fresh", "fresh")
    prove = suite.prove
    if not prove:
        return (fresh,)
    scenarios = [Scenario("pass", "pass", _steps(prove["pass"].get("steps") or ()), prove["pass"].get("answer"))]
    for raw in prove.get("fail") or ():
        scenarios.append(Scenario("fail", raw["name"], _steps(raw.get("steps") or ()), raw.get("answer"),
                                  raw["check"], raw["reasonIncludes"]))
    return (*scenarios, fresh)


@dataclass(frozen=True)
class Judgement:
    """Whether a scenario proved what it must, and the sentence that says why not."""

    passed: bool
    reason: str


def _names(checks: Sequence[Check]) -> str:
    return ", ".join(dict.fromkeys(str(check.name or check.kind) for check in checks))


def judge(scenario: Scenario, checks: Sequence[Check], cleanup: Mapping[str, Any] | None = None) -> Judgement:
    """Judge a scenario's checks, then its cleanup.

    Args:
        scenario: The scenario that ran.
        checks: Every check the suite's end state and answer decide (`verdict.state_checks`).
        cleanup: The cleanup report of the item (`run.cleanup.run_cleanup`), or None when nothing is watched.

    Returns:
        The judgement; its reason names the scenario, the checks at fault and what they saw. A
        scenario whose checks prove what they must still fails when cleanup left the phone changed
        or a cleanup step failed: cleanup is proven with the checks, on every state they are.
    """
    judgement = _judge_checks(scenario, checks)
    undone = [*((cleanup or {}).get("failed") or ()), *((cleanup or {}).get("left") or ())]
    if judgement.passed and undone:
        return Judgement(False, f"{judgement.reason}, but cleanup did not put the phone back: " + "; ".join(map(str, undone)))
    return judgement


def _judge_checks(scenario: Scenario, checks: Sequence[Check]) -> Judgement:
    failing = [check for check in checks if not check.passed]
    passing = [check for check in checks if check.passed]
    if scenario.kind == "pass":
        if not failing:
            return Judgement(True, f"the pass scenario passes all {len(checks)} checks")
        return Judgement(False, "the pass scenario fails " + "; ".join(failed_reason(check) for check in failing))
    if scenario.kind == "fresh":
        if not passing:
            return Judgement(True, f"on the fresh state all {len(checks)} checks fail")
        shown = "; ".join(f"{check.name or check.kind} (seen: {check.seen})" for check in passing)
        everything = " every check passes:" if not failing else ""
        return Judgement(False, f"the suite passes with no action:{everything} on the fresh state (preflight, then nothing) "
                                f"{_names(passing)} pass{'es' if len(passing) == 1 else ''}; every check must fail there. {shown}")
    named = [check for check in failing if check.name == scenario.check]
    others = [check for check in failing if check.name != scenario.check]
    where = f"the fail scenario {scenario.name!r}"
    if not failing:
        return Judgement(False, f"{where} passes every check: {scenario.check!r} does not catch it")
    if not named:
        return Judgement(False, f"{where} does not fail {scenario.check!r}; it fails {_names(others)} instead: "
                                + "; ".join(failed_reason(check) for check in others))
    if others:
        return Judgement(False, f"{where} fails {scenario.check!r} but also {_names(others)}: a fail scenario must fail "
                                "exactly the check it names (give the scenario the right `answer:` when only the device state should be wrong)")
    word = (scenario.reason_includes or "").casefold()
    reasons = [failed_reason(check) for check in named]
    if not any(word in reason.casefold() for reason in reasons):
        return Judgement(False, f"{where} fails {scenario.check!r}, but its reason does not contain "
                                f"{scenario.reason_includes!r}: {' | '.join(reasons)}")
    return Judgement(True, f"{where} fails exactly {scenario.check!r}: {reasons[0]}")
