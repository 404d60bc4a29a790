"""Writing the files loopgen makes (scripts, plots): atomically, with the mode a plain write would give, and with a
one-line error naming the path when it cannot be written."""

from __future__ import annotations

import os
from pathlib import Path

from loopgen.errors import LoopgenError


def write_atomically(path: Path, content: str | bytes) -> None:
    """Write to a temporary file beside `path`, then rename it over: `path` is never half-written.

    The file gets the mode a plain open() would give it (the old file's, else 0o666 less the umask), not
    mkstemp's 0o600.
    """
    directory = output_directory(path)
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        mode = 0o666 & ~umask
    import tempfile

    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    except OSError as error:
        raise LoopgenError(f"-o {path}: cannot write in {directory}: {error.strerror}") from None
    try:
        text = isinstance(content, str)
        with os.fdopen(fd, "w" if text else "wb", encoding="utf-8" if text else None) as out:
            out.write(content)
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def output_directory(path: Path) -> Path:
    """The directory `path` is to be written into; a LoopgenError when it cannot be (checked before rendering)."""
    directory = path.parent if str(path.parent) else Path(".")
    if path.is_dir():
        raise LoopgenError(f"-o {path}: is a directory; name a file in it")
    if not directory.is_dir():
        what = "is not a directory" if directory.exists() else "does not exist"
        raise LoopgenError(f"-o {path}: directory {directory} {what}")
    if not os.access(directory, os.W_OK | os.X_OK):
        raise LoopgenError(f"-o {path}: cannot write in {directory}: permission denied")
    if path.exists() and not os.access(path, os.W_OK):
        raise LoopgenError(f"-o {path}: the file is read-only")
    return directory
