"""The session's sandbox mode + one run's invocation and paths -> the command that runs the agent (confined or not) and the run's `sandbox` record.

`--agentbench-sandbox` resolves once per session (`resolve_mode`); each run then gets an
`AgentConfinement`: a context manager around `run_agent` whose `argv`, `env` and `pass_fds` are
the confined command's (bwrap, `run/sandbox.py`) or, unconfined, the invocation's own. Its
`record()` is what result.json keeps under `sandbox` and what the summary flags when it is off.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_agentbench.errors import AgentProcessError
from pytest_agentbench.run import sandbox as bwrap
from pytest_agentbench.run.netbridge import Endpoint
from pytest_agentbench.run.sandbox_policy import build_policy

#: How the device is reached from inside: only through the harness's relay (its socket
#: directory is the one harness path bound in); without a relay, not at all.
REACH_RELAY = "relay"
REACH_NONE = "none (no relay socket directory)"


@dataclass(frozen=True)
class SandboxMode:
    """The session's resolved `--agentbench-sandbox`: on or off, what was asked, and why it is off."""

    mode: str  # "on" | "off"
    requested: str  # "auto" | "on" | "off"
    tool: str | None = None
    reason: str | None = None

    @property
    def on(self) -> bool:
        return self.mode == "on"

    def component(self) -> str:
        """The `sandbox` component of `serverBuild`: a confined and an unconfined run are not comparable."""
        return f"on ({self.tool})" if self.on else "off"


def resolve_mode(requested: str, availability: bwrap.Availability | None = None) -> SandboxMode:
    """`auto` -> on where bwrap works, else off (with the reason); `on` where it cannot be had -> ValueError saying what to install.

    Args:
        requested: The option's value (auto, on, off).
        availability: The probe's answer (default: probe now).

    Raises:
        ValueError: `on` was asked and bwrap cannot confine here; the message names the fix.
    """
    if requested == "off":
        return SandboxMode("off", "off", reason="--agentbench-sandbox off")
    found = availability if availability is not None else bwrap.probe()
    if found.usable:
        return SandboxMode("on", requested, tool=found.version or "bubblewrap")
    if requested == "on":
        raise ValueError(f"--agentbench-sandbox on: the agent cannot be confined here: {found.reason}. "
                         f"Install bubblewrap ({bwrap.INSTALL_HINT}) or run with --agentbench-sandbox off (unconfined, flagged)")
    return SandboxMode("off", requested, reason=found.reason)


class DeferredMode:
    """`--agentbench-sandbox` as asked, resolved by `resolve_mode` the first time anything reads it.

    The probe starts bwrap twice; a pytest session that runs no agent (`--co`, `--fixtures`, a
    project's own tests beside the plugin) must not pay for it. It reads as the SandboxMode it
    resolves to; `resolve()` probes now (a ValueError for `on` where bwrap cannot confine).
    """

    def __init__(self, requested: str) -> None:
        self.requested = requested
        self._mode: SandboxMode | None = None

    def resolve(self) -> SandboxMode:
        if self._mode is None:
            self._mode = resolve_mode(self.requested)
        return self._mode

    def __getattr__(self, name: str) -> Any:
        # Only for what the instance lacks (`on`, `mode`, `tool`, `reason`, `component`).
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.resolve(), name)


def deferred_mode(requested: str) -> SandboxMode:
    """`--agentbench-sandbox` -> a SandboxMode probed on first use (see DeferredMode)."""
    return DeferredMode(requested)  # type: ignore[return-value]


def _executable(command: str, env: Mapping[str, str]) -> bool:
    if os.sep in command:
        return os.path.isfile(command) and os.access(command, os.X_OK)
    return shutil.which(command, path=env.get("PATH")) is not None


class AgentConfinement:
    """`with AgentConfinement(...) as c: run_agent(c.argv, env=c.env, pass_fds=c.pass_fds, on_started=c.started)`."""

    def __init__(self, mode: SandboxMode, argv: Sequence[str], env: Mapping[str, str], *, workdir: Path, agent_command: str,
                 run_dir: Path, output_root: Path, project_root: Path, suite_file: Path,
                 relay_socket_dir: Path | None = None, bridge_log: Path | None = None,
                 private: Sequence[Path] = (), adb_endpoint: tuple[str, int] | None = None) -> None:
        self.mode = mode
        self.argv = list(argv)
        self.env = dict(env)
        self.pass_fds: tuple[int, ...] = ()
        self.reach = REACH_RELAY if relay_socket_dir is not None else REACH_NONE
        self._inner: bwrap.Confinement | None = None
        if not mode.on:
            return
        self.policy = build_policy(
            workdir=workdir, agent_command=agent_command, environ=env, run_dir=run_dir, output_root=output_root,
            project_root=project_root, suite_file=suite_file, extra_binds=[relay_socket_dir] if relay_socket_dir else [],
            private=private,
        )
        labels = {Path(run_dir).resolve(): "the run directory", Path(project_root).resolve(): "the project",
                  Path(output_root).resolve(): "the output tree"}
        relay_sockets = sorted(Path(relay_socket_dir).glob("*.sock")) if relay_socket_dir is not None else []
        self._inner = bwrap.Confinement(
            self.policy, argv, env, bridge_log=bridge_log, labels=labels, needed_sockets=relay_sockets,
            closed=[Endpoint(*adb_endpoint)] if adb_endpoint is not None else [],
        )

    def __enter__(self) -> AgentConfinement:
        if self._inner is not None:
            # Inside, bwrap would start and then fail to exec: say it as the runner would.
            if not _executable(self.argv[0], self.env):
                raise AgentProcessError(f"could not start the agent command {self.argv[0]!r}: No such file or directory. "
                                        "Check --claude (an executable on PATH or an absolute path).")
            self._inner.__enter__()
            self.argv, self.env, self.pass_fds = self._inner.argv, self._inner.env, self._inner.pass_fds
        return self

    def started(self) -> None:
        """The agent process exists (the sandbox closes its copy of the info fd)."""
        if self._inner is not None:
            self._inner.started()

    def __exit__(self, *exc_info: object) -> None:
        if self._inner is not None:
            self._inner.__exit__(*exc_info)

    @property
    def bridge_log(self) -> str | None:
        """The model bridge log's file name when this run's bridge recorded one (confined, with a model endpoint), else None."""
        if self._inner is None or not self._inner.bridge_recorded or self._inner.bridge_log is None:
            return None
        return self._inner.bridge_log.name

    def record(self) -> dict[str, Any]:
        """result.json's `sandbox` block."""
        if self._inner is None:
            return {"mode": "off", "requested": self.mode.requested, "reason": self.mode.reason}
        return {
            "mode": "on",
            "requested": self.mode.requested,
            "tool": self.mode.tool,
            "deviceReach": self.reach,
            "policy": self.policy.describe(),
            "refusedConnections": self._inner.refused,
            "survivors": list(self._inner.leftovers),
            # From inside, before the agent started: what it could and could not reach.
            "selfTest": self._inner.self_test,
        }
