"""Errors that reach the user as one line per problem, exit status 2, no traceback.

- `Problem`, `LoopgenError`: what is wrong and where; the CLI prints one line per problem.
- `show`, `kind_of`, `got`, `did_you_mean`: how values and misspellings are written in those lines.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any


class Where(int):
    """Where a key of a spec composed of several sources was set: a line of one of its files, or a command-line
    override. An int, so that problems sort by source and line; shown as "exp.yaml line 4" or as the argument."""

    text: str

    def __new__(cls, order: int, text: str) -> Where:  # noqa: PYI034 - a final class
        where = super().__new__(cls, order)
        where.text = text
        return where

    def __reduce__(self) -> tuple[Any, ...]:
        return Where, (int(self), self.text)


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: where it is and what is wrong."""

    where: str  # key path ("trainer.max_epochs") or file name
    message: str
    line: int | None = None  # 1-based YAML/source line, when known

    def __str__(self) -> str:
        if self.line is None:
            loc = self.where
        else:
            loc = f"{self.where} ({self.line.text if isinstance(self.line, Where) else f'line {self.line}'})"
        return f"{loc}: {self.message}" if loc else self.message


class LoopgenError(Exception):
    """Bad input: carries every problem found, printed one per line by the CLI."""

    def __init__(self, problems: list[Problem] | Problem | str):
        if isinstance(problems, str):
            problems = [Problem("", problems)]
        elif isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


# ---------------------------------------------------------------------------
# values in messages


def show(value: Any) -> str:
    """A value as it is written in YAML."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple, dict)):
        return json.dumps(value, default=str)
    return str(value)


def kind_of(value: Any) -> str:
    if value is None:
        return "null"
    names = {bool: "a boolean", int: "an integer", float: "a float", str: "a string", list: "a list", dict: "a mapping"}
    return names.get(type(value), f"a {type(value).__name__}")


def got(value: Any) -> str:
    if isinstance(value, (list, dict)):
        return f"got {kind_of(value)}"
    return f"got {show(value)} ({kind_of(value)})"


def did_you_mean(word: str, choices: Collection[str]) -> str:
    """A " (did you mean 'x'?)" hint when `word` looks like a misspelling of some of `choices`, else ""."""
    by_lower = {choice.lower(): choice for choice in choices}
    close = difflib.get_close_matches(word.lower(), list(by_lower), n=3, cutoff=0.6)
    if not close:
        return ""
    return " (did you mean " + " or ".join(f"'{by_lower[c]}'" for c in close) + "?)"
