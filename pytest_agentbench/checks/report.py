r"""`report`: the agent's final answer + planted bugs (regular expressions, values the app logged) -> the bugs found -> Check.

```yaml
- kind: report
  name: qa-shop-bugs
  bugs:
    - name: stale-total
      patterns: ['total', 'remov|decreas', 'stale|stayed|still']   # all in one sentence
      shows:                       # optional: and a number this run's app showed, from its event log
        package: com.example.testbed
        event: item_removed        # any event of this name added during the run
        fields: [total_shown, total_expected]
    - name: flat-discount
      patterns: ['discount', 'flat|10\.00']
  minFound: 2                 # default: every bug
```

No model grades. A bug is found in a sentence that matches every one of its patterns
(case-insensitive), does not deny it (`denial`), and, with `shows`, names a number equal to the
value of one of the fields in one of the events of that name the app logged during the run (so a
report copied from another run, or written without using the app, fails). One sentence counts
for one bug only: the bugs are matched to distinct sentences (a maximum matching), so a one-line
keyword soup finds one bug at most.

Sentences end at a full stop (or `!`, `?`) followed by a space or a line break, and at a line
break: never at the decimal point in `$36.00` (seed 001), nor at an ellipsis (`$48 ... $36`).
A bullet or numbered line is a line, so it is its own sentence.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from pytest_agentbench.checks.base import Check, CheckContext, DeviceReads, Read, app_path, cut, failed, passed, root_file_read
from pytest_agentbench.checks.eventlog import DEFAULT_FILE, log_snapshot, new_events

KIND = "report"
# The before-snapshot tells which logged events are this run's (only with `shows`).
USES_BEFORE = True
# A full stop (or ! ?) followed by whitespace ends a sentence, unless it ends an ellipsis; so does a line break.
_SENTENCE_END = re.compile(r"(?<=[.!?])(?<!\.\.\.)[ \t]+|\r?\n+")
# Numbers as a report writes them: 48, $48.00, 1,200, 32.40.
_NUMBER = re.compile(r"(?<![\d.,])\d{1,3}(?:,\d{3})+(?:\.\d+)?|(?<![\d.,])\d+(?:\.\d+)?")
_NEGATION = r"(?:\bnot|n['’]t|\bnever|\bno longer|\bhardly)"
# Words that say "this is not a bug" when they are not negated within the two words before them.
_NEGATABLE_DENIALS = (
    r"\bworks?\b(?! (?:as|like) )", r"\bworking\b(?! (?:as|like) )", r"\bworked\b(?! (?:as|like) )",
    r"\bcorrect(?:ly)?\b", r"\bfine\b", r"\bas (?:expected|intended|designed)\b", r"\bproperly\b", r"\bok(?:ay)?\b",
)
# Phrases that deny outright, whatever comes before them.
_DENIALS = (
    r"\bno (?:\w+ ){0,2}(?:bugs?|issues?|problems?|defects?|errors?)\b",
    r"\b(?:did|could|do|can|does)(?: not|n['’]t) (?:find|see|notice|spot|observe|reproduce|encounter|detect)\b",
    r"\bnot (?:a |really a )?(?:bugs?|an? issue|a problem)\b", r"\bnothing (?:wrong|unusual|broken)\b",
    r"\bunable to (?:find|reproduce)\b", r"\bwithout (?:any )?(?:bugs?|issues?|problems?)\b",
)


def denial(sentence: str) -> str | None:
    """The words by which a sentence says there is no bug ("no bug", "works", "did not find"), or None.

    "works", "correct", "fine", "as expected", "properly" and "ok" deny unless a negation (`not`,
    `n't`, `never`, `no longer`, `hardly`) is among the two words before them: "did not work",
    "is not correct" and "does not update correctly" report a bug. "works as a flat $10.00 discount" describes behaviour.
    """
    for pattern in _DENIALS:
        found = re.search(pattern, sentence, re.IGNORECASE)
        if found:
            return found.group(0)
    for pattern in _NEGATABLE_DENIALS:
        for found in re.finditer(pattern, sentence, re.IGNORECASE):
            before = " ".join(sentence[: found.start()].split()[-2:])
            if not re.search(_NEGATION, before, re.IGNORECASE):
                return found.group(0)
    return None


def numbers_in(text: str) -> set[Decimal]:
    """Every number written in a text (`$48.00` and `48` are the same number)."""
    values = set()
    for match in _NUMBER.finditer(text):
        try:
            values.add(Decimal(match.group(0).replace(",", "")))
        except InvalidOperation:  # pragma: no cover - the pattern only matches numbers
            continue
    return values


@dataclass(frozen=True)
class Shows:
    """Values this run's app showed, as its event log has them: `fields` of the new `event` events."""

    package: str
    file: str
    event: str
    fields: tuple[str, ...]

    @property
    def device_path(self) -> str:
        return app_path(self.package, self.file)

    def values(self, events: Sequence[Mapping[str, Any]]) -> list[str]:
        """The logged values of the fields, in log order (as the app wrote them, `$48.00`)."""
        return [str(event[field]) for event in events if event.get("event") == self.event
                for field in self.fields if event.get(field) is not None]

    def describe(self) -> str:
        return f"a number the app logged as {' or '.join(self.fields)} of a new {self.event} event"


