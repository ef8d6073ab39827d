"""Paths, bytes and modes -> the simulated phone's in-memory file system (with per-app private storage)."""

from __future__ import annotations

import posixpath
import stat as stat_bits
import time
from dataclasses import dataclass, field

# Python callers (the transport, tests, tools) act as root; the shell passes its own user.
ROOT_USER = "root"
PRIVATE_ROOT = "/data/data"


@dataclass(frozen=True)
class FileStat:
    """What `stat` reports: `mode` carries the file type bits (S_IFREG/S_IFDIR) as st_mode does."""

    mode: int
    size: int
    mtime: int

    @property
    def is_dir(self) -> bool:
        return stat_bits.S_ISDIR(self.mode)


@dataclass
class _Entry:
    mode: int
    mtime: int
    data: bytearray = field(default_factory=bytearray)
    children: dict[str, _Entry] | None = None  # None for regular files


class SimFileSystem:
    """A tree of directories and files; paths are absolute POSIX paths.

    Access control is deliberately small: `/data/data/<pkg>` is readable and writable only by the
    user `<pkg>` (run-as) and root, as on a phone where the shell user cannot see an app's private
    storage. Methods default to root, the Python caller; shell commands pass `user="shell"` or the
    run-as package.
    Errors are the built-in OSError subclasses so the shell can print them as a device would.
    """

    def __init__(self) -> None:
        self._root = _Entry(mode=stat_bits.S_IFDIR | 0o755, mtime=_now(), children={})
        for directory in ("/sdcard", "/data/local/tmp", PRIVATE_ROOT, "/data/app",
                          "/system/bin", "/dev", "/proc"):
            self.mkdir(directory, parents=True)
        self.write("/dev/null", b"", mode=0o666)

    # Public contract used by the transport (sync service) and tests.

    def stat(self, path: str) -> FileStat | None:
        """Return the file's mode, size and mtime, or None when it does not exist."""
        entry = self._lookup(_norm(path))
        if entry is None:
            return None
        size = len(entry.data) if entry.children is None else 4096
        return FileStat(mode=entry.mode, size=size, mtime=entry.mtime)

    def read(self, path: str, *, user: str = ROOT_USER) -> bytes:
        """Return a file's bytes; raises FileNotFoundError, IsADirectoryError or PermissionError."""
        path = _norm(path)
        self._check_access(path, user)
        entry = self._lookup(path)
        if entry is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if entry.children is not None:
            raise IsADirectoryError(21, "Is a directory", path)
        return bytes(entry.data)

    def write(self, path: str, data: bytes, mode: int = 0o644, mtime: int | None = None, *,
              user: str = ROOT_USER, append: bool = False, make_parents: bool = True) -> None:
        """Create or replace a file (parents are created like adbd's sync does unless make_parents is False)."""
        path = _norm(path)
        self._check_access(path, user)
        parent_path, name = posixpath.split(path)
        parent = self._lookup(parent_path)
        if parent is None:
            if not make_parents:
                raise FileNotFoundError(2, "No such file or directory", path)
            self.mkdir(parent_path, parents=True, user=user)
            parent = self._lookup(parent_path)
        if parent.children is None:
            raise NotADirectoryError(20, "Not a directory", path)
        existing = parent.children.get(name)
        if existing is not None and existing.children is not None:
            raise IsADirectoryError(21, "Is a directory", path)
        stamp = _now() if mtime is None else int(mtime)
        if existing is not None and append:
            existing.data.extend(data)
            existing.mtime = stamp
            return
        parent.children[name] = _Entry(mode=stat_bits.S_IFREG | (mode & 0o7777), mtime=stamp, data=bytearray(data))
        parent.mtime = stamp

    def listdir(self, path: str, *, user: str = ROOT_USER) -> list[str]:
        """Return the sorted names in a directory."""
        path = _norm(path)
        self._check_access(path, user)
        entry = self._lookup(path)
        if entry is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if entry.children is None:
            raise NotADirectoryError(20, "Not a directory", path)
        return sorted(entry.children)

    # Shell-level operations.

    def exists(self, path: str) -> bool:
        return self._lookup(_norm(path)) is not None

    def is_dir(self, path: str) -> bool:
        entry = self._lookup(_norm(path))
        return entry is not None and entry.children is not None

    def mkdir(self, path: str, *, parents: bool = False, mode: int = 0o771, user: str = ROOT_USER) -> None:
        """Create a directory; with parents, missing ancestors too and an existing one is fine."""
        path = _norm(path)
        self._check_access(path, user)
        if path == "/":
            if parents:
                return
            raise FileExistsError(17, "File exists", path)
        parent_path, name = posixpath.split(path)
        parent = self._lookup(parent_path)
        if parent is None:
            if not parents:
                raise FileNotFoundError(2, "No such file or directory", path)
            self.mkdir(parent_path, parents=True, mode=mode, user=user)
            parent = self._lookup(parent_path)
        if parent.children is None:
            raise NotADirectoryError(20, "Not a directory", path)
        existing = parent.children.get(name)
        if existing is not None:
            if parents and existing.children is not None:
                return
            raise FileExistsError(17, "File exists", path)
        parent.children[name] = _Entry(mode=stat_bits.S_IFDIR | mode, mtime=_now(), children={})

    def remove(self, path: str, *, recursive: bool = False, user: str = ROOT_USER) -> None:
        """Delete a file, or a directory when recursive."""
        path = _norm(path)
        self._check_access(path, user)
        parent_path, name = posixpath.split(path)
        parent = self._lookup(parent_path)
        entry = None if parent is None or parent.children is None else parent.children.get(name)
        if entry is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        if entry.children is not None and not recursive:
            raise IsADirectoryError(21, "Is a directory", path)
        del parent.children[name]
        parent.mtime = _now()

    def rename(self, source: str, target: str, *, user: str = ROOT_USER) -> None:
        """Move a file or directory; a target directory receives the source by name."""
        source, target = _norm(source), _norm(target)
        self._check_access(source, user)
        self._check_access(target, user)
        if self.is_dir(target):
            target = posixpath.join(target, posixpath.basename(source))
        src_parent = self._lookup(posixpath.dirname(source))
        entry = None if src_parent is None else src_parent.children.get(posixpath.basename(source))
        if entry is None:
            raise FileNotFoundError(2, "No such file or directory", source)
        dst_parent = self._lookup(posixpath.dirname(target))
        if dst_parent is None or dst_parent.children is None:
            raise FileNotFoundError(2, "No such file or directory", target)
        del src_parent.children[posixpath.basename(source)]
        dst_parent.children[posixpath.basename(target)] = entry

    def chmod(self, path: str, mode: int) -> None:
        entry = self._lookup(_norm(path))
        if entry is None:
            raise FileNotFoundError(2, "No such file or directory", path)
        entry.mode = (entry.mode & ~0o7777) | (mode & 0o7777)

    def private_dir(self, package: str) -> str:
        return f"{PRIVATE_ROOT}/{package}"

    def _lookup(self, path: str) -> _Entry | None:
        entry = self._root
        for part in path.strip("/").split("/"):
            if not part:
                continue
            if entry.children is None:
                return None
            entry = entry.children.get(part)
            if entry is None:
                return None
        return entry

    def _check_access(self, path: str, user: str) -> None:
        # Only per-app storage is guarded: that is the boundary run-as exists to cross.
        if path == PRIVATE_ROOT and user != ROOT_USER:
            raise PermissionError(13, "Permission denied", path)
        if path.startswith(PRIVATE_ROOT + "/"):
            owner = path[len(PRIVATE_ROOT) + 1:].split("/", 1)[0]
            if user != owner and user != ROOT_USER:
                raise PermissionError(13, "Permission denied", path)


# Symlinked paths on a phone that lead to the same place (e.g. /data/user/0 is /data/data).
_ALIASES = (("/storage/emulated/0", "/sdcard"), ("/storage/self/primary", "/sdcard"), ("/data/user/0", PRIVATE_ROOT),
            ("/mnt/sdcard", "/sdcard"))


def _norm(path: str) -> str:
    normalized = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    # normpath keeps a leading "//"; a device treats it as "/".
    normalized = "/" + normalized.lstrip("/")
    for alias, target in _ALIASES:
        if normalized == alias or normalized.startswith(alias + "/"):
            return target + normalized[len(alias):]
    return normalized


def _now() -> int:
    return int(time.time())
