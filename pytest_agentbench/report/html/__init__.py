"""The session's HTML report: a session document -> one self-contained page (jinja2, inline SVG, no network).

    from pytest_agentbench.report.html import write_html_report
    write_html_report(session_document, Path("report.html"))

Modules: `templates` (the one jinja2 helper, autoescape on), `assets` (embedded or written next to
the page, by size), `charts` (inline SVG), `timeline` (a run's tool calls), `run_view` (a run's
section), `page` (the session and the file). docs/reports.md describes the page.
"""

from __future__ import annotations

from pytest_agentbench.report.html.page import write_html_report

__all__ = ["write_html_report"]
