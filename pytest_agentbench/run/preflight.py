"""A suite's app + preflight settings -> the device in the suite's start state, in a few batched adb round trips."""

from __future__ import annotations

import hashlib
import math
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Mapping, Sequence
from xml.sax.saxutils import escape, quoteattr

from pytest_agentbench.baseline.fingerprints import device_fingerprint_script, parse_app_build, parse_device_fingerprint
from pytest_agentbench.checks.base import DeviceReads, Read
from pytest_agentbench.checks.read import batch_script, read_device, save_reads, split_batch, utc_now
from pytest_agentbench.device.adb import Adb
from pytest_agentbench.device.capture import ScreenCapture, capture_screen, capture_script, hierarchy_of, split_capture
from pytest_agentbench.device.rootshell import known_su_form, remember_su_form, rooted, su_form_for
from pytest_agentbench.device.shellscript import Script, quote, sh
from pytest_agentbench.device.uiautomator import app_texts, missing_texts, parse_hierarchy
from pytest_agentbench.errors import DeviceUnavailable, PreflightError
from pytest_agentbench.run.seed import plan_seeds
from pytest_agentbench.run.start_screen import wait_for_start_screen
from pytest_agentbench.suite import AppSpec, PrefValue, PreflightSpec, checks_of_suite

if TYPE_CHECKING:
    from pytest_agentbench.device.pool import ClaimedDevice
    from pytest_agentbench.suite import Suite

#: Where staged files go on the device; world-readable so `run-as` (the app's uid) can copy them.
DEVICE_STAGING_DIR = "/data/local/tmp/agentbench"
_STEP = "@@agentbench-step@@"
_USER_MARK = "@@agentbench-current-user@@"
_READ_END = "@@agentbench-device-read-end@@"
_INT32 = range(-(2**31), 2**31)


@dataclass
class PreflightLog:
    """`preflight.log`: every step, its command and what the device said, appended as it happens."""

    path: Path
    lines: list[str] = field(default_factory=list)

    def write(self, message: str) -> None:
        stamp = datetime.now(timezone.utc).strftime("%H:%M:%S.%f")[:-3]
        line = f"{stamp} {message}"
        self.lines.append(line)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")


@dataclass(frozen=True)
class PreflightResult:
    """What preflight established: the device fingerprint and `appBuild` read this run, and how many adb round trips it cost."""

    app_build: dict[str, object]
    round_trips: int
    start_screen_texts: tuple[str, ...] = ()
    device_fingerprint: Mapping[str, str] = field(default_factory=dict)
    #: The device checks' before-snapshot reads (None when the suite needs none), saved as device-before.json.
    device_before: DeviceReads | None = None
    #: The watched sources read before preflight reset and seeded anything (cleanup puts them back to this),
    #: saved as device-baseline.json; None when the suite watches nothing.
    device_baseline: DeviceReads | None = None
    #: The previous run's unfinished cleanup, retried before the baseline read: {action, command, status} each.
    retried_cleanup: tuple[dict[str, object], ...] = ()


# ----------------------------------------------------------------------------- pure parts


def render_shared_prefs(values: Mapping[str, PrefValue]) -> str:
    """One SharedPreferences file in Android's XML format, each value under its typed tag.

    Python types map to tags: bool -> boolean, int -> int (long beyond 32 bits), float -> float,
    str -> string, tuple of str -> set.

    Args:
        values: Preference name -> value, as the suite validated them.

    Returns:
        The file's text.
    """
    lines = ["<?xml version='1.0' encoding='utf-8' standalone='yes' ?>", "<map>"]
    for name, value in values.items():
        attr = quoteattr(name)
        if isinstance(value, bool):
            lines.append(f"    <boolean name={attr} value=\"{'true' if value else 'false'}\" />")
        elif isinstance(value, int):
            tag = "int" if value in _INT32 else "long"
            lines.append(f"    <{tag} name={attr} value=\"{value}\" />")
        elif isinstance(value, float):
            lines.append(f"    <float name={attr} value=\"{_java_float(value)}\" />")
        elif isinstance(value, str):
            lines.append(f"    <string name={attr}>{escape(value)}</string>")
        else:
            lines.append(f"    <set name={attr}>")
            lines += [f"        <string>{escape(item)}</string>" for item in value]
            lines.append("    </set>")
    lines.append("</map>")
    return "\n".join(lines) + "\n"


