"""Command names -> handlers: the registry every command family module adds itself to."""

from __future__ import annotations

import posixpath
from collections.abc import Callable

from ..shell import Handler

COMMANDS: dict[str, Handler] = {}
# Directories whose binaries resolve by name, as clients send `/system/bin/screencap -p`.
_BIN_DIRS = ("/system/bin", "/system/xbin", "/vendor/bin", "/bin", "/sbin", "/product/bin")


def command(*names: str) -> Callable[[Handler], Handler]:
    """Register a handler under one or more command names."""

    def register(handler: Handler) -> Handler:
        for name in names:
            COMMANDS[name] = handler
        return handler

    return register


def lookup(name: str, fs: object | None = None) -> Handler | None:
    """The handler for argv[0]: a bare name, or an absolute path in a bin directory.

    With the phone's file system, a bare name resolves only while its binary is on it, as a
    shell's PATH search does: removing `/system/bin/sha256sum` makes a phone without sha256sum.
    """
    if "/" in name:
        directory, base = posixpath.split(posixpath.normpath(name))
        return COMMANDS.get(base) if directory in _BIN_DIRS else None
    if fs is not None and not any(fs.exists(f"{directory}/{name}") for directory in _BIN_DIRS):  # type: ignore[attr-defined]
        return None
    return COMMANDS.get(name)


# Importing the families registers their commands.
from . import (am, appops, cmd, content, coreutils, dumpsys, find, input, logcat, pm, processes, props, run_as,  # noqa: E402,F401
               screencap, settings, su, textutils, uiautomator, wm)
