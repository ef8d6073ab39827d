"""Suite files for the tests: a valid suite as a mapping, laid out on disk like the committed ones, and the error a bad one raises."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_agentbench.errors import SuiteError
from pytest_agentbench.suite import load_suite

BASE: dict[str, Any] = {
    "name": "demo",
    "platform": "android",
    "prompt": "../prompts/demo.txt",
    "app": {"packageName": "com.example.app"},
    "preflight": {
        "clearAppData": True,
        "sharedPreferences": {"prefs": {"done": True}},
        "launchUri": "example://home",
        "settleSeconds": 1,
        "startScreenIncludes": ["Home"],
    },
    "claude": {"model": "claude-sonnet-5-5", "maxBudgetUsd": 1, "timeoutSeconds": 300},
    "verify": {"answerIncludes": ["RESULT: ok"], "screenIncludes": ["Done"]},
    "failurePatterns": ["Exception"],
    "ignoredFailurePatterns": [],
}

def write_suite(root: Path, data: Any = None, *, text: str | None = None, name: str = "demo",
                prompt: bytes = b"Use {deviceSerial}.\nRESULT: <value>\n") -> Path:
    """Lay out root/suites/<name>.yml and root/prompts/demo.txt like the committed suites."""
    (root / "suites").mkdir(exist_ok=True)
    (root / "prompts").mkdir(exist_ok=True)
    (root / "prompts" / "demo.txt").write_bytes(prompt)
    path = root / "suites" / f"{name}.yml"
    path.write_text(text if text is not None else yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    return path


def suite_with(**verify: Any) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    data["verify"] = {"answerIncludes": ["RESULT: ok"], **verify}
    return data


def load(tmp_path: Path, data: dict[str, Any]):
    return load_suite(write_suite(tmp_path, data), tmp_path)


def problems(tmp_path: Path, data: dict[str, Any]) -> str:
    with pytest.raises(SuiteError) as raised:
        load(tmp_path, data)
    text = str(raised.value)
    assert text.startswith("suites/demo.yml: "), text  # every error names the file
    return text


PROMPT = "Do the task on {deviceSerial}.\nRESULT: <value>\n"


def suite_text(name: str, **extra: str) -> str:
    lines = [
        f"name: {name}",
        "platform: android",
        "prompt: ../prompts/task.txt",
        "app: {packageName: com.example.app}",
        "verify: {answerIncludes: ['RESULT: ok'], screenIncludes: [Done]}",
    ]
    lines += [f"{key}: {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def make_suites(pytester: pytest.Pytester, *names: str, base: str = "benchmark/agent") -> Path:
    root = pytester.path / base
    (root / "suites").mkdir(parents=True, exist_ok=True)
    (root / "prompts").mkdir(parents=True, exist_ok=True)
    (root / "prompts" / "task.txt").write_text(PROMPT, encoding="utf-8")
    for name in names:
        (root / "suites" / f"{name}.yml").write_text(suite_text(name), encoding="utf-8")
    return root
