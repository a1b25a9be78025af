"""The files of an SQLite store (a cache directory's too): created for their user alone (folder 0700, file
0600), and refused (ConfigError) when another user owns them or anyone can write them, before they are used:
a planted file or entry would otherwise answer this user's calls."""

import os
import stat

from ..errors import ConfigError

__all__ = ["make_folder", "make_file", "check_folder", "check_file"]


def _uid() -> int:
    return os.getuid() if hasattr(os, "getuid") else -1


def _posix() -> bool:
    return os.name == "posix" and hasattr(os, "getuid")


def check_folder(path: str, shown: str) -> None:
    """ConfigError when the folder is another user's (root's is fine) or others can write it (unless it is
    sticky, as /tmp is: then others cannot replace what is in it)."""
    if not _posix():
        return
    info = os.stat(path)
    if info.st_uid not in (_uid(), 0):
        raise ConfigError("store {!r}: another user owns the folder {!r}: refusing it (use a folder of your "
                          "own)".format(shown, path[:200]))
    if info.st_mode & stat.S_IWOTH and not info.st_mode & stat.S_ISVTX:
        raise ConfigError("store {!r}: others can write the folder {!r} (mode {:o}): refusing it (chmod o-w, "
                          "or use a folder of your own)".format(shown, path[:200], stat.S_IMODE(info.st_mode)))


def check_file(path: str, shown: str) -> None:
    """ConfigError when the file is another user's or others can write it."""
    if not _posix():
        return
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return
    if info.st_uid != _uid():
        raise ConfigError("store {!r}: another user owns {!r}: refusing it (its rows or answers could be "
                          "planted)".format(shown, path[:200]))
    if info.st_mode & stat.S_IWOTH:
        raise ConfigError("store {!r}: others can write {!r} (mode {:o}): refusing it (chmod o-w)".format(
            shown, path[:200], stat.S_IMODE(info.st_mode)))


def make_folder(path: str, shown: str) -> None:
    """Create ``path`` (0700, for this user alone) when it is missing; check it either way."""
    if not os.path.isdir(path):
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except OSError as exc:
            raise ConfigError("cannot create the cache directory {!r}: {}".format(shown, exc.strerror))
    check_folder(path, shown)


def make_file(path: str, shown: str) -> None:
    """Create the store's file (0600) when it is missing, so that SQLite (and its -wal, -shm files, which
    take the file's mode) never makes it readable by others; check it either way."""
    if _posix():
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            pass
        except OSError:
            pass  # (a read-only folder: SQLite says what is wrong when it opens the file)
    check_file(path, shown)