def _java_float(value: float) -> str:
    if math.isfinite(value) and value == int(value) and abs(value) < 1e7:
        return f"{value:.1f}"
    return repr(value)


def _split_steps(output: str) -> list[tuple[str, str, bool]]:
    """Cut a batched script's output into (step, output, finished) in order.

    Each step prints `@@agentbench-step@@ begin NAME` before its command and
    `@@agentbench-step@@ ok NAME` after it succeeded (they are chained with `&&`), so the
    first step without its `ok` line is the one that failed.
    """
    steps: list[tuple[str, str, bool]] = []
    current: str | None = None
    collected: list[str] = []
    for line in output.replace("\r\n", "\n").split("\n"):
        if line.startswith(f"{_STEP} begin "):
            if current is not None:
                steps.append((current, "\n".join(collected).strip(), False))
            current, collected = line.split(" ", 2)[2], []
        elif line.startswith(f"{_STEP} ok ") and current is not None:
            steps.append((current, "\n".join(collected).strip(), True))
            current = None
        elif current is not None:
            collected.append(line)
    if current is not None:
        steps.append((current, "\n".join(collected).strip(), False))
    return steps


def _step(name: str, command: Script) -> Script:
    return Script.join([sh("echo", f"{_STEP} begin {name}"), command, sh("echo", f"{_STEP} ok {name}")], "&&")


def _write_prefs_command(package: str, file_name: str, staged: str) -> Script:
    # run-as runs as the app's uid inside its data directory; the staged copy in
    # /data/local/tmp is world-readable, so the app's uid can copy it into shared_prefs/.
    inner = f"mkdir -p shared_prefs && cat {quote(staged)} > {quote('shared_prefs/' + file_name)}"
    return sh("run-as", package, "sh", "-c", inner)


def launch_command(package: str, launch_uri: str | None) -> Script:
    """`am start` for the suite's deep link, or the launcher activity when there is none."""
    if launch_uri:
        return sh("am", "start", "-a", "android.intent.action.VIEW", "-d", launch_uri)
    return sh("monkey", "-p", package, "-c", "android.intent.category.LAUNCHER", "1").quiet()


def build_reset_script(app: AppSpec, preflight: PreflightSpec, staged_prefs: Mapping[str, str],
                       seed_steps: Sequence[tuple[str, Script]] = ()) -> Script:
    """The one batched script: app build, force-stop, clear, seed preferences and the device, open the start screen.

    Args:
        app: The suite's app.
        preflight: The suite's preflight settings.
        staged_prefs: Preference file name (`onboarding_prefs.xml`) -> its staged device path.
        seed_steps: The suite's seeds as (step name, command), from `run.seed.plan_seeds`.

    Returns:
        A script whose steps are chained with `&&`, each bracketed by step markers.
    """
    package = app.package_name
    steps = [
        _step("installed", sh("pm", "path", package)),
        _step("app-build", sh("dumpsys", "package", package)),
        # The other apps the job touches: their builds are recorded too (an absent one reads as unknown).
        *(_step(f"app-build {other}", sh("dumpsys", "package", other)) for other in app.also_uses),
        _step("force-stop", sh("am", "force-stop", package)),
    ]
    if preflight.clear_app_data:
        steps.append(_step("clear", sh("pm", "clear", package)))
    for file_name, staged in staged_prefs.items():
        steps.append(_step(f"prefs {file_name}", _write_prefs_command(package, file_name, staged)))
    steps += [_step(name, command) for name, command in seed_steps]
    steps.append(_step("launch", launch_command(package, preflight.launch_uri)))
    return Script.join(steps, "&&")


