"""A suite name + the artifact root -> the run directory, the paths of every file a run writes, and the private daemon's directories."""

from __future__ import annotations

import json
import re
import secrets
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pytest_agentbench.redact import mask_secrets
from pytest_agentbench.run.invocation import Invocation


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"


def new_run_dir(output: Path, suite_name: str) -> Path:
    """`<output>/<suite>/<UTC timestamp>-<short random id>/`, created empty."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir = output / _safe_name(suite_name) / f"{stamp}-{secrets.token_hex(4)}"
    run_dir.mkdir(parents=True, exist_ok=False)
    return run_dir


@dataclass(frozen=True)
class RunArtifacts:
    """Paths of one run's files, named as in the seed's artifact table."""

    run_dir: Path

    @property
    def prompt(self) -> Path:
        return self.run_dir / "prompt.md"

    @property
    def mcp_config(self) -> Path:
        return self.run_dir / "mcp-config.json"

    @property
    def command(self) -> Path:
        return self.run_dir / "claude-command.json"

    @property
    def transcript(self) -> Path:
        return self.run_dir / "claude.jsonl"

    @property
    def timing(self) -> Path:
        """Each stream line's arrival time (`run/stream.py` writes it)."""
        return self.run_dir / "claude.timing.jsonl"

    @property
    def stderr(self) -> Path:
        return self.run_dir / "claude.stderr"

    @property
    def screen(self) -> Path:
        return self.run_dir / "screen.xml"

    @property
    def result(self) -> Path:
        return self.run_dir / "result.json"

    @property
    def snippet(self) -> Path:
        return self.run_dir / "baseline.yml"


@dataclass(frozen=True)
class PrivateDaemon:
    """The run's private MCP server state: variable -> directory, all under the run directory."""

    run_dir: Path
    dirs: dict[str, Path]

    @property
    def environ(self) -> dict[str, str]:
        return {name: str(path) for name, path in self.dirs.items()}

    def create(self) -> PrivateDaemon:
        """Make every directory (they start empty, so no earlier run's state carries over)."""
        for path in self.dirs.values():
            path.mkdir(parents=True, exist_ok=True)
        return self


def write_run_files(artifacts: RunArtifacts, invocation: Invocation) -> None:
    """prompt.md, mcp-config.json and claude-command.json, before the agent starts."""
    artifacts.prompt.write_text(invocation.prompt, encoding="utf-8")
    artifacts.mcp_config.write_text(json.dumps(invocation.mcp_config, indent=2) + "\n", encoding="utf-8")
    command = {
        "argv": invocation.argv,
        "cwd": str(invocation.workdir),
        "envRemoved": list(invocation.env_removed),
        "envSet": mask_secrets(invocation.env_set),
    }
    artifacts.command.write_text(json.dumps(command, indent=2) + "\n", encoding="utf-8")
