"""Ctrl+C in a session -> one line saying what finished and what did not (interruption.py), and no traceback line from the package."""

from __future__ import annotations

import re

import pytest
from suitefiles import make_suites

# Ctrl+C arrives while the third suite (by name: first, fourth, second, third) runs: the package's handler raises KeyboardInterrupt there.
# (SIGINT is reset first: a test run started in the background inherits it ignored.)
INTERRUPTING_CONFTEST = """
import os
import signal

signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_runtest_call(item):
    if item.name == "second":
        os.kill(os.getpid(), signal.SIGINT)
"""


def test_ctrl_c_says_what_finished_and_what_did_not_without_a_frame_of_ours(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "first", "second", "third", "fourth")
    pytester.makeconftest(INTERRUPTING_CONFTEST)
    result = pytester.runpytest_subprocess("benchmark/", "--agentbench-dry-run", "-p", "no:cacheprovider")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["agentbench: interrupted by SIGINT: 2 of 4 runs finished (2 passed); 2 did not run"])
    output = result.stdout.str() + result.stderr.str()
    # pytest still names where the interrupt hit (the conftest), never a frame of the package's (its handler raised it).
    result.stdout.fnmatch_lines(["*conftest.py:9: KeyboardInterrupt"])
    assert not re.search(r"pytest_agentbench/\S+\.py:\d+", output), output[-3000:]


def test_a_session_stopped_by_maxfail_says_so_in_the_same_line(pytester: pytest.Pytester) -> None:
    root = make_suites(pytester, "first", "second", "third")
    (root / "suites" / "first.yml").write_text("name: first\nprompt [\n", encoding="utf-8")
    result = pytester.runpytest_subprocess("benchmark/", "--agentbench-dry-run", "-x", "-p", "no:cacheprovider")
    result.stdout.fnmatch_lines(["agentbench: stopped (stopping after 1 failures): 1 of 3 runs finished (1 failed); 2 did not run"])
