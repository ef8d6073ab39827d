"""The HTML report of real sessions on the simulated phone, opened in headless Chromium and read from its DOM.

Two sessions run once per module, as a user runs them: the committed suites with the replay agent
(the issue's acceptance command), and a project with one suite per verdict (passed, failed on the
screen check, incomplete two ways) driven by fake agents. A third re-renders the saved runs with
`--agentbench-from-result`. Each page is opened headless (Debian's chromium, DevTools over a pipe,
no network); the tests wait for the load event and for every picture to decode, then read the DOM,
and save a screenshot of the page into the test's temp dir. Without Chromium they skip, saying so.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from adbserver import PrivateAdbServer, start_private_adb_server
from browser import Browser, chromium_or_skip
from fakeagents import HARNESS_K, REPO, Behaviour, make_project, run_session, session_env, write_dispatcher

from pytest_agentbench.report.html import write_html_report

BUG_REPRO_ANSWER = "Done.\nEXPECTED_COUNT: 3\nDISPLAYED_COUNT: 0"
VERDICT_SUITES = {
    "passed-replay": ({}, Behaviour("replay"), None),
    # Reports the right lines after only looking: the app still shows "Expected count: 0".
    "failed-screen": ({}, Behaviour("replay"), {"steps": [{"tool": "observe", "args": {"device": "{device}"}}], "final": BUG_REPRO_ANSWER}),
    "incomplete-exit": ({}, Behaviour("exit-nonzero", {"final": BUG_REPRO_ANSWER, "code": 3}), None),
    "incomplete-garbage": ({}, Behaviour("garbage", {"final": BUG_REPRO_ANSWER}), None),
}
EXPECTED_STATUS = {"passed-replay": "passed", "failed-screen": "failed", "incomplete-exit": "incomplete",
                   "incomplete-garbage": "incomplete"}

# Everything the tests read from a page, in one evaluation after every picture has decoded.
READ_PAGE = """
(async () => {
  const decoded = await Promise.all([...document.images].map(img => img.decode().then(() => true, () => false)));
  const text = (node, selector) => { const found = node.querySelector(selector); return found ? found.textContent.trim() : null; };
  const runs = [...document.querySelectorAll('section.run')].map(section => {
    const headline = section.querySelector('.failed-check.headline');
    const table = section.querySelector('table.checks');
    return {
      suite: section.dataset.suite, status: section.dataset.status,
      headline: headline ? {expected: text(headline, '.expected'), seen: text(headline, '.seen'),
                            beforeChecks: !!table && !!(headline.compareDocumentPosition(table) & Node.DOCUMENT_POSITION_FOLLOWING)} : null,
      checks: [...section.querySelectorAll('tr.check')].map(row => ({kind: row.dataset.kind, passed: !row.classList.contains('failed'),
               expected: text(row, '.expected'), seen: text(row, '.seen')})),
      calls: [...section.querySelectorAll('.timeline .trow.call')].map(row => ({tool: row.dataset.tool,
               shot: row.querySelector('.shot img') ? row.querySelector('.shot img').naturalWidth : 0,
               full: row.querySelector('a.full') ? row.querySelector('a.full').getAttribute('href') : null})),
      screens: [...section.querySelectorAll('figure.screen img')].map(img => [img.dataset.name, img.naturalWidth]),
      note: text(section, 'p.note'),
      reasons: [...section.querySelectorAll('ul.reasons li')].map(li => li.textContent.trim()),
      rerendered: !!section.querySelector('h2 .tag'),
      files: [...section.querySelectorAll('p.files a')].map(a => a.textContent.trim()),
    };
  });
  return {
    title: document.title, decoded, images: [...document.images].map(img => img.naturalWidth),
    rows: [...document.querySelectorAll('#session-table tr.run-row')].map(row => row.dataset.run),
    charts: [...document.querySelectorAll('svg.chart')].map(svg => svg.id),
    chartSuites: [...document.querySelectorAll('#pass-rate-chart g.suite')].map(g => g.dataset.suite),
    runs,
  };
})()
"""


@dataclass(frozen=True)
class Page:
    """A rendered page, what its DOM said, the requests it made and where its screenshot went."""

    path: Path
    dom: dict[str, Any]
    requests: list[str]
    screenshot: Path
    terminal: str

    def run(self, suite: str) -> dict[str, Any]:
        (found,) = [run for run in self.dom["runs"] if run["suite"] == suite]
        return found


def _open(page: Path, shot: Path, terminal: str) -> Page:
    with Browser(chromium_or_skip(), width=1400, height=1000) as browser:
        browser.call("Network.enable")
        browser.open(page)
        dom = browser.evaluate(READ_PAGE)
        requests = browser.request_urls()
        browser.screenshot(shot)
    return Page(page, dom, requests, shot, terminal)


def _session(cwd: Path, adb: PrivateAdbServer, tmp: Path, *args: str) -> tuple[Path, str, Path]:
    page, output = tmp / "report.html", tmp / "out"
    env = session_env(adb.port, tmp / "claims", COLUMNS="200")
    done = run_session(cwd, [*args, "--agentbench-html", str(page), "--agentbench-output", str(output), "-rA"], env)
    assert page.is_file(), done.stdout[-3000:] + done.stderr[-2000:]
    return page, done.stdout + done.stderr, output


@pytest.fixture(scope="module")
def adb_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PrivateAdbServer]:
    chromium_or_skip()
    with start_private_adb_server(tmp_path_factory.mktemp("adb")) as server:
        yield server


@pytest.fixture(scope="module")
def committed(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> Page:
    """`pytest benchmark/ --device sim --claude agentbench-replay --agentbench-html report.html`, opened headless."""
    tmp = tmp_path_factory.mktemp("committed")
    page, terminal, _ = _session(REPO, adb_server, tmp, "benchmark/", "--device", "sim", "--claude", "agentbench-replay",
                                 "-k", HARNESS_K)
    return _open(page, tmp / "page.png", terminal)


@pytest.fixture(scope="module")
def verdicts(adb_server: PrivateAdbServer, tmp_path_factory: pytest.TempPathFactory) -> tuple[Page, Path]:
    """One suite per verdict, fake agents per suite; the page and the session's output root."""
    tmp = tmp_path_factory.mktemp("verdicts")
    project = make_project(
        tmp / "project", {name: {**overrides, "preflight": {"settleSeconds": 0.2}} for name, (overrides, _, _) in VERDICT_SUITES.items()},
        plans={name: plan for name, (_, _, plan) in VERDICT_SUITES.items() if plan is not None},
    )
    agent = write_dispatcher(tmp / "agent", {name: behaviour for name, (_, behaviour, _) in VERDICT_SUITES.items()}, project=project)
    page, terminal, output = _session(project, adb_server, tmp, "benchmark/", "--device", "sim", "--claude", str(agent))
    return _open(page, tmp / "page.png", terminal), output