def gated(script: Script, *, before: Script | None = None) -> Script:
    """Read the device (fingerprint, foreground user), then run `script` only for the primary user: one round trip.

    The fingerprint is read on every run because a run may rotate the screen or change a
    setting; the user check comes before anything is changed, because preference seeding with
    run-as targets user 0 while a launch targets the current user. `before` (the baseline reads
    of the sources cleanup watches) runs after the read and before anything is changed.
    """
    read = Script.join([device_fingerprint_script(), sh("echo", _USER_MARK), sh("am", "get-current-user"), sh("echo", _READ_END)], ";")
    primary_user = Script.join([sh("am", "get-current-user"), sh("grep", "-q", "^0$")], "|")
    return Script.join([read, *([before] if before is not None else []), Script.join([primary_user, script], "&&")], ";")


def split_device_read(serial: str, output: str) -> tuple[dict[str, str], str]:
    """Cut the output of a `gated` script into the device fingerprint and the script's own output.

    Raises:
        DeviceUnavailable: The foreground user is not the primary user (0), or the device printed no read at all.
    """
    read, marker, rest = output.partition(_READ_END)
    fingerprint_part, _, user_part = read.partition(_USER_MARK)
    user = user_part.strip().splitlines()[-1].strip() if marker and user_part.strip() else "unknown"
    if user != "0":
        raise DeviceUnavailable(
            f"{serial}: the foreground user is {user}, not the primary user 0; preference seeding with "
            "run-as targets user 0 while the launch targets the current user. Switch with `adb shell am switch-user 0`"
        )
    return parse_device_fingerprint(fingerprint_part), rest


# ----------------------------------------------------------------------------- device steps


