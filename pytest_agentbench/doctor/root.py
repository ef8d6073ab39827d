"""The `su` probe of device/rootshell.py, read in the doctor's batch -> the form that gives root here (or why none does, with the remedy).

The probe, the forms and the rule (the first form whose `id` prints `uid=0(root)`) are
device/rootshell.py's, the same ones the fingerprint's `suForm` and the harness's root commands
use: the doctor's `root: FORM` is the form the jobs will run as root with. What this module adds
is the sentence when no form works: no `su` at all, `su` refused the shell, or every form ran
`id` as someone else (misparsed).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from pytest_agentbench.checks.base import RawRead, Read, cut
from pytest_agentbench.device.rootshell import SU_FORMS, parse_su_form, su_form_outputs, su_form_probe, with_su_form
from pytest_agentbench.device.shellscript import Script, sh

#: The batch key of the su probe.
ROOT_READ_KEY = "doctor:su"
_NO_SU = re.compile(r"\bsu\b.*(inaccessible or not found|not found|No such file)", re.IGNORECASE)
_REFUSED = re.compile(r"not allowed|permission denied|denied", re.IGNORECASE)


@dataclass(frozen=True)
class RootResult:
    """The working `su` form (None: none works) and, when none works, the problem sentence."""

    form: str | None
    problem: str | None


def as_root(form: str, *args: str) -> Script:
    """The command `args` run as root with the `su` form: the harness's `su 0 ARGS` rewritten by `with_su_form`."""
    if form not in SU_FORMS:
        raise ValueError(f"unknown su form {form!r}; known: {', '.join(SU_FORMS)}")
    return with_su_form(sh("su", "0", *args), form)  # type: ignore[arg-type]


def root_reads() -> tuple[Read, ...]:
    """The su probe as one read (`sh -c`: a Read is one command; the probe's `su '0'` is never rewritten)."""
    return (Read(ROOT_READ_KEY, sh("sh", "-c", su_form_probe().text)),)


def root_line(reads: Mapping[str, RawRead]) -> RootResult:
    """The device's su form by `parse_su_form`; otherwise why root is missing, with the remedy.

    Args:
        reads: The batch's reads by key (those of `root_reads()` among them).
    """
    raw = reads.get(ROOT_READ_KEY)
    if raw is None or raw.status is None:
        return RootResult(None, "root could not be checked: the device's answer stopped before the `su` probe finished: "
                                "run the doctor again")
    form = parse_su_form(raw.text)
    if form is not None:
        return RootResult(form, None)
    return RootResult(None, no_root_sentence(su_form_outputs(raw.text)))


def no_root_sentence(outputs: Mapping[str, str]) -> str:
    """Why no form gave root, from what each form printed: no `su`, `su` refused, or no form ran `id` as root."""
    texts = [outputs.get(form, "") for form in SU_FORMS]
    if all(_NO_SU.search(text) for text in texts):
        return ("no `su` on this device (a user build?): use a userdebug or eng image, such as an emulator image "
                "without Google Play, or a rooted phone (Magisk, KernelSU)")
    refusal = next((text for text in texts if _REFUSED.search(text)), None)
    if refusal is not None:
        return (f"`su` refused the shell ({cut(refusal, 120)}): grant root to the shell (adb) in Magisk/KernelSU, "
                "or use a userdebug image")
    tried = ", ".join(f"`{form} id` -> {cut(outputs[form], 60) or 'nothing' if form in outputs else 'not reached'}"
                      for form in SU_FORMS)
    return (f"no `su` form gave root ({tried}; root is `uid=0(root)`): make one of {', '.join(SU_FORMS)} "
            "run a command as root for the shell user")
