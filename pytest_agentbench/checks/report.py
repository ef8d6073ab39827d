r"""`report`: the agent's final answer + planted bugs (regular expressions, values the app logged) -> the bugs found -> Check.

```yaml
- kind: report
  name: qa-shop-bugs
  bugs:
    - name: stale-total
      patterns: ['total', 'remov|decreas', 'stale|stayed|still']   # all in one sentence
      shows:                       # and a value this run's app showed, from its event log
        package: com.example.testbed
        event: item_removed        # any event of this name (or of one of a list of names) added during the run
        fields: [total_shown, total_expected]
    - name: flat-discount
      patterns: ['discount', 'flat|10\.00']
  minFound: 2                 # default: every bug
```

No model grades. A bug is found in a sentence that

* matches every one of its patterns (case-insensitive) and the patterns of no other bug: a
  sentence that fits two bugs (a keyword soup) counts for none;
* does not deny it (`denial`: "no bugs", "works", "did not find"), nor negate one of the bug's own
  words (`negated`: every place one of its patterns matches follows `not`, `n't`, `never`, `no
  longer` or `hardly` within two words: "did not delete the task below it", "was not stale");
* with `shows`, names a value this run's app logged: a number equal to a numeric field (`$48`,
  `48.00`), or a text field as a whole phrase (the truncated `ada@example.co`, not inside
  `ada@example.com`), so a report copied from another run, or written without using the app, fails.

A sentence repeated counts once. Sentences end at a full stop (or `!`, `?`) followed by a space or
a line break, and at a line break: never at the decimal point in `$36.00` (seed 001), nor at an
ellipsis (`$48 ... $36`). A bullet or numbered line is a line, so it is its own sentence.
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
# Whole words only: "not" is no negation inside "notebooks".
_NEGATION = r"(?:\bnot\b|n['’]t\b|\bnever\b|\bno longer\b|\bhardly\b)"
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
    "is not correct" and "does not update correctly" report a bug. "works as a flat $10.00
    discount" describes behaviour.
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


# A negation turns around the bug's words after it in its clause with at most this many words between:
# "did not drop the last character" turns "last character" around, "did not show my full email" not "email".
_NEGATION_REACH = 2
# Where a clause ends: a mark, or a word that starts another statement ("X did not happen, but Y did").
_CLAUSE_END = re.compile(r"[,;:.!?()]|\b(?:but|instead|and|yet|though|although|while|whereas|so|rather)\b", re.IGNORECASE)


def negated(bug: Bug, sentence: str, values: Sequence[Any] = ()) -> str | None:
    """The bug's own words a sentence negates ("did not delete", "was not stale", "never wrong"), or None.

    A negation (`not`, `n't`, `never`, `no longer`, `hardly`) turns around the bug's words that
    follow it in the same clause with at most two words between; one that is itself part of the
    bug's words (a pattern written "not update": "the total did not update") turns nothing around.
    A pattern is negated when every place it matches is turned around: "swiping did not delete the
    task below it" and "the welcome line did not drop the last character" deny their bugs; "it did
    not remove Email Sam but deleted Book flights" reports its bug. A place inside one of this
    run's logged `values` (the truncated email a pattern also matches) is the observation, not a
    word about it: "the email ada@example.co was never truncated" denies.
    """
    named = [span for value in values for span in _value_spans(sentence, value)]
    places = {index: list(re.finditer(pattern, sentence, re.IGNORECASE)) for index, pattern in enumerate(bug.patterns)}
    every = [place for found in places.values() for place in found]
    free = [word for word in re.finditer(_NEGATION, sentence, re.IGNORECASE)
            if not any(place.start() <= word.start() and word.end() <= place.end() for place in every)]

    def turned_by(place: re.Match[str]) -> re.Match[str] | None:
        if re.search(_NEGATION, place.group(0), re.IGNORECASE):
            return None
        for word in reversed(free):
            between = sentence[word.end(): place.start()]
            if word.end() <= place.start() and not _CLAUSE_END.search(between) and len(between.split()) <= _NEGATION_REACH:
                return word
        return None

    for found in places.values():
        words = [place for place in found if not any(start <= place.start() and place.end() <= end for start, end in named)]
        turned = [(place, turned_by(place)) for place in words]
        if words and all(by is not None for _, by in turned):
            place, by = turned[0]
            # Quoted from the word before a standalone negation ("was not stale"), or from "didn't".
            begin = sentence.rfind(" ", 0, by.start()) + 1  # type: ignore[union-attr]
            if begin == by.start():  # type: ignore[union-attr]
                begin = sentence.rfind(" ", 0, max(0, begin - 1)) + 1
            rest = re.match(r"\w*", sentence[place.end():])  # the whole word a pattern matched the start of
            return sentence[begin: place.end()] + (rest.group(0) if rest else "")
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


# A logged value that is a number as a report writes it ($48.00, 1,200, 4): compared as a number.
_NUMERIC = re.compile(r"^[$€£]?\s*(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?$")


def _value_spans(sentence: str, value: Any) -> list[tuple[int, int]]:
    """Where a sentence names a logged value: the same number, or the text as a whole phrase (see `names_value`)."""
    if isinstance(value, bool):
        return []
    if isinstance(value, (int, float, Decimal)) or _NUMERIC.match(str(value).strip()):
        wanted = numbers_in(str(value))
        return [found.span() for found in _NUMBER.finditer(sentence)
                if numbers_in(found.group(0)) & wanted]
    words = str(value).split()
    if not words:
        return []
    phrase = r"\s+".join(re.escape(word) for word in words)
    return [found.span() for found in re.finditer(rf"(?<![^\W_]){phrase}(?![^\W_])(?![.@_-][^\W_])", sentence, re.IGNORECASE)]


def names_value(sentence: str, value: Any) -> bool:
    """Whether a sentence names a logged value: the same number, or the text as a whole phrase.

    Numbers compare by value (`$48`, `48.00` and `$48.00` are one number). Text compares ignoring
    case and runs of spaces, and must stand alone: no letter or digit right before it, and none
    right after it, not even after a `.`, `@`, `-` or `_` (so `ada@example.co` is not named by
    `ada@example.com`).
    """
    return bool(_value_spans(sentence, value))


@dataclass(frozen=True)
class Shows:
    """Values this run's app showed, as its event log has them: `fields` of the new events named in `events`."""

    package: str
    file: str
    events: tuple[str, ...]
    fields: tuple[str, ...]

    @property
    def device_path(self) -> str:
        return app_path(self.package, self.file)

    def values(self, events: Sequence[Mapping[str, Any]]) -> list[Any]:
        """The logged values of the fields, in log order (as the app wrote them, `$48.00`, `ada@example.co`)."""
        return [event[field] for event in events if event.get("event") in self.events
                for field in self.fields if event.get(field) is not None]

    def describe(self) -> str:
        return f"a value the app logged as {' or '.join(self.fields)} of a new {' or '.join(self.events)} event"


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
        events = None if shows is None else (shows["event"],) if isinstance(shows["event"], str) else tuple(shows["event"])
        typed = None if shows is None else Shows(shows["package"], shows.get("file", DEFAULT_FILE), events,
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


# What a repeated sentence may differ by: a bullet, a `BUG:` label, case, spaces, the closing mark.
_LABEL = re.compile(r"^(?:[-*•]|\d+[.)]|bug\s*\d*\s*:)\s*", re.IGNORECASE)


def _same_sentence(sentence: str) -> str:
    text = " ".join(sentence.split()).casefold()
    while True:
        stripped = _LABEL.sub("", text, count=1)
        if stripped == text:
            return text.rstrip(".!?:; ")
        text = stripped


def distinct_sentences(text: str) -> list[str]:
    """The report's sentences, each once: a sentence written again (with another bullet or label) counts once."""
    seen: dict[str, str] = {}
    for sentence in split_sentences(text):
        seen.setdefault(_same_sentence(sentence), " ".join(sentence.split()))
    return list(seen.values())


@dataclass(frozen=True)
class Finding:
    """What the report check concluded: bug -> its sentence, and for each bug not found, why."""

    found: dict[str, str]
    why_not: dict[str, str]


def _quote(sentence: str) -> str:
    return repr(cut(sentence, 100))


def _why_not(bug: Bug, sentences: list[str], fitting: dict[int, list[str]], logged: list[Any] | None) -> str:
    """Why none of the sentences that match the bug's patterns counts for it, from the first reason that holds."""
    matching = [index for index, names in fitting.items() if bug.name in names]
    if not matching:
        return "no sentence reports it"
    alone = [index for index in matching if len(fitting[index]) == 1]
    if not alone:
        others = [name for name in fitting[matching[0]] if name != bug.name]
        return (f"its sentence also fits {', '.join(others)}: a sentence that fits more than one bug counts for none "
                f"({_quote(sentences[matching[0]])})")
    denied = [(index, denial(sentences[index]) or negated(bug, sentences[index], logged or ())) for index in alone]
    kept = [index for index, words in denied if words is None]
    if not kept:
        index, words = denied[0]
        return f"its only sentence denies it ({words!r}: {_quote(sentences[index])})"
    shown = ", ".join(dict.fromkeys(str(value) for value in logged or [])) or \
        f"no new {' or '.join(bug.shows.events)} event was logged"  # type: ignore[union-attr]
    return (f"its sentence names none of the values this run's app showed "
            f"({'/'.join(bug.shows.fields)}: {shown}): {_quote(sentences[kept[0]])}")  # type: ignore[union-attr]


def find_bugs(spec: Spec, answer: str, events: Mapping[str, Sequence[Mapping[str, Any]]] | None = None) -> Finding:
    """Find the planted bugs in a report, one sentence per bug (pure).

    Args:
        spec: The check.
        answer: The final answer.
        events: Per event log path, the events the app logged during the run (for `shows`).

    Returns:
        The bugs found with their sentence, and a reason for each bug that was not.
    """
    sentences = distinct_sentences(answer)
    # Sentence -> the bugs whose every pattern it matches; one that fits two bugs counts for none.
    fitting = {index: [bug.name for bug in spec.bugs if bug.found_in(sentence)] for index, sentence in enumerate(sentences)}
    found: dict[str, str] = {}
    why_not: dict[str, str] = {}
    for bug in spec.bugs:
        logged = bug.shows.values((events or {}).get(bug.shows.device_path, ())) if bug.shows is not None else None
        counting = [index for index, names in fitting.items() if names == [bug.name]
                    and denial(sentences[index]) is None and negated(bug, sentences[index], logged or ()) is None
                    and (logged is None or any(names_value(sentences[index], value) for value in logged))]
        if counting:
            found[bug.name] = sentences[counting[0]]
        else:
            why_not[bug.name] = _why_not(bug, sentences, fitting, logged)
    return Finding(found, why_not)


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
