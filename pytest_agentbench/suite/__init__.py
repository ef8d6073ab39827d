"""The suite stage: a suite YAML file -> a validated, typed Suite (load.py, suite.schema.json).

The names below are loaded from `load.py` on first use, so a program that needs only a light
submodule (`suite.capture` in the replay agent) does not pay for the schema validator's import:
a confined agent starts cold (docs/isolation.md), and this is most of its start-up.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
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
        checks_of_suite,
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
    "checks_of_suite",
    "fill_placeholders",
    "load_suite",
    "preflight_spec",
    "suite_schema",
    "validate_suite_data",
]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from pytest_agentbench.suite import load

        return getattr(load, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
