"""Where user modules are looked up (kept free of heavy imports: the render cache needs it too)."""

from __future__ import annotations

from pathlib import Path


def default_roots(spec_path: Path) -> list[Path]:
    """The current directory, then the spec's directory and its ancestors."""
    spec_dir = spec_path.absolute().parent.resolve()
    return list(dict.fromkeys([Path.cwd().resolve(), spec_dir, *spec_dir.parents]))
