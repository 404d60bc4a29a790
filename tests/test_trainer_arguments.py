"""docs/spec.md's "Trainer arguments, one by one" lists every argument of the installed Lightning's
Trainer.__init__ in its order, each served, served in part (naming what is refused) or refused (with its reason);
a refused one is a flag loopgen accepts at Lightning's default only, and a served one is not."""

from __future__ import annotations

import inspect
import re

import pytest

from loopgen.spec.flags import FLAGS_BY_NAME
from tests.helpers import ROOT

pl = pytest.importorskip("pytorch_lightning")

ROW = re.compile(r"^\| `(\w+)` \| (served in part|served|refused)(?:: (.+))? \|$")


def rows() -> list[tuple[str, str, str | None]]:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    section = text.split("## Trainer arguments, one by one", 1)[1].split("\n## ", 1)[0]
    return [(m[1], m[2], m[3]) for line in section.splitlines() if (m := ROW.match(line))]


def test_the_table_lists_every_argument_of_lightnings_trainer_in_its_order() -> None:
    arguments = [name for name in inspect.signature(pl.Trainer.__init__).parameters if name != "self"]
    assert [name for name, _, _ in rows()] == arguments


def test_refused_exactly_where_loopgen_accepts_the_default_only() -> None:
    refused = {name for name, status, _ in rows() if status == "refused"}
    assert refused == {name for name, flag in FLAGS_BY_NAME.items() if flag.default_only}


def test_what_is_served_in_part_or_refused_says_what_and_why() -> None:
    for name, status, detail in rows():
        assert (detail is None) == (status == "served"), name


def test_the_counts_in_the_text_are_the_tables() -> None:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8").split("## Trainer arguments, one by one", 1)[1]
    statuses = [status for _, status, _ in rows()]
    counts = {status: statuses.count(status) for status in ("served", "served in part", "refused")}
    expected = f"{counts['served']} served, {counts['served in part']} served in part"
    assert expected in " ".join(text.split()) and f"{counts['refused']} refused" in text
