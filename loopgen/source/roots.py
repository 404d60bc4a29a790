"""Where user modules are looked up, as Python would find them, without running anything (kept free of heavy
imports: the render cache needs it too).

In order: the current directory; the spec's directory and its parents up to the project root (the nearest
directory with a pyproject.toml or .git; never above it); the project's `src/` (a src layout); PYTHONPATH's
entries; the interpreter's own `sys.path` (site-packages, with what its `.pth` files added: editable installs,
read from the `.pth` files, and the directories setuptools' editable finders map packages to, read from the
finder files as text). Namespace packages need nothing more: a module is looked up by its dotted path in every
root. The packages of torch and Lightning, and the standard library's modules, are never read as user code (see
loopgen/source/fingerprints.py: user_module).
"""

from __future__ import annotations

import ast
import os
import sys
from pathlib import Path

PROJECT_MARKERS = ("pyproject.toml", ".git")


def project_root(start: Path) -> Path | None:
    """The nearest directory from `start` upward that holds a pyproject.toml or a .git."""
    for directory in (start, *start.parents):
        if any((directory / marker).exists() for marker in PROJECT_MARKERS):
            return directory
    return None


def default_roots(spec_path: Path) -> list[Path]:
    """The directories user modules are looked up in, first match wins (see the module's docstring)."""
    cwd = Path.cwd().resolve()
    spec_dir = spec_path.absolute().parent.resolve()
    project = project_root(spec_dir)
    if project is not None:
        top = project
    elif spec_dir == cwd or cwd in spec_dir.parents:
        top = cwd  # no project: the spec's directories up to the current one, nothing above
    else:
        top = spec_dir
    climb = [spec_dir, *spec_dir.parents]
    roots = [cwd, *climb[: climb.index(top) + 1]]
    for base in {project, project_root(cwd)} - {None}:
        if (base / "src").is_dir():
            roots.append(base / "src")
    roots += [Path(entry) for entry in os.environ.get("PYTHONPATH", "").split(os.pathsep) if entry]
    roots += interpreter_path()
    return list(dict.fromkeys(root.resolve() for root in roots if root.is_absolute() or str(root)))


def interpreter_path() -> list[Path]:
    """The interpreter's sys.path (less the current directory, which comes first anyway), with the package
    directories of the editable finders in its site-packages."""
    out: list[Path] = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        path = Path(entry)
        out.append(path)
        if path.name in ("site-packages", "dist-packages"):
            out += _pth_roots(path) + _editable_finder_roots(path)
    return out


def _pth_roots(site: Path) -> list[Path]:
    """The directories a site directory's .pth files name (one per line; `import` lines are code: skipped)."""
    roots = []
    try:
        files = sorted(site.glob("*.pth"))
    except OSError:
        return roots
    for file in files:
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            line = line.strip()
            if line and not line.startswith(("#", "import ", "import\t")):
                directory = Path(line) if os.path.isabs(line) else site / line
                if directory.is_dir():
                    roots.append(directory)
    return roots


def _editable_finder_roots(site: Path) -> list[Path]:
    """The roots setuptools' editable finders (`__editable___NAME_finder.py`) map top-level packages to: the
    directory that holds each mapped package, read from the file's `MAPPING = {...}` literal."""
    roots: list[Path] = []
    try:
        finders = sorted(site.glob("__editable___*_finder.py"))
    except OSError:
        return roots
    for finder in finders:
        try:
            tree = ast.parse(finder.read_text(encoding="utf-8"))
        except (OSError, SyntaxError, ValueError):
            continue
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "MAPPING" for t in node.targets):
                try:
                    mapping = ast.literal_eval(node.value)
                except ValueError:
                    continue
                for name, location in mapping.items() if isinstance(mapping, dict) else ():
                    location = Path(location)
                    if location.name == name.rpartition(".")[2]:
                        roots.append(location.parent)
    return roots


def installed(root: Path) -> bool:
    """Whether `root` is where the interpreter's installed packages or standard library live (their classes are
    imported as they are, not read as the project's code)."""
    prefixes = {Path(p).resolve() for p in (sys.prefix, sys.base_prefix, sys.exec_prefix)}
    return "site-packages" in root.parts or "dist-packages" in root.parts or any(p in root.parents for p in prefixes)
