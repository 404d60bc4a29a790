"""A cache of rendered scripts, so that re-rendering an unchanged spec (`loopgen check` in CI or a
pre-commit hook, `loopgen run`) skips reading the sources, Jinja and black.

An entry is found by the spec's bytes, the script name, the module roots, the formatting (black's version and
the bytes of the pyproject.toml that configures it, see loopgen/render/formatting.py) and loopgen's own fingerprint
(its code and templates); it is used only while every user source file the facts were read from still has
the content it had. Set LOOPGEN_NO_CACHE=1 to bypass it; LOOPGEN_CACHE_DIR moves it. The cache never makes
a render fail: an unreadable or unwritable entry is ignored.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import tempfile
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent


def cache_dir() -> Path | None:
    if os.environ.get("LOOPGEN_NO_CACHE"):
        return None
    return _base_dir()


def templates_dir() -> Path:
    """Where the templates are kept compiled (Jinja's bytecode, keyed by each template's checksum, as Python's
    __pycache__ keeps modules): LOOPGEN_NO_CACHE does not turn this off, it turns off the cache of scripts."""
    return _base_dir() / "templates"


def _base_dir() -> Path:
    if os.environ.get("LOOPGEN_CACHE_DIR"):
        return Path(os.environ["LOOPGEN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "loopgen"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _templates() -> list[tuple[str, Path]]:
    """The templates, each with its path inside templates/ (engines/ddp.j2: the folders count)."""
    templates = next((d for d in (PACKAGE / "templates", PACKAGE.parent / "templates") if d.is_dir()), PACKAGE)
    return [(f.relative_to(templates).as_posix(), f) for f in sorted(templates.rglob("*.j2"))]


def _fingerprint() -> str:
    """loopgen's code and templates: any change to either makes earlier entries unreachable."""
    # the packages' modules too (plan/, render/, ...), by their path inside loopgen/
    files = [(f.relative_to(PACKAGE).as_posix(), f) for f in sorted(PACKAGE.rglob("*.py"))] + _templates()
    return _sha(b"".join(name.encode() + b"\0" + f.read_bytes() for name, f in files))


def templates_sha256() -> str:
    """The templates' names and bytes: a script's header carries it, so `loopgen check` tells a change of the
    templates from a change of the spec or an edit."""
    return _sha(b"".join(name.encode() + b"\0" + f.read_bytes() + b"\0" for name, f in _templates()))


def entry_path(sources: list[str], script_name: str, roots: list[Path], formatting: str) -> Path | None:
    """`sources`: the spec's sources as the header records them (loopgen.spec.sources.Sources.key, and for a
    composed spec the paths it records)."""
    directory = cache_dir()
    if directory is None:
        return None
    key = _sha(json.dumps([_fingerprint(), sources, script_name, [str(r) for r in roots], formatting]).encode())
    return directory / f"{key}.json"


def load(entry: Path | None) -> tuple[str, tuple[str, ...], tuple[Path, ...]] | None:
    """The cached (script, notices, sources), when every source file it was made from is unchanged."""
    if entry is None:
        return None
    try:
        data = json.loads(entry.read_text(encoding="utf-8"))
        for file, digest in data["sources"].items():
            if _sha(Path(file).read_bytes()) != digest:
                return None
        return data["text"], tuple(data["notices"]), tuple(Path(file) for file in data["sources"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def store(entry: Path | None, text: str, notices: tuple[str, ...], sources: set[Path]) -> None:
    if entry is None:
        return
    try:
        data = {"sources": {str(f): _sha(f.read_bytes()) for f in sorted(sources)}, "text": text, "notices": notices}
        entry.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=entry.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(data, out)
        os.replace(tmp, entry)
    except OSError:
        pass


def keep_script(text: str) -> None:
    """Keep a rendered script by the sha256 its header records, so that `loopgen upgrade` finds the render a
    script came from (the base of its three-way merge) after the script is edited."""
    directory = cache_dir()
    digest = _recorded_sha(text)
    if directory is None or digest is None:
        return
    path = directory / "scripts" / f"{digest}.py"
    try:
        if path.exists():
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except OSError:
        pass


def kept_script(digest: str) -> str | None:
    """The render whose header records `digest`, when the cache kept it and it is intact."""
    directory = cache_dir()
    if directory is None or not re.fullmatch(r"[0-9a-f]{64}", digest):
        return None
    try:
        text = (directory / "scripts" / f"{digest}.py").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    return text if _recorded_sha(text) == digest else None


def _recorded_sha(text: str) -> str | None:
    """The sha256 a script's header records of itself, when its text is that script (unedited)."""
    from loopgen.render.header import Header, edited

    digest = Header.read(text).script
    return digest if digest is not None and not edited(text) else None
