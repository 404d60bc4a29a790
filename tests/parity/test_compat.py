"""Parity for classes whose Lightning bases come through the project's compat module (tests/parity/compat.py:
Lightning imported under `try:` / `except ImportError:`, re-exported with the project's data modules), as libraries
that support both package names write them: a LightningModule, a LightningDataModule and an EarlyStopping subclass
(tests/parity/compat_models.py); the prediction writer is tests/parity/test_evaluation.py's `predict_writer_compat`,
the ModelParallelStrategy modules tests/test_model_parallel.py's (tests/ddp_models.py imports Lightning the same
way). Weights torch.equal with pytorch_lightning.Trainer.

    pytest tests/parity/test_compat.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Case, case_ids
from tests.parity.test_parity import differences, train_both

pytestmark = pytest.mark.slow

MODELS = "tests.parity.compat_models"

CASES = [
    # logs to the bar, reads current_epoch and global_step (read-only on a LightningModule), a StepLR
    Case("compat_module", {"seed_everything": 7, "model": f"{MODELS}.CompatModule", "trainer": {"max_epochs": 3}}),
    # ShuffledData's setup and validation loader (its module reached as compat.data), reloaded every epoch
    Case(
        "compat_data_module",
        {
            "seed_everything": 8,
            "model": "tests.parity.models.Classifier",
            "data": f"{MODELS}.CompatData",
            "trainer": {"max_epochs": 2, "reload_dataloaders_every_n_epochs": 1},
        },
    ),
    # EarlyStopping's patience and min_epochs (the base's) over the subclass's own stop below a bound, checked after
    # each of two validations an epoch (as test_parity.py's early_stop_subclass_own_rule_on_validation_end)
    Case(
        "compat_early_stopping_subclass",
        {
            "seed_everything": 42,
            "model": "tests.parity.models.CheckpointModel",
            "trainer": {
                "max_epochs": 10,
                "min_epochs": 4,
                "val_check_interval": 0.5,
                "enable_checkpointing": True,
                "callbacks": [
                    {"class_path": f"{MODELS}.CompatStopsBelow", "init_args": {"bound": 0.16, "patience": 4}}
                ],
            },
        },
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_same_training_as_lightning(case: Case, runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script trains differently from Lightning ({tmp_path}):\n" + "\n".join(found)
    if case.id == "compat_early_stopping_subclass":
        stops = [event for event in script["records"]["events"] if event[0] == "stopping"]
        assert stops[-1][-1] and stops[-1][1] < 9, "it stops training before max_epochs"
