"""Where things are in the user's files, found in their text: `file:line` of a line or of `trainer.X`, whether a
pattern occurs."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path


def imports_torchmetrics(file: Path) -> bool:
    """Whether the module's source has an `import torchmetrics...` or `from torchmetrics... import` statement."""
    return source_matches(file, r"^[ \t]*(?:import|from)[ \t]+torchmetrics\b")


def source_matches(file: Path, pattern: str) -> bool:
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(pattern, source, re.MULTILINE) is not None


def line_of(text: str, files: Sequence[Path]) -> str:
    """'file:line' of the first line of `files` that is `text` (stripped); "" when `text` is empty."""
    for file in dict.fromkeys(files) if text else ():
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            if line.strip() == text:
                return f"{file}:{number}"
    return ""


def first_reads(names: set[str], files: Sequence[Path], prefix: str = r"trainer\.") -> dict[str, str]:
    """'file:line' of the first `trainer.X` (`prefix` then X) in `files`, for each X of `names`."""
    found: dict[str, str] = {}
    if not names:
        return found
    pattern = re.compile(prefix + "(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    for file in dict.fromkeys(files):
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, text in enumerate(lines, 1):
            for match in pattern.finditer(text):
                found.setdefault(match.group(1), f"{file}:{number}")
    return found
