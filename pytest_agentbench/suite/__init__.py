"""The suite stage: a suite YAML file -> a validated, typed Suite (load.py, suite.schema.json)."""

from __future__ import annotations

from pytest_agentbench.suite.load import (
    MAX_SAFE_INTEGER,
    PLACEHOLDERS,
    AppSpec,
    ClaudeSpec,
    PreflightSpec,
    PrefValue,
    Suite,
    VerifySpec,
    app_spec,
    fill_placeholders,
    load_suite,
    preflight_spec,
    suite_schema,
    validate_suite_data,
)

__all__ = [
    "MAX_SAFE_INTEGER",
    "PLACEHOLDERS",
    "AppSpec",
    "ClaudeSpec",
    "PreflightSpec",
    "PrefValue",
    "Suite",
    "VerifySpec",
    "app_spec",
    "fill_placeholders",
    "load_suite",
    "preflight_spec",
    "suite_schema",
    "validate_suite_data",
]
