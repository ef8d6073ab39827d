"""`run-as PKG CMD...` -> CMD run as a debuggable app, in its private data directory."""

from __future__ import annotations

from ..shell import Invocation
from . import command


@command("run-as")
def run_as(inv: Invocation) -> int:
    args = list(inv.args)
    if not args:
        return inv.fail("usage: run-as <package-name> [--user <uid>] <command> [<args>]\n", 1)
    package, rest = args[0], args[1:]
    if rest[:1] == ["--user"]:
        rest = rest[2:]
    info = inv.phone.packages.get(package)
    if info is None:
        return inv.fail(f"run-as: unknown package: {package}")
    if not info.debuggable:
        return inv.fail(f"run-as: package not debuggable: {package}")
    data_dir = inv.phone.fs.private_dir(package)
    if not rest:
        rest = ["sh"]
    return inv.run_argv(rest, user=package, cwd=data_dir)