@dataclass(frozen=True)
class Bug:
    name: str
    patterns: tuple[str, ...]
    shows: Shows | None = None

    def found_in(self, sentence: str) -> bool:
        """Whether a sentence matches every pattern (ignoring case); denials and values are judged apart."""
        return all(re.search(pattern, sentence, re.IGNORECASE) for pattern in self.patterns)


@dataclass(frozen=True)
class Spec:
    name: str
    bugs: tuple[Bug, ...]
    min_found: int

    def describe(self) -> str:
        names = ", ".join(bug.name for bug in self.bugs)
        return f"the answer reports at least {self.min_found} of {len(self.bugs)} planted bugs ({names}), one sentence each"

    @property
    def logs(self) -> tuple[str, ...]:
        """The event logs the bugs' `shows` read, each once."""
        return tuple(dict.fromkeys(bug.shows.device_path for bug in self.bugs if bug.shows is not None))


def problems(entry: Mapping[str, Any], where: str) -> list[str]:
    """The rules of a `report` entry a schema cannot say: unique bug names, patterns that compile, minFound within reach."""
    found = []
    names: dict[str, int] = {}
    for index, bug in enumerate(entry.get("bugs") or []):
        if bug["name"] in names:
            found.append(f"{where}.bugs[{index}].name: expected a name no other bug has, got {bug['name']!r} "
                         f"(also bugs[{names[bug['name']]}])")
        names.setdefault(bug["name"], index)
        for number, pattern in enumerate(bug.get("patterns") or []):
            try:
                re.compile(pattern)
            except re.error as exc:
                found.append(f"{where}.bugs[{index}].patterns[{number}]: expected a regular expression, "
                             f"got {pattern!r} ({exc})")
    if isinstance(entry.get("minFound"), int) and entry["minFound"] > len(entry.get("bugs") or []):
        found.append(f"{where}.minFound: expected at most the number of bugs ({len(entry['bugs'])}), got {entry['minFound']}")
    return found


def parse(entry: Mapping[str, Any]) -> Spec:
    """A validated `verify.device` entry -> Spec."""
    bugs = []
    for bug in entry["bugs"]:
        shows = bug.get("shows")
        typed = None if shows is None else Shows(shows["package"], shows.get("file", DEFAULT_FILE), shows["event"],
                                                   tuple(shows["fields"]))
        bugs.append(Bug(bug["name"], tuple(bug["patterns"]), typed))
    return Spec(entry["name"], tuple(bugs), entry.get("minFound", len(bugs)))


def reads(spec: Spec) -> tuple[Read, ...]:
    return tuple(root_file_read(path) for path in spec.logs)


def snapshot(spec: Spec, device: DeviceReads) -> dict[str, Any]:
    return {"logs": {path: log_snapshot(path, device) for path in spec.logs}}


def split_sentences(text: str) -> list[str]:
    """Sentences of a report: split at a full stop followed by a space or a newline, and at line breaks."""
    return [part.strip() for part in _SENTENCE_END.split(text) if part.strip()]


