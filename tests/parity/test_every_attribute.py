"""Parity of the whole trainer with pytorch_lightning.Trainer where the render cannot list what is read from it: a
callback reads every public attribute of Lightning's Trainer by name at several hooks (tests/parity/every_attribute.py)
and sees Lightning's values, those the script cannot serve raising its TrainerAttributeError (naming the attribute,
why, and what to read instead); trainer.estimated_stepping_batches loads the training data where Lightning's does.
The weights and the other records are compared as in tests/parity/test_parity.py.

    pytest tests/parity/test_every_attribute.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from loopgen.plan.common import UNSERVED_TRAINER_ATTRIBUTES
from tests.harness import Case
from tests.parity.test_parity import Runner, case, csv_logger, differences, model_checkpoint, train_both

pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

MODELS = "tests.parity.every_attribute"
HOOKS = {"setup", "fit_start", "train_start", "train_batch_end 0", "validation_epoch_end", "train_end"}


def with_model(built: Case, model: str) -> Case:
    built.spec["model"]["class_path"] = f"{MODELS}.{model}"
    return built


# one device with validation (and its sanity check), checkpointing and a logger
EVERY_ATTRIBUTE = with_model(
    case(
        "every_attribute",
        callbacks=[
            {"class_path": f"{MODELS}.EveryAttributeRecorder"},
            model_checkpoint(monitor="val_loss", save_top_k=1, save_last=True),
        ],
        max_epochs=2,
        limit_train_batches=4,
        limit_val_batches=2,
        val_check_interval=2,
        logger=csv_logger(),
        enable_checkpointing=True,
    ),
    "DrawingModel",
)
PASSED_ON = with_model(
    case(
        "passed_on_estimate",
        callbacks=[{"class_path": f"{MODELS}.PassesTrainerOn"}],
        max_epochs=2,
        limit_train_batches=5,
        limit_val_batches=2,
    ),
    "WarmupModel",
)
CASES = [EVERY_ATTRIBUTE, PASSED_ON]  # (tests/lint_sweep.py renders them too)


def test_a_callback_reading_every_attribute_by_name_sees_lightnings_values(runner: Runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, EVERY_ATTRIBUTE.spec, tmp_path)
    theirs, ours = lightning["records"]["events"], script["records"]["events"]
    lightning["records"]["events"] = script["records"]["events"] = []
    found = differences(lightning, script)
    assert not found, "the script trains differently from Lightning:\n" + "\n".join(found)
    assert len(ours) == len(theirs) and [event[0] for event in ours] == [event[0] for event in theirs]
    recorded = [i for i, event in enumerate(theirs) if isinstance(event[-1], dict) and "global_step" in event[-1]]
    others = [i for i in range(len(theirs)) if i not in recorded]  # the model's own events
    assert [ours[i] for i in others] == [theirs[i] for i in others]
    records = [(theirs[i][0], theirs[i][1], ours[i][1]) for i in recorded]
    assert {hook for hook, _, _ in records} >= HOOKS
    wrong = []
    for hook, values, served in records:
        for name, value in values.items():
            if name in UNSERVED_TRAINER_ATTRIBUTES:  # the clear error, naming it, why and what to read instead
                expected = [
                    "raises",
                    "TrainerAttributeError",
                    f"this script's trainer does not provide trainer.{name}: {UNSERVED_TRAINER_ATTRIBUTES[name]}",
                ]
                if served[name] != expected:
                    wrong.append(f"{hook}: trainer.{name} gives {served[name]!r}")
            elif served[name] != value:
                wrong.append(f"{hook}: trainer.{name} is {served[name]!r}, Lightning's {value!r}")
    assert not wrong, f"{len(wrong)} differences:\n" + "\n".join(wrong[:40])


def test_the_modules_own_estimate_is_served_where_a_callback_passes_the_trainer_on(
    runner: Runner, tmp_path: Path
) -> None:
    """A callback hands the trainer to a helper (the reads cannot be listed), and the module sizes its schedule by
    trainer.estimated_stepping_batches in configure_optimizers: the estimate is Lightning's, and the training
    data loads there as in Lightning (the draw at fit's start, after it, is the same)."""
    lightning, script = train_both(runner, PASSED_ON.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, "the script trains differently from Lightning:\n" + "\n".join(found)
