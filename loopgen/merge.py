"""Three-way merge of line-based text, in the manner of diff3 (`git merge-file --diff3`).

base is the text both sides started from; ours and theirs are two edited versions of it. Each side is compared
with base by difflib.SequenceMatcher. The base lines that both comparisons leave unchanged form stable regions,
which are copied as they are; between two stable regions lies an unstable region. Where only one side changed an
unstable region, that side's lines are taken; where both sides made the same change, it is taken once; otherwise
the region is a conflict, written with diff3 conflict markers (ours, then base, then theirs).

So changes separated by at least one base line that neither side changed always merge cleanly, while changes to
the same lines, to adjacent lines, or insertions at the same point conflict unless they are identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from difflib import SequenceMatcher

SUMMARY_WIDTH = 60  # the most characters of a changed line that Hunk.describe quotes


@dataclass(frozen=True)
class Hunk:
    """One change the user made to base: base lines [base_start, base_end) became ours lines
    [ours_start, ours_end) (0-based, half-open)."""

    base_start: int
    base_end: int
    ours_start: int
    ours_end: int

    def describe(self, ours_lines: list[str]) -> str:
        """A one-line summary of the change, with 1-based line numbers in ours, given ours' lines.

        A change that leaves lines in ours reads "lines 12-14 (added 3, removed 1): text" ("line 12" when it is
        one line), where added counts its lines in ours, removed its lines in base, and text is the first of its
        lines in ours that is not blank, stripped, and shortened to at most 60 characters (ending in "...").
        A pure deletion reads "after line N (removed K)", or "before line 1 (removed K)" at the top of ours.
        """
        added = self.ours_end - self.ours_start
        removed = self.base_end - self.base_start
        if not added:
            where = f"after line {self.ours_start}" if self.ours_start else "before line 1"
            return f"{where} (removed {removed})"
        first, last = self.ours_start + 1, self.ours_end
        where = f"line {first}" if first == last else f"lines {first}-{last}"
        summary = f"{where} (added {added}, removed {removed})"
        changed = (line.strip() for line in ours_lines[self.ours_start : self.ours_end])
        text = next((line for line in changed if line), "")
        if len(text) > SUMMARY_WIDTH:
            text = text[: SUMMARY_WIDTH - 3] + "..."
        return f"{summary}: {text}" if text else summary


@dataclass(frozen=True)
class Conflict:
    """A region that both sides changed, differently.

    base, ours and theirs are the region's lines on each side, line endings kept. ours_start is the 0-based line
    of ours where the region starts; merged_start is the 0-based line of the merged text (MergeResult.text) that
    holds the region's opening "<<<<<<<" marker.
    """

    base: list[str]
    ours: list[str]
    theirs: list[str]
    ours_start: int
    merged_start: int

    def describe(self) -> str:
        """Where the conflict starts in ours (1-based), in one line."""
        return f"line {self.ours_start + 1} of the script: your edit and the new render both change these lines"


@dataclass(frozen=True)
class MergeResult:
    """The merged text (with conflict markers where there are conflicts), every change the user made to base
    (including those that conflict), in order, and the conflicts, in order."""

    text: str
    carried: tuple[Hunk, ...]
    conflicts: tuple[Conflict, ...]

    @property
    def clean(self) -> bool:
        """Whether the merge has no conflicts, so that text has no markers."""
        return not self.conflicts


def user_hunks(base: str, ours: str) -> tuple[Hunk, ...]:
    """The changes that turn base into ours, in order: each maximal run of non-equal opcodes of a
    SequenceMatcher over the lines of base and ours."""
    return _hunks(_matcher(base.splitlines(keepends=True), ours.splitlines(keepends=True)))


def merge3(
    base: str,
    ours: str,
    theirs: str,
    *,
    ours_label: str = "your script",
    theirs_label: str = "new render",
    base_label: str = "base",
) -> MergeResult:
    """Merge the changes that ours and theirs each made to base (see the module's docstring).

    A conflict is written as "<<<<<<< {ours_label}", ours' lines, "||||||| {base_label}", base's lines, "=======",
    theirs' lines and ">>>>>>> {theirs_label}", each marker on a line of its own; a side whose last line has no
    line ending gets a newline before the next marker. Outside conflicts the text is taken byte for byte from the
    inputs, so merge3(x, x, y) == y and merge3(x, y, x) == y.
    """
    base_lines = base.splitlines(keepends=True)
    ours_lines = ours.splitlines(keepends=True)
    theirs_lines = theirs.splitlines(keepends=True)
    to_ours = _matcher(base_lines, ours_lines)
    to_theirs = _matcher(base_lines, theirs_lines)
    merged: list[str] = []
    conflicts: list[Conflict] = []
    b = o = t = 0  # where the unstable region before the next stable one starts, in base, ours and theirs
    for stable_b, stable_o, stable_t, size in _stable_regions(to_ours, to_theirs):
        base_part, ours_part, theirs_part = base_lines[b:stable_b], ours_lines[o:stable_o], theirs_lines[t:stable_t]
        if ours_part == theirs_part or theirs_part == base_part:
            merged += ours_part
        elif ours_part == base_part:
            merged += theirs_part
        else:
            conflicts.append(Conflict(base_part, ours_part, theirs_part, o, len(merged)))
            merged.append(_marker("<<<<<<<", ours_label))
            merged += _terminated(ours_part)
            merged.append(_marker("|||||||", base_label))
            merged += _terminated(base_part)
            merged.append("=======\n")
            merged += _terminated(theirs_part)
            merged.append(_marker(">>>>>>>", theirs_label))
        merged += base_lines[stable_b : stable_b + size]
        b, o, t = stable_b + size, stable_o + size, stable_t + size
    return MergeResult("".join(merged), _hunks(to_ours), tuple(conflicts))


def _matcher(a: list[str], b: list[str]) -> SequenceMatcher[str]:
    return SequenceMatcher(None, a, b, autojunk=False)


def _hunks(matcher: SequenceMatcher[str]) -> tuple[Hunk, ...]:
    """Each maximal run of the matcher's non-equal opcodes, as a Hunk (a is base, b is ours)."""
    hunks: list[Hunk] = []
    run: list[int] = []  # [base_start, base_end, ours_start, ours_end] of the run being read, or empty
    for tag, base_start, base_end, ours_start, ours_end in matcher.get_opcodes():
        if tag == "equal":
            if run:
                hunks.append(Hunk(*run))
            run = []
        elif run:
            run[1], run[3] = base_end, ours_end
        else:
            run = [base_start, base_end, ours_start, ours_end]
    if run:
        hunks.append(Hunk(*run))
    return tuple(hunks)


def _stable_regions(
    to_ours: SequenceMatcher[str], to_theirs: SequenceMatcher[str]
) -> Iterator[tuple[int, int, int, int]]:
    """The runs of base lines that both matchers match, in order, as (base_start, ours_start, theirs_start, size),
    then (len(base), len(ours), len(theirs), 0), which closes the last unstable region."""
    ours_blocks = to_ours.get_matching_blocks()
    theirs_blocks = to_theirs.get_matching_blocks()
    i = j = 0
    while i < len(ours_blocks) and j < len(theirs_blocks):
        base_o, ours_start, ours_size = ours_blocks[i]
        base_t, theirs_start, theirs_size = theirs_blocks[j]
        start, end = max(base_o, base_t), min(base_o + ours_size, base_t + theirs_size)
        if start < end:
            yield start, ours_start + start - base_o, theirs_start + start - base_t, end - start
        if base_o + ours_size < base_t + theirs_size:
            i += 1
        else:
            j += 1
    yield len(to_ours.a), len(to_ours.b), len(to_theirs.b), 0


def _marker(sign: str, label: str) -> str:
    return f"{sign} {label}\n" if label else f"{sign}\n"


def _terminated(lines: list[str]) -> list[str]:
    """The lines, with a newline added to the last one if it has no line ending (so a marker can follow it)."""
    if lines and lines[-1].splitlines()[0] == lines[-1]:
        return [*lines[:-1], lines[-1] + "\n"]
    return lines
