"""`su [WHO [COMMAND...]]` (AOSP userdebug), `su -c CMD`, `id` and `whoami` -> commands as another user.

AOSP's su exists only on userdebug/eng builds and only the shell and root may use it; on a user
build there is no su binary at all, so the shell reports it as not found (exit 127).

`Phone(su_variant=...)` picks how su reads its words, so the harness's su-form detection
(device/rootshell.py) is exercised on each: `aosp` (default: `su [WHO [COMMAND...]]`, and `-c`),
`magisk` (`su [options] [-] [user [argument...]]`: words after the user go to the shell as its
arguments, so only `su -c 'CMD'` runs CMD), `root-only` (only a user name, `su root CMD`). The
variants' error texts are the simulation's; they are not recorded from those su binaries.
"""

from __future__ import annotations

from ..shell import SHELL_NAME, Invocation
from ..users import ROOT, SHELL, id_line, name_of, uid_of, user_for
from . import command


@command("su")
def su(inv: Invocation) -> int:
    if not inv.phone.debuggable_build:
        return inv.fail(f"{SHELL_NAME}: su: inaccessible or not found", 127)
    if inv.user not in (ROOT, SHELL):
        return inv.fail("su: uid %d not allowed to su" % uid_of(inv.phone, inv.user))
    args = list(inv.args)
    variant = inv.phone.su_variant
    if variant == "magisk":
        return _magisk_su(inv, args)
    if variant == "root-only" and args and args[0] not in ("root", "-"):
        return inv.fail(f"su: unknown user {args[0]}")
    who = ROOT
    if args and not args[0].startswith("-"):
        found = user_for(inv.phone, args[0].split(",", 1)[0])
        if found is None:
            return inv.fail(f"su: unknown user {args[0]}")
        who, args = found, args[1:]
    if args[:1] in (["-c"], ["--command"]):
        if len(args) < 2:
            return inv.fail("su: option requires an argument -- c")
        # `su -c 'CMD'` (SuperSU/Magisk style) runs CMD through sh.
        return inv.run_argv(["sh", "-c", " ".join(args[1:])], user=who)
    if args[:1] == ["-"]:
        args = args[1:]
    return inv.run_argv(args or ["sh"], user=who)


def _magisk_su(inv: Invocation, args: list[str]) -> int:
    who = ROOT
    if "-c" in args:
        at = args.index("-c")
        if at + 1 >= len(args):
            return inv.fail("su: option requires an argument -- c")
        return inv.run_argv(["sh", "-c", args[at + 1]], user=who)
    words = [word for word in args if word != "-"]
    if words and user_for(inv.phone, words[0]) is not None:
        words = words[1:]
    if not words:
        return inv.run_argv(["sh"], user=who)
    # The words go to the shell as arguments: the first is taken as a script file to run.
    return inv.fail(f"/system/bin/sh: {words[0]}: No such file or directory", 127)


@command("id")
def id_(inv: Invocation) -> int:
    flags = "".join(arg[1:] for arg in inv.args if arg.startswith("-"))
    if "u" in flags or "g" in flags:
        uid = uid_of(inv.phone, inv.user)
        inv.out((name_of(inv.phone, inv.user) if "n" in flags else str(uid)) + "\n")
        return 0
    inv.out(id_line(inv.phone, inv.user))
    return 0


@command("whoami")
def whoami(inv: Invocation) -> int:
    inv.out(name_of(inv.phone, inv.user) + "\n")
    return 0
