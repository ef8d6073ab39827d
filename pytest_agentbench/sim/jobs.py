"""`CMD &` on a device command line -> a background job in the phone's process table (system/processes.py) that outlives the line."""

from __future__ import annotations

from .shell import ShellSession, _expand, _Pipeline, _run_pipeline


def lasts(session: ShellSession, pipeline: _Pipeline) -> bool:
    """Whether a job outlives its line: it sleeps, or is `nohup`ed; any other `CMD &` ends at once and runs in the foreground here."""
    words = [_expand(session, word) for command in pipeline.commands for word in command.words]
    return words[:1] in (["nohup"], ["setsid"]) or any("sleep" in word for word in words)


def spawn(session: ShellSession, pipeline: _Pipeline, stdin: bytes) -> int:
    """`CMD &`: a job of its own that outlives the line; what it prints goes nowhere (its shell is gone)."""
    phone = session.phone
    argv = [_expand(session, word) for word in pipeline.commands[0].words]
    job = ShellSession(phone, user=session.user, cwd=session.cwd, env=dict(session.env))

    def body(process: object) -> None:
        job.process = process
        with phone.lock:
            _run_pipeline(job, _Pipeline(pipeline.commands, ";"), stdin, bytearray(), bytearray())

    phone.processes.spawn(session.user, argv, body)
    return 0
