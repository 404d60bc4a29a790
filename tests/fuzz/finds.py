"""What the fuzzer's long runs found, each fixed and kept as a named case (tests/fuzz/test_fuzz.py).

Each file in tests/fuzz/finds/ is a failure as `python -m tests.fuzz` saved it (`reference`, `spec`, and `why`:
what differed then), renamed for what it found, with `expect` (the outcome it must have now: `passed`, or
`raised` where Lightning raises) added. `python -m tests.fuzz --replay tests/fuzz/finds` checks them all.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.harness import Case

FOLDER = Path(__file__).resolve().parent / "finds"

FINDS = [Case(path.stem, yaml.safe_load(path.read_text(encoding="utf-8"))) for path in sorted(FOLDER.glob("*.yaml"))]