# ----------------------------------------------------------------------------- the committed suites


def test_every_committed_suite_shows_its_verdict_checks_timeline_and_screens(committed: Page) -> None:
    dom = committed.dom
    assert {run["suite"]: run["status"] for run in dom["runs"]} == {"bug-repro": "passed", "ux-flow": "passed", "wifi-on": "passed"}
    assert len(dom["rows"]) == 3 and dom["charts"] == ["pass-rate-chart", "cost-chart"]
    assert sorted(dom["chartSuites"]) == ["bug-repro", "ux-flow", "wifi-on"]
    for run in dom["runs"]:
        kinds = {check["kind"] for check in run["checks"]}
        assert {"device-use", "answer", "screen"} <= kinds, run["suite"]
        assert all(check["passed"] and check["expected"] for check in run["checks"]), run["checks"]
        assert len(run["calls"]) >= 3 and run["calls"][0]["tool"] == "observe", run["calls"]
        # The built-in server photographed the phone after every call, and each picture decoded.
        assert all(call["shot"] == 1080 for call in run["calls"]), run["calls"]
        assert run["screens"] == [["start-screen.png", 1080], ["screen.png", 1080]]
        assert {"result.json", "claude.jsonl", "screen.png", "start-screen.png"} <= set(run["files"])


def test_every_picture_decodes_and_nothing_is_fetched_from_the_network(committed: Page) -> None:
    assert committed.dom["decoded"] and all(committed.dom["decoded"]), committed.dom["images"]
    assert all(width > 0 for width in committed.dom["images"])
    assert committed.requests and all(url.startswith(("file:", "data:")) for url in committed.requests), committed.requests


def test_the_terminal_names_the_page_and_the_screenshot_is_saved(committed: Page) -> None:
    assert f"agentbench html report: {committed.path.as_uri()}" in committed.terminal
    assert committed.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- one suite per verdict


def test_each_run_has_its_verdict(verdicts: tuple[Page, Path]) -> None:
    page, _ = verdicts
    assert {run["suite"]: run["status"] for run in page.dom["runs"]} == EXPECTED_STATUS
    assert page.screenshot.stat().st_size > 10_000


def test_a_failed_run_shows_the_failed_checks_expected_and_seen_text_first(verdicts: tuple[Page, Path]) -> None:
    run = verdicts[0].run("failed-screen")
    assert run["headline"] == {"expected": "Expected count: 3", "seen": run["headline"]["seen"], "beforeChecks": True}
    assert "Expected count: 0" in run["headline"]["seen"]
    first = run["checks"][0]
    assert (first["kind"], first["passed"], first["expected"]) == ("screen", False, "Expected count: 3")
    assert [check["passed"] for check in run["checks"]] == sorted(check["passed"] for check in run["checks"])
    assert [call["tool"] for call in run["calls"]] == ["observe"] and run["calls"][0]["shot"] == 1080


