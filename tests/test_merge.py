"""The three-way line merge that carries a user's edits of a generated script onto a new render (loopgen/merge.py):
base is the script as generated, ours the user's edited copy, theirs the new render."""

from __future__ import annotations

import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from loopgen.merge import Conflict, Hunk, MergeResult, merge3, user_hunks

BASE = """import torch


def build_model():
    return torch.nn.Linear(4, 1)


def train(model, loader):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for x, y in loader:
        loss = torch.nn.functional.mse_loss(model(x), y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def main():
    model = build_model()
    train(model, [])


if __name__ == "__main__":
    main()
"""

LR = "    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)\n"
LR_LINE = BASE.splitlines().index(LR.rstrip("\n"))  # 0-based


def edit(text: str, old: str, new: str) -> str:
    """text with its one occurrence of old replaced by new."""
    assert text.count(old) == 1, old
    return text.replace(old, new)


def ours_edit(text: str) -> str:
    """The user's edit: a line added in main()."""
    return edit(text, "    train(model, [])\n", "    train(model, [])\n    print('done')\n")


def theirs_edit(text: str) -> str:
    """The new render's change, far from main(): the learning rate's line."""
    return edit(text, LR, LR.replace("lr=0.1", "lr=0.1, momentum=0.9"))


def conflict_block(ours: str, base: str, theirs: str) -> str:
    return f"<<<<<<< your script\n{ours}||||||| base\n{base}=======\n{theirs}>>>>>>> new render\n"


def assert_clean(result: MergeResult, expected: str) -> None:
    assert result.conflicts == ()
    assert result.clean
    assert result.text == expected


# identities


@pytest.mark.parametrize(
    "x, y",
    [
        (BASE, ours_edit(BASE)),
        (BASE, BASE.rstrip("\n")),
        (BASE.rstrip("\n"), BASE),
        ("", BASE),
        (BASE, ""),
        ("a\r\nb\r\n", "a\r\nB\r\n"),
    ],
)
def test_identities_are_byte_for_byte(x: str, y: str) -> None:
    assert_clean(merge3(x, x, x), x)
    assert_clean(merge3(x, x, y), y)
    assert_clean(merge3(x, y, x), y)
    assert_clean(merge3(x, y, y), y)


# clean merges


def test_an_edit_survives_a_change_elsewhere() -> None:
    ours, theirs = ours_edit(BASE), theirs_edit(BASE)
    result = merge3(BASE, ours, theirs)
    assert_clean(result, ours_edit(theirs_edit(BASE)))
    assert "print('done')" in result.text and "momentum=0.9" in result.text
    assert result.carried == user_hunks(BASE, ours) == (Hunk(19, 19, 19, 20),)


def test_changes_one_unchanged_line_apart_merge_cleanly() -> None:
    base = "a\nb\nc\nd\ne\n"
    assert_clean(merge3(base, "a\nB\nc\nd\ne\n", "a\nb\nc\nD\ne\n"), "a\nB\nc\nD\ne\n")
    assert_clean(merge3(base, "a\nb\nX\nc\nd\ne\n", "a\nb\nc\nD\ne\n"), "a\nb\nX\nc\nD\ne\n")


def test_identical_changes_on_both_sides_are_taken_once() -> None:
    both = theirs_edit(BASE)
    assert_clean(merge3(BASE, both, both), both)
    appended = BASE + "# trailer\n"
    assert_clean(merge3(BASE, appended, appended), appended)


def test_a_deletion_merges_with_a_change_elsewhere() -> None:
    deleted = edit(BASE, "        optimizer.zero_grad()\n", "")
    assert_clean(merge3(BASE, deleted, ours_edit(BASE)), ours_edit(deleted))
    assert_clean(merge3(BASE, ours_edit(BASE), deleted), ours_edit(deleted))
    assert merge3(BASE, deleted, ours_edit(BASE)).carried == (Hunk(13, 14, 13, 13),)


# conflicts


def test_both_changing_a_line_conflicts_with_a_diff3_block() -> None:
    ours = edit(BASE, LR, LR.replace("0.1", "0.05"))
    result = merge3(BASE, ours, theirs_edit(BASE))
    theirs_lr = LR.replace("lr=0.1", "lr=0.1, momentum=0.9")
    block = conflict_block(LR.replace("0.1", "0.05"), LR, theirs_lr)
    assert result.text == edit(BASE, LR, block)
    assert not result.clean
    assert result.conflicts == (Conflict([LR], [LR.replace("0.1", "0.05")], [theirs_lr], LR_LINE, LR_LINE),)
    assert result.text.splitlines()[LR_LINE] == "<<<<<<< your script"
    assert result.carried == user_hunks(BASE, ours) == (Hunk(LR_LINE, LR_LINE + 1, LR_LINE, LR_LINE + 1),)