def _assign(candidates: Mapping[str, list[int]]) -> dict[str, int]:
    """Bugs -> distinct sentences, as many bugs as possible (augmenting paths; the lists are tiny)."""
    owner: dict[int, str] = {}

    def place(bug: str, tried: set[int]) -> bool:
        for sentence in candidates[bug]:
            if sentence in tried:
                continue
            tried.add(sentence)
            if sentence not in owner or place(owner[sentence], tried):
                owner[sentence] = bug
                return True
        return False

    for bug in candidates:
        place(bug, set())
    return {bug: sentence for sentence, bug in owner.items()}


@dataclass(frozen=True)
class Finding:
    """What the report check concluded: bug -> its sentence, and for each bug not found, why."""

    found: dict[str, str]
    why_not: dict[str, str]


def find_bugs(spec: Spec, answer: str, events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> Finding:
    """Find the planted bugs in a report, one sentence per bug (pure).

    Args:
        spec: The check.
        answer: The final answer.
        events: Per event log path, the events the app logged during the run (for `shows`).

    Returns:
        The bugs found with their sentence, and a reason for each bug that was not.
    """
    sentences = split_sentences(answer)
    denials = [denial(sentence) for sentence in sentences]
    candidates: dict[str, list[int]] = {}
    why_not: dict[str, str] = {}
    for bug in spec.bugs:
        matching = [i for i, sentence in enumerate(sentences) if bug.found_in(sentence)]
        kept = [i for i in matching if denials[i] is None]
        if matching and not kept:
            why_not[bug.name] = f"its only sentence denies it ({denials[matching[0]]!r}: {cut(sentences[matching[0]], 100)!r})"
        if bug.shows is not None and kept:
            logged = bug.shows.values((events or {}).get(bug.shows.device_path, ()))
            wanted = set().union(*(numbers_in(value) for value in logged)) if logged else set()
            with_value = [i for i in kept if numbers_in(sentences[i]) & wanted]
            if not with_value:
                shown = ", ".join(dict.fromkeys(logged)) or f"no new {bug.shows.event} event was logged"
                why_not[bug.name] = (f"its sentence names none of the values this run's app showed "
                                     f"({'/'.join(bug.shows.fields)}: {shown}): {cut(sentences[kept[0]], 100)!r}")
            kept = with_value
        candidates[bug.name] = kept
    assignment = _assign(candidates)
    for bug in spec.bugs:
        if bug.name not in assignment and bug.name not in why_not:
            why_not[bug.name] = ("its only sentence already counts for another bug" if candidates[bug.name]
                                 else "no sentence reports it")
    found = {bug.name: sentences[assignment[bug.name]] for bug in spec.bugs if bug.name in assignment}
    return Finding(found, {name: why for name, why in why_not.items() if name not in found})


def validate(before: Mapping[str, Any] | None, after: Mapping[str, Any], spec: Spec, context: CheckContext) -> Check:
    """Count the planted bugs the final answer reports, one sentence per bug."""
    expected = spec.describe()
    if not context.answer or not context.answer.strip():
        return failed(KIND, spec.name, expected, "the agent gave no final answer to judge")
    events: dict[str, list[Mapping[str, Any]]] = {}
    for path, log in after.get("logs", {}).items():
        earlier = ((before or {}).get("logs") or {}).get(path) or {}
        if "error" in log or "error" in earlier:
            return failed(KIND, spec.name, expected, log.get("error") or f"before the run, {earlier['error']}")
        events[path] = new_events(earlier.get("events", []), log["events"])
    finding = find_bugs(spec, context.answer, events)
    seen = "; ".join(f"found {name} in {cut(sentence, 120)!r}" for name, sentence in finding.found.items()) or "no planted bug found"
    if finding.why_not:
        seen += "; not found: " + "; ".join(f"{name} ({why})" for name, why in finding.why_not.items())
    if len(finding.found) >= spec.min_found:
        return passed(KIND, spec.name, expected, seen)
    return failed(KIND, spec.name, expected, f"{len(finding.found)} of {len(spec.bugs)} found, {spec.min_found} needed: {seen}")
