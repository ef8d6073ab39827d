"""A run directory -> the SHA-256 of every file the audit reads (its seals), and the sealed files that changed since.

The audit's evidence lives in files of the run directory: the transcript and its timing sidecar,
the harness's relay log and model bridge log, the post-run screen and the device reads. A live run seals the files
that exist before the agent starts (the before-snapshot) at that moment and the rest when it
ends; result.json keeps the seals, and a re-render re-audits only inputs that still match them.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from pathlib import Path

#: The files of a run directory the audit reads (those that exist), besides `device-state/`.
AUDIT_INPUT_FILES = (
    "claude.jsonl",
    "claude.timing.jsonl",
    "relay.jsonl",
    "model-bridge.jsonl",
    "screen.xml",
    "device-before.json",
    "device-after.json",
)
#: Where the device reads keep their binary files (checks/read.py).
STATE_DIR = "device-state"
_CHUNK = 1 << 20


def _digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as stream:
        while chunk := stream.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def audit_input_paths(run_dir: Path) -> list[str]:
    """The audit inputs present in a run directory, as sorted names relative to it."""
    names = [name for name in AUDIT_INPUT_FILES if (run_dir / name).is_file()]
    state = run_dir / STATE_DIR
    if state.is_dir():
        names += [path.relative_to(run_dir).as_posix() for path in state.rglob("*") if path.is_file()]
    return sorted(names)


def seal(run_dir: Path, names: list[str] | None = None) -> dict[str, str]:
    """Name -> SHA-256 of each audit input present now (or of `names`, those that exist)."""
    chosen = audit_input_paths(run_dir) if names is None else [name for name in names if (run_dir / name).is_file()]
    return {name: _digest(run_dir / name) for name in chosen}


def broken_seals(sealed: Mapping[str, str], run_dir: Path) -> list[str]:
    """Sentences naming each sealed file that is missing or changed, and each audit input no seal covers.

    Pure in what it decides (the run directory is only read); an empty list means every input the
    audit will read is exactly what was sealed.
    """
    problems = []
    current = seal(run_dir)
    for name in sorted(sealed):
        if name not in current:
            problems.append(f"{name} is missing")
        elif current[name] != sealed[name]:
            problems.append(f"{name} changed (sha256 {current[name][:12]}, sealed {sealed[name][:12]})")
    problems += [f"{name} was not there when the run was sealed" for name in sorted(set(current) - set(sealed))]
    return problems
