"""The rendered scripts of the example specs, kept in generated_examples/.

Regenerate them all: `python -m tests.golden` (from the repository root).
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
GENERATED = ROOT / "generated_examples"


def example_specs() -> list[Path]:
    return sorted(EXAMPLES.glob("*.yaml"))


def golden_path(spec: Path) -> Path:
    return GENERATED / f"{spec.stem}.py"


def render_example(spec: Path) -> str:
    """As `loopgen render` writes it to its place in generated_examples/ (formatted with black's defaults, as
    generated_examples/pyproject.toml says)."""
    from loopgen.pipeline import render_spec

    text, _ = render_spec(spec.relative_to(ROOT), golden_path(spec))
    return text


def main() -> int:
    import os

    os.chdir(ROOT)
    GENERATED.mkdir(exist_ok=True)
    expected = {golden_path(spec) for spec in example_specs()}
    for spec in example_specs():
        golden_path(spec).write_text(render_example(spec), encoding="utf-8")
        print(f"wrote {golden_path(spec).relative_to(ROOT)}")
    for stale in set(GENERATED.glob("*.py")) - expected:
        stale.unlink()
        print(f"removed {stale.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
