"""Errors that reach the user as one line per problem, exit status 2, no traceback."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Problem:
    """One thing wrong with the input: where it is and what is wrong."""

    where: str  # key path ("trainer.max_epochs") or file name
    message: str
    line: int | None = None  # 1-based YAML/source line, when known

    def __str__(self) -> str:
        loc = self.where if self.line is None else f"{self.where} (line {self.line})"
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