def test_labels_name_the_sides() -> None:
    result = merge3("a\n", "b\n", "c\n", ours_label="mine", theirs_label="theirs", base_label="original")
    assert result.text == "<<<<<<< mine\nb\n||||||| original\na\n=======\nc\n>>>>>>> theirs\n"
    bare = merge3("a\n", "b\n", "c\n", ours_label="", theirs_label="", base_label="")
    assert bare.text == "<<<<<<<\nb\n|||||||\na\n=======\nc\n>>>>>>>\n"


def test_different_insertions_at_the_end_conflict() -> None:
    result = merge3(BASE, BASE + "# mine\n", BASE + "# new\n")
    assert result.text == BASE + conflict_block("# mine\n", "", "# new\n")
    end = len(BASE.splitlines())
    assert result.conflicts == (Conflict([], ["# mine\n"], ["# new\n"], end, end),)


def test_different_insertions_at_the_same_point_conflict() -> None:
    result = merge3("a\nb\n", "a\nX\nb\n", "a\nY\nb\n")
    assert result.text == "a\n" + conflict_block("X\n", "", "Y\n") + "b\n"


def test_changes_to_adjacent_lines_conflict() -> None:
    result = merge3("a\nb\nc\nd\n", "a\nB\nc\nd\n", "a\nb\nC\nd\n")
    assert result.text == "a\n" + conflict_block("B\nc\n", "b\nc\n", "b\nC\n") + "d\n"


def test_a_deletion_against_a_change_conflicts() -> None:
    result = merge3(BASE, edit(BASE, LR, ""), theirs_edit(BASE))
    theirs_lr = LR.replace("lr=0.1", "lr=0.1, momentum=0.9")
    assert result.text == edit(BASE, LR, conflict_block("", LR, theirs_lr))
    assert result.conflicts == (Conflict([LR], [], [theirs_lr], LR_LINE, LR_LINE),)


def test_markers_point_into_the_merged_text() -> None:
    base = "a\nb\nc\nd\ne\nf\n"
    result = merge3(base, "A\nb\nc\nd\ne\nF\n", "a2\nb\nc\nd\ne\nf2\n")
    assert [(c.ours_start, c.merged_start) for c in result.conflicts] == [(0, 0), (5, 11)]
    lines = result.text.splitlines()
    assert [lines[c.merged_start] for c in result.conflicts] == ["<<<<<<< your script"] * 2


def test_conflicts_are_placed_by_their_line_in_ours() -> None:
    base = "a\nb\nc\nd\ne\nf\ng\n"
    result = merge3(base, "A\nb\nx\nc\nd\ne\nf\nG\n", "a2\nb\nc\nd\ne\nf\ng2\n")
    assert [(c.ours_start, c.merged_start) for c in result.conflicts] == [(0, 0), (7, 13)]
    assert [c.describe()[:7] for c in result.conflicts] == ["line 1 ", "line 8 "]
    assert result.text.splitlines()[7:13] == ["b", "x", "c", "d", "e", "f"]


# no newline at the end


def test_no_trailing_newline_merges_cleanly() -> None:
    assert_clean(merge3("a\nb\nc", "A\nb\nc", "a\nb\nC"), "A\nb\nC")
    assert_clean(merge3("a\nb\nc", "A\nb\nc", "a\nb\nc\n"), "A\nb\nc\n")
    assert_clean(merge3("a\nb\nc\n", "a\nb\nc", "A\nb\nc\n"), "A\nb\nc")


def test_no_trailing_newline_in_a_conflict_keeps_markers_on_their_own_lines() -> None:
    result = merge3("a\nb", "a\nB", "a\nC")
    assert result.text == "a\n" + conflict_block("B\n", "b\n", "C\n")
    assert result.conflicts == (Conflict(["b"], ["B"], ["C"], 1, 1),)


# user_hunks and descriptions


def test_user_hunks_are_the_runs_of_changes() -> None:
    base = "".join(f"{i}\n" for i in range(10))
    ours = "0\n1\ntwo\n3\n4\n5\nnew\n6\n7\n9\n"
    assert user_hunks(base, ours) == (Hunk(2, 3, 2, 3), Hunk(6, 6, 6, 7), Hunk(8, 9, 9, 9))
    assert user_hunks(base, base) == ()


def test_carried_lists_every_user_hunk_including_conflicting_ones() -> None:
    ours = ours_edit(edit(BASE, LR, LR.replace("0.1", "0.05")))
    result = merge3(BASE, ours, theirs_edit(BASE))
    assert len(result.conflicts) == 1
    assert result.carried == user_hunks(BASE, ours)
    assert [hunk.ours_start for hunk in result.carried] == [LR_LINE, 19]


