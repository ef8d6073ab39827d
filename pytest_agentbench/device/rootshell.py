"""A device's `su` -> which of `su 0`, `su -c`, `su root` runs a command as root, and harness scripts rewritten to it.

The harness writes every root command as `su 0 CMD...` (AOSP userdebug's `su [WHO [COMMAND...]]`).
Magisk, KernelSU and the emulator's su differ: AOSP's takes the user and then the command's
words; Magisk's and KernelSU's pass words after the user to a shell and want `-c 'CMD'`; some
accept only `su root`. `su_form_probe()` tries each with the harmless `id` in one round trip,
`parse_su_form()` picks the first that printed `uid=0`, and `with_su_form()` rewrites a script's
`su 0 ` commands into that form. All three are pure; `detect_su_form()` is the one device call.
"""

from __future__ import annotations

import re
import weakref
from typing import TYPE_CHECKING, Literal

from pytest_agentbench.device.shellscript import Script, quote, sh

if TYPE_CHECKING:
    from pytest_agentbench.device.adb import Adb

SuForm = Literal["su 0", "su -c", "su root"]
#: The forms in the order they are tried; the first that runs `id` as root wins.
SU_FORMS: tuple[SuForm, ...] = ("su 0", "su -c", "su root")
#: The fingerprint's value when no form gives root (a user build, or su refused the shell).
NO_SU = "none"
_MARK = "@@agentbench-su@@"
_ROOT_ID = re.compile(r"^uid=0\(root\)", re.MULTILINE)


def _probe(form: SuForm) -> Script:
    if form == "su -c":
        return sh("su", "-c", "id")
    if form == "su 0":
        # `'0'` is the same word to the shell, but `with_su_form` rewrites only a bare `su 0`: the
        # probe rides in scripts that are rewritten (the preflight read) and must try the form as written.
        return Script("su '0' id")
    return sh(*form.split(), "id")


def su_form_probe() -> Script:
    """One script that runs `id` through every su form, each between markers (stderr joined, so a refusal shows)."""
    parts: list[Script] = []
    for form in SU_FORMS:
        parts += [sh("echo", f"{_MARK} {form}"), _probe(form).merge_stderr()]
    parts.append(sh("echo", f"{_MARK} end"))
    return Script.join(parts, ";")


def parse_su_form(output: str) -> SuForm | None:
    """The first su form whose `id` printed `uid=0(root)` in the output of `su_form_probe()`; None when none did.

    Args:
        output: What the probe printed.

    Returns:
        `su 0`, `su -c` or `su root`, or None (no su, or every form refused or misparsed).
    """
    pieces = re.split(rf"^{re.escape(_MARK)} (.+?)\r?$", output.replace("\r\n", "\n"), flags=re.MULTILINE)
    # pieces: [before, form1, text1, form2, text2, ..., "end", after]
    seen = dict(zip(pieces[1::2], pieces[2::2]))
    for form in SU_FORMS:
        if form in seen and _ROOT_ID.search(seen[form].strip()):
            return form
    return None


def detect_su_form(adb: Adb, serial: str) -> SuForm | None:
    """Run `su_form_probe()` on the device (one round trip) and parse it; None when no form gives root."""
    result = adb.shell(serial, su_form_probe(), check=False, timeout_s=30)
    return parse_su_form(result.stdout)


# ----------------------------------------------------------------------------- rewriting scripts

_OPERATORS = (";", "&&", "||", "|", "(", ")", "{", "}")