def run_preflight(
    adb: Adb,
    serial: str,
    *,
    app: AppSpec,
    preflight: PreflightSpec,
    run_dir: Path,
    sleep=time.sleep,
    clock=time.monotonic,
    device_reads: Sequence[Read] = (),
    baseline_reads: Sequence[Read] = (),
    now_ms: int | None = None,
    unfinished_cleanup: Sequence[object] = (),
) -> PreflightResult:
    """Put the device and app into the suite's start state; nothing here is measured.

    Writes `preflight.log`, `preflight/` (staged preference files), and the start screen
    (`start-screen.xml`, `start-screen.png`) under `run_dir`. With `app.apk_path`, installs the APK and checks the installed base APK's SHA-256.
    With `device_reads`, the device checks' before-snapshot is read in the start screen's round
    trip and saved as `device-before.json`. With `baseline_reads` (the sources cleanup watches),
    they are read in the reset round trip before anything is reset or seeded, and saved as
    `device-baseline.json`: cleanup puts the phone back to that read. The suite's `seed` steps
    run in the reset round trip after the app's data is cleared (their files pushed first). The
    undo commands the previous run's cleanup on this device could not complete
    (`unfinished_cleanup`) run in the same trip just before the baseline read, so a leftover from
    one run never decides the next (their outcome is in `preflight.log`).

    Args:
        adb: The device layer.
        serial: The claimed device.
        app: The suite's app.
        preflight: The suite's preflight settings.
        run_dir: The run directory.
        sleep: Waits between looks at the start screen, or `settleSeconds` without `startScreenIncludes` (injected by tests).
        clock: Monotonic seconds, for the start screen's deadline (injected by tests).
        device_reads: What the device checks and cleanup read before the agent starts.
        baseline_reads: What cleanup compares with, read before the reset and the seeds.
        now_ms: The host clock for seeded SMS dates (injected by tests).
        unfinished_cleanup: The previous run's unfinished undo commands (cleanup Actions: `description`, `script`).

    Returns:
        The device fingerprint and app build read this run, and the round trips spent.

    Raises:
        PreflightError: A step failed; the message names the step and what the device said.
        DeviceUnavailable: The foreground user is not the primary user.
        DeviceLost: The device went away.
    """
    stage_dir = run_dir / "preflight"
    stage_dir.mkdir(parents=True, exist_ok=True)
    log = PreflightLog(run_dir / "preflight.log")
    trips_before = adb.round_trips
    package = app.package_name
    log.write(f"device {serial}, app {package}")

    fingerprint: dict[str, str] | None = None
    apk_sha256 = None
    if app.apk_path:
        apk_sha256, fingerprint = _install_apk(adb, serial, app, log)

    staged: dict[str, str] = {}
    for name, values in preflight.shared_preferences.items():
        file_name = f"{name}.xml"
        xml = render_shared_prefs(values)
        (stage_dir / file_name).write_text(xml, encoding="utf-8")
        staged[file_name] = f"{DEVICE_STAGING_DIR}/{file_name}"
    for file_name, remote in staged.items():
        adb.push(serial, (stage_dir / file_name).read_bytes(), remote, mode=0o644)
        log.write(f"staged {file_name} -> {remote}")
    seeds = plan_seeds(preflight.seed, staging_dir=DEVICE_STAGING_DIR, now_ms=now_ms)
    for remote, data in seeds.files:
        adb.push(serial, data, remote, mode=0o644)
        log.write(f"staged a seed file ({len(data)} bytes) -> {remote}")

    script = build_reset_script(app, preflight, staged, seeds.steps)
    nonce = secrets.token_hex(6)
    retries = [Read(f"unfinished-cleanup:{index}", action.script) for index, action in enumerate(unfinished_cleanup)]  # type: ignore[attr-defined]
    first_reads = [*retries, *baseline_reads]
    baseline_batch = batch_script(first_reads, nonce) if first_reads else None
    read_at = utc_now().strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    if fingerprint is None:
        script = gated(script, before=baseline_batch)
    elif baseline_batch is not None:
        script = Script.join([baseline_batch, script], ";")
    script = rooted(script, known_su_form(adb, serial))
    log.write(f"$ {script.text}")
    result = adb.shell(serial, script, check=False, timeout_s=60)
    output = result.stdout
    if fingerprint is None:
        fingerprint, output = split_device_read(serial, output)
    remember_su_form(adb, serial, fingerprint.get("suForm"))
    log.write(f"device fingerprint: {fingerprint}")
    baseline = None
    split = split_batch(output, first_reads, nonce) if first_reads else {}
    retried = []
    for read, action in zip(retries, unfinished_cleanup):
        raw = split[read.key]
        retried.append({"action": action.description, "command": read.script.text, "status": raw.status})  # type: ignore[attr-defined]
        log.write(f"retried the last run's unfinished cleanup: {action.description} -> exit {raw.status}"  # type: ignore[attr-defined]
                  + (f": {raw.text.strip()[:200]}" if raw.text.strip() else ""))
    if baseline_reads:
        baseline = DeviceReads({read.key: split[read.key] for read in baseline_reads}, read_at)
        path = save_reads(baseline, run_dir, "baseline")
        log.write(f"device baseline (before reset and seeds): {len(baseline.reads)} reads -> {path.name}")
    steps = _split_steps(output)
    for name, output, finished in steps:
        shown = output if not name.startswith("app-build") else _app_build_lines(output)
        log.write(f"[{name}] {'ok' if finished else 'FAILED'}{': ' + shown if shown else ''}")
    failed = next(((name, output) for name, output, finished in steps if not finished), None)
    if failed is not None or result.exit_code != 0 or not steps:
        name, shown = failed or ("script", output.strip())
        raise PreflightError(
            f"preflight step `{name}` failed on {serial} (exit {result.exit_code}): {shown[-500:] or '(no output)'}"
            f"{_remedy(name, package)}; see {log.path}"
        )
    outputs = {name: output for name, output, _ in steps}
    if "Error:" in outputs["launch"]:
        raise PreflightError(f"opening the start screen failed: {outputs['launch']}; see {log.path}")
    build = parse_app_build(outputs["app-build"], apk_sha256=apk_sha256[:16] if apk_sha256 else None)
    if app.also_uses:
        # Compared with the baseline like the rest of appBuild: another app's update flags the run.
        build["otherApps"] = {other: parse_app_build(outputs[f"app-build {other}"]) for other in app.also_uses}
    log.write(f"app build: {build}")

    texts: tuple[str, ...] = ()
    before: DeviceReads | None = None

    # The start screen is always saved (start-screen.xml + .png): one exec-out, the one the
    # start-screen check needs anyway, so the PNG costs no extra round trip for such suites.
    # The device checks' before-snapshot rides in the same round trip: both see the settled state.
    def take() -> tuple[ScreenCapture, DeviceReads | None]:
        if device_reads:
            batch = read_device(adb, serial, device_reads, then=capture_script())
            return split_capture(batch.then_output), batch.reads
        return capture_screen(adb, serial), None

    if preflight.start_screen_includes and not preflight.settle_sleep:
        # Not a fixed sleep: settleSeconds is the deadline of a poll for the start screen (run/start_screen.py).
        settled = wait_for_start_screen(adb, serial, package=package, includes=preflight.start_screen_includes,
                                        settle_s=preflight.settle_seconds, take=take, sleep=sleep, clock=clock)
        log.write(f"start screen {'settled' if settled.settled else 'not settled'} after {settled.waited_s:.2f}s "
                  f"({settled.looks} look{'s' if settled.looks != 1 else ''}; settleSeconds {preflight.settle_seconds:g} is the deadline)")
        capture, reads = settled.capture, settled.taken
    else:
        if preflight.settle_seconds:
            log.write(f"settling {preflight.settle_seconds}s")
            sleep(preflight.settle_seconds)
        capture, reads = take()
    if reads is not None:
        before = _saved_before(reads, run_dir, log)
    save_capture(capture, run_dir, "start-screen", log)
    if preflight.start_screen_includes:
        xml = hierarchy_of(capture, serial)
        # Before the agent: a field's text is the app's own (an empty omnibox shows its hint).
        texts = tuple(app_texts(parse_hierarchy(xml), package, editable=True))
        missing = missing_texts(preflight.start_screen_includes, list(texts))
        if missing:
            raise PreflightError(
                f"the start screen does not show {', '.join(repr(m) for m in missing)}; "
                f"the app shows: {', '.join(repr(t) for t in texts[:20]) or '(no text of this app)'}; "
                f"see {run_dir / 'start-screen.xml'} for where the app landed"
            )
        log.write(f"start screen shows {list(preflight.start_screen_includes)}")
    trips = adb.round_trips - trips_before
    log.write(f"preflight done in {trips} adb round trips")
    return PreflightResult(app_build=build, round_trips=trips, start_screen_texts=texts, device_fingerprint=fingerprint,
                           device_before=before, device_baseline=baseline, retried_cleanup=tuple(retried))


