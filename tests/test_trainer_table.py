"""docs/spec.md's table of Trainer attributes lists every public property of Lightning's Trainer, each marked
served exactly when the script's trainer provides it (loopgen.plan.common.TRAINER_ATTRIBUTES); what it does not
provide is refused at render time where it is read."""

from __future__ import annotations

import inspect
import re

import pytest

from loopgen.plan.common import TRAINER_ATTRIBUTES, UNSERVED_TRAINER_ATTRIBUTES
from tests.helpers import ROOT

pl = pytest.importorskip("pytorch_lightning")

ROW = re.compile(r"^\| `(\w+)` \| (served|refused)\b(?:: (.*) \|$)?")


def rows() -> list[re.Match]:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    section = text.split("## Trainer attributes, one by one", 1)[1]
    return [m for line in section.splitlines() if (m := ROW.match(line))]


def table() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in rows()}


def test_a_refusal_for_a_reason_of_its_own_says_it_in_the_table() -> None:
    reasons = {m.group(1): m.group(3) for m in rows() if m.group(2) == "refused" and m.group(3)}
    assert reasons == UNSERVED_TRAINER_ATTRIBUTES


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
    assert UNSERVED_TRAINER_ATTRIBUTES.get(name, "compute it in your code") in " ".join(found.split())


@pytest.mark.parametrize("name", ["train_dataloader", "val_dataloaders", "test_dataloaders"])
def test_the_loaders_are_refused_where_the_spec_follows_lightning_1_9_5(tmp_path, name: str) -> None:
    """1.9.5's trainer.train_dataloader is its CombinedLoader and its evaluation loaders are lists: not the
    script's. The same read is served under 2.x."""
    from tests.test_attributes import AUTOMATIC, reading
    from tests.test_manual import refusal, render

    source = reading(AUTOMATIC, f"        print(self.trainer.{name})\n")
    assert "trainer = SimpleNamespace(" in render(tmp_path, source)
    found = refusal(tmp_path, source, "trainer: {max_epochs: 1, track_grad_norm: 2}\n")
    assert "models.py:" in found and f"trainer.{name} in a spec that follows Lightning 1.9.5" in found
