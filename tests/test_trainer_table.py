"""Every public attribute of Lightning's Trainer (its properties, the attributes its constructor sets, its methods)
is one the script's trainer serves (loopgen.plan.common.TRAINER_ATTRIBUTES) or one it refuses with a reason
(UNSERVED_TRAINER_ATTRIBUTES): held here to the installed Lightning, so that a Lightning that adds one fails. Where
the source reads it by name, a refused one is refused at render time; where the reads cannot be listed, the script's
trainer has it as an attribute that raises (tests/test_attributes.py, tests/parity/test_every_attribute.py).
docs/spec.md's table lists them all, marked as the lists say."""

from __future__ import annotations

import inspect
import re
from functools import cache

import pytest

from loopgen.plan.common import FLAG_ATTRIBUTES, TRAINER_ATTRIBUTES, UNSERVED_TRAINER_ATTRIBUTES
from tests.helpers import ROOT

pl = pytest.importorskip("pytorch_lightning")

ROW = re.compile(r"^\| `(\w+)` \| (served|refused)\b(?:: (.*) \|$)?")


@cache
def lightning_attributes() -> frozenset[str]:
    """The public attributes of Lightning's Trainer: its class's (properties, methods) and those its constructor
    sets on the instance."""
    trainer = pl.Trainer(logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False)  # fmt: skip
    names = {name for name, _ in inspect.getmembers(pl.Trainer)} | set(vars(trainer))
    return frozenset(name for name in names if not name.startswith("_"))


def rows() -> list[re.Match]:
    text = (ROOT / "docs" / "spec.md").read_text(encoding="utf-8")
    section = text.split("## Trainer attributes, one by one", 1)[1]
    return [m for line in section.splitlines() if (m := ROW.match(line))]


def table() -> dict[str, str]:
    return {m.group(1): m.group(2) for m in rows()}


def test_every_public_attribute_of_lightnings_trainer_is_served_or_refused_with_a_reason() -> None:
    served, refused = set(TRAINER_ATTRIBUTES), set(UNSERVED_TRAINER_ATTRIBUTES)
    assert not served & refused
    assert len(served) == len(TRAINER_ATTRIBUTES)
    assert served | refused == lightning_attributes(), (
        f"new in Lightning: {sorted(lightning_attributes() - served - refused)};"
        f" gone from it: {sorted(served | refused - lightning_attributes())}"
    )
    assert set(FLAG_ATTRIBUTES) <= served


def test_the_table_lists_every_public_attribute_of_lightnings_trainer() -> None:
    assert set(table()) == lightning_attributes()
    assert len(rows()) == len(table())


def test_served_exactly_when_the_script_provides_it() -> None:
    assert {name for name, status in table().items() if status == "served"} == set(TRAINER_ATTRIBUTES)


def test_a_refusal_says_its_reason_in_the_table() -> None:
    reasons = {m.group(1): m.group(3) for m in rows() if m.group(2) == "refused"}
    assert reasons == UNSERVED_TRAINER_ATTRIBUTES


@pytest.mark.parametrize("name", sorted(UNSERVED_TRAINER_ATTRIBUTES))
def test_a_refused_attribute_is_refused_where_it_is_read(tmp_path, name: str) -> None:
    from tests.test_attributes import AUTOMATIC, reading
    from tests.test_manual import refusal

    found = refusal(tmp_path, reading(AUTOMATIC, f"        print(self.trainer.{name})\n"))
    assert "models.py:" in found and f"reads trainer.{name}, which the script's trainer does not provide" in found
    assert UNSERVED_TRAINER_ATTRIBUTES[name] in " ".join(found.split())


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
