"""Every committed prompt's `KEY:` answer lines, pinned: a prompt that renames or drops one changes what every agent must answer."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmark" / "agent"
_KEY_LINE = re.compile(r"^([A-Z][A-Z_]+):", re.M)

#: Suite -> the `KEY:` lines its prompt asks the final reply to end with, in order. The QA bug
#: reports end in a free-text report (their `report` check reads sentences), so they ask for none.
PROMPT_KEYS: dict[str, tuple[str, ...]] = {
    "bug-repro": ("EXPECTED_COUNT", "DISPLAYED_COUNT"),
    "chrome-bookmark-folder": ("BOOKMARK", "FOLDER"),
    "chrome-camera-blocked": ("SITE", "CAMERA"),
    "chrome-homepage": ("HOMEPAGE",),
    "chrome-javascript-blocked": ("JAVASCRIPT_BLOCKED", "JAVASCRIPT_DEFAULT"),
    "chrome-search-engine": ("SEARCH_ENGINE",),
    "chrome-secure-connections": ("SECURE_CONNECTIONS",),
    "clock-alarm-volume": ("SILENCE_AFTER", "GRADUAL_VOLUME"),
    "clock-world-clock": ("WORLD_CLOCK", "SNOOZE"),
    "log-code-to-contact": ("CONTACT",),
    "messages-mute": ("MUTED",),
    "messages-pin-archive": ("PINNED", "ARCHIVED"),
    "photos-crop": ("CROPPED",),
    "photos-rotate": ("ROTATED",),
    "qa-forms-bug-report": (),
    "qa-shop-bug-report": (),
    "qa-tasks-bug-report": (),
    "testbed-pickup-code": ("PICKUP_CODE",),
    "ux-flow": ("SELECTED_PLAN", "FLOW_STATUS"),
    "wakelock-restrict": ("WAKELOCK_APP",),
    "wifi-on": ("WIFI",),
}


def test_every_committed_suite_has_its_prompt_keys_pinned() -> None:
    assert sorted(PROMPT_KEYS) == sorted(path.stem for path in (BENCHMARK / "suites").glob("*.yml"))


@pytest.mark.parametrize("suite", sorted(PROMPT_KEYS))
def test_the_prompt_asks_for_exactly_its_pinned_key_lines(suite: str) -> None:
    prompt = (BENCHMARK / "prompts" / f"{suite}.txt").read_text(encoding="utf-8")
    assert tuple(_KEY_LINE.findall(prompt)) == PROMPT_KEYS[suite]


@pytest.mark.parametrize("suite", sorted(name for name, keys in PROMPT_KEYS.items() if keys))
def test_the_answer_check_reads_only_keys_the_prompt_asks_for(suite: str) -> None:
    # A check that expects a key the prompt never asks for fails every honest agent.
    verify = yaml.safe_load((BENCHMARK / "suites" / f"{suite}.yml").read_text(encoding="utf-8"))["verify"]
    expected = {match for line in verify.get("answerIncludes") or () for match in _KEY_LINE.findall(str(line))}
    assert expected <= set(PROMPT_KEYS[suite]), expected - set(PROMPT_KEYS[suite])
