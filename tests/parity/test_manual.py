"""Parity of manual optimization (`self.automatic_optimization = False`, Lightning 2.x) with
pytorch_lightning.Trainer: the modules of tests/parity/manual_models.py make their optimizer steps in
training_step, and the script must give them what Lightning's Trainer gives (the wrapped optimizers, whose steps
global_step counts, manual_backward with its hooks, clip_gradients, the schedulers they step themselves).
The same comparison as tests/parity/test_parity.py: weights (torch.equal), records, checkpoints, logs.

    pytest tests/parity/test_manual.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Case, case_ids
from tests.parity.test_parity import (
    Runner,
    case,
    csv_logger,
    differences,
    logger,
    lr_monitor,
    model_checkpoint,
    stop_request,
    train_both,
)

pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

MANUAL = "tests.parity.manual_models"
TRAINER_ATTRIBUTES = [{"class_path": "tests.parity.trainer_attributes.TrainerAttributesRecorder"}]


def manual_case(id: str, model: str, init: dict | None = None, **trainer) -> Case:
    built = case(id, "MLP", init, **trainer)
    built.spec["model"]["class_path"] = f"{MANUAL}.{model}"
    return built


CASES = [
    manual_case("manual_gan_two_optimizers_toggled", "ManualGAN", max_epochs=2),
    manual_case("manual_gan_bf16_mixed", "ManualGAN", max_epochs=1, precision="bf16-mixed"),
    manual_case("manual_gan_max_steps", "ManualGAN", max_steps=7),
    manual_case(
        "manual_gan_logged_and_stopped",
        "ManualGAN",
        max_epochs=3,
        logger=csv_logger(),
        log_every_n_steps=3,
        callbacks=stop_request(at_epoch=1, at_batch=4),
    ),
    manual_case("manual_accumulate_clip_norm", "ManualAccumulateClip", max_epochs=2),
    manual_case(
        "manual_accumulate_clip_value",
        "ManualAccumulateClip",
        {"clip_val": 0.01, "clip_algorithm": "value"},
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=2,
    ),
    manual_case(
        "manual_accumulate_checkpoints",
        "ManualAccumulateClip",
        max_epochs=3,
        enable_checkpointing=True,
        callbacks=[model_checkpoint(save_last=True, every_n_train_steps=2, save_top_k=-1)],
    ),
    # every n steps under manual optimization, Lightning's rules of its own: no save at step 0 (its skip comes
    # before the missing metric's deferral), none waiting for a fresher metric (found by the fuzzer)
    manual_case(
        "manual_checkpoint_every_n_steps_skips_step_0",
        "ManualAccumulateClip",
        max_epochs=3,
        enable_checkpointing=True,
        check_val_every_n_epoch=2,
        val_check_interval=3,
        callbacks=[
            model_checkpoint(monitor="train_loss_epoch", every_n_train_steps=5, save_on_train_epoch_end=False),
            model_checkpoint(monitor="train_loss_step", mode="max", save_top_k=1, dirpath="by_loss"),
        ],
    ),
    # ... and a ModelCheckpoint subclass on the script's base, which has the same rules (its manual branch)
    manual_case(
        "manual_checkpoint_subclass_every_n_steps",
        "ManualAccumulateClip",
        max_epochs=3,
        enable_checkpointing=True,
        val_check_interval=3,
        callbacks=[
            model_checkpoint(
                "tests.parity.callbacks.WarmCheckpoint",
                monitor="train_loss_step",
                every_n_train_steps=4,
                save_last=True,
            ),
        ],
    ),
    manual_case("manual_tbptt", "ManualTBPTT", max_epochs=2, val_check_interval=3),
    # configure_gradient_clipping (automatic optimization), with and without the Trainer's clipping flags
    manual_case(
        "clip_hook_with_trainer_value_clipping",
        "ClipHookModel",
        max_epochs=2,
        gradient_clip_val=0.02,
        gradient_clip_algorithm="value",
        accumulate_grad_batches=2,
    ),
    manual_case("clip_hook_trainer_norm_clipping", "ClipHookModel", max_epochs=2, gradient_clip_val=0.05),
    manual_case(
        "clip_hook_trainer_norm_given",
        "ClipHookModel",
        max_epochs=1,
        gradient_clip_val=0.05,
        gradient_clip_algorithm="norm",
    ),
    # an optimizer_step override that skips steps by calling the closure itself: no hook, no clipping for them
    manual_case("optimizer_step_skipping_clipped", "SkippingStepModel", max_epochs=2, gradient_clip_val=0.05),
    manual_case("optimizer_step_skipping_accumulate", "SkippingStepModel", max_epochs=2, accumulate_grad_batches=2),
    # a callback reading the trainer's attributes at several hooks, with and without a data module
    manual_case("trainer_attributes_manual_gan", "ManualGAN", max_epochs=2, callbacks=TRAINER_ATTRIBUTES),
    case(
        "trainer_attributes_datamodule_bf16",
        "Classifier",
        data="ShuffledData",
        max_epochs=2,
        precision="bf16-mixed",
        callbacks=TRAINER_ATTRIBUTES,
    ),
    # trainer.logger, loggers, log_dir, state with loggers; a module writing to self.logger.experiment
    manual_case(
        "trainer_attributes_loggers_csv_first",
        "ManualGAN",
        max_epochs=1,
        limit_train_batches=4,
        val_check_interval=2,
        logger=[csv_logger(name="csv", version=3), logger("TensorBoardLogger", save_dir="tb")],
        callbacks=TRAINER_ATTRIBUTES,
    ),
    manual_case(
        "experiment_scalars_tensorboard",
        "ExperimentScalarsGAN",
        max_epochs=2,
        log_every_n_steps=2,
        logger=logger("TensorBoardLogger", save_dir=".", name="gan"),
        callbacks=TRAINER_ATTRIBUTES,
    ),
    manual_case("trainer_attributes_no_logger", "ManualGAN", max_epochs=1, logger=False, callbacks=TRAINER_ATTRIBUTES),
    # LearningRateMonitor over the schedulers the module steps itself, at each step and at each epoch
    manual_case(
        "manual_lr_monitor_step",
        "ManualAccumulateClip",
        max_epochs=3,
        logger=csv_logger(),
        log_every_n_steps=2,
        callbacks=[lr_monitor(logging_interval="step", log_momentum=True)],
    ),
    manual_case(
        "manual_gan_lr_monitor_epoch",
        "ManualGAN",
        max_epochs=2,
        logger=csv_logger(),
        callbacks=[lr_monitor(logging_interval="epoch")],
    ),
    # ... and a project's subclass of it, over the two optimizers of a GAN (tests/parity/callbacks.py)
    manual_case(
        "manual_gan_lr_monitor_subclass",
        "ManualGAN",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=2,
        callbacks=[lr_monitor("tests.parity.callbacks.GroupRates", log_momentum=True)],
    ),
    manual_case(
        "manual_lr_monitor_subclass_scheduler",
        "ManualAccumulateClip",
        max_epochs=3,
        logger=csv_logger(),
        log_every_n_steps=2,
        callbacks=[lr_monitor("tests.parity.callbacks.GroupRates")],
    ),
    # OneCycleLR sized by trainer.estimated_stepping_batches
    manual_case("one_cycle_estimated_stepping_batches", "OneCycleModel", max_epochs=3),
    manual_case(
        "one_cycle_estimate_accumulate_max_steps",
        "OneCycleModel",
        max_epochs=3,
        max_steps=11,
        accumulate_grad_batches=2,
        limit_train_batches=7,
    ),
    manual_case("clip_hook_own_clipping_bf16", "ClipHookModel", max_epochs=1, precision="bf16-mixed"),
    # bf16-true / 16-true: training_step (and the steps it makes) with the model's dtype the default one
    manual_case(
        "manual_gan_bf16_true",
        "ManualGAN",
        max_epochs=2,
        precision="bf16-true",
        logger=csv_logger(),
        log_every_n_steps=3,
    ),
    # (not the GAN: Adam's eps of 1e-8 is 0 in float16, and its steps make NaNs)
    manual_case(
        "manual_accumulate_clip_value_16_true",
        "ManualAccumulateClip",
        {"clip_val": 0.01, "clip_algorithm": "value"},
        max_epochs=2,
        precision="16-true",
    ),
    manual_case(
        "manual_accumulate_clip_checkpoints_bf16_true",
        "ManualAccumulateClip",
        max_epochs=3,
        precision="bf16-true",
        enable_checkpointing=True,
        callbacks=[model_checkpoint(save_last=True, every_n_train_steps=2, save_top_k=-1)],
    ),
    manual_case(
        "clip_hook_trainer_clipping_16_true",
        "ClipHookModel",
        max_epochs=2,
        precision="16-true",
        gradient_clip_val=0.1,
        accumulate_grad_batches=2,
    ),
    case(
        "trainer_attributes_bf16_true",
        "Classifier",
        data="ShuffledData",
        max_epochs=1,
        precision="bf16-true",
        callbacks=TRAINER_ATTRIBUTES,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_manual_optimization_trains_like_lightning(case: Case, runner: Runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script trains differently from Lightning ({tmp_path}):\n" + "\n".join(found)
