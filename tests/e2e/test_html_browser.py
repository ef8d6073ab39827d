"""The HTML report of real sessions on the simulated phone, opened in headless Chromium and read from its DOM.

Two sessions run once per module, as a user runs them: the committed suites with the replay agent
(the issue's acceptance command), and a project with one suite per verdict (passed, failed on the
screen check, incomplete two ways) driven by fake agents. A third re-renders the saved runs with
`--agentbench-from-result`. Each page is opened headless (Debian's chromium, DevTools over a pipe,
no network); the tests wait for the load event and for every picture to decode, then read the DOM,
and save a screenshot of the page into the test's temp dir. Without Chromium they skip, saying so.
"""

from __future__ import annotations

import re
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
  // A call's screenshot loads when it is scrolled to: here every picture must load and decode.
  document.querySelectorAll('img[loading=lazy]').forEach(img => { img.loading = 'eager'; });
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
      open: section.querySelector('details.run-body').open,
      instance: section.dataset.instance, repeat: section.dataset.repeat, values: text(section, 'summary .values'),
      identity: Object.fromEntries([...section.querySelectorAll('dl.run-identity > div')].map(d => [text(d, 'dt'), text(d, 'dd')])),
    };
  });
  return {
    title: document.title, decoded, images: [...document.images].map(img => img.naturalWidth),
    rows: [...document.querySelectorAll('#session-table tr.run-row')].map(row => row.dataset.run),
    table: [...document.querySelectorAll('#session-table tr.run-row')].map(row => ({suite: text(row, 'td a'), instance: text(row, '.instance'), values: text(row, '.values'),
             repeat: text(row, '.repeat'), runId: text(row, '.run-id')})),
    identity: Object.fromEntries([...document.querySelectorAll('#session-identity > div')].map(d => [text(d, 'dt'), text(d, 'dd')])),
    groups: [...document.querySelectorAll('#failure-groups li.failure-group')].map(li => ({count: Number(li.dataset.count),
             status: text(li, '.verdict'), reason: text(li, '.reason'), links: [...li.querySelectorAll('a')].map(a => a.getAttribute('href'))})),
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


# What a reader can do without a script: pick a verdict (CSS hides the rest) and fold or unfold a run.
READ_INTERACTIONS = """
(() => {
  const shown = node => node.getClientRects().length > 0;
  // A folded run's content keeps its boxes in Chromium (content-visibility: hidden): ask whether it is drawn.
  const drawn = node => node.checkVisibility();
  const visible = () => ({
    runs: [...document.querySelectorAll('section.run')].filter(shown).map(s => s.dataset.suite),
    rows: [...document.querySelectorAll('#session-table tr.run-row')].filter(shown).length,
    groups: [...document.querySelectorAll('#failure-groups li.failure-group')].filter(shown).map(li => li.querySelector('.verdict').textContent),
  });
  const filters = {};
  for (const status of ['passed', 'failed', 'incomplete', 'all']) {
    document.querySelector('#filter-' + status).click();
    filters[status] = visible();
  }
  const folding = [...document.querySelectorAll('section.run')].map(section => {
    const details = section.querySelector('details.run-body'), summary = details.querySelector('summary');
    const before = {open: details.open, checks: drawn(section.querySelector('h3'))};
    summary.click();
    const after = {open: details.open, checks: drawn(section.querySelector('h3'))};
    summary.click();
    return {suite: section.dataset.suite, before, after, back: details.open === before.open};
  });
  return {filters, folding};
})()
"""


def _open(page: Path, shot: Path, terminal: str) -> Page:
    with Browser(chromium_or_skip(), width=1400, height=1000) as browser:
        browser.call("Network.enable")
        browser.open(page)
        dom = browser.evaluate(READ_PAGE)
        requests = browser.request_urls()
        browser.screenshot(shot)
        dom["interactions"] = browser.evaluate(READ_INTERACTIONS)
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


def test_the_terminal_names_the_page_last_and_the_screenshot_is_saved(committed: Page) -> None:
    assert f"agentbench html report: {committed.path.as_uri()}" in committed.terminal
    # After the agentbench summary and pytest's closing line: the last thing the session prints.
    shown = [line for line in committed.terminal.splitlines() if line.strip()]
    assert shown[-1].startswith(f"agentbench html report: {committed.path.as_uri()} ("), shown[-3:]
    assert committed.screenshot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ----------------------------------------------------------------------------- one suite per verdict


def test_each_run_has_its_verdict(verdicts: tuple[Page, Path]) -> None:
    page, _ = verdicts
    assert {run["suite"]: run["status"] for run in page.dom["runs"]} == EXPECTED_STATUS
    assert page.screenshot.stat().st_size > 10_000


def test_a_failed_run_shows_the_failed_checks_expected_and_seen_text_first(verdicts: tuple[Page, Path]) -> None:
    run = verdicts[0].run("failed-screen")
    assert run["headline"] == {"expected": "Expected count: 3\nDisplayed count: 0\nStatus: Bug triggered: UI did not update", "seen": run["headline"]["seen"], "beforeChecks": True}
    assert "Expected count: 0" in run["headline"]["seen"]
    first = run["checks"][0]
    assert (first["kind"], first["passed"], first["expected"]) == ("screen", False, "Expected count: 3\nDisplayed count: 0\nStatus: Bug triggered: UI did not update")
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


READ_TABLE_FIT = """
(() => {
  const table = document.querySelector('#session-table');
  return {
    table: Math.ceil(table.getBoundingClientRect().right), room: Math.floor(document.body.getBoundingClientRect().right),
    pageScrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
    suiteLines: [...table.querySelectorAll('tr.run-row td:first-child a')].map(a => a.getClientRects().length),
    titles: [...table.querySelectorAll('td.instance-cell')].map(td => td.title),
  };
})()
"""


def test_the_session_table_fits_1400_px_with_long_suite_names_and_instance_values(tmp_path: Path) -> None:
    # Issue 33: instance values pushed cost, wall, stumbles, baseline and flags behind a
    # scrollbar, and suite names wrapped onto three lines.
    def run(suite: str, values: dict[str, str]) -> dict[str, Any]:
        label = ",".join(f"{key}={value}" for key, value in values.items())
        instance = {"id": "r1-" + "-".join(values.values()), "repeat": 1, "seed": 7840137505978505,
                    "derivation": "agentbench-params-v2", "values": values, "label": label}
        return {"suite": suite, "nodeid": f"suites/{suite}.yml::{suite}[{instance['id']}]", "instance": instance,
                "verdict": {"status": "failed", "reasons": ["the pickup code in the answer is not the device's"]}, "checks": [],
                "stumbles": [], "metrics": {"toolCalls": 13, "turns": 14, "costUsd": 0.1234, "wallClockSeconds": 12.5},
                "comparison": {"flags": [{"kind": "app-build", "message": "app build 1 -> 2"}], "metricRows": []}}

    runs = [run(f"chrome-secure-connections-{index}", {"contactName": "BartholomewFeatherstonehaugh", "exchange": "38",
                                                       "line": "1367", "folder": "ReadingListForTheLongWeekend"})
            for index in range(4)]
    page = write_html_report({"runs": runs}, tmp_path / "wide.html", environ={})
    with Browser(chromium_or_skip(), width=1400, height=1000) as browser:
        browser.open(page)
        fit = browser.evaluate(READ_TABLE_FIT)
    assert fit["table"] <= fit["room"] and not fit["pageScrolls"], fit
    assert fit["suiteLines"] == [1, 1, 1, 1], fit
    assert all("contactName=BartholomewFeatherstonehaugh,exchange=38,line=1367,folder=ReadingListForTheLongWeekend" in title
               for title in fit["titles"]), fit["titles"]


# ----------------------------------------------------------------------------- what ran, ids, filters, folding, groups


def test_the_header_and_each_run_name_the_agent_model_mcp_server_and_device(committed: Page) -> None:
    identity = committed.dom["identity"]
    assert set(identity) == {"agent", "model", "MCP server", "device"}, identity
    assert identity["agent"].startswith("agentbench-replay ") and identity["MCP server"] == "agentbench"
    # No model ran: a script answered, and the line says so (never "... via anthropic").
    assert identity["model"] == "no model: a script answered (agentbench-replay plays the suite's plan); the suite asks for claude-sonnet-5-5"
    assert re.fullmatch(r"127\.0\.0\.1:\d+ \(AgentBench Sim, SDK \d+\)", identity["device"]), identity
    for run in committed.dom["runs"]:
        assert run["identity"] == identity, run["suite"]


def test_the_session_table_carries_each_runs_instance_repeat_and_run_id(committed: Page) -> None:
    table = committed.dom["table"]
    assert sorted(row["suite"] for row in table) == ["bug-repro", "ux-flow", "wifi-on"]
    # A seeded suite's instance id carries its drawn values' id (bug-repro `r1-4-5`); wifi-on has none.
    assert all(re.fullmatch(r"r1(-[^ ]+)?", row["instance"]) and row["repeat"] == "1" for row in table), table
    assert {row["suite"]: row["instance"] for row in table}["wifi-on"] == "r1"
    assert all(re.fullmatch(r"\d{8}T\d{6}Z-[0-9a-f]{8}", row["runId"]) for row in table), table
    assert all(re.fullmatch(r"r1(-[^ ]+)?", run["instance"]) and run["repeat"] == "1" for run in committed.dom["runs"])
    # A seeded run is named by its drawn values and seed too (issue 23); a suite without params is not.
    values = {row["suite"]: row["values"] for row in table}
    # The session drew its seed (none was given): the page names it, for `--agentbench-seed` to rerun.
    assert re.fullmatch(r"\[taps=\d\] seed \d+, r1", values["bug-repro"]) and values["wifi-on"] in ("", None), values
    assert {run["suite"]: run["values"] for run in committed.dom["runs"]} == values


def test_passed_runs_start_folded_and_each_run_folds_and_unfolds(verdicts: tuple[Page, Path]) -> None:
    page, _ = verdicts
    assert {run["suite"]: run["open"] for run in page.dom["runs"]} == {suite: status != "passed" for suite, status in EXPECTED_STATUS.items()}
    for fold in page.dom["interactions"]["folding"]:
        assert fold["before"]["open"] == fold["before"]["checks"], fold
        assert fold["after"] == {"open": not fold["before"]["open"], "checks": not fold["before"]["checks"]}, fold
        assert fold["back"], fold


def test_the_verdict_filter_shows_only_that_verdicts_runs_rows_and_groups(verdicts: tuple[Page, Path]) -> None:
    filters = verdicts[0].dom["interactions"]["filters"]
    by_status = {status: sorted(s for s, v in EXPECTED_STATUS.items() if v == status) for status in ("passed", "failed", "incomplete")}
    for status, suites in by_status.items():
        assert sorted(filters[status]["runs"]) == suites, (status, filters[status])
        assert filters[status]["rows"] == len(suites)
        assert set(filters[status]["groups"]) <= {status}
    assert sorted(filters["all"]["runs"]) == sorted(EXPECTED_STATUS) and filters["all"]["rows"] == len(EXPECTED_STATUS)
    assert filters["passed"]["groups"] == [] and filters["failed"]["groups"] == ["failed"]


def test_failures_are_grouped_by_their_first_reason_with_links_to_their_runs(verdicts: tuple[Page, Path]) -> None:
    page, _ = verdicts
    groups = page.dom["groups"]
    not_passed = [run for run in page.dom["runs"] if run["status"] != "passed"]
    assert sum(group["count"] for group in groups) == len(not_passed) == 3
    assert {(group["status"], group["reason"]) for group in groups} == {(run["status"], run["reasons"][0]) for run in not_passed}
    assert [group["count"] for group in groups] == sorted((group["count"] for group in groups), reverse=True)
    anchors = {f"#{row}" for row in page.dom["rows"]}
    assert all(link in anchors for group in groups for link in group["links"]), groups


READ_AB = """
(() => [...document.querySelectorAll('#ab-chart g.ab-suite')].map(g => ({suite: g.dataset.suite,
  sides: [...g.querySelectorAll('g.side')].map(side => ({side: side.classList.contains('baseline') ? 'baseline' : 'this',
    passed: Number(side.dataset.passed), judged: Number(side.dataset.judged),
    low: side.dataset.low ? Number(side.dataset.low) : null, high: side.dataset.high ? Number(side.dataset.high) : null,
    bar: side.querySelector('rect') ? side.querySelector('rect').getBBox().width : 0,
    whisker: side.querySelector('line.whisker') ? side.querySelector('line.whisker').getBBox().width : 0}))})))()
"""


def test_the_ab_chart_shows_both_sessions_pass_rates_with_their_intervals(tmp_path: Path) -> None:
    from pytest_agentbench.report.stats import wilson_interval

    run = {"suite": "bug-repro", "verdict": {"status": "passed", "reasons": []}, "metrics": {}}
    comparison = {"baseline": "old.json", "suites": {
        "bug-repro": {"design": "unpaired", "baseline": {"passed": 1, "judged": 5}, "thisRun": {"passed": 4, "judged": 5},
                      "difference": 0.6, "interval": {"low": 0.05, "high": 0.85}, "test": "fisher", "pValue": 0.206,
                      "verdict": "no detectable difference", "flags": []},
        "wifi-on": {"design": "unpaired", "baseline": {"passed": 3, "judged": 3}, "thisRun": {"passed": 0, "judged": 0},
                    "difference": None, "interval": None, "test": "", "pValue": None, "verdict": "not judged", "flags": []}},
        "overall": None, "onlyInBaseline": [], "onlyInThisRun": []}
    page = write_html_report({"runs": [run], "comparison": comparison}, tmp_path / "ab.html", environ={})
    with Browser(chromium_or_skip()) as browser:
        browser.open(page)
        chart = browser.evaluate(READ_AB)
    assert [suite["suite"] for suite in chart] == ["bug-repro", "wifi-on"]
    (baseline, this), (wifi_baseline, wifi_this) = chart[0]["sides"], chart[1]["sides"]
    assert (baseline["side"], baseline["passed"], baseline["judged"]) == ("baseline", 1, 5)
    assert (this["side"], this["passed"], this["judged"]) == ("this", 4, 5)
    for side, (passed, judged) in ((baseline, (1, 5)), (this, (4, 5)), (wifi_baseline, (3, 3))):
        expected = wilson_interval(passed, judged)
        assert (side["low"], side["high"]) == (pytest.approx(expected.low, abs=1e-4), pytest.approx(expected.high, abs=1e-4))
        assert side["whisker"] > 0
    # Bars are drawn to scale: 4/5 is four times 1/5; a side with no judged run has no bar and no whisker.
    assert this["bar"] == pytest.approx(4 * baseline["bar"], rel=0.01)
    assert (wifi_this["judged"], wifi_this["bar"], wifi_this["whisker"], wifi_this["low"]) == (0, 0, 0, None)