def _saved_before(reads: DeviceReads, run_dir: Path, log: PreflightLog) -> DeviceReads:
    path = save_reads(reads, run_dir, "before")
    failed = [key for key, raw in reads.reads.items() if raw.status != 0]
    log.write(f"device before-snapshot: {len(reads.reads)} reads -> {path.name}"
              + (f" ({len(failed)} did not exit 0: {', '.join(failed)})" if failed else ""))
    return reads


def save_capture(capture: ScreenCapture, run_dir: Path, stem: str, log: PreflightLog) -> ScreenCapture:
    """Write a capture's `<stem>.xml` and `<stem>.png` into `run_dir` (each when the device gave it)."""
    if capture.xml is not None:
        (run_dir / f"{stem}.xml").write_text(capture.xml, encoding="utf-8")
    if capture.png is not None:
        (run_dir / f"{stem}.png").write_bytes(capture.png)
    for problem in capture.problems:
        log.write(f"{stem}: {problem}")
    return capture


def _app_build_lines(output: str) -> str:
    keep = [line.strip() for line in output.splitlines() if re.search(r"versionName=|versionCode=|lastUpdateTime=", line)]
    return "; ".join(keep[:3])


def _remedy(step: str, package: str) -> str:
    if step in ("installed", "app-build"):
        return f" (is {package} installed?)"
    if step.startswith("prefs"):
        return f" (seeding preferences needs a debuggable build of {package} for run-as)"
    if step.startswith("seed"):
        return " (seeding SMS needs root: `su` on a userdebug or eng image; a photo needs /sdcard and the media scanner; a job, an app that declares it)"
    return ""


