"""Argument lists and small command combinations -> one quoted device shell command line."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Union

Separator = Literal[";", "&&", "||", "|"]
_SEPARATORS: tuple[str, ...] = (";", "&&", "||", "|")
# How tightly the shell binds each operator: a part joined with a tighter operator keeps its
# grouping inside a looser one (`a && b; c` is `(a && b); c`), never the other way round.
_BINDING = {";": 0, "&&": 1, "||": 1, "|": 2}


def quote(value: str | int | float | os.PathLike[str]) -> str:
    """Quote one value so a POSIX device shell sees it as exactly one literal word.

    This is the only way a value reaches a device shell: `$()`, backticks, `;`, quotes and
    spaces all arrive as plain characters.

    Args:
        value: The value; numbers and paths are turned into their text first.

    Returns:
        The quoted word (`''` for an empty string).

    Raises:
        ValueError: The value holds a NUL byte, which no shell argument can carry.
    """
    if isinstance(value, bool):
        # A bool is an int in Python; "True" on a device is almost always a caller mistake.
        raise ValueError(f"refusing to quote a bool ({value!r}); pass the text the device expects")
    text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if "\0" in text:
        raise ValueError(f"a shell argument cannot contain a NUL byte: {text!r}")
    return shlex.quote(text)


@dataclass(frozen=True)
class Script:
    """A device shell command line built only from quoted words and fixed operators.

    Build one with `sh(...)` (or `Script.command`), combine with `Script.join`, and add the
    fixed redirections with `quiet()` / `stdout_to()`; there is deliberately no way to splice
    in unquoted text, so a user value can never be interpreted by the device shell.

    Attributes:
        text: The command line exactly as the device shell receives it.
        separator: The operator joining its top-level parts, or None for a single command.
    """

    text: str
    separator: Separator | None = None

    @classmethod
    def command(cls, *args: str | int | float | os.PathLike[str]) -> Script:
        """One command: every argument quoted.

        Args:
            *args: The program and its arguments.

        Returns:
            The script.

        Raises:
            ValueError: No arguments, or an argument with a NUL byte.
        """
        if not args:
            raise ValueError("a command needs at least the program name")
        return cls(" ".join(quote(arg) for arg in args))

    @classmethod
    def join(cls, parts: Iterable[Script | Sequence[str]], sep: Separator = ";") -> Script:
        """Several commands in one round trip, joined with `;`, `&&`, `||` or `|`.

        Args:
            parts: Scripts or argument lists (each list becomes `sh(*list)`).
            sep: The operator between the parts.

        Returns:
            The combined script.

        Raises:
            ValueError: No parts, an unknown separator, or a part joined with an operator that
                binds no tighter than `sep` (the shell's precedence would regroup it silently).
        """
        if sep not in _SEPARATORS:
            raise ValueError(f"separator must be one of {_SEPARATORS}, not {sep!r}")
        scripts = [as_script(part) for part in parts]
        if not scripts:
            raise ValueError("Script.join needs at least one part")
        for script in scripts:
            if script.separator is not None and script.separator != sep and _BINDING[script.separator] <= _BINDING[sep]:
                raise ValueError(
                    f"cannot join {script.text!r} (joined with {script.separator!r}) using {sep!r}: "
                    "the device shell would regroup it; run it as a separate call instead"
                )
        if len(scripts) == 1:
            return scripts[0]
        joiner = "; " if sep == ";" else f" {sep} "
        return cls(joiner.join(script.text for script in scripts), sep)

    def quiet(self) -> Script:
        """The same single command with its stderr sent to /dev/null."""
        self._require_single("quiet()")
        return Script(f"{self.text} 2>/dev/null")

    def merge_stderr(self) -> Script:
        """The same single command with its stderr joined into its stdout (`2>&1`), in order."""
        self._require_single("merge_stderr()")
        return Script(f"{self.text} 2>&1")

    def stdout_to(self, remote_path: str) -> Script:
        """The same single command with its stdout written to a device file (quoted)."""
        self._require_single("stdout_to()")
        return Script(f"{self.text} > {quote(remote_path)}")

    def _require_single(self, what: str) -> None:
        if self.separator is not None:
            raise ValueError(f"{what} applies to one command, not to {self.text!r}")

    def __str__(self) -> str:
        return self.text


def sh(*args: str | int | float | os.PathLike[str]) -> Script:
    """Shorthand for `Script.command(*args)`: one command with every argument quoted."""
    return Script.command(*args)


def echo_status(label: str) -> Script:
    """`echo LABEL$?`: a fixed label (quoted) followed by the exit status of the command before it.

    The one place `$?` reaches a device shell: the label is quoted, the status is the shell's own.
    """
    return Script(f"echo {quote(label)}$?")


ShellArgs = Union[Script, Sequence[str]]


def as_script(args: ShellArgs) -> Script:
    """Turn the `args` a device-layer call accepts into a Script.

    Args:
        args: A Script, or a sequence of words (each quoted).

    Returns:
        The script.

    Raises:
        TypeError: A bare string was passed; it would be split into characters or
            interpreted by the shell, so it is refused.
        ValueError: An empty argument list.
    """
    if isinstance(args, Script):
        return args
    if isinstance(args, (str, bytes)):
        raise TypeError(
            f"pass the command as a list of words (['pm', 'clear', pkg]) or a Script, not the string {args!r}"
        )
    return Script.command(*args)
