"""docs/spec.md's table of Trainer attributes lists every public property of Lightning's Trainer, each marked
served exactly when the script's trainer provides it (loopgen.plan.common.TRAINER_ATTRIBUTES); what it does not
provide is refused at render time where it is read."""

from __future__ import annotations

import inspect
import re

import pytest

from loopgen.plan.common import TRAINER_ATTRIBUTES
from tests.helpers import ROOT

pl = pytest.importorskip("pytorch_lightning")

ROW = re.compile(r"^\| `(\w+)` \| (served|refused)\b")


def table() -> dict[str, str]:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    section = text.split("## Trainer attributes, one by one", 1)[1]
    return {m.group(1): m.group(2) for line in section.splitlines() if (m := ROW.match(line))}


def test_the_table_lists_every_public_property_of_lightnings_trainer() -> None:
    properties = {name for name, value in inspect.getmembers(pl.Trainer) if isinstance(value, property)}
    assert set(table()) == {name for name in properties if not name.startswith("_")}


def test_served_exactly_when_the_script_provides_it() -> None:
    served = {name for name, status in table().items() if status == "served"}
    assert served == set(table()) & set(TRAINER_ATTRIBUTES)
    assert set(TRAINER_ATTRIBUTES) - set(table()) == {"accumulate_grad_batches", "datamodule", "should_stop", "state"}


@pytest.mark.parametrize("name", sorted(name for name, status in table().items() if status == "refused"))
def test_a_refused_attribute_is_refused_where_it_is_read(tmp_path, name: str) -> None:
    from tests.test_attributes import AUTOMATIC, reading
    from tests.test_manual import refusal

    found = refusal(tmp_path, reading(AUTOMATIC, f"        print(self.trainer.{name})\n"))
    assert "models.py:" in found and f"reads trainer.{name}, which the script's trainer does not provide" in found
