"""A saved run directory -> its audit redone by today's scoring code, as a pytest item, without running anything."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_agentbench.errors import AgentbenchError, SavedRunError
from pytest_agentbench.outcome import conclude, publish_outcome
from pytest_agentbench.run.artifacts import new_run_dir
from pytest_agentbench.run.saved import load_run, resolve_result_paths
from pytest_agentbench.session import session_key


class SavedRunItem(pytest.Item):
    """An earlier run, re-audited and re-reported as a test item (`--agentbench-from-result`).

    The saved run directory is only read; the re-rendered result document is written under
    `--agentbench-output/rerendered/`, and reaches the summary through the report like a live
    run's (so it works under pytest-xdist too).
    """

    def __init__(self, *, result_path: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.result_path = result_path
        self.add_marker(pytest.mark.agentbench)

    def runtest(self) -> None:
        run, saved = load_run(self.result_path, self.config.rootpath)
        output = self.config.stash[session_key].options.output / "rerendered"
        result_path = new_run_dir(output, run.suite.name) / "result.json"
        result, transcript = conclude(self.config, run, result_path=result_path, saved=saved)
        self.user_properties.append(("agentbench_run_dir", str(self.result_path.parent)))
        publish_outcome(self, result, transcript, result_path=result_path)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, AgentbenchError):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.result_path, 0, f"saved run: {self.result_path.parent.name}"


def collect_saved_runs(session: pytest.Session, paths: tuple[Path, ...]) -> list[pytest.Item]:
    """One SavedRunItem per saved run the `--agentbench-from-result` paths name, `<suite>[<run id>]`.

    Raises:
        pytest.UsageError: A path holds no result.json, itself or below.
    """
    items = []
    seen: set[Path] = set()
    for path in paths:
        try:
            result_paths = resolve_result_paths(path)
        except SavedRunError as exc:
            raise pytest.UsageError(f"--agentbench-from-result {exc}") from None
        for result_path in result_paths:
            # A run named twice (its directory and the output above it) is one item.
            if result_path.resolve() in seen:
                continue
            seen.add(result_path.resolve())
            name = f"{result_path.parent.parent.name}[{result_path.parent.name}]"
            items.append(SavedRunItem.from_parent(session, name=name, path=result_path, result_path=result_path))
    return items
