"""Parity: a generated script trains exactly as pytorch_lightning.Trainer does (same module, flags and seed).

Each case trains twice, each side in a fresh process and its own directory (tests/parity/runner.py): once with
Lightning's Trainer, once with the script loopgen renders from the same spec. Then it compares every weight
(torch.equal), the records the models keep (tests/parity/models.py): validation points and their batch counts,
learning rates (one per training batch), optimizer steps, final global_step / current_epoch, dataloader loads,
and hook events (with what a callback reads from the trainer), and the checkpoint files left in each side's
directory: their names (and links), and what each holds (tests/harness.py, checkpoint_facts).

    pytest tests/parity -n 2

A failing case is a difference from Lightning (or a spec loopgen refuses): the to-do list.
"""

from __future__ import annotations

import copy
import json
import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.harness import ROOT, Case, case_ids, env_with_root, relative_path

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

MODELS = "tests.parity.models"
TIMEOUT = 300  # seconds, per side (PARITY_FRESH_PROCESSES=1; the server has its own)


def case(id: str, model: str = "MLP", init: dict | None = None, *, data: str | None = None,
         data_init: dict | None = None, callbacks: list[dict] | None = None, seed: int = 42,
         loop: dict | None = None, **trainer: Any) -> Case:  # fmt: skip
    """A spec in loopgen's (LightningCLI's) shape; `model` and `data` name classes in tests.parity; `loop`: what
    loopgen cannot read from the source (Lightning ignores it)."""
    spec: dict[str, Any] = {"seed_everything": seed, "model": {"class_path": f"{MODELS}.{model}"}}
    if loop:
        spec["loop"] = loop
    if init:
        spec["model"]["init_args"] = init
    if data:
        spec["data"] = {"class_path": f"tests.parity.data.{data}", "init_args": data_init or {}}
    if callbacks:
        trainer["callbacks"] = callbacks
    spec["trainer"] = trainer
    return Case(id, spec)


def stop_request(**init_args: int) -> list[dict]:
    return [{"class_path": "tests.parity.callbacks.StopRequest", "init_args": init_args}]


TRAINER_STATE = [{"class_path": "tests.parity.callbacks.TrainerStateRecorder"}]


def model_checkpoint(class_path: str = "ModelCheckpoint", **init_args: Any) -> dict:
    """A ModelCheckpoint entry (a relative dirpath is relative to each side's directory)."""
    return {"class_path": class_path, "init_args": init_args}


def early_stopping(class_path: str = "pytorch_lightning.callbacks.EarlyStopping", **init_args: Any) -> dict:
    return {"class_path": class_path, "init_args": init_args}


def checkpointing_case(id: str, *callbacks: dict, model: str = "CheckpointModel", init: dict | None = None,
                       **trainer: Any) -> Case:  # fmt: skip
    """Checkpointing on, no logger: Lightning's files go to each side's directory (checkpoints/ by default)."""
    return case(id, model, init, callbacks=list(callbacks), enable_checkpointing=True, **trainer)


def lr_monitor(class_path: str = "LearningRateMonitor", **init_args: Any) -> dict:
    return {"class_path": class_path, "init_args": init_args}


def csv_logger(class_path: str = "CSVLogger", save_dir: str = ".", **init_args: Any) -> dict:
    """A CSVLogger entry (a relative save_dir is relative to each side's directory)."""
    return {"class_path": class_path, "init_args": {"save_dir": save_dir, **init_args}}


def logger(class_path: str, **init_args: Any) -> dict:
    """A logger entry (relative directories are relative to each side's directory)."""
    return {"class_path": class_path, "init_args": init_args}


HPARAMS = {"sizes": [32, 16], "schedule": {"warmup": 2, "decay": 0.5}}
TAGS = {"team": "a", "try": 2}

VAL_LOSS_TOP_2 = model_checkpoint(monitor="val_loss", mode="min", save_top_k=2, save_last=True)


