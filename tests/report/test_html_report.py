"""The HTML report's pure parts and its page from synthetic documents: escaping, charts, assets, timeline, statistics, the plugin glue."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from defusedxml import ElementTree
from jinja2 import UndefinedError
from suitefiles import make_suites

from pytest_agentbench.audit.transcript import parse_file
from pytest_agentbench.checks.base import Check
from pytest_agentbench.records import RunResult, SessionResult, Stumble
from pytest_agentbench.report.html import write_html_report
from pytest_agentbench.report.html.assets import MARKER, Assets
from pytest_agentbench.report.html.charts import SuitePoint, _nice_max, cost_chart, pass_rate_chart
from pytest_agentbench.report.html.page import computed_statistics, page_values
from pytest_agentbench.report.html.run_view import check_rows, time_view
from pytest_agentbench.report.html.templates import render_template
from pytest_agentbench.run.stream import read_arrivals
from pytest_agentbench.report.html.timeline import (
    INLINE_CHARS, _cut, build_timeline, call_duration, call_marks, stumble_patterns,
)
from pytest_agentbench.report.stats import wilson_interval
from pytest_agentbench.sim.png import render_png

SECRET = "sk-ant-api03-SENTINELHTMLKEY42"
ENVIRON = {"ANTHROPIC_API_KEY": SECRET}
EVIL = "<script>alert('x')</script>"


# ----------------------------------------------------------------------------- transcripts and runs


def _events(*calls: tuple[str, dict, str, bool], reports: tuple[tuple[int, str], ...] = (), final: str = "done") -> list[dict]:
    """Stream-json events: init, then per call a tool_use and its tool_result; agent reports before the call they precede."""
    events: list[dict] = [{"type": "system", "subtype": "init", "model": "m", "tools": [], "mcp_servers": []}]
    for number, (tool, arguments, result, is_error) in enumerate(calls, start=1):
        for before, kind in reports:
            if before == number:
                events.append({"type": "system", "subtype": "agentbench_report", "kind": kind, "message": f"{kind} before call {number}"})
        events.append({"type": "assistant", "message": {"id": f"m{number}", "content": [
            {"type": "tool_use", "id": f"t{number}", "name": f"mcp__agentbench__{tool}", "input": arguments}]}})
        events.append({"type": "user", "message": {"content": [
            {"type": "tool_result", "tool_use_id": f"t{number}", "is_error": is_error, "content": [{"type": "text", "text": result}]}]}})
    events.append({"type": "assistant", "message": {"id": "final", "content": [{"type": "text", "text": final}]}})
    events.append({"type": "result", "subtype": "success", "is_error": False, "num_turns": 2, "result": final,
                   "permission_denials": [{"tool_name": "mcp__agentbench__tapOn", "tool_use_id": "t2", "tool_input": {}}]})
    return events


def _run_dir(tmp_path: Path, events: list[dict], *, timing: list[tuple[int, float]] | None = None, name: str = "run") -> Path:
    run_dir = tmp_path / name
    run_dir.mkdir(parents=True)
    (run_dir / "claude.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    if timing is not None:
        header = json.dumps({"format": "agentbench-stream-timing", "version": 1})
        (run_dir / "claude.timing.jsonl").write_text(header + "\n" + "".join(f"[{n}, {s}]\n" for n, s in timing), encoding="utf-8")
    return run_dir


def _result(run_dir: Path, suite: str = "bug-repro", status: str = "passed", **extra: Any) -> dict[str, Any]:
    checks = extra.pop("checks", [{"kind": "answer", "expected": "EXPECTED_COUNT: 3", "passed": True, "seen": "EXPECTED_COUNT: 3"}])
    return {"suite": suite, "nodeid": f"benchmark/agent/suites/{suite}.yml::{suite}", "runDirectory": str(run_dir),
            "verdict": {"status": status, "reasons": [] if status == "passed" else [f"{status} because"]}, "checks": checks,
            "stumbles": extra.pop("stumbles", []), "metrics": extra.pop("metrics", {"toolCalls": 2, "costUsd": 0.25, "wallClockSeconds": 3.0}),
            "comparison": {"flags": [], "metricRows": [], "sequenceDiff": []}, **extra}


# ----------------------------------------------------------------------------- the template helper


def test_model_and_app_text_is_escaped_and_the_page_runs_no_script(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, _events(("observe", {"note": EVIL}, f"screen says {EVIL}", False), final=EVIL))
    failed = {"kind": "screen", "expected": EVIL, "passed": False, "seen": f"app shows {EVIL}"}
    page = write_html_report({"runs": [_result(run_dir, suite=EVIL, status="failed", checks=[failed])]}, tmp_path / "r.html", environ={})
    text = page.read_text(encoding="utf-8")
    assert "<script" not in text and "alert(&#39;x&#39;)" in text
    assert text.count("&lt;script&gt;") >= 5


def test_a_value_the_python_side_forgot_is_an_error_not_an_empty_cell() -> None:
    with pytest.raises(UndefinedError):
        render_template("report.html.jinja2", title="t")


def test_secrets_are_masked_on_the_page_and_in_the_files_next_to_it(tmp_path: Path) -> None:
    long_result = f"token {SECRET} " + "x" * (INLINE_CHARS * 3)
    run_dir = _run_dir(tmp_path, _events(("observe", {"key": SECRET}, long_result, False)))
    page = write_html_report({"runs": [_result(run_dir, reasons=SECRET)]}, tmp_path / "r.html", environ=ENVIRON)
    written = [page, *(tmp_path / "r_files").rglob("*.txt")]
    assert len(written) == 2
    for path in written:
        assert SECRET not in path.read_text(encoding="utf-8"), path


# ----------------------------------------------------------------------------- charts


def _points() -> list[SuitePoint]:
    return [SuitePoint("bug-repro", 2, 3, 1, 2 / 3, 0.21, 0.94, 0.5), SuitePoint(EVIL, 0, 0, 2, None, None, None, None),
            SuitePoint("wifi-on", 3, 3, 0, 1.0, 0.44, 1.0, 0.5)]


def test_the_pass_rate_chart_is_well_formed_svg_with_a_whisker_per_interval() -> None:
    svg = pass_rate_chart(_points())
    root = ElementTree.fromstring(svg)
    groups = [g for g in root if g.tag.endswith("g")]
    assert [g.get("data-suite") for g in groups] == ["bug-repro", EVIL, "wifi-on"]
    # bar + 3 whisker lines + dot for a judged suite; only its label for one with no judged run.
    assert [len(list(g)) for g in groups] == [8, 3, 8]
    texts = "".join(root.itertext())
    assert "2/3 = 67% [21%, 94%], 1 incomplete" in texts and "no judged run, 2 incomplete" in texts
    assert "<script>" not in svg


def test_the_cost_chart_leaves_out_suites_without_cost_and_stacks_names_on_one_dot() -> None:
    root = ElementTree.fromstring(cost_chart(_points()))
    labels = [t for t in root.iter() if t.tag.endswith("text") and t.get("class") == "value"]
    assert [t.text for t in labels] == ["bug-repro", "wifi-on"]
    # Same cost, different rates: different heights; a tie in both would stack the second name below.
    assert labels[0].get("y") != labels[1].get("y")
    assert cost_chart([SuitePoint("a", 1, 1, 0, 1.0, 0.2, 1.0, None)]) is None


def test_suites_on_one_dot_share_one_label_that_counts_them_and_names_them_in_its_tooltip() -> None:
    same = [SuitePoint(f"suite-{i}", 1, 1, 0, 1.0, 0.21, 1.0, 0.0) for i in range(13)]
    root = ElementTree.fromstring(cost_chart([*same, SuitePoint("dearer", 1, 1, 0, 1.0, 0.21, 1.0, 0.4)]))
    labels = [t.text for t in root.iter() if t.tag.endswith("text") and t.get("class") == "value"]
    assert labels == ["13 suites", "dearer"]
    assert len([c for c in root.iter() if c.tag.endswith("circle")]) == 2
    group = next(g for g in root.iter() if g.get("class") == "dot-group")
    assert group.get("data-suites").split(", ") == [p.suite for p in same]
    assert "suite-12: $0.00 per run, 1/1 = 100%" in "".join(next(group.iter("{http://www.w3.org/2000/svg}title")).itertext())
    assert [g.get("data-suite") for g in root.iter() if g.get("class") == "suite"] == [*(p.suite for p in same), "dearer"]
    assert pass_rate_chart([]) is None


@pytest.mark.parametrize(("value", "top"), [(0, 1.0), (0.003, 0.005), (0.2, 0.2), (0.21, 0.5), (3, 5), (7.5, 10)],
                         ids=["zero", "tiny", "exact", "up-to-5", "three", "seven"])
def test_the_cost_axis_ends_at_a_round_number(value: float, top: float) -> None:
    assert _nice_max(value) == pytest.approx(top)


# ----------------------------------------------------------------------------- assets


def test_a_runs_screens_are_embedded_once_each_until_the_budget_and_linked_after(tmp_path: Path) -> None:
    small, other, big = tmp_path / "run" / "small.png", tmp_path / "run" / "other.png", tmp_path / "run" / "big.png"
    small.parent.mkdir()
    small.write_bytes(render_png([], 4, 4))
    other.write_bytes(render_png([], 4, 5))
    big.write_bytes(b"\x89PNG" + b"0" * 5000)
    assets = Assets(tmp_path / "page.html", embed_max=4000, embed_budget=small.stat().st_size + other.stat().st_size)
    assert assets.image(small).startswith("data:image/png;base64,")
    assert assets.image(small) == "run/small.png"  # the same picture is in the page already
    assert assets.image(big) == "run/big.png"  # past the per-picture limit
    assert assets.image(other).startswith("data:image/png;base64,")
    third = tmp_path / "run" / "third.png"
    third.write_bytes(render_png([], 5, 5))
    assert assets.image(third) == "run/third.png"  # past the budget
    assert not (tmp_path / "page_files").exists()  # linked, never copied
    assert assets.image(tmp_path / "missing.png") is None and assets.linked_image(tmp_path / "missing.png") is None
    assert assets.linked_image(small) == "run/small.png"


def test_only_a_files_directory_this_package_made_is_emptied(tmp_path: Path) -> None:
    foreign = tmp_path / "page_files"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("mine", encoding="utf-8")
    Assets(tmp_path / "page.html").text("one", key="r/a")
    assert (foreign / "notes.txt").is_file()
    (foreign / MARKER).write_text("", encoding="utf-8")
    assets = Assets(tmp_path / "page.html")
    href = assets.text("two", key="r/b")
    assert not (foreign / "notes.txt").exists() and href == "page_files/r/b.txt"
    assert (foreign / "r" / "b.txt").read_text(encoding="utf-8-sig") == "two"


# ----------------------------------------------------------------------------- timeline


@pytest.mark.parametrize(
    ("text", "shown", "cut"),
    [("short", "short", False), ("x" * (INLINE_CHARS + 1), "x" * INLINE_CHARS + " …", True),
     ("\n".join(f"line {i}" for i in range(20)), "\n".join(f"line {i}" for i in range(12)) + " …", True), ("", "", False)],
    ids=["short", "too-long", "too-many-lines", "empty"],
)
def test_results_are_cut_by_length_and_lines(text: str, shown: str, cut: bool) -> None:
    assert _cut(text) == (shown, cut)


def test_a_sidecar_times_each_call_and_a_damaged_one_still_times_what_it_has(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, _events(("observe", {}, "a", False), ("tapOn", {"text": "A"}, "b", False)),
                       timing=[(1, 0.5), (2, 1.0), (3, 1.25), (4, 2.0)])
    with open(run_dir / "claude.timing.jsonl", "a", encoding="utf-8") as sidecar:
        sidecar.write("[5, \n")
    arrivals = read_arrivals(run_dir / "claude.timing.jsonl")
    assert arrivals == {1: 0.5, 2: 1.0, 3: 1.25, 4: 2.0}
    first, second = parse_file(run_dir / "claude.jsonl").tool_calls
    assert call_duration(first, arrivals) == pytest.approx(0.25)
    assert call_duration(second, arrivals) is None  # its result's line (5) is not timed
    assert call_duration(first, None) is None
    (run_dir / "other.jsonl").write_text('{"format": "something-else"}\n[1, 2]\n', encoding="utf-8")
    assert read_arrivals(run_dir / "other.jsonl") is None and read_arrivals(run_dir / "none.jsonl") is None


def test_stumbles_and_recoveries_are_marked_on_their_calls(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, _events(("observe", {}, "app crashed: FATAL EXCEPTION", False), ("tapOn", {"text": "A"}, "no such element", True),
                                          ("tapOn", {"text": "B"}, "tapped", False), reports=((3, "recovery"),)))
    transcript = parse_file(run_dir / "claude.jsonl", watch=("FATAL EXCEPTION",))
    patterns = stumble_patterns([Stumble("failure-pattern", "observe", "'FATAL EXCEPTION' in result: app crashed"),
                                 Stumble("tool-error", "tapOn", "no such element")])
    assert patterns == {"observe": {"FATAL EXCEPTION"}}
    marks = call_marks(transcript, patterns)
    assert marks == {"t1": ["stumble: 'FATAL EXCEPTION' in result"], "t2": ["stumble: permission denied", "stumble: tool error"],
                     "t3": ["recovered (recovery)"]}


def test_the_timeline_links_the_full_text_of_a_cut_result_and_pairs_screenshots(tmp_path: Path) -> None:
    huge = "\n".join(f"[{i}] TextView \"Item {i}\"" for i in range(800))
    run_dir = _run_dir(tmp_path, _events(("observe", {}, huge, False), ("tapOn", {"text": "A"}, "tapped", False), reports=((2, "retry"),)))
    shots = run_dir / "data" / "screenshots"
    shots.mkdir(parents=True)
    (shots / "0001-observe.png").write_bytes(render_png([], 4, 4))
    from pytest_agentbench.servers.screenshots import CallShot

    rows = build_timeline(parse_file(run_dir / "claude.jsonl"), transcript_path=run_dir / "claude.jsonl", arrivals=None,
                          shots=[CallShot(1, "observe", {}, True, "0001-observe.png")], shots_dir=shots, stumbles=[],
                          assets=Assets(tmp_path / "page.html"), key="run-001-x", environ={})
    assert [row["kind"] for row in rows] == ["call", "report", "call"]
    observe, report, tap = rows
    assert observe["result_cut"] and observe["result_chars"] == len(huge)
    full = (tmp_path / observe["full_href"]).read_text(encoding="utf-8-sig")
    assert full.endswith(huge + "\n") and "mcp__agentbench__observe (call 1, id t1)" in full
    assert observe["shot_src"] == "run/data/screenshots/0001-observe.png" and tap["shot_src"] is None
    assert report["report_kind"] == "retry" and tap["recovered"] and not tap["result_cut"] and tap["full_href"] is None


# ----------------------------------------------------------------------------- run sections


def test_failed_checks_come_first() -> None:
    rows = check_rows([
        Check("answer", "A", True, "A"),
        Check("sqlite", "one row in notes", False, "0 rows", name="row added"),
        Check("screen", "Done", False, "Start"),
    ])
    assert [(row["kind"], row["status"]) for row in rows] == [("sqlite", "failed"), ("screen", "failed"), ("answer", "passed")]
    assert (rows[0]["name"], rows[0]["expected"], rows[0]["seen"]) == ("row added", "one row in notes", "0 rows")


@pytest.mark.parametrize(
    ("timing", "expected"),
    [
        ({}, None),
        ({"agent": None, "harness": {}}, None),
        ({"agent": {"wallClockSeconds": 4.0, "startupSeconds": 0.5, "modelSeconds": 2.5, "toolSeconds": 1.0, "afterResultSeconds": 0.0,
                    "tools": [{"tool": "observe", "count": 2, "totalSeconds": 0.8, "medianSeconds": 0.4}]},
          "harness": {"preflightSeconds": 1.5}},
         {"wall": "4.00 s", "parts": ["startup 0.50 s", "model 2.50 s", "tools 1.00 s", "after the result 0.00 s"],
          "tools": [{"tool": "observe", "count": 2, "total": "0.800 s", "median": "0.400 s"}], "harness": ["preflight 1.50 s"]}),
    ],
    ids=["no-timing", "no-sidecar", "split"],
)
def test_the_time_split_is_shown_when_the_run_has_one(timing: dict, expected: dict | None) -> None:
    assert time_view(RunResult.from_json({"timing": timing})) == expected


# ----------------------------------------------------------------------------- the session


def test_repeats_get_wilson_intervals_and_single_runs_no_statistics_table(tmp_path: Path) -> None:
    runs = [_result(tmp_path, status=s) for s in ("passed", "passed", "failed", "incomplete")]
    block = computed_statistics([RunResult.from_json(run) for run in runs])["suites"]["bug-repro"]
    expected = wilson_interval(2, 3)
    assert (block["runs"], block["judged"], block["rate"]) == (4, 3, pytest.approx(2 / 3))
    assert (block["interval"]["low"], block["interval"]["high"]) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assets = Assets(tmp_path / "p.html")
    assert page_values(SessionResult.from_json({"runs": runs}), assets=assets, environ={}, title="t")["show_statistics"]
    assert not page_values(SessionResult.from_json({"runs": runs[:1]}), assets=assets, environ={}, title="t")["show_statistics"]


STATISTICS = {"level": 0.95, "suites": {"bug-repro": {
    "runs": 5, "passed": 4, "failed": 1, "incomplete": 0, "judged": 5, "rate": 0.8,
    "interval": {"low": 0.376, "high": 0.964, "level": 0.95, "method": "wilson"}, "passAtK": {"1": 0.8, "3": 1.0, "5": 1.0},
    "passHatK": {"1": 0.8, "3": 0.4, "5": 0.0}, "metrics": {"costUsd": {"n": 5, "median": 0.12, "q1": 0.1, "q3": 0.2}}}}}
COMPARISON = {"baseline": "old.json", "suites": {"bug-repro": {
    "design": "unpaired", "baseline": {"passed": 1, "judged": 5}, "thisRun": {"passed": 4, "judged": 5}, "difference": 0.6,
    "interval": {"low": 0.05, "high": 0.85}, "test": "fisher", "pValue": 0.206, "verdict": "no detectable difference",
    "flags": [{"kind": "model", "message": "the model differs"}]}}, "overall": None, "onlyInBaseline": ["ux-flow"], "onlyInThisRun": []}


def _dom(page: Path) -> str:
    return re.sub(r"\s+", " ", page.read_text(encoding="utf-8"))


def test_the_sessions_statistics_and_comparison_are_shown_when_the_document_has_them(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, _events(("observe", {}, "ok", False)))
    with_all = _dom(write_html_report({"runs": [_result(run_dir)], "statistics": STATISTICS, "comparison": COMPARISON},
                                      tmp_path / "a.html", environ={}))
    assert 'id="statistics-table"' in with_all and "[38%, 96%]" in with_all
    # The terminal's k (3 for five runs), not the run count: pass@5 and pass^5 say little.
    assert "<th>pass@3</th><th>pass^3</th>" in with_all and "pass@5" not in with_all
    assert '<td class="num">1.000</td><td class="num">0.400</td>' in with_all
    assert "k = 3 for every suite, as the terminal does" in with_all
    assert 'id="comparison-table"' in with_all and "+60 points" in with_all and "the model differs" in with_all
    assert "Only in the baseline: ux-flow" in with_all
    bare = _dom(write_html_report({"runs": [_result(run_dir)]}, tmp_path / "b.html", environ={}))
    assert 'id="statistics-table"' not in bare and 'id="comparison-table"' not in bare and 'id="pass-rate-chart"' in bare


def test_the_header_names_the_sessions_seed_and_an_ab_on_other_seeds_says_so(tmp_path: Path) -> None:
    run_dir = _run_dir(tmp_path, _events(("observe", {}, "ok", False)))
    seeds = {**COMPARISON, "seeds": {"baseline": 5, "thisRun": 3052896466947}}
    page = _dom(write_html_report({"runs": [_result(run_dir)], "seed": 3052896466947, "seedSource": "drawn", "comparison": seeds},
                                  tmp_path / "a.html", environ={}))
    assert ('<span id="session-seed">seed 3052896466947 (drawn for the session): <code>--agentbench-seed 3052896466947</code> '
            "reruns these instances</span>") in page
    assert ('<p class="note" id="comparison-seeds">seeds differ (baseline 5, this run 3052896466947): a suite\'s runs pair only '
            "where they drew the same values") in page.replace("&#39;", "\'")
    same = _dom(write_html_report({"runs": [_result(run_dir)], "seed": 5, "comparison": {**seeds, "seeds": {"baseline": 5, "thisRun": 5}}},
                                  tmp_path / "b.html", environ={}))
    assert 'id="comparison-seeds"' not in same and "seed 5: <code>--agentbench-seed 5</code>" in same


def test_a_run_without_a_transcript_and_a_run_without_a_result_still_render(tmp_path: Path) -> None:
    document = {"runs": [_result(tmp_path / "gone", status="incomplete", checks=[])],
                "unrecorded": [{"nodeid": "s.yml::s", "suite": "s", "reason": "setup: no device"}]}
    text = _dom(write_html_report(document, tmp_path / "r.html", environ={}))
    assert "cannot read transcript" in text and "No check was made" in text and "no result: setup: no device" in text
    assert "no start-screen.png" in text and "3 incomplete" not in text and "2 incomplete" in text


# ----------------------------------------------------------------------------- the plugin glue (pytester)


def test_the_page_is_named_once_in_the_summary_and_written_by_the_controller_only(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "bug-repro")
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--agentbench-html", "out/report.html", "-p", "xdist", "-n", "1")
    page = pytester.path / "out" / "report.html"
    assert page.is_file() and "No run wrote a result in this session." in page.read_text(encoding="utf-8")
    assert result.stdout.lines.count(next(line for line in result.stdout.lines if "agentbench html report:" in line)) == 1
    assert page.as_uri() in result.stdout.str()
    # Last, after pytest's closing summary line (issue 21: where a user looks when the session ends).
    shown = [line for line in result.stdout.lines if line.strip()]
    assert shown[-1].startswith(f"agentbench html report: {page.as_uri()} (") and " in " in shown[-2] and shown[-2].startswith("="), shown[-4:]


def test_a_page_that_cannot_be_written_is_one_red_line_not_a_traceback(pytester: pytest.Pytester) -> None:
    make_suites(pytester, "bug-repro")
    (pytester.path / "blocker").write_text("a file, not a directory", encoding="utf-8")
    result = pytester.runpytest("benchmark/", "--agentbench-dry-run", "--agentbench-html", "blocker/report.html")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*agentbench html report: could not write *blocker/report.html*"])
    assert "Traceback" not in result.stdout.str()


def test_a_run_with_a_baseline_shows_the_sequence_diff_the_deltas_and_the_flags(tmp_path: Path) -> None:
    from resultdoc import result_document as build_result_document

    run_dir = _run_dir(tmp_path, _events(("observe", {}, "ok", False)))
    audit = {"verdict": {"status": "passed", "reasons": []}, "checks": [], "stumbles": [],
             "metrics": {"toolCalls": 3, "costUsd": 0.3, "wallClockSeconds": 2.5}, "tool_sequence": ["observe", "tapOn", "tapOn"]}
    baseline = {"recordedAt": "2026-11-30T03:00:00Z", "metrics": {"toolCalls": 2, "costUsd": 0.1, "wallClockSeconds": 1.0},
                "observedModel": "claude-old"}
    result = build_result_document(suite_name="s", suite_file="s.yml", run_dir=str(run_dir), audit=audit,
                                   fingerprints={"observedModel": "claude-new"}, scoring_code="x", baseline=baseline,
                                   baseline_tool_sequence=["observe", "swipeOn", "tapOn"])
    values = page_values(SessionResult.from_json({"runs": [result]}), assets=Assets(tmp_path / "p.html"), environ={}, title="t")
    (run,) = values["runs"]
    assert [(line["op"], line["tool"], line["class"]) for line in run["diff"]] == [
        (" ", "observe", "same"), ("-", "swipeOn", "missing"), (" ", "tapOn", "same"), ("+", "tapOn", "extra")]
    assert any("observed model differs" in flag for flag in run["flags"])
    assert values["rows"][0]["deltas"] == "calls +1, cost +0.20, wall +1.50" and values["rows"][0]["flags"] >= 1
    assert {"metric": "toolCalls", "actual": "3", "baseline": "2", "delta": "+1 (+50.0%)"} in run["metric_rows"]


def test_the_repeats_table_uses_the_terminals_k_and_an_incomplete_run_does_not_blank_it(tmp_path: Path) -> None:
    # Issue 21: for 7/10 the page showed "pass@10 100%, pass^10 0%" (the terminal: pass@3 0.992,
    # pass^3 0.292), and one incomplete run blanked the cells.
    from pytest_agentbench.report.aggregate import render_statistics, session_statistics

    runs = [_result(tmp_path, status="passed")] * 7 + [_result(tmp_path, status="failed")] * 3 + [_result(tmp_path, status="incomplete")]
    terminal = render_statistics(session_statistics(runs), width=120)
    assert re.search(r"bug-repro\s+11\s+7/10\s+1\s+70%\s+40–89%\s+0\.700\s+0\.992\s+0\.292", terminal), terminal
    page = _dom(write_html_report({"runs": runs}, tmp_path / "k.html", environ={}))
    assert "<th>pass@1</th><th>pass@3</th><th>pass^3</th>" in page
    assert '<td class="num">0.700</td> <td class="num">0.992</td><td class="num">0.292</td>' in page
    # With fewer judged runs than k the cell says so instead of going blank.
    few = [_result(tmp_path, status="passed")] * 2 + [_result(tmp_path, status="incomplete")] * 2
    assert "n/a (2 judged)" in _dom(write_html_report({"runs": few}, tmp_path / "few.html", environ={}))


def test_the_repeats_table_counts_the_agents_incomplete_runs_in_the_rate(tmp_path: Path) -> None:
    gave_up = _result(tmp_path, status="incomplete")
    gave_up["verdict"]["incompleteCause"] = "agent"
    runs = [_result(tmp_path, status="passed")] * 5 + [gave_up] * 5
    block = computed_statistics([RunResult.from_json(run) for run in runs])["suites"]["bug-repro"]
    assert (block["passed"], block["judged"], block["incomplete"], block["incompleteAgent"], block["rate"]) == (5, 10, 5, 5, 0.5)
    page = _dom(write_html_report({"runs": runs}, tmp_path / "agent.html", environ={}))
    assert '<td class="num">5 (5 agent)</td><td class="num">10</td><td class="num">50%</td>' in page
    assert "5 incomplete (5 the agent's, counted as not passed)" in page


# ----------------------------------------------------------------------------- what ran, ids, groups, the A/B chart, model calls


def test_a_runs_identity_names_agent_model_provider_server_and_device(tmp_path: Path) -> None:
    from pytest_agentbench.report.html.run_view import run_identity

    run_dir = _run_dir(tmp_path, _events())
    (run_dir / "mcp-servers.json").write_text(json.dumps({"mcpServers": {"agentbench": {"command": "x", "env": {"K": SECRET}}}}), encoding="utf-8")
    result = RunResult.from_json(_result(
        run_dir, agent={"command": ["/usr/bin/agentbench-agent", "-p"], "requestedModel": "glm-4.5"}, device={"serial": "emulator-5554"},
        fingerprints={"claudeCodeVersion": "1.2.3", "observedModel": "zai/glm-4.5", "deviceFingerprint": {"model": "Pixel 8", "sdk": "34"},
                      "serverBuildComponents": {"provider": "openai-compatible", "provider.endpoint": "http://127.0.0.1:8000"}}))
    assert run_identity(result) == {
        "agent": "agentbench-agent 1.2.3", "model": "glm-4.5 (answered as zai/glm-4.5) via openai-compatible at http://127.0.0.1:8000",
        "server": "agentbench", "device": "emulator-5554 (Pixel 8, SDK 34)"}
    # Nothing recorded: nothing claimed.
    assert run_identity(RunResult.from_json({"runDirectory": str(tmp_path / "none")})) == {"agent": "", "model": "", "server": "", "device": ""}
    # The scripted agent: no model ran, whatever its stream calls itself, and no provider carried it.
    scripted = RunResult.from_json(_result(
        run_dir, agent={"command": ["/venv/bin/agentbench-replay", "-p"], "requestedModel": "claude-sonnet-5-5"},
        fingerprints={"claudeCodeVersion": "0.1.0", "observedModel": "agentbench-replay", "serverBuildComponents": {"provider": "anthropic"}}))
    assert run_identity(scripted)["model"] == ("no model: a script answered (agentbench-replay plays the suite's plan); "
                                               "the suite asks for claude-sonnet-5-5")


def test_the_header_lists_each_distinct_value_once_and_says_unknown_for_none() -> None:
    from pytest_agentbench.report.html.page import session_identity

    runs = [{"agent": "claude 2.1", "model": "a", "server": "agentbench", "device": "s1"},
            {"agent": "claude 2.1", "model": "b", "server": "agentbench", "device": ""}]
    assert session_identity(runs) == [("agent", "claude 2.1"), ("model", "a, b"), ("MCP server", "agentbench"), ("device", "s1")]
    assert session_identity([]) == [("agent", "unknown"), ("model", "unknown"), ("MCP server", "unknown"), ("device", "unknown")]


def test_session_rows_carry_instance_repeat_and_run_id(tmp_path: Path) -> None:
    from pytest_agentbench.report.html.page import session_rows

    runs = [RunResult.from_json(_result(tmp_path / "20261201T000000Z-0000abcd", instance={"id": "r2-42", "repeat": 2, "values": {"n": 42}})),
            RunResult.from_json(_result(tmp_path / "old"))]
    rows = session_rows(runs)
    assert [(row["instance"], row["repeat"], row["run_id"]) for row in rows] == [("r2-42", "2", "20261201T000000Z-0000abcd"), ("–", "–", "old")]
    assert runs[0].instance_key == "r2-42" and runs[1].instance_key is None


def test_failures_are_grouped_by_first_reason_biggest_first() -> None:
    from pytest_agentbench.report.aggregate import Unrecorded
    from pytest_agentbench.report.html.page import failure_groups

    def run(status: str, *reasons: str) -> RunResult:
        return RunResult.from_json({"suite": "s", "instance": {"id": f"r{len(reasons)}"}, "verdict": {"status": status, "reasons": list(reasons)}})

    runs = [run("passed"), run("failed", "screen check failed", "and more"), run("incomplete", "no final answer"),
            run("incomplete", "no final answer"), run("failed", "screen check failed"), run("incomplete", "no final answer")]
    groups = failure_groups(runs, [Unrecorded("s.yml::s[r9]", "s", "r9", "setup: no device")])
    assert [(g["count"], g["status"], g["reason"]) for g in groups] == [
        (3, "incomplete", "no final answer"), (2, "failed", "screen check failed"), (1, "incomplete", "no result: setup: no device")]
    assert [m["anchor"] for m in groups[0]["runs"]] == ["run-003-s", "run-004-s", "run-006-s"]
    assert groups[2]["runs"] == [{"anchor": "", "label": "s"}]
    assert failure_groups(runs[:1], []) == []


def test_the_ab_chart_is_well_formed_svg_with_escaped_names_and_a_whisker_per_judged_side() -> None:
    from pytest_agentbench.report.html.charts import ABPoint, ab_chart

    svg = ab_chart([ABPoint("bug-repro", (1, 5), (4, 5)), ABPoint(EVIL, (0, 0), (2, 2))])
    root = ElementTree.fromstring(svg)
    ns = "{http://www.w3.org/2000/svg}"
    sides = root.findall(f".//{ns}g[@class='side baseline']") + root.findall(f".//{ns}g[@class='side this']")
    assert len(sides) == 4
    judged = [side for side in sides if side.get("data-judged") != "0"]
    assert len(judged) == 3 and all(side.findall(f"{ns}line[@class='whisker']") for side in judged)
    expected = wilson_interval(4, 5)
    (this,) = [side for side in sides if side.get("data-passed") == "4"]
    assert (float(this.get("data-low")), float(this.get("data-high"))) == (pytest.approx(expected.low, abs=1e-4), pytest.approx(expected.high, abs=1e-4))
    assert "<script" not in svg and ab_chart([]) is None


def test_a_model_call_report_is_a_timeline_row_with_its_start_duration_tokens_and_retries(tmp_path: Path) -> None:
    events = _events(("observe", {}, "ok", False))
    calls = [{"type": "system", "subtype": "agentbench_report", "kind": "model-call", "turn": 1, "message": "model call 1", "call": 1,
              "duration_ms": 250, "prompt_tokens": 1000, "completion_tokens": 20, "finish_reason": "tool_calls",
              "retries": [{"status": 429, "wait_s": 0.2, "error": "slow"}]},
             {"type": "system", "subtype": "agentbench_report", "kind": "model-call", "turn": 2, "message": "model call 2", "call": 2,
              "duration_ms": 1500, "prompt_tokens": None, "completion_tokens": None, "finish_reason": None, "retries": [],
              "error": f"HTTP 500 with key {SECRET}"}]
    events[1:1] = [calls[0]]
    events.insert(-2, calls[1])
    run_dir = _run_dir(tmp_path, events)
    rows = build_timeline(parse_file(run_dir / "claude.jsonl"), transcript_path=run_dir / "claude.jsonl", arrivals={2: 1.25, 5: 4.0},
                          shots=[], shots_dir=run_dir, stumbles=[], assets=Assets(tmp_path / "page.html"), key="run-001-x", environ=ENVIRON)
    assert [row["kind"] for row in rows] == ["model-call", "call", "model-call"]
    first, _, failed = rows
    assert (first["number"], first["start"], first["duration"], first["tokens"], first["finish_reason"], first["retries"]) == (
        1, "at 1.00 s", "250 ms", "1000 prompt + 20 completion tokens", "tool_calls", ["HTTP 429, waited 0.2 s"])
    assert (failed["start"], failed["duration"], failed["tokens"], failed["finish_reason"], failed["failed"]) == (
        "at 2.50 s", "1.50 s", "tokens unknown", "failed", True)
    assert SECRET not in failed["error"]
