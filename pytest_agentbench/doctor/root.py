"""`id` run through each `su` form -> the form that gives root on this device (or the sentence saying there is none).

Magisk and KernelSU take `su -c 'CMD'`; AOSP's userdebug `su` takes `su 0 CMD` (and `su root
CMD`). A harmless `id -u` through each form, in one batched trip, tells which one works: the
first whose output is `0`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_agentbench.checks.base import RawRead, Read, cut
from pytest_agentbench.device.shellscript import Script, sh

#: The forms tried, in order; each turns a command's words into the command run as root.
SU_FORMS: tuple[str, ...] = ("su 0", "su -c", "su root")


@dataclass(frozen=True)
class RootResult:
    """The working `su` form (None: none works) and, when none works, the problem sentence."""

    form: str | None
    problem: str | None


def as_root(form: str, *args: str) -> Script:
    """The command `args` run as root with the `su` form (every word quoted; `su -c` gets one quoted command line)."""
    if form == "su -c":
        return sh("su", "-c", sh(*args).text)
    if form in ("su 0", "su root"):
        return sh(*form.split(), *args)
    raise ValueError(f"unknown su form {form!r}; known: {', '.join(SU_FORMS)}")


def root_reads() -> tuple[Read, ...]:
    """One `id -u` read per `su` form."""
    return tuple(Read(f"doctor:su:{form}", as_root(form, "id", "-u")) for form in SU_FORMS)


def root_line(reads: Mapping[str, RawRead]) -> RootResult:
    """The first `su` form whose `id -u` printed `0`; otherwise why root is missing, with the remedy.

    Args:
        reads: The batch's reads by key (those of `root_reads()` among them).
    """
    outputs: list[tuple[str, RawRead | None]] = [(form, reads.get(f"doctor:su:{form}")) for form in SU_FORMS]
    for form, raw in outputs:
        if raw is not None and raw.status == 0 and raw.text.strip().splitlines()[-1:] == ["0"]:
            return RootResult(form, None)
    return RootResult(None, _no_root_sentence(outputs))


def _no_root_sentence(outputs: Sequence[tuple[str, RawRead | None]]) -> str:
    texts = [raw.text for _form, raw in outputs if raw is not None]
    if any("not found" in text or "No such file" in text for text in texts) and all(
            raw is None or raw.status == 127 or "not found" in raw.text for _form, raw in outputs):
        return ("no `su` on this device (a user build?): use a userdebug or eng image, such as an emulator image "
                "without Google Play, or a rooted phone (Magisk, KernelSU)")
    if any("not allowed" in text or "denied" in text.lower() for text in texts):
        first = next(text for text in texts if "not allowed" in text or "denied" in text.lower())
        return f"`su` refused the shell ({cut(first, 120)}): grant root to the shell (adb) in Magisk/KernelSU, or use a userdebug image"
    tried = ", ".join(f"`{form} id -u` -> {cut(raw.text, 60) if raw is not None else 'not read'!s}" for form, raw in outputs)
    return f"no `su` form gave root ({tried}): make one of {', '.join(SU_FORMS)} work for the shell user"
