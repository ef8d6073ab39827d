"""The documented fixture example (docs/fixtures.md) runs as a user's own test, with only the plugin."""

from __future__ import annotations

import re
from pathlib import Path

from adbserver import free_port

DOC = Path(__file__).parents[2] / "docs" / "fixtures.md"


def test_documented_example_passes_on_a_simulated_phone(pytester, monkeypatch):
    example = re.search(r"```python\n(.*?)```", DOC.read_text(), re.S).group(1)
    pytester.makepyfile(test_my_app=example)
    # No adb server listens on a fresh port: the plugin starts one for the session and stops it.
    monkeypatch.setenv("ANDROID_ADB_SERVER_PORT", str(free_port()))
    result = pytester.runpytest_subprocess("--device", "sim", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=1)
    assert list((pytester.path / "scratch" / "agent-benchmarks").glob("test_add_item_counts_without_the_bug/*/preflight.log"))
