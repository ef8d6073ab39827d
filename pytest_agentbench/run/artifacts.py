"""A suite name + the artifact root -> the run directory, the paths of every file a run writes, and the private daemon's directories."""

from __future__ import annotations

import json
import re
import secrets
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from pytest_agentbench.errors import ConfigError
from pytest_agentbench.redact import mask_secrets
from pytest_agentbench.run.bridgelog import BRIDGE_LOG_NAME
from pytest_agentbench.run.invocation import Invocation


def _safe_name(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._") or "run"


def new_run_dir(output: Path, suite_name: str) -> Path:
    """`<output>/<suite>/<UTC timestamp>-<short random id>/`, created empty."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    run_dir = output / _safe_name(suite_name) / f"{stamp}-{secrets.token_hex(4)}"
    run_dir.mkdir(parents=True, exist_ok=False)
    return run_dir


#: Files Claude Code loads as instructions from its working directory and every parent.
INSTRUCTION_FILES = ("CLAUDE.md", "CLAUDE.local.md")
#: Where the agent's empty working directory may go when TMPDIR is not a safe place.
FALLBACK_TEMP_DIRS = ("/tmp", "/var/tmp")


def _instructions_on_path(directory: Path) -> Path | None:
    for parent in (directory, *directory.parents):
        for name in INSTRUCTION_FILES:
            if (parent / name).is_file():
                return parent / name
    return None


def agent_workdir_parent(rootdir: Path, candidates: Sequence[str] | None = None) -> Path:
    """Where the agent's empty working directories go: outside the project, with no CLAUDE.md above them.

    Claude Code loads CLAUDE.md from its working directory and every parent, so a workdir inside
    the checkout (a TMPDIR that points into it) would hand the agent the repository's
    instructions. The system temp directory is used when it is safe, else a fallback.

    Args:
        rootdir: The pytest rootdir (the project).
        candidates: Directories to try in order (default: the system temp dir, /tmp, /var/tmp).

    Returns:
        The first safe, existing candidate.

    Raises:
        ConfigError: No candidate is safe; the message says what each one holds.
    """
    tried = []
    root = Path(rootdir).resolve()
    for candidate in candidates if candidates is not None else (tempfile.gettempdir(), *FALLBACK_TEMP_DIRS):
        directory = Path(candidate).resolve()
        if not directory.is_dir():
            tried.append(f"{candidate} does not exist")
        elif directory == root or directory.is_relative_to(root):
            tried.append(f"{candidate} is inside the project {root}")
        elif (found := _instructions_on_path(directory)) is not None:
            tried.append(f"{candidate} lies under {found}")
        else:
            return directory
    raise ConfigError(
        "no safe place for the agent's working directory (Claude Code would load instructions from it): "
        + "; ".join(tried) + ". Point TMPDIR at a directory outside the project with no CLAUDE.md above it"
    )


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
    def server_config(self) -> Path:
        """The real servers' config the relay hub starts them from (never given to the agent)."""
        return self.run_dir / "mcp-servers.json"

    @property
    def relay_log(self) -> Path:
        """Every call the harness's MCP relay carried (`run/relay_hub.py` writes it)."""
        return self.run_dir / "relay.jsonl"

    @property
    def bridge_log(self) -> Path:
        """Every connection the sandbox's model bridge opened or refused (`run/bridgelog.py`)."""
        return self.run_dir / BRIDGE_LOG_NAME

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
    def screen_png(self) -> Path:
        """The post-run screen as a picture (`screencap -p`), captured with `screen.xml`."""
        return self.run_dir / "screen.png"

    @property
    def start_screen_png(self) -> Path:
        """The start screen preflight ended on, captured with `start-screen.xml`."""
        return self.run_dir / "start-screen.png"

    @property
    def postrun_log(self) -> Path:
        return self.run_dir / "postrun.log"

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
    """prompt.md, mcp-config.json (the agent's: the relay), mcp-servers.json (the harness's) and claude-command.json, before the agent starts.

    The agent reads its MCP config (and the replay agent its plan) from its workdir, since a
    confined agent cannot read the run directory; the run directory keeps a copy as an artifact.
    """
    artifacts.prompt.write_text(invocation.prompt, encoding="utf-8")
    config = json.dumps(invocation.mcp_config, indent=2) + "\n"
    artifacts.mcp_config.write_text(config, encoding="utf-8")
    if Path(invocation.mcp_config_path) != artifacts.mcp_config:
        Path(invocation.mcp_config_path).write_text(config, encoding="utf-8")
    for destination, source in invocation.staged.items():
        shutil.copyfile(source, destination)
    if invocation.server_config:
        artifacts.server_config.write_text(json.dumps(invocation.server_config, indent=2) + "\n", encoding="utf-8")
    command = {
        "argv": invocation.argv,
        "cwd": str(invocation.workdir),
        "envRemoved": list(invocation.env_removed),
        "envSet": mask_secrets(invocation.env_set),
    }
    artifacts.command.write_text(json.dumps(command, indent=2) + "\n", encoding="utf-8")