def test_hunk_descriptions() -> None:
    ours = ["a\n", "    x = compute(  1 )  \n", "\n", "    y = 2\n", "z\n"]
    assert Hunk(1, 2, 1, 2).describe(ours) == "line 2 (added 1, removed 1): x = compute(  1 )"
    assert Hunk(1, 2, 1, 4).describe(ours) == "lines 2-4 (added 3, removed 1): x = compute(  1 )"
    assert Hunk(2, 2, 2, 4).describe(ours) == "lines 3-4 (added 2, removed 0): y = 2"
    assert Hunk(2, 2, 2, 3).describe(ours) == "line 3 (added 1, removed 0)"
    assert Hunk(3, 5, 2, 2).describe(ours) == "after line 2 (removed 2)"
    assert Hunk(0, 1, 0, 0).describe(ours) == "before line 1 (removed 1)"
    long = ["    " + "w" * 80 + "\n"]
    assert Hunk(0, 0, 0, 1).describe(long) == "line 1 (added 1, removed 0): " + "w" * 57 + "..."
    exact = ["w" * 60 + "\n"]
    assert Hunk(0, 0, 0, 1).describe(exact) == "line 1 (added 1, removed 0): " + "w" * 60


def test_conflict_description() -> None:
    result = merge3(BASE, edit(BASE, LR, LR.replace("0.1", "0.05")), theirs_edit(BASE))
    expected = f"line {LR_LINE + 1} of the script: your edit and the new render both change these lines"
    assert [conflict.describe() for conflict in result.conflicts] == [expected]


def test_merging_a_long_script_is_fast() -> None:
    """1500 lines, a sixth of them blank, and a new render that indents every other line: the blank lines are
    nearly all that base and the new render still share, the slow case for SequenceMatcher."""
    block = [
        "def step_{i}(batch):\n",
        "    out = model_{i}(\n",
        "        batch[{i}],\n",
        "    )\n",
        "    loss = out.sum() * {i}\n",
        "    log('loss_{i}', loss)\n",
        "    return loss\n",
        "\n",
        "\n",
        "# step {i}\n",
        "x_{i} = step_{i}(data)\n",
        "print(x_{i})\n",
    ]
    lines = [line.replace("{i}", str(i)) for i in range(125) for line in block]
    theirs = ["    " + line if line.strip() else line for line in lines]
    ours = lines[:]
    ours[30:32] = ["    # mine\n"] * 3
    ours[1200:1201] = []
    start = time.perf_counter()
    result = merge3("".join(lines), "".join(ours), "".join(theirs))
    assert time.perf_counter() - start < 1.0
    assert len(result.carried) == 2


# properties

TEXTS = st.text(alphabet="ab\n", max_size=20)


@settings(max_examples=200, deadline=None)
@given(base=TEXTS, ours=TEXTS)
def test_unchanged_theirs_gives_ours(base: str, ours: str) -> None:
    result = merge3(base, ours, base)
    assert_clean(result, ours)
    assert result.carried == user_hunks(base, ours)


@settings(max_examples=200, deadline=None)
@given(base=TEXTS, theirs=TEXTS)
def test_unchanged_ours_gives_theirs(base: str, theirs: str) -> None:
    assert_clean(merge3(base, base, theirs), theirs)


@settings(max_examples=200, deadline=None)
@given(base=TEXTS, both=TEXTS)
def test_the_same_text_on_both_sides_is_clean(base: str, both: str) -> None:
    assert_clean(merge3(base, both, both), both)


@settings(max_examples=200, deadline=None)
@given(base=TEXTS, ours=TEXTS, theirs=TEXTS)
def test_every_conflict_has_one_marker_block(base: str, ours: str, theirs: str) -> None:
    result = merge3(base, ours, theirs)
    lines = result.text.splitlines()
    assert [i for i, line in enumerate(lines) if line.startswith("<<<<<<<")] == [
        c.merged_start for c in result.conflicts
    ]
    assert sum(line == "=======" for line in lines) == len(result.conflicts)


@st.composite
def disjoint_edits(draw: st.DrawFn) -> tuple[list[str], list[str], list[str], list[str]]:
    """base's lines, two edits of base that leave at least one line between them unchanged, and both applied."""
    size = draw(st.integers(1, 30))
    base = [f"line {i}\n" for i in range(size)]
    first_start = draw(st.integers(0, size - 1))
    first_end = draw(st.integers(first_start, size - 1))
    second_start = draw(st.integers(first_end + 1, size))
    second_end = draw(st.integers(second_start, size))
    first = [f"first {i}\n" for i in range(draw(st.integers(0, 3)))]
    second = [f"second {i}\n" for i in range(draw(st.integers(0, 3)))]
    one = base[:first_start] + first + base[first_end:]
    two = base[:second_start] + second + base[second_end:]
    both = base[:first_start] + first + base[first_end:second_start] + second + base[second_end:]
    return base, one, two, both


@settings(max_examples=200, deadline=None)
@given(edits=disjoint_edits(), swap=st.booleans())
def test_separate_edits_are_both_applied(edits: tuple[list[str], ...], swap: bool) -> None:
    base, one, two, both = ("".join(lines) for lines in edits)
    ours, theirs = (two, one) if swap else (one, two)
    assert_clean(merge3(base, ours, theirs), both)
