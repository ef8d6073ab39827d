"""`cmd jobscheduler run|timeout` -> an app's background sync job started or stopped (Android 14's shell command).

`run [-f] [-u USER] PACKAGE JOB_ID` runs the job now (the app's process started for its service,
as ActivityManager logs it) and `timeout [-u USER] [PACKAGE [JOB_ID]]` stops the running jobs that
match. Only the apps' declared sync jobs (`App.sync_job`) exist; their work holds a wake lock.
"""

from __future__ import annotations

from ..shell import Invocation
from ..users import ROOT, SHELL, SYSTEM

HELP = """Job scheduler (jobscheduler) commands:
  help
    Print this help text.
  run [-f | --force] [-s | --satisfied] [-u | --user USER_ID] PACKAGE JOB_ID
    Trigger immediate execution of a specific scheduled job.
  timeout [-u | --user USER_ID] [PACKAGE] [JOB_ID]
    Trigger immediate timeout of currently executing jobs, as if their execution timeout had expired."""


def jobscheduler_command(inv: Invocation, args: list[str]) -> int:
    if not args or args[0] in ("help", "-h"):
        inv.out(HELP + "\n")
        return 0
    if inv.user not in (ROOT, SHELL, SYSTEM):
        return inv.fail("Security exception: Uid does not have permission to run jobs", 255)
    verb, rest = args[0], args[1:]
    words = _without_options(rest)
    if words is None:
        return inv.fail(f"Error: unknown option in {' '.join(rest)}", 255)
    if verb == "run":
        if len(words) != 2 or not words[1].lstrip("-").isdigit():
            return inv.fail("Error: run needs a PACKAGE and a numeric JOB_ID", 255)
        package, job_id = words[0], int(words[1])
        if package not in inv.phone.packages:
            return inv.fail(f"Package not found: {package} / user 0", 255)
        if not inv.phone.run_job(package, job_id):
            return inv.fail(f"Could not find job {job_id} in package {package} / user 0", 255)
        inv.out("Running job [FORCED]\n" if any(arg in ("-f", "--force") for arg in rest) else "Running job\n")
        return 0
    if verb == "timeout":
        if len(words) > 2 or (len(words) == 2 and not words[1].lstrip("-").isdigit()):
            return inv.fail("Error: timeout takes [PACKAGE] [JOB_ID]", 255)
        package = words[0] if words else None
        job_id = int(words[1]) if len(words) == 2 else None
        stopped = inv.phone.stop_jobs(package, job_id)
        inv.out("".join(f"Timing out: {service}\n" for service in stopped) or "No matching executing jobs found.\n")
        return 0
    return inv.fail(f"Unknown command: {verb}", 255)


def _without_options(args: list[str]) -> list[str] | None:
    """The positional words, the flags and `-u USER` dropped; None for an option the shell command does not know."""
    words, skip = [], False
    for arg in args:
        if skip:
            skip = False
        elif arg in ("-u", "--user"):
            skip = True
        elif arg in ("-f", "--force", "-s", "--satisfied"):
            continue
        elif arg.startswith("-") and not arg.lstrip("-").isdigit():
            return None
        else:
            words.append(arg)
    return words