def test_incomplete_runs_say_why_their_timeline_is_short(verdicts: tuple[Page, Path]) -> None:
    page, _ = verdicts
    assert page.run("incomplete-exit")["calls"] == [] and page.run("incomplete-exit")["note"] == "the agent made no tool call"
    assert "not stream-json" in page.run("incomplete-garbage")["note"]
    # Not judged, so no check leads: the reason it is incomplete does.
    assert page.run("incomplete-exit")["headline"] is None and page.run("incomplete-exit")["reasons"]
    assert page.run("incomplete-garbage")["reasons"][0].startswith("2 stream lines did not parse")


def test_the_same_page_comes_from_saved_runs(verdicts: tuple[Page, Path], tmp_path: Path) -> None:
    page, output = verdicts
    saved = sorted(str(path.parent) for path in output.glob("*/*/result.json"))
    assert len(saved) == len(VERDICT_SUITES)
    project = output.parent / "project"
    args = [arg for run in saved for arg in ("--agentbench-from-result", run)]
    done = run_session(project, [*args, "--agentbench-html", str(tmp_path / "again.html"), "--agentbench-output", str(tmp_path / "out")],
                       session_env(0, tmp_path / "claims"))
    again = _open(tmp_path / "again.html", tmp_path / "again.png", done.stdout)
    assert {run["suite"]: run["status"] for run in again.dom["runs"]} == EXPECTED_STATUS
    for suite in EXPECTED_STATUS:
        fresh, rerendered = page.run(suite), again.run(suite)
        assert rerendered["checks"] == fresh["checks"] and rerendered["headline"] == fresh["headline"]
        assert [c["tool"] for c in rerendered["calls"]] == [c["tool"] for c in fresh["calls"]]
    assert all(run["rerendered"] for run in again.dom["runs"]) and not any(run["rerendered"] for run in page.dom["runs"])


READ_REPEATS = """
(() => {
  const table = document.querySelector('#statistics-table');
  return {
    headers: [...table.querySelectorAll('thead th')].map(th => th.textContent.trim()),
    rows: [...table.querySelectorAll('tbody tr')].map(row => [...row.querySelectorAll('td')].map(td => td.textContent.trim())),
    note: document.querySelector('#statistics-note').textContent.replace(/\\s+/g, ' ').trim(),
  };
})()
"""


def test_the_repeats_table_in_chromium_shows_the_terminals_k_and_both_incomplete_counts(tmp_path: Path) -> None:
    # Issue 21: 7/10 read "pass@10 100%, pass^10 0%" on the page (the terminal: pass@3 0.992,
    # pass^3 0.292), and one incomplete run blanked the cells.
    def run(suite: str, status: str, cause: str | None = None) -> dict[str, Any]:
        verdict: dict[str, Any] = {"status": status, "reasons": [] if status == "passed" else [f"{status} because"]}
        if cause:
            verdict["incompleteCause"] = cause
        return {"suite": suite, "nodeid": f"suites/{suite}.yml::{suite}", "verdict": verdict, "checks": [], "stumbles": [],
                "metrics": {"toolCalls": 3, "costUsd": 0.01, "wallClockSeconds": 2.0}, "comparison": {"flags": [], "metricRows": []}}

    runs = [run("seven", "passed")] * 7 + [run("seven", "failed")] * 3 + [run("seven", "incomplete", "harness")]
    runs += [run("gives-up", "passed")] * 5 + [run("gives-up", "incomplete", "agent")] * 5
    page = write_html_report({"runs": runs}, tmp_path / "repeats.html", environ={})
    with Browser(chromium_or_skip()) as browser:
        browser.open(page)
        table = browser.evaluate(READ_REPEATS)
    headers = table["headers"]
    assert headers[headers.index("pass@1"):headers.index("pass@1") + 3] == ["pass@1", "pass@3", "pass^3"]
    rows = {row[0]: dict(zip(headers, row)) for row in table["rows"]}
    assert (rows["seven"]["pass@1"], rows["seven"]["pass@3"], rows["seven"]["pass^3"]) == ("0.700", "0.992", "0.292")
    assert (rows["seven"]["incomplete (agent's)"], rows["seven"]["judged"], rows["seven"]["pass rate"]) == ("1", "10", "70%")
    assert (rows["gives-up"]["incomplete (agent's)"], rows["gives-up"]["judged"], rows["gives-up"]["pass rate"]) == ("5 (5 agent)", "10", "50%")
    assert "k = 3 for every suite, as the terminal does" in table["note"]