def _words(text: str) -> list[tuple[int, int, str]]:
    """(start, end, kind) of every top-level token: kind is "word" or "op" (outside quotes only)."""
    tokens: list[tuple[int, int, str]] = []
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if char in " \t\n":
            index += 1
            continue
        two = text[index:index + 2]
        if two in ("&&", "||"):
            tokens.append((index, index + 2, "op"))
            index += 2
            continue
        if char in ";|(){}":
            tokens.append((index, index + 1, "op"))
            index += 1
            continue
        start = index
        while index < length and text[index] not in " \t\n;|&(){}":
            if text[index] == "'":
                closing = text.find("'", index + 1)
                if closing < 0:
                    raise ValueError(f"unbalanced single quote in {text!r}")
                index = closing + 1
            elif text[index] == '"':
                closing = text.find('"', index + 1)
                if closing < 0:
                    raise ValueError(f"unbalanced double quote in {text!r}")
                index = closing + 1
            elif text[index] == "\\":
                index += 2
            else:
                index += 1
        if index == start:  # a lone `&` (background): an operator too
            tokens.append((index, index + 1, "op"))
            index += 1
            continue
        tokens.append((start, index, "word"))
    return tokens


_REDIRECTION = re.compile(r"^\d*[<>]")


def with_su_form(script: Script, form: SuForm) -> Script:
    """The same script with each command that starts `su 0` rewritten to `form`; the rest untouched.

    `su root CMD...` keeps the words; `su -c 'CMD...'` passes the command's words (already quoted
    by `sh()`) as one quoted argument, up to the next operator or redirection, so a redirection
    still applies to su's output. Quoted text is never rewritten: a value `'x; su 0 y'` stays as it is.

    Args:
        script: A harness script built with `sh()` / `Script.join`.
        form: The device's su form (`detect_su_form`).

    Returns:
        The rewritten script (the same object when the form is `su 0` or nothing matched).
    """
    if form == "su 0" or "su 0" not in script.text:
        return script
    text = script.text
    tokens = _words(text)
    edits: list[tuple[int, int, str]] = []
    at_command_start = True
    index = 0
    while index < len(tokens):
        start, end, kind = tokens[index]
        if kind == "op":
            at_command_start = True
            index += 1
            continue
        word = text[start:end]
        if at_command_start and word == "su" and index + 1 < len(tokens) and tokens[index + 1][2] == "word" \
                and text[tokens[index + 1][0]:tokens[index + 1][1]] == "0":
            zero_start, zero_end, _ = tokens[index + 1]
            if form == "su root":
                edits.append((zero_start, zero_end, "root"))
                index += 2
            else:
                last = index + 2
                while last < len(tokens) and tokens[last][2] == "word" \
                        and not _REDIRECTION.match(text[tokens[last][0]:tokens[last][1]]):
                    last += 1
                if last == index + 2:
                    raise ValueError(f"`su 0` with no command in {text!r}")
                command = text[tokens[index + 2][0]:tokens[last - 1][1]]
                edits.append((zero_start, tokens[last - 1][1], "-c " + quote(command)))
                index = last
            at_command_start = False
            continue
        at_command_start = False
        index += 1
    if not edits:
        return script
    for start, end, replacement in reversed(edits):
        text = text[:start] + replacement + text[end:]
    return Script(text, script.separator)


_detected: weakref.WeakKeyDictionary[Adb, dict[str, SuForm | None]] = weakref.WeakKeyDictionary()


def su_form_for(adb: Adb, serial: str) -> SuForm | None:
    """The device's su form, detected once per adb client and device (one round trip the first time)."""
    per_device = _detected.setdefault(adb, {})
    if serial not in per_device:
        per_device[serial] = detect_su_form(adb, serial)
    return per_device[serial]


def known_su_form(adb: Adb, serial: str) -> SuForm | None:
    """The form already detected or remembered for this client and device (no round trip); None when none is."""
    return _detected.get(adb, {}).get(serial)


def remember_su_form(adb: Adb, serial: str, form: str | None) -> None:
    """Record a form read elsewhere (the fingerprint's `suForm`), so `su_form_for` costs no round trip."""
    _detected.setdefault(adb, {})[serial] = form if form in SU_FORMS else None  # type: ignore[assignment]


def rooted(script: Script, form: SuForm | None) -> Script:
    """`with_su_form` when a form is known; the script as written (`su 0`) when none is, so the read fails with the no-su sentence."""
    return with_su_form(script, form) if form is not None else script
