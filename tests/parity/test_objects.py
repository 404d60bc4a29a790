"""Parity for modules that take objects as init args (nested class_path entries, LightningCLI's way), log
torchmetrics objects, or read from loaders without a length: weights torch.equal with pytorch_lightning.Trainer.

    pytest tests/parity/test_objects.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Case, case_ids
from tests.parity.test_parity import differences, train_both

pytestmark = pytest.mark.slow

OBJECTS = "tests.parity.objects"


def objects_case(id: str, model: str, init: dict, *, data: dict | None = None, seed: int = 42, **trainer) -> Case:
    """A spec whose model (and data) are classes in tests.parity.objects."""
    spec: dict = {"seed_everything": seed, "model": {"class_path": f"{OBJECTS}.{model}", "init_args": init}}
    if data is not None:
        spec["data"] = data
    spec["trainer"] = trainer
    return Case(id, spec)


def obj(name: str, **init_args: object) -> dict:
    entry: dict = {"class_path": f"{OBJECTS}.{name}"}
    if init_args:
        entry["init_args"] = init_args
    return entry


BACKBONE = {
    # the spec's order is not the classes' parameter order: LightningCLI builds the backbone (its encoder, then
    # its blocks) before the loss, and each draws weights from the global generator
    "lr": 0.05,
    "loss": obj("WeightedCrossEntropy", smoothing=0.1),
    "backbone": {
        **obj("Backbone", hidden=16, blocks=[obj("Residual", width=16), obj("Residual")], encoder=obj("Encoder")),
        "dict_kwargs": {"note": "kept in **options"},
    },
}

CASES = [
    objects_case("objects_backbone_and_loss", "BackboneClassifier", BACKBONE, max_epochs=2),
    # torchmetrics: an Accuracy logged on step and epoch in training, one updated in validation, a MetricCollection;
    # validation twice an epoch (the validation metrics reset each time, the training ones not), and the sanity check
    Case(
        "torchmetrics_accuracy_and_collection",
        {
            "seed_everything": 3,
            "model": {"class_path": "tests.parity.metric_models.MetricClassifier"},
            "trainer": {"max_epochs": 2, "val_check_interval": 0.5},
        },
    ),
    Case(
        "torchmetrics_epoch_only",
        {
            "seed_everything": 4,
            "model": {
                "class_path": "tests.parity.metric_models.MetricClassifier",
                "init_args": {"collection": False, "on_step": False},
            },
            "trainer": {"max_epochs": 2, "num_sanity_val_steps": 0},
        },
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_same_training_as_lightning(case: Case, runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script trains differently from Lightning ({tmp_path}):\n" + "\n".join(found)