def _install_apk(adb: Adb, serial: str, app: AppSpec, log: PreflightLog) -> tuple[str, dict[str, str]]:
    assert app.apk_path is not None
    data = app.apk_path.read_bytes()
    local_sha = hashlib.sha256(data).hexdigest()
    remote = f"{DEVICE_STAGING_DIR}/{app.package_name}.apk"
    adb.push(serial, data, remote, mode=0o644)
    log.write(f"pushed {app.apk_path} ({len(data)} bytes, sha256 {local_sha[:16]}) -> {remote}")
    script = gated(Script.join([sh("pm", "install", "-r", remote), sh("pm", "path", app.package_name)], "&&"))
    result = adb.shell(serial, script, check=False, timeout_s=180)
    fingerprint, output = split_device_read(serial, result.stdout)
    log.write(f"$ {script.text}\n{output.strip()}")
    paths = re.findall(r"^package:(\S+base\.apk)\s*$", output, re.MULTILINE)
    if result.exit_code != 0 or not paths:
        raise PreflightError(f"installing {app.apk_path} as {app.package_name} failed: {output.strip()[-500:]}")
    hashed = adb.shell(serial, ["sha256sum", paths[0]], check=False)
    if hashed.exit_code != 0 or not re.match(r"[0-9a-f]{64}\b", hashed.stdout.strip()):
        raise PreflightError(
            f"the device cannot hash the installed APK ({hashed.stdout.strip()[:200] or 'no sha256sum'}); "
            "install the app yourself and remove app.apkPath to run without the check"
        )
    device_sha = hashed.stdout.split()[0]
    if device_sha != local_sha:
        raise PreflightError(
            f"the installed base APK of {app.package_name} ({device_sha[:16]}) is not {app.apk_path} "
            f"({local_sha[:16]}): the APK was built for another package, or the install did not take"
        )
    log.write(f"installed base APK matches sha256 {local_sha[:16]}")
    return local_sha, fingerprint


def preflight_suite(device: ClaimedDevice, suite: Suite, *, run_dir: Path) -> PreflightResult:
    """Preflight a suite on a claimed device: the start state, with the device checks' and cleanup's reads.

    A device whose claim was handed to an agent's server is held again first, so a later
    attempt (or a Python test preflighting twice) never resets a phone it does not hold.
    """
    checks = checks_of_suite(suite)
    if device.claim is None:
        device.take_back()
    take_unfinished = getattr(device, "take_unfinished_cleanup", None)
    su_form_for(device.adb, device.serial)  # once per device: the reset's seeds and root reads use its su form
    return run_preflight(
        device.adb, device.serial, app=suite.app, preflight=suite.preflight, run_dir=run_dir,
        device_reads=checks.before_reads(), baseline_reads=checks.baseline_reads(),
        unfinished_cleanup=take_unfinished() if take_unfinished is not None else (),
    )