# Training sets are 150 samples in batches of 16: 10 batches per epoch (the last of 6); validation 5 batches.
CASES = [
    # --- loop bounds ---------------------------------------------------------------------------
    case("defaults", max_epochs=2),
    case("max_steps_mid_epoch", max_steps=13),
    case("max_steps_accumulate_3", max_steps=5, accumulate_grad_batches=3),
    case("max_epochs_with_min_epochs", max_epochs=2, min_epochs=1),
    # --- the module builds its layers in configure_model (on the device, in a true precision's dtype) -------
    case("configure_model_layers", "LateBuilt", max_epochs=2),
    case("configure_model_bf16_true", "LateBuilt", max_epochs=1, precision="bf16-true"),
    case("configure_model_activation_checkpointing", "LateBuilt", {"checkpointing": True}, max_epochs=2),
    case("configure_model_compiled", "LateBuilt", {"compile": "aot_eager"}, max_epochs=1),
    # --- loop.compile: Lightning fitting torch.compile(model) (its forward and steps run compiled) ------------
    case("compile_aot_eager", max_epochs=2, loop={"compile": {"backend": "aot_eager"}}),
    case("compile_inductor", max_epochs=1, loop={"compile": True}),
    # --- accumulation and clipping --------------------------------------------------------------
    case("accumulate_3", max_epochs=2, accumulate_grad_batches=3),
    case("accumulate_schedule", max_epochs=4, accumulate_grad_batches={0: 1, 2: 3}),
    case("accumulate_schedule_without_epoch_0", max_epochs=3, accumulate_grad_batches={1: 4}),
    case("clip_norm", max_epochs=2, gradient_clip_val=0.1),
    case("clip_value", max_epochs=2, gradient_clip_val=0.02, gradient_clip_algorithm="value"),
    case("clip_norm_accumulate_3", max_epochs=2, gradient_clip_val=0.1, accumulate_grad_batches=3),
    # --- batch limits and debugging flags -------------------------------------------------------
    case("limit_batches_int", max_epochs=2, limit_train_batches=7, limit_val_batches=3),
    case("limit_batches_int_1", max_epochs=3, limit_train_batches=1, limit_val_batches=1),
    case("limit_batches_float", max_epochs=2, limit_train_batches=0.55, limit_val_batches=0.5),
    case("limit_val_batches_0", max_epochs=2, limit_val_batches=0),
    case("overfit_batches_int", max_epochs=3, overfit_batches=3),
    case("overfit_batches_float", max_epochs=3, overfit_batches=0.25),
    case("overfit_batches_shuffled_val", "ShuffledValidationModel", max_epochs=3, overfit_batches=3),
    case(
        "overfit_batches_shuffled_val_no_sanity",
        "ShuffledValidationModel",
        max_epochs=3,
        overfit_batches=3,
        num_sanity_val_steps=0,
    ),
    case("fast_dev_run_true", fast_dev_run=True),
    case("fast_dev_run_4", fast_dev_run=4),
    # a ModelCheckpoint entry saves nothing under fast_dev_run (its render was an internal error)
    case("fast_dev_run_model_checkpoint", fast_dev_run=2, callbacks=[model_checkpoint(monitor="val_loss")]),
    # --- the module's own on_validation_model_eval, without on_validation_model_train ------------------------
    case("validation_model_eval_hook_only", "DropoutInValidation", max_epochs=2),
    # --- sanity check ---------------------------------------------------------------------------
    case("sanity_0", max_epochs=2, num_sanity_val_steps=0),
    case("sanity_2_of_3", max_epochs=1, num_sanity_val_steps=2, limit_val_batches=3),
    case("sanity_all", max_epochs=1, num_sanity_val_steps=-1),
    # --- data -----------------------------------------------------------------------------------
    case("val_loader_in_a_list", "ListedValidationModel", max_epochs=2),
    case(
        "val_loaders_two",
        "TwoValidationLoadersModel",
        max_epochs=2,
        limit_val_batches=3,
        val_check_interval=0.5,
        logger=csv_logger(),
        enable_checkpointing=True,
        callbacks=[model_checkpoint(monitor="val_loss/dataloader_idx_1", save_top_k=2, save_last=True)],
    ),
    case(
        "val_loaders_two_reloaded_early_stopping",
        "TwoValidationLoadersModel",
        max_epochs=4,
        reload_dataloaders_every_n_epochs=1,
        num_sanity_val_steps=-1,
        callbacks=[early_stopping(monitor="val_acc_1", mode="max", patience=1)],
    ),
    case("val_loaders_two_overfit", "TwoValidationLoadersModel", max_epochs=2, overfit_batches=2),
    case("datamodule_shuffle_dropout", "Classifier", {"dropout": 0.3}, data="ShuffledData", max_epochs=3),
    # one device's strategy as the module calls it (all_gather, reduce, broadcast, barrier, reduce_boolean_decision,
    # self.print), and a child LightningModule that reads the trainer's counters (tests/ddp_models.py)
    case("single_device_collectives_child_module", "CollectivesMLP", max_epochs=2),
    case("random_draws_in_epoch_hooks", "RandomHooksModel", max_epochs=3),
    case(
        "reload_growing_data",
        "GrowingDataModel",
        max_epochs=3,
        reload_dataloaders_every_n_epochs=1,
        val_check_interval=0.5,
    ),
    case("overfit_with_reload", max_epochs=3, overfit_batches=3, reload_dataloaders_every_n_epochs=1),
    case(
        "reload_every_epoch_datamodule",
        "Classifier",
        data="ShuffledData",
        max_epochs=3,
        reload_dataloaders_every_n_epochs=1,
    ),
    case("reload_every_2_epochs_model_loaders", max_epochs=4, reload_dataloaders_every_n_epochs=2),
    case(
        "reload_no_sanity",
        "GrowingDataModel",
        max_epochs=3,
        reload_dataloaders_every_n_epochs=1,
        num_sanity_val_steps=0,
    ),
    case(
        "reload_no_sanity_validate_every_2_epochs",
        "GrowingDataModel",
        max_epochs=4,
        reload_dataloaders_every_n_epochs=1,
        num_sanity_val_steps=0,
        check_val_every_n_epoch=2,
    ),
    case("validate_every_2_epochs_no_sanity", max_epochs=4, check_val_every_n_epoch=2, num_sanity_val_steps=0),
    # --- validation schedule --------------------------------------------------------------------
    case("val_check_quarter_every_2_epochs", max_epochs=4, val_check_interval=0.25, check_val_every_n_epoch=2),
    case("val_check_int", max_epochs=2, val_check_interval=4),
    case("val_check_int_1", max_epochs=1, val_check_interval=1, limit_train_batches=4, limit_val_batches=2),
    case("check_val_every_3_epochs_no_sanity", max_epochs=4, check_val_every_n_epoch=3, num_sanity_val_steps=0),
    case("val_check_int_across_epochs", max_epochs=3, val_check_interval=7, check_val_every_n_epoch=None),
    # --- optimizers and schedulers --------------------------------------------------------------
    case("adam", "AdamModel", max_epochs=2),
    case("epoch_steplr", "EpochScheduleModel", max_epochs=3),
    case("step_scheduler_frequency_2", "StepScheduleModel", max_epochs=2),
    case("step_scheduler_frequency_2_accumulate_3", "StepScheduleModel", max_epochs=2, accumulate_grad_batches=3),
    case("step_scheduler_literal_frequency_3_accumulate_2", "StepEvery3Model", max_epochs=2, accumulate_grad_batches=2),
    case("optimizer_from_a_helper", "HelperOptimizerModel", max_epochs=2),
    # a helper chooses the scheduler: the script decides when it runs whether the logged values are collected
    case("scheduler_chosen_at_run_time_plateau", "SchedulerChoiceModel", {"plateau": True}, max_epochs=4),
    case("scheduler_chosen_at_run_time_step", "SchedulerChoiceModel", max_epochs=2),
    # configure_optimizers' branches chosen by init args the spec gives: read at render time
    case(
        "optimizer_chosen_by_init_args_sgd_plateau",
        "OptimizerChoiceModel",
        {"optimizer": "SGD", "scheduler": "plateau"},
        max_epochs=4,
    ),
    case("optimizer_chosen_by_init_args_adam_per_step", "OptimizerChoiceModel", {"per_step": True}, max_epochs=2),
    case("scheduler_name_rebound_to_its_dict", "ReboundSchedulerModel", max_epochs=2),
    case("plateau_per_step_not_strict", "LenientPlateauModel", max_epochs=2, val_check_interval=0.5),
    case("plateau_val_loss", "PlateauModel", max_epochs=4),
    case("plateau_val_twice_per_epoch", "PlateauModel", max_epochs=3, val_check_interval=0.5),
    # --- self.log -------------------------------------------------------------------------------
    case("log_plateau_on_val_loss", "LoggingModel", max_epochs=3),
    case("log_plateau_on_train_epoch_metric", "LoggingModel", {"monitor": "train_loss_epoch"}, max_epochs=3),
    # --- training_step outputs and hooks --------------------------------------------------------
    case("training_step_none", "NoneStepModel", max_epochs=2),
    case("training_step_none_accumulate_3", "NoneStepModel", {"skip": 1}, max_epochs=2, accumulate_grad_batches=3),
    case("training_step_dict_accumulate_2", "DictOutputModel", max_epochs=2, accumulate_grad_batches=2),
    case("on_train_batch_start_minus_one", "SkipRestOfEpochModel", max_epochs=3),
    case("minus_one_then_plateau", "SkipRestOfEpochPlateauModel", max_epochs=3),
    # --- stop requests from a callback ----------------------------------------------------------
    # a BaseFinetuning subclass: the backbone frozen, then added to the optimizer as a new group at epoch 1 (its
    # groups kept in the checkpoint)
    case(
        "finetuning_unfreezes_the_backbone",
        "BackboneModel",
        callbacks=[
            {"class_path": "tests.parity.callbacks.FreezeUnfreeze", "init_args": {"unfreeze_at_epoch": 1}},
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_last": True}},
        ],
        max_epochs=3,
    ),
    case(
        "finetuning_batch_norm_trains_clipped",
        "BackboneModel",
        callbacks=[
            {
                "class_path": "tests.parity.callbacks.FreezeUnfreeze",
                "init_args": {"unfreeze_at_epoch": 2, "train_bn": True},
            }
        ],
        max_epochs=3,
        gradient_clip_val=0.5,
        accumulate_grad_batches=2,
    ),
    # Lightning's BackboneFinetuning (the script's own class): the backbone joins at epoch 1 at a tenth of the
    # head's rate, doubled each epoch and held at the head's (StepLR lowers it); its groups and rate in the
    # checkpoint; then, with the head alone in the optimizer, a given first rate, not aligned, and the BatchNorm
    # left out of the new group (train_bn false), with accumulation
    case(
        "backbone_finetuning_doubles_then_aligns",
        "BackboneModel",
        callbacks=[
            {"class_path": "BackboneFinetuning", "init_args": {"unfreeze_backbone_at_epoch": 1, "verbose": True}},
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_last": True}},
        ],
        max_epochs=5,
    ),
    case(
        "backbone_finetuning_given_rate_batch_norm_frozen",
        "HeadOptimizedBackboneModel",
        callbacks=[
            {
                "class_path": "lightning.pytorch.callbacks.BackboneFinetuning",
                "init_args": {
                    "unfreeze_backbone_at_epoch": 2,
                    "backbone_initial_lr": 0.05,
                    "should_align": False,
                    "train_bn": False,
                },
            },
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_last": True}},
        ],
        max_epochs=4,
        accumulate_grad_batches=2,
    ),
    # Lightning's EMAWeightAveraging (the script's own class): validation sees the average (the sanity check too),
    # the module holds it at the end; checkpoints hold the average, the module's weights and the averaging state.
    # Then by epoch from epoch 1 and every 3 steps from step 4, with accumulation, the best checkpoints chosen by
    # the average's validation loss; and WeightAveraging's equal-weight average without buffers
    case(
        "ema_weight_averaging_validates_the_average",
        "BackboneModel",
        callbacks=[
            {"class_path": "EMAWeightAveraging", "init_args": {"decay": 0.9}},
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_top_k": -1, "save_last": True}},
        ],
        max_epochs=3,
        val_check_interval=0.5,
    ),
    case(
        "ema_weight_averaging_by_epoch_and_every_3_steps",
        "CheckpointModel",
        callbacks=[
            {
                "class_path": "lightning.pytorch.callbacks.EMAWeightAveraging",
                "init_args": {
                    "decay": 0.5,
                    "update_every_n_steps": 3,
                    "update_starting_at_step": 4,
                    "update_starting_at_epoch": 1,
                },
            },
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "monitor": "val_loss", "save_top_k": 2}},
        ],
        max_epochs=3,
        accumulate_grad_batches=2,
    ),
    case(
        "weight_averaging_equal_weights_without_buffers",
        "BackboneModel",
        callbacks=[{"class_path": "WeightAveraging", "init_args": {"use_buffers": False}}],
        max_epochs=2,
    ),
    # Lightning's StochasticWeightAveraging (the script's own class): SWALR from swa_epoch_start on, the average
    # taken at each epoch's start, and with BatchNorm layers one more epoch that recomputes their statistics with
    # the average's weights (forward passes only, one optimizer step at its last batch); its state and SWALR's in
    # every checkpoint. Then SWALR replacing a step-interval scheduler on a module without BatchNorm (the average
    # copied in when training ends), a linear schedule from a fraction of max_epochs with no validation (the
    # batch-norm epoch's step then finds the last batch's gradients, as Lightning's does), and accumulation (one
    # window over the whole batch-norm epoch) with validation every other epoch, on a module whose optimizer holds
    # only the parameters that train
    case(
        "swa_batch_norm_epoch_and_checkpoints",
        "BatchNormNet",
        callbacks=[
            {
                "class_path": "StochasticWeightAveraging",
                "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2, "annealing_epochs": 2},
            },
            {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_top_k": -1, "save_last": True}},
        ],
        max_epochs=4,
    ),
    case(
        "swa_replaces_a_step_scheduler",
        "StepScheduleModel",
        callbacks=[
            {
                "class_path": "pytorch_lightning.callbacks.StochasticWeightAveraging",
                "init_args": {"swa_lrs": 0.02, "swa_epoch_start": 1, "device": None},
            },
        ],
        max_epochs=3,
    ),
    case(
        "swa_linear_from_a_fraction_without_validation",
        "BatchNormNet",
        callbacks=[
            {
                "class_path": "StochasticWeightAveraging",
                "init_args": {
                    "swa_lrs": [0.03],
                    "swa_epoch_start": 0.5,
                    "annealing_strategy": "linear",
                    "annealing_epochs": 1,
                },
            },
        ],
        max_epochs=3,
        limit_val_batches=0,
    ),
    case(
        "swa_accumulating_and_validating_every_other_epoch",
        "BackboneModel",
        callbacks=[{"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.01, "swa_epoch_start": 3}}],
        max_epochs=4,
        check_val_every_n_epoch=2,
        accumulate_grad_batches=3,
    ),
    # ... over limited epochs (the batch-norm epoch runs the limit's batches, its one window their count, as
    # Lightning's raised max_batches ends at the limited loader's end), with validation by a batch count and by a
    # fraction under accumulation, on overfitted batches; and beside a LearningRateMonitor, which reads the
    # schedulers when it logs: after the swap SWALR's, stepped by epoch (with no scheduler before it, the
    # optimizer stops being logged at the steps)
    case(
        "swa_limited_epochs",
        "BatchNormNet",
        callbacks=[
            {"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2}},
            {"class_path": "tests.parity.callbacks.TrainerStateRecorder"},
        ],
        max_epochs=3,
        limit_train_batches=4,
    ),
    case(
        "swa_limited_by_a_fraction_validating_by_count",
        "BatchNormNet",
        callbacks=[{"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2}}],
        max_epochs=3,
        limit_train_batches=0.5,
        val_check_interval=2,
    ),
    case(
        "swa_validating_by_a_fraction_accumulating",
        "BatchNormNet",
        callbacks=[{"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2}}],
        max_epochs=3,
        val_check_interval=0.5,
        accumulate_grad_batches=2,
    ),
    case(
        "swa_overfit_batches",
        "BatchNormNet",
        callbacks=[{"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2}}],
        max_epochs=3,
        overfit_batches=3,
    ),
    case(
        "swa_lr_monitor_without_a_scheduler",
        "BatchNormNet",
        callbacks=[
            {"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2}},
            {"class_path": "LearningRateMonitor"},
        ],
        max_epochs=3,
        log_every_n_steps=2,
        logger=logger("CSVLogger", save_dir="."),
    ),
    case(
        "swa_lr_monitor_after_a_step_scheduler",
        "StepScheduleModel",
        callbacks=[
            {"class_path": "LearningRateMonitor", "init_args": {"logging_interval": "epoch"}},
            {"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, "swa_epoch_start": 2}},
        ],
        max_epochs=3,
        log_every_n_steps=3,
        logger=logger("CSVLogger", save_dir="."),
    ),
    # Lightning's ModelPruning (the script's own class, specialised to the entry): l1 over every module's weights
    # and biases together at each epoch's end, the weights left reset to their values at set-up, the masks applied
    # for good when training ends and in full checkpoints (weights-only ones keep `weight_orig` / `weight_mask`)
    case(
        "model_pruning_global_l1_lottery_ticket",
        callbacks=[
            {"class_path": "ModelPruning", "init_args": {"pruning_fn": "l1_unstructured", "amount": 0.3, "verbose": 2}},
            model_checkpoint(dirpath="full", save_top_k=-1, save_last=True),
            model_checkpoint(dirpath="weights", save_top_k=-1, save_weights_only=True, every_n_epochs=2),
        ],
        max_epochs=3,
    ),
    # ... random_structured rows of each weight on its own at each validation's end (twice an epoch, not in the
    # sanity check), drawing from the random state that dropout and shuffling draw from; no lottery ticket, the
    # masks kept in the module and in the checkpoints
    case(
        "model_pruning_random_rows_at_each_validation_masks_kept",
        "LoggingModel",
        callbacks=[
            {
                "class_path": "lightning.pytorch.callbacks.ModelPruning",
                "init_args": {
                    "pruning_fn": "random_structured",
                    "use_global_unstructured": False,
                    "pruning_dim": 0,
                    "amount": 0.25,
                    "parameter_names": ["weight"],
                    "prune_on_train_epoch_end": False,
                    "make_pruning_permanent": False,
                    "use_lottery_ticket_hypothesis": False,
                },
            },
            model_checkpoint(dirpath="ck", monitor="val_loss", save_top_k=2),
        ],
        max_epochs=3,
        val_check_interval=0.5,
    ),
    # ... ln_structured columns by their L2 norm, a count of 2 at a time, the weights left redrawn by each layer's
    # reset_parameters (from the same random state); with accumulation
    case(
        "model_pruning_l2_columns_resampled",
        callbacks=[
            {
                "class_path": "pytorch_lightning.callbacks.ModelPruning",
                "init_args": {
                    "pruning_fn": "ln_structured",
                    "use_global_unstructured": False,
                    "pruning_dim": 1,
                    "pruning_norm": 2,
                    "amount": 2,
                    "parameter_names": ["weight"],
                    "resample_parameters": True,
                },
            },
        ],
        max_epochs=3,
        accumulate_grad_batches=2,
    ),
    # Lightning's SpikeDetection (the script's own class) watching a loss that never spikes: the running mean of
    # the last 3 losses from batch 2 of each epoch, the losses Lightning hands it divided by the accumulation;
    # its state (the last loss, the file it would write) in the checkpoints. (A spike: tests/test_spike_detection.py)
    case(
        "spike_detection_watches_accumulated_losses",
        callbacks=[
            {"class_path": "SpikeDetection", "init_args": {"window": 3, "warmup": 2, "atol": 0.01}},
            model_checkpoint(dirpath="ck", save_top_k=-1, every_n_train_steps=3),
        ],
        max_epochs=2,
        accumulate_grad_batches=2,
    ),
    # Lightning's Timer on a clock that the steps move (ClockModel: a training step is a second, a validation
    # step a quarter): max_time stops after the batch that reaches it, and validates there; the times in its
    # checkpoint state are compared
    case(
        "max_time_stops_after_the_batch_that_reaches_it",
        "ClockModel",
        callbacks=[model_checkpoint(dirpath="ck", save_last=True, every_n_train_steps=3)],
        max_epochs=3,
        max_time={"seconds": 13},
    ),
    # ... checked at each epoch's end, held back by min_steps (the clock is up after epoch 0)
    case(
        "timer_epoch_interval_held_by_min_steps",
        "ClockModel",
        callbacks=[
            {
                "class_path": "lightning.pytorch.callbacks.Timer",
                "init_args": {"duration": "00:00:00:07", "interval": "epoch", "verbose": False},
            },
            model_checkpoint(dirpath="ck", save_last=True),
        ],
        max_epochs=4,
        min_steps=15,
    ),
    # ... up at fit's start (a zero duration; Lightning checks there whatever the interval), held back by
    # min_steps, then validating where it stops mid-epoch; a Timer entry wins over max_time, as in Lightning
    case(
        "timer_up_at_fit_start_held_by_min_steps",
        "ClockModel",
        callbacks=[
            {"class_path": "Timer", "init_args": {"duration": {"minutes": 0}, "interval": "epoch"}},
            model_checkpoint(dirpath="ck", save_last=True),
        ],
        max_epochs=5,
        min_epochs=0,  # (min_steps alone makes it 1)
        min_steps=7,
        val_check_interval=0.5,
        max_time="01:00:00:00",
    ),
    # ... with no duration: it only times the loops, for the checkpoints (and a RichModelSummary, its place among
    # the callbacks)
    case(
        "timer_without_duration_only_times",
        "ClockModel",
        callbacks=[
            {"class_path": "Timer"},
            {"class_path": "RichModelSummary", "init_args": {"max_depth": 2}},
            model_checkpoint(dirpath="ck", save_last=True),
        ],
        max_epochs=2,
    ),
    # what a callback reads from the trainer at each hook (tests/parity/trainer_attributes.py), is_last_batch
    # among it: with accumulation and a limit, and with the epoch-end validation every second epoch
    case(
        "trainer_attributes_accumulate_limit",
        max_epochs=3,
        min_steps=2,
        accumulate_grad_batches=3,
        limit_train_batches=5,
        check_val_every_n_epoch=2,
        callbacks=[{"class_path": "tests.parity.trainer_attributes.TrainerAttributesRecorder"}],
    ),
    # ... the ModelCheckpoint and EarlyStopping objects Lightning finds among its callbacks, as their state moves
    case(
        "trainer_attributes_checkpoints_stoppers",
        "LoggingModel",
        max_epochs=4,
        limit_train_batches=3,
        num_sanity_val_steps=1,
        enable_progress_bar=True,
        callbacks=[
            {"class_path": "tests.parity.trainer_attributes.TrainerAttributesRecorder"},
            early_stopping(monitor="val_loss", patience=1, min_delta=0.01),
            early_stopping("EarlyStopping", monitor="val_acc", mode="max", patience=3),
            model_checkpoint(dirpath="best", monitor="val_loss", save_top_k=2),
            model_checkpoint(dirpath="last", save_last=True),
        ],
    ),
    # configure_callbacks: the returned callbacks replace the trainer's of their classes (the EarlyStopping, the
    # StopRequest, the default ModelCheckpoint) and run after those kept (the recorder), the checkpoint last
    case(
        "configure_callbacks_replace_the_trainers",
        "ConfiguredCallbacksModel",
        {"patience": 1, "stop_at_step": 14},
        max_epochs=6,
        limit_train_batches=4,
        enable_checkpointing=True,
        callbacks=[
            early_stopping(monitor="val_acc", mode="max", patience=5),
            {"class_path": "tests.parity.callbacks.StopRequest", "init_args": {"at_step": 2}},
            {"class_path": "tests.parity.trainer_attributes.TrainerAttributesRecorder"},
        ],
    ),
    # ... with none in the trainer's: added after the default ones, enable_checkpointing false or not
    case(
        "configure_callbacks_added",
        "ConfiguredCallbacksModel",
        {"patience": 2},
        max_epochs=3,
        enable_checkpointing=False,
        enable_progress_bar=True,
    ),
    # a file saved at an epoch's end, before the ReduceLROnPlateau of that epoch lowers the learning rate (the
    # file holds the rate before; this script's own resume restores the rate after)
    case(
        "checkpoint_before_the_plateau_step",
        "LoggingModel",
        max_epochs=3,
        callbacks=[model_checkpoint(dirpath="ck", monitor="val_acc", mode="max", save_top_k=2)],
    ),
    # Lightning 2.x's form of the accumulation schedule: a GradientAccumulationScheduler entry
    case(
        "accumulation_scheduler_entry",
        "StepScheduleModel",
        max_epochs=4,
        callbacks=[{"class_path": "GradientAccumulationScheduler", "init_args": {"scheduling": {1: 2, 3: 3}}}],
    ),
    case("callback_stop", max_epochs=3, callbacks=stop_request(at_epoch=0, at_batch=3)),
    case("callback_stop_before_min_epochs", max_epochs=4, min_epochs=2, callbacks=stop_request(at_epoch=0, at_batch=3)),
    case("callback_stop_before_min_steps", max_epochs=4, min_steps=25, callbacks=stop_request(at_step=2)),
    case(
        "callback_stop_min_steps_within_epoch_0",
        max_epochs=3,
        min_steps=4,
        callbacks=stop_request(at_epoch=0, at_batch=1),
    ),
    # --- the trainer's state as a callback reads it ----------------------------------------------
    case("trainer_state_accumulate_2", max_epochs=2, accumulate_grad_batches=2, callbacks=TRAINER_STATE),
    case(
        "trainer_state_limit_batches",
        max_epochs=2,
        limit_train_batches=4,
        limit_val_batches=2,
        callbacks=TRAINER_STATE,
    ),
    case(
        "trainer_state_accumulate_schedule",
        max_epochs=3,
        accumulate_grad_batches={1: 2, 2: 3},
        callbacks=TRAINER_STATE,
    ),
    case("trainer_state_max_steps", max_steps=13, callbacks=TRAINER_STATE),
    # --- bf16-true and 16-true: the weights, the batches and the steps' new tensors in that dtype ---------------
    case("bf16_true_defaults", max_epochs=2, precision="bf16-true"),
    # Lightning's plugins: precision objects in place of `precision:` (with a cluster environment, a checkpoint
    # IO and the layer sync, which change nothing on one CPU)
    case(
        "plugins_mixed_precision",
        max_epochs=2,
        plugins=[
            {
                "class_path": "lightning.pytorch.plugins.precision.MixedPrecision",
                "init_args": {"precision": "bf16-mixed", "device": "cpu"},
            },
            {"class_path": "SLURMEnvironment", "init_args": {"auto_requeue": False}},
            "TorchCheckpointIO",
            "TorchSyncBatchNorm",
        ],
    ),
    case(
        "plugins_half_precision",
        "LoggingModel",
        max_epochs=2,
        logger=csv_logger(),
        plugins={"class_path": "HalfPrecision", "init_args": {"precision": "bf16-true"}},
    ),
    case("plugins_double_precision", max_epochs=1, plugins=["DoublePrecision", "LightningEnvironment"]),
    case("16_true_defaults", max_epochs=2, precision="16-true"),
    case("bf16_true_noise_made_in_the_steps", "NoisyStepModel", max_epochs=2, precision="bf16-true"),
    case("16_true_noise_made_in_the_steps", "NoisyStepModel", max_epochs=1, precision="16-true"),
    case(
        "bf16_true_accumulate_3_clip_norm",
        max_epochs=2,
        precision="bf16-true",
        accumulate_grad_batches=3,
        gradient_clip_val=0.1,
    ),
    case(
        "16_true_accumulate_3_clip_value",
        max_epochs=2,
        precision="16-true",
        accumulate_grad_batches=3,
        gradient_clip_val=0.02,
        gradient_clip_algorithm="value",
    ),
    case("bf16_true_step_scheduler", "StepScheduleModel", max_epochs=2, precision="bf16-true"),
    case("bf16_true_adam", "AdamModel", max_epochs=2, precision="bf16-true"),
    case(
        "bf16_true_datamodule_shuffle_dropout",
        "Classifier",
        {"dropout": 0.3},
        data="ShuffledData",
        max_epochs=3,
        precision="bf16-true",
    ),
    case(
        "bf16_true_batchnorm_val_twice_per_epoch",
        "BatchNormNet",
        max_epochs=2,
        val_check_interval=0.5,
        precision="bf16-true",
    ),
    # logged values are kept in float32 (Lightning never reduces below it), whatever the step's dtype
    case(
        "bf16_true_log_plateau",
        "LoggingModel",
        max_epochs=3,
        precision="bf16-true",
        logger=csv_logger(),
        log_every_n_steps=3,
    ),
    case("16_true_log_plateau", "LoggingModel", max_epochs=3, precision="16-true", logger=csv_logger()),
    case("bf16_true_profiler_advanced", "NoisyStepModel", max_epochs=1, precision="bf16-true", profiler="advanced"),
    # --- other ----------------------------------------------------------------------------------
    case("batchnorm_val_twice_per_epoch", "BatchNormNet", max_epochs=2, val_check_interval=0.5),
    case("deterministic", max_epochs=2, deterministic=True),
    # autograd's anomaly mode around the fit loop only: off in the sanity check and at on_fit_end, and a backward
    # that makes nan raises inside it; without the flag, off everywhere
    case("detect_anomaly", "AnomalyMLP", max_epochs=2, detect_anomaly=True, limit_train_batches=4),
    case("detect_anomaly_off", "AnomalyMLP", max_epochs=1, limit_train_batches=3),
    # barebones: no checkpoint, logger, bar, summary or sanity check, and self.log records nothing
    case("barebones", "TwoValidationLoadersModel", max_epochs=2, barebones=True, callbacks=TRAINER_STATE),
    # --- loggers (LoggingModel logs on step and epoch in training, on epoch and on step in validation) -----
    case("log_default_logger", "LoggingModel", max_epochs=3, logger=True, log_every_n_steps=3),
    case(
        "log_every_step_with_checkpoints",
        "CheckpointModel",
        max_epochs=2,
        logger=csv_logger(name="exp"),
        log_every_n_steps=1,
        enable_checkpointing=True,
    ),
    # DeviceStatsMonitor: psutil's figures at the batches where the loggers are due (training counts the batches
    # that stepped, validation and the sanity check their own batches); the rows and columns compared, not the values
    case(
        "device_stats_cpu_accumulate_val_twice",
        "LoggingModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=2,
        accumulate_grad_batches=2,
        val_check_interval=0.5,
        callbacks=[{"class_path": "DeviceStatsMonitor"}],
    ),
    case(
        "log_named_version_prefix",
        "LoggingModel",
        max_epochs=2,
        logger=csv_logger(save_dir="logs", name="", version="run", prefix="fit"),
    ),
    case(
        "log_two_loggers",
        "LoggingModel",
        max_epochs=2,
        enable_checkpointing=True,
        logger=[csv_logger(name="a"), csv_logger("pytorch_lightning.loggers.CSVLogger", "logs", version=3)],
    ),
    case("log_every_0", "LoggingModel", max_epochs=2, logger=csv_logger(), log_every_n_steps=0),
    case(
        "log_accumulate_3",
        "LoggingModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=2,
        accumulate_grad_batches=3,
    ),
    case(
        "log_val_twice_reload",
        "LoggingModel",
        max_epochs=3,
        logger=csv_logger(),
        log_every_n_steps=4,
        val_check_interval=0.5,
        reload_dataloaders_every_n_epochs=1,
    ),
    case(
        "log_stop_request",
        "LoggingModel",
        max_epochs=3,
        logger=csv_logger(),
        log_every_n_steps=50,
        callbacks=stop_request(at_epoch=1, at_batch=3),
    ),
    case("log_max_steps", "LoggingModel", max_steps=13, logger=csv_logger(), log_every_n_steps=5),
    case(
        "log_hparams_model_and_data",
        "HparamsModel",
        {"sizes": [32, 16], "schedule": {"warmup": 2, "decay": 0.5}},
        data="HparamsData",
        max_epochs=1,
        logger=csv_logger(),
    ),
    case("log_fast_dev_run", "LoggingModel", fast_dev_run=3, logger=csv_logger()),
    # --- LearningRateMonitor (its rows in metrics.csv; its values in callback_metrics) -------------------------
    case("lr_monitor_plateau", "LoggingModel", max_epochs=3, logger=csv_logger(), callbacks=[lr_monitor()]),
    case(
        "lr_monitor_param_groups",
        "ParamGroupsModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=2,
        accumulate_grad_batches=2,
        callbacks=[lr_monitor(log_momentum=True, log_weight_decay=True)],
    ),
    case(
        "lr_monitor_every_step",
        "ParamGroupsModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=3,
        callbacks=[lr_monitor("lightning.pytorch.callbacks.LearningRateMonitor", logging_interval="step")],
    ),
    case(
        "lr_monitor_epoch_helper",
        "HelperSchedulersModel",
        max_epochs=2,
        logger=csv_logger(),
        callbacks=[*stop_request(at_epoch=1, at_batch=5), lr_monitor(logging_interval="epoch", log_momentum=True)],
        loop={"lr_schedulers": True},
    ),
    case(
        "lr_monitor_helper_interval",
        "HelperSchedulersModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=4,
        callbacks=[lr_monitor()],
        loop={"lr_schedulers": True},
    ),
    # a LearningRateMonitor subclass runs on the script's base: its own names and values in metrics.csv, the
    # history the base keeps
    case(
        "lr_monitor_subclass_param_groups",
        "ParamGroupsModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=2,
        accumulate_grad_batches=2,
        callbacks=[lr_monitor("tests.parity.callbacks.GroupRates", log_momentum=True, log_weight_decay=True)],
    ),
    case(
        "lr_monitor_subclass_every_step_helper",
        "HelperSchedulersModel",
        max_epochs=2,
        logger=csv_logger(),
        log_every_n_steps=3,
        callbacks=[lr_monitor("tests.parity.callbacks.GroupRates", logging_interval="step")],
        loop={"lr_schedulers": True},
    ),
    # TensorBoard, MLflow and W&B: what each wrote, read back with its own reader (tests/logger_files.py)
    case(
        "log_tensorboard_graph_hparams",
        "GraphModel",
        HPARAMS,
        data="HparamsData",
        max_epochs=2,
        log_every_n_steps=3,
        logger=logger("TensorBoardLogger", save_dir=".", prefix="fit", log_graph=True),
    ),
    # ... its graph of the example input as the data module's on_after_batch_transfer gives it (Lightning's
    # _DataHookSelector), which also jitters the training batches
    case(
        "log_tensorboard_graph_data_transfer",
        "GraphModel",
        HPARAMS,
        data="TransferData",
        max_epochs=2,
        log_every_n_steps=3,
        logger=logger("TensorBoardLogger", save_dir=".", prefix="fit", log_graph=True),
    ),
    # TensorBoard and CSV in one root: each its own version_N, the second numbered after the first's directory
    case(
        "log_tensorboard_and_csv_one_root",
        "GraphModel",
        HPARAMS,
        data="HparamsData",
        max_epochs=2,
        log_every_n_steps=3,
        logger=[logger("TensorBoardLogger", save_dir=".", log_graph=True), csv_logger()],
    ),
    # enable_autolog_hparams: false: no hyperparameters (hparams.yaml empty, no TensorBoard hparams or hp_metric),
    # no graph, MLflow without params
    case(
        "log_autolog_hparams_off",
        "GraphModel",
        HPARAMS,
        data="HparamsData",
        max_epochs=2,
        log_every_n_steps=3,
        enable_autolog_hparams=False,
        logger=[
            logger("TensorBoardLogger", save_dir=".", log_graph=True),
            csv_logger(),
            logger("MLFlowLogger", tracking_uri="file:./mlruns"),
        ],
    ),
    case(
        "log_tensorboard_named_with_csv",
        "LoggingModel",
        max_epochs=2,
        val_check_interval=0.5,
        enable_checkpointing=True,
        logger=[
            logger("pytorch_lightning.loggers.TensorBoardLogger", save_dir="logs", name="", version="run"),
            csv_logger(),
        ],
    ),
    case(
        "log_mlflow_file_store",
        "HparamsModel",
        HPARAMS,
        max_epochs=2,
        log_every_n_steps=2,
        enable_checkpointing=True,
        logger=[
            logger("MLFlowLogger", tracking_uri="file:./mlruns", run_name="fit run", tags=TAGS, prefix="fit"),
            logger("TensorBoardLogger", save_dir="."),
        ],
    ),
    case(
        "log_wandb_offline",
        "HparamsModel",
        HPARAMS,
        max_epochs=2,
        val_check_interval=0.5,
        enable_checkpointing=True,
        logger=[
            logger("lightning.pytorch.loggers.WandbLogger", project="parity", name="a run", offline=True, prefix="fit"),
            logger("MLFlowLogger", save_dir="store", experiment_name="exp"),
            logger("TensorBoardLogger", save_dir=".", name="tb", default_hp_metric=False),
        ],
    ),
    # --- checkpointing (CheckpointModel's val_loss falls for 5 epochs, then stalls) -----------------
    checkpointing_case("ckpt_default", max_epochs=2),
    checkpointing_case(
        "ckpt_hparams_model_and_data", model="HparamsModel", init=HPARAMS, data="HparamsData", max_epochs=1
    ),
    checkpointing_case("ckpt_val_loss_top_2_last", VAL_LOSS_TOP_2, max_epochs=5),
    # Lightning's AsyncCheckpointIO: the files written by a background thread, from copies of the tensors taken
    # at each save; the top-k files it replaces removed after they are written. (A file replaced one save after
    # it was written is not compared: Lightning removes it while its write may still be queued, so whether it is
    # left on disk is a race in Lightning.)
    checkpointing_case("ckpt_async_io_top_2_last", VAL_LOSS_TOP_2, max_epochs=5, plugins=["AsyncCheckpointIO"]),
    checkpointing_case(
        "ckpt_async_io_every_step",
        model_checkpoint(save_top_k=-1, every_n_train_steps=1, save_last=True),
        max_epochs=2,
        plugins=["AsyncCheckpointIO"],
    ),
    checkpointing_case(
        "ckpt_all_every_5_steps",
        model_checkpoint("pytorch_lightning.callbacks.ModelCheckpoint", save_top_k=-1, every_n_train_steps=5),
        max_epochs=2,
    ),
    checkpointing_case(
        "ckpt_filename_metrics",
        model_checkpoint(
            "lightning.pytorch.callbacks.ModelCheckpoint",
            dirpath="by_accuracy",
            filename="e{epoch:02d}-s{step}-loss{val_loss:.4f}-acc{val_acc:.3f}",
            auto_insert_metric_name=False,
            monitor="val_acc",
            mode="max",
            save_top_k=2,
        ),
        max_epochs=4,
    ),
    checkpointing_case(
        "ckpt_filename_metrics_auto_names",
        model_checkpoint(filename="{epoch}-{val_loss:.3f}-{train_loss:.3f}", monitor="val_loss", save_last=True),
        max_epochs=3,
    ),
    checkpointing_case(
        # with a monitor, last.ckpt is written only when a top-k file is: epoch 5 does not improve, so last.ckpt
        # stays at epoch 4
        "ckpt_last_only_with_a_top_k_save",
        model_checkpoint(monitor="val_loss", save_top_k=1, save_last=True),
        max_epochs=6,
    ),
    checkpointing_case(
        "ckpt_save_last_link", model_checkpoint(monitor="val_loss", save_top_k=1, save_last="link"), max_epochs=6
    ),
    checkpointing_case(
        "ckpt_weights_only",
        model_checkpoint(monitor="val_loss", save_top_k=2, save_last=True, save_weights_only=True),
        max_epochs=3,
    ),
    checkpointing_case(
        # a callback's on_save_checkpoint writes into full checkpoints only
        "ckpt_weights_only_without_the_callbacks_save_hook",
        model_checkpoint(dirpath="weights", save_top_k=-1, save_weights_only=True),
        model_checkpoint(dirpath="full", monitor="val_loss", save_top_k=-1),
        {"class_path": "tests.parity.callbacks.SavesItsCount"},
        max_epochs=2,
    ),
    checkpointing_case(
        "ckpt_every_2_epochs",
        model_checkpoint(every_n_epochs=2, save_top_k=-1, save_last=True),
        max_epochs=5,
    ),
    checkpointing_case(
        "ckpt_two_callbacks",
        model_checkpoint(dirpath="best", filename="best-{epoch}", monitor="val_loss", save_top_k=1),
        model_checkpoint(dirpath="every_epoch", save_top_k=-1, save_last=True),
        max_epochs=3,
    ),
    checkpointing_case(
        "ckpt_two_callbacks_one_directory",
        model_checkpoint(save_top_k=-1),
        model_checkpoint(monitor="val_loss", save_top_k=-1, save_last=True),
        max_epochs=2,
    ),
    checkpointing_case("ckpt_val_twice_per_epoch", VAL_LOSS_TOP_2, max_epochs=2, val_check_interval=0.5),
    checkpointing_case(
        "ckpt_train_metric_on_train_epoch_end",
        model_checkpoint(monitor="train_loss", save_top_k=2, save_on_train_epoch_end=True),
        max_epochs=4,
    ),
    # --- early stopping ---------------------------------------------------------------------------
    checkpointing_case(
        "early_stop_patience_1_min_delta",
        early_stopping(monitor="val_loss", patience=1, min_delta=0.01),
        VAL_LOSS_TOP_2,
        max_epochs=10,
    ),
    checkpointing_case(
        "early_stop_held_back_by_min_epochs",
        early_stopping("EarlyStopping", monitor="val_loss", patience=1, min_delta=0.01),
        max_epochs=10,
        min_epochs=7,
    ),
    checkpointing_case(
        "early_stop_stopping_threshold",
        early_stopping(monitor="val_loss", patience=5, stopping_threshold=0.15),
        max_epochs=10,
    ),
    checkpointing_case(
        "early_stop_divergence_threshold",
        early_stopping("lightning.pytorch.callbacks.EarlyStopping", monitor="val_loss", divergence_threshold=2.0),
        model="DivergingCheckpointModel",
        max_epochs=10,
    ),
    checkpointing_case(
        "early_stop_train_metric_on_train_epoch_end",
        early_stopping(monitor="train_loss", patience=1, min_delta=0.02, check_on_train_epoch_end=True),
        max_epochs=10,
    ),
    checkpointing_case(
        "early_stop_val_twice_per_epoch",
        early_stopping(monitor="val_acc", mode="max", patience=2),
        max_epochs=10,
        val_check_interval=0.5,
    ),
    # a user's subclass of EarlyStopping runs on the script's base: counting from epoch 2 (its own state beside the
    # base's in the checkpoints); then its own stop below a bound, checked after each of two validations an epoch,
    # with the base's patience and min_epochs holding the stop back
    checkpointing_case(
        "early_stop_subclass_warmup_state",
        early_stopping(
            "tests.parity.callbacks.WarmupEarlyStopping",
            warmup=2,
            monitor="val_loss",
            patience=1,
            min_delta=0.05,
            verbose=True,
        ),
        model_checkpoint(dirpath="ck", save_last=True),
        max_epochs=10,
    ),
    checkpointing_case(
        "early_stop_subclass_own_rule_on_validation_end",
        early_stopping("tests.parity.callbacks.StopsBelow", bound=0.16, patience=4),
        max_epochs=10,
        min_epochs=4,
        val_check_interval=0.5,
    ),
    # a ModelCheckpoint subclass runs on the script's base: its own skip (nothing before epoch 1), last file's name
    # and state (the files and each file's callback state compared), over the base's top 2 by val_loss
    checkpointing_case(
        "checkpoint_subclass_warm_top_k",
        model_checkpoint(
            "tests.parity.callbacks.WarmCheckpoint", start_epoch=1, monitor="val_loss", save_top_k=2, save_last=True
        ),
        max_epochs=4,
    ),
    # ... in the first logger's directory, which its setup finds (save_dir/name/version_N/checkpoints)
    checkpointing_case(
        "checkpoint_subclass_logger_directory",
        model_checkpoint("tests.parity.callbacks.WarmCheckpoint", start_epoch=2, save_last=True),
        max_epochs=3,
        logger=csv_logger(name="runs"),
    ),
    # ... in a run that never validates (limit_val_batches 0): it saves at each epoch's end
    checkpointing_case(
        "checkpoint_subclass_without_validation",
        model_checkpoint("tests.parity.callbacks.WarmCheckpoint", start_epoch=1, save_top_k=-1, save_last=True),
        max_epochs=3,
        limit_val_batches=0,
    ),
    # ... and the base's every-n-steps saves by a metric, deferred to the validation after an epoch's last batch,
    # with "last" a link; the subclass records what the base decided after each validation
    checkpointing_case(
        "checkpoint_subclass_steps_deferred_link",
        model_checkpoint(
            "tests.parity.callbacks.RecordsBest",
            monitor="val_loss",
            every_n_train_steps=4,
            save_top_k=3,
            save_last="link",
            filename="{epoch}-{step}-{val_loss:.3f}",
        ),
        max_epochs=3,
        val_check_interval=0.5,
    ),
    # a TQDMProgressBar subclass runs on the script's base: the totals it computes and the metrics it shows
    case(
        "tqdm_subclass_totals_and_metrics",
        "LoggingModel",
        {"monitor": "train_loss_epoch"},
        callbacks=[{"class_path": "tests.parity.callbacks.EpochBar", "init_args": {"refresh_rate": 3}}],
        max_epochs=3,
        check_val_every_n_epoch=2,
        enable_progress_bar=True,
    ),
    # ... and a RichProgressBar subclass, on the script's RichProgressBarBase (its own column, theme and metrics),
    # each epoch's task restarted (leave: a new display per epoch)
    case(
        "rich_subclass_totals_and_metrics",
        "LoggingModel",
        {"monitor": "train_loss_epoch"},
        callbacks=[{"class_path": "tests.parity.callbacks.RichEpochBar", "init_args": {"leave": True}}],
        max_epochs=3,
        check_val_every_n_epoch=2,
        enable_progress_bar=True,
    ),
    # --- checkpoints and early stopping under bf16-true / 16-true (bfloat16 / float16 weights and optimizer state;
    # the monitored values in float32)
    checkpointing_case(
        "bf16_true_ckpt_filename_metrics_early_stop",
        model_checkpoint(
            filename="{epoch}-{val_loss:.3f}-{train_loss:.3f}", monitor="val_loss", save_top_k=2, save_last=True
        ),
        early_stopping(monitor="val_loss", patience=1, min_delta=0.01),
        max_epochs=6,
        precision="bf16-true",
    ),
    checkpointing_case("16_true_ckpt_val_loss_top_2_last", VAL_LOSS_TOP_2, max_epochs=3, precision="16-true"),
]


class Runner:
    """Runs jobs ([side, SPEC, OUT, LOG]) of tests/parity/runner.py, each in a fresh process, all at once.

    By default through one `runner serve` process per test worker (it imports torch and Lightning once and
    forks a fresh child per job); with PARITY_FRESH_PROCESSES=1, one new interpreter per job.
    """

    def __init__(self) -> None:
        self.server: subprocess.Popen | None = None
        if os.environ.get("PARITY_FRESH_PROCESSES") != "1":
            command = [sys.executable, "-m", "tests.parity.runner", "serve"]
            self.server = subprocess.Popen(
                command, cwd=ROOT, env=env_with_root(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
            )

    def run(self, jobs: list[list[str]]) -> list[int]:
        if self.server is None:
            return self._run_fresh(jobs)
        assert self.server.stdin is not None and self.server.stdout is not None
        self.server.stdin.write(json.dumps(jobs) + "\n")
        self.server.stdin.flush()
        reply = self.server.stdout.readline()
        if not reply:
            pytest.fail(f"the parity runner server died (exit {self.server.wait()})", pytrace=False)
        return json.loads(reply)

    def _run_fresh(self, jobs: list[list[str]]) -> list[int]:
        procs = []
        for side, spec, out, log in jobs:
            with open(log, "wb") as output:
                command = [sys.executable, "-m", "tests.parity.runner", side, spec, out]
                procs.append(
                    subprocess.Popen(command, cwd=ROOT, env=env_with_root(), stdout=output, stderr=subprocess.STDOUT)
                )
        statuses = []
        for proc in procs:
            try:
                statuses.append(proc.wait(timeout=TIMEOUT))
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                statuses.append(124)
        return statuses

    def close(self) -> None:
        if self.server is not None:
            assert self.server.stdin is not None
            self.server.stdin.close()
            self.server.wait(timeout=30)


def train_both(runner: Runner, spec: dict[str, Any], tmp_path: Path) -> tuple[dict, dict]:
    """Train with Lightning and with the rendered script, each in a fresh process, at the same time;
    return their saved {state_dict, records}."""
    spec_file = tmp_path / "case.yaml"
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    sides = ("lightning", "loopgen")
    jobs = []
    for side in sides:
        (tmp_path / side).mkdir()
        jobs.append([side, str(spec_file), str(tmp_path / side / "out.pt"), str(tmp_path / side / "output.log")])
    statuses = runner.run(jobs)
    for side, status in zip(sides, statuses):
        output = (tmp_path / side / "output.log").read_text(encoding="utf-8", errors="replace")
        if side == "loopgen" and status == 3:
            refusal = [line for line in output.splitlines() if line.startswith("loopgen:")]
            pytest.fail("loopgen refused the spec:\n" + "\n".join(refusal), pytrace=False)
        if status != 0:
            pytest.fail(f"{side} side failed (exit {status}):\n{_tail(output)}", pytrace=False)
    return tuple(torch.load(tmp_path / side / "out.pt", weights_only=False) for side in sides)


def _tail(text: str, lines: int = 40) -> str:
    return "\n".join(text.splitlines()[-lines:])


def _first_difference(a: list, b: list) -> str:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return f"first difference at [{i}]: Lightning {x!r}, script {y!r}"
    return f"lengths differ: Lightning {len(a)}, script {len(b)}; extra: {(a[len(b):] or b[len(a):])[:5]!r}"


def differences(lightning: dict, script: dict) -> list[str]:
    """What differs between the two sides, one line per difference (empty: the same training)."""
    found = []
    ours, theirs = script["state_dict"], lightning["state_dict"]
    if ours.keys() != theirs.keys():
        found.append(f"state_dict keys differ: Lightning {sorted(theirs)}, script {sorted(ours)}")
    for name in sorted(theirs.keys() & ours.keys()):
        a, b = theirs[name], ours[name]
        if a.dtype != b.dtype:  # torch.equal compares values only
            found.append(f"weight {name}: Lightning's is {a.dtype}, the script's {b.dtype}")
        elif not torch.equal(a, b):
            gap = (a.double() - b.double()).abs().max().item() if a.shape == b.shape else "shape"
            found.append(f"weight {name} differs (max abs difference {gap})")
    for key in ("val_points", "val_batches", "lrs", "optimizer_steps", "final", "loads", "events"):
        a, b = lightning["records"][key], script["records"][key]
        if a == b:
            continue
        if isinstance(a, list) and isinstance(b, list):
            found.append(f"{key}: {_first_difference(a, b)}")
        else:
            found.append(f"{key}: Lightning {a!r}, script {b!r}")
    if any(line.startswith(("val_points", "lrs", "optimizer_steps", "final")) for line in found):
        found.append(f"Lightning val_points {lightning['records']['val_points']}")
        found.append(f"script    val_points {script['records']['val_points']}")
    found += checkpoint_differences(lightning.get("checkpoints"), script.get("checkpoints"))
    return found + log_differences(lightning.get("logs"), script.get("logs"))


def log_differences(lightning: list[dict] | None, script: list[dict] | None) -> list[str]:
    """What differs between the files the two sides' loggers wrote (tests/harness.py, log_facts): which files, and
    for each, the first row (metrics.csv) or value (hparams.yaml) that differs."""
    if lightning is None or script is None:
        return []
    theirs, ours = {f["path"]: f for f in lightning}, {f["path"]: f for f in script}
    if list(theirs) != list(ours):
        return [f"log files: Lightning {list(theirs)}, script {list(ours)}"]
    found = []
    for path, facts in theirs.items():
        difference = nested_difference(facts, ours[path])
        if difference is not None:
            found.append(f"log {path}: {difference}")
    return found


def checkpoint_differences(lightning: list[dict] | None, script: list[dict] | None) -> list[str]:
    """What differs between two sides' checkpoint facts (tests/harness.py, checkpoint_facts): the files left, and
    for each file present on both sides, the first difference in each of its facts."""
    if lightning is None or script is None:
        return []
    theirs, ours = {f["path"]: f for f in lightning}, {f["path"]: f for f in script}
    found = []
    if list(theirs) != list(ours):
        found.append(f"checkpoint files: Lightning {list(theirs)}, script {list(ours)}")
    for path in sorted(theirs.keys() & ours.keys()):
        for fact in sorted(theirs[path].keys() | ours[path].keys()):
            difference = nested_difference(theirs[path].get(fact, MISSING), ours[path].get(fact, MISSING))
            if difference is not None:
                found.append(f"checkpoint {path}: {fact}{difference}")
    return found


MISSING = "<missing>"


def nested_difference(a: Any, b: Any, where: str = "") -> str | None:
    """The first place where plain values `a` (Lightning's) and `b` (the script's) differ, and how; None: equal.
    Types count (1 is not 1.0); NaN equals NaN."""
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return f"{where}: keys differ: Lightning {sorted(map(str, a))}, script {sorted(map(str, b))}"
        for key in a:
            difference = nested_difference(a[key], b[key], f"{where}[{key!r}]")
            if difference is not None:
                return difference
        return None
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and type(a) is type(b):
        if len(a) != len(b):
            return f"{where}: lengths differ: Lightning {len(a)}, script {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            difference = nested_difference(x, y, f"{where}[{i}]")
            if difference is not None:
                return difference
        return None
    if type(a) is type(b) and (a == b or (isinstance(a, float) and math.isnan(a) and math.isnan(b))):
        return None
    return f"{where}: Lightning {_short(a)}, script {_short(b)}"


def _short(value: Any, limit: int = 200) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[:limit] + "..."


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_same_training_as_lightning(case: Case, runner: Runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script trains differently from Lightning ({tmp_path}):\n" + "\n".join(found)


LOAD_CASE = checkpointing_case(
    "ckpt_load_from_checkpoint",
    model_checkpoint(dirpath="best", monitor="val_loss", save_top_k=1),
    model_checkpoint(save_last=True),  # no monitor: last.ckpt is written at every epoch's end
    init={"hidden": 16, "lr": 0.03},
    max_epochs=6,
)


def test_load_from_checkpoint(runner: Runner, tmp_path: Path) -> None:
    """Model.load_from_checkpoint on the best checkpoint (by val_loss) and on the last one a side wrote: the model
    is built with the saved hyperparameters and holds exactly the saved weights; the last checkpoint holds the
    final weights. (And the two sides train and checkpoint alike, as in every case.)"""
    from tests.parity.models import CheckpointModel

    outputs = train_both(runner, LOAD_CASE.spec, tmp_path)
    found = differences(*outputs)
    assert not found, f"{LOAD_CASE.id}: the script trains differently from Lightning ({tmp_path}):\n" + "\n".join(found)
    for side, output in zip(("lightning", "loopgen"), outputs):
        last = tmp_path / side / "checkpoints" / "last.ckpt"
        assert last.is_file(), f"{side}: no {last}"
        states = torch.load(last, weights_only=False)["callbacks"].values()
        [best_path] = [s["best_model_path"] for s in states if s.get("monitor") == "val_loss"]
        best = tmp_path / side / relative_path(best_path, tmp_path / side)
        assert best.parent.name == "best" and best.is_file(), f"{side}: best checkpoint {best}"
        for path in (best, last):
            saved = torch.load(path, weights_only=False)["state_dict"]
            model = CheckpointModel.load_from_checkpoint(path)
            assert dict(model.hparams) == {"hidden": 16, "lr": 0.03, "dropout": 0.2}, f"{side}: {path.name}"
            loaded = model.state_dict()
            assert loaded.keys() == saved.keys(), f"{side}: {path.name}"
            assert all(torch.equal(loaded[k], saved[k]) for k in saved), f"{side}: {path.name}: other weights"
        final = torch.load(last, weights_only=False)["state_dict"]
        assert final.keys() == output["state_dict"].keys()
        different = [k for k in final if not torch.equal(final[k], output["state_dict"][k])]
        assert not different, f"{side}: last.ckpt does not hold the final weights: {different}"


def test_cases_have_unique_ids() -> None:
    ids = [c.id for c in CASES]
    assert len(ids) == len(set(ids))


def test_records_catch_a_difference() -> None:
    """The comparison is not vacuous: a changed weight or record is reported."""
    weights = {"w": torch.zeros(2)}
    records = {
        "val_points": [(0, 0, True)],
        "val_batches": [2],
        "lrs": [0.1],
        "optimizer_steps": 1,
        "final": {},
        "loads": {},
        "events": [],
    }
    same = {"state_dict": weights, "records": records}
    assert differences(same, same) == []
    other_weights = {"state_dict": {"w": torch.tensor([0.0, 1e-9])}, "records": records}
    assert any("weight w" in line for line in differences(same, other_weights))
    other_dtype = {"state_dict": {"w": torch.zeros(2, dtype=torch.bfloat16)}, "records": records}
    assert any("weight w" in line for line in differences(same, other_dtype))
    other_points = {"state_dict": weights, "records": {**records, "val_points": [(0, 0, True), (0, 3, False)]}}
    assert any(line.startswith("val_points") for line in differences(same, other_points))


def test_checkpoint_facts_catch_a_difference() -> None:
    """Checkpoint files compare by name and by every fact, down to one element of one tensor."""
    score = ("tensor", "torch.float32", [], 0.5)
    state = {"best_model_score": score, "best_k_models": {"checkpoints/a.ckpt": score}, "last_model_path": ""}
    facts = [{"path": "checkpoints/a.ckpt", "link": None, "epoch": 1, "callbacks": {"ModelCheckpoint{}": state}}]
    assert checkpoint_differences(facts, facts) == []
    assert checkpoint_differences(facts, [{**facts[0], "path": "checkpoints/b.ckpt"}])[0].startswith("checkpoint files")
    other_score = {**state, "best_model_score": ("tensor", "torch.float32", [], 0.25)}
    [line] = checkpoint_differences(facts, [{**facts[0], "callbacks": {"ModelCheckpoint{}": other_score}}])
    assert "['best_model_score'][3]" in line
    assert checkpoint_differences(facts, [{**facts[0], "epoch": 1.0}]) != []
    assert checkpoint_differences(facts, [{**facts[0], "link": "a.ckpt"}]) != []
    nan = ("tensor", "torch.float32", [1], [float("nan")])
    assert nested_difference(nan, nan) is None


# (an example with a strategy runs under its launcher: tests/test_ddp.py checks DDP against Lightning's, and
# tests/test_coverage.py runs the DDP example under torchrun)
EXAMPLES = sorted(
    path
    for path in (ROOT / "examples").glob("*.yaml")
    if "examples.lightning_models" in path.read_text() and "strategy" not in yaml.safe_load(path.read_text())["trainer"]
)


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.stem)
def test_example_trains_like_lightning(example: Path, runner: Runner, tmp_path: Path) -> None:
    """Every example spec whose model is a LightningModule: the same weights as pytorch_lightning.Trainer."""
    spec = yaml.safe_load(example.read_text())
    lightning, script = train_both(runner, spec, tmp_path)
    ours, theirs = script["state_dict"], lightning["state_dict"]
    assert ours.keys() == theirs.keys()
    different = [name for name in theirs if not torch.equal(theirs[name], ours[name])]
    assert not different, f"{example.name}: weights differ from Lightning's: {different}"


def test_readme_counts_the_cases() -> None:
    """docs/testing.md ("What runs where", linked from the README) gives the number of parity cases."""
    page = (ROOT / "docs" / "testing.md").read_text(encoding="utf-8")
    assert f"(`tests/parity`): {len(CASES)} cases" in page, "update docs/testing.md's count of parity cases"


def test_logger_facts_read_back_what_was_written(tmp_path: Path) -> None:
    """The readers of the logger cases (tests/logger_files.py) see what each tool wrote, ids given stable names, and
    a changed value is a difference."""
    import subprocess as sp

    from tests.harness import log_facts
    from tests.logger_files import run_ids, with_ids_replaced

    writer = """
import os, sys
os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", MLFLOW_ALLOW_FILE_STORE="true")
from torch.utils.tensorboard import SummaryWriter
import mlflow.entities, mlflow.tracking, wandb
tensorboard = SummaryWriter("tb/version_0")
tensorboard.add_scalar("loss", 0.5, 3)
tensorboard.close()
client = mlflow.tracking.MlflowClient("file:./mlruns")
run = client.create_run(client.create_experiment("exp"), tags={"team": "a"})
client.log_batch(run.info.run_id, metrics=[mlflow.entities.Metric("loss", 0.5, 0, 3)])
run = wandb.init(project="p", name="n", dir=".")
run.log({"loss": 0.5, "trainer/global_step": 3})
run.finish()
"""
    result = sp.run([sys.executable, "-c", writer], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    facts = {entry["path"]: entry for entry in with_ids_replaced(log_facts(tmp_path), run_ids(tmp_path))}
    assert facts["tb/version_0/events.out.tfevents.*"]["scalars"] == {"loss": [(3, 0.5)]}
    [experiment] = [e for e in facts["mlruns (MLflow store)"]["experiments"] if e["name"] == "exp"]
    assert experiment["experiment_id"] == "<experiment exp>" and experiment["runs"][0]["run_id"] == "<run 0 of exp>"
    assert experiment["runs"][0]["metrics"] == {"loss": [(3, 0.5)]} and experiment["runs"][0]["tags"]["team"] == "a"
    wandb_run = facts["wandb/offline-run-<time>-<wandb run 0>/run-<wandb run 0>.wandb"]
    assert wandb_run["run"] == {"run_id": "<wandb run 0>", "project": "p", "name": "n"}
    assert wandb_run["history"] == [{"loss": 0.5, "trainer/global_step": 3, "_step": 0}]
    assert wandb_run["exit_code"] == 0
    same = list(facts.values())
    changed = copy.deepcopy(same)
    for entry in changed:
        if "history" in entry:
            entry["history"][0]["loss"] = 0.25
    assert log_differences(same, same) == [] and len(log_differences(same, changed)) == 1
