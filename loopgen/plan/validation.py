"""When validation runs: the sanity check, val_check_interval, check_val_every_n_epoch."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.bounds import Bounds
from loopgen.plan.common import batch_limits, flag_problem, follows_1_9_5, takes_dataloader_idx, takes_two
from loopgen.plan.data import Data
from loopgen.plan.hooks import UserCode
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Validation:
    enabled: bool
    owner: str | None
    sanity: bool
    sanity_all: bool
    sanity_steps: int
    at_epoch_end: bool  # once an epoch, at its last batch (val_check_interval 1.0)
    interval_batches: int | None  # an int val_check_interval
    interval_fraction: float | None  # a float val_check_interval other than 1.0
    computes_check_batch: bool  # val_check_batch from the fraction and the batch count
    across_epochs: bool  # check_val_every_n_epoch null: the interval counts batches across epochs
    # an int val_check_interval that must not exceed the epoch's batches: Lightning checks it as the training data
    # loads, with validation or without (2.x: unless limit_val_batches is 0; 1.9.5: always)
    checked_interval: int | None
    checks_interval_seed: bool  # ... and the error is worded as Lightning 1.9.5's
    every_n_epochs: int | None
    skips_epochs: bool  # check_val_every_n_epoch > 1
    load_at_start: bool  # no sanity check, epoch 0 validates: loaded before on_train_start (Lightning)
    load_at_first_use: bool  # no sanity check, epoch 0 does not validate: loaded at the first validation
    first_use_check: bool  # ... and never reloaded: `if val_loader is None` at each validation
    loads_before_training: bool  # something about the val loader happens right before on_train_start
    reloads: bool  # reload_dataloaders_every_n_epochs: reloaded at a validation when enough epochs passed
    reload_from_epoch_0: bool  # the first load counts as epoch 0's (else the first validation reloads)
    on_stop_request: bool  # a stop request that can be honoured triggers a validation
    step_takes_batch_idx: bool
    output_used: bool  # validation_step's output is passed on
    collects_outputs: bool  # validation_epoch_end gets them
    clears_grads: bool  # Lightning 1.9.5's evaluation loop: model.zero_grad() after eval mode, every validation
    # trainer.num_sanity_val_batches is set where the validation data loads (Lightning 2.x's property reads the
    # loop's batches); else once, when the sanity check runs (1.9.5's attribute, never set without one)
    sanity_batches_at_load: bool = True
    # validation_step takes dataloader_idx, which Lightning requires of it with several loaders
    takes_dataloader_idx: bool = False


def resolve_validation(
    spec: Spec, model: ClassFacts, user: UserCode, data: Data, bounds: Bounds, problems: list[Problem]
) -> Validation:
    t = spec.trainer
    seed_loop = follows_1_9_5(spec, model)
    given_fraction = "val_check_interval" in spec.trainer_given and isinstance(t.val_check_interval, float)
    if t.check_val_every_n_epoch is None and given_fraction:  # Lightning's _DataConnector
        message = "must be an integer (a number of batches) when check_val_every_n_epoch is null"
        problems.append(flag_problem(spec, "val_check_interval", message))
    enabled = data.val_owner is not None
    interval, every = t.val_check_interval, t.check_val_every_n_epoch
    sanity_steps = t.num_sanity_val_steps
    if t.fast_dev_run:
        interval, every, sanity_steps = 1.0, 1, 0
    sanity = enabled and sanity_steps != 0
    batches = interval if isinstance(interval, int) else None
    limit_val = batch_limits(spec)[1]
    fraction = float(interval) if batches is None else None
    validates_epoch_0 = every in (None, 1)
    output_used = (
        bool(user.callbacks_with("on_validation_batch_end"))
        or user.model_has("on_validation_batch_end")
        or user.model_has("validation_epoch_end")
        or model.returns_log_dicts
    )
    load_at_first_use = enabled and not sanity and not validates_epoch_0
    return Validation(
        enabled=enabled,
        owner=data.val_owner,
        sanity=sanity,
        sanity_all=sanity_steps == -1,
        sanity_steps=sanity_steps if sanity else 0,
        at_epoch_end=enabled and fraction == 1.0,
        interval_batches=batches if enabled else None,
        interval_fraction=fraction if enabled and fraction != 1.0 else None,
        computes_check_batch=enabled and fraction is not None and fraction != 1.0,
        across_epochs=enabled and every is None,
        checked_interval=(
            batches if batches is not None and every is not None and (seed_loop or limit_val > 0) else None
        ),
        checks_interval_seed=seed_loop,
        every_n_epochs=every if enabled else None,
        skips_epochs=enabled and every not in (None, 1),
        load_at_start=enabled and not sanity and validates_epoch_0,
        load_at_first_use=load_at_first_use,
        first_use_check=load_at_first_use and not data.reloads,
        loads_before_training=enabled and not sanity,
        reloads=enabled and data.reloads,
        reload_from_epoch_0=enabled and data.reloads and validates_epoch_0,
        on_stop_request=enabled and bounds.stop_requests,
        step_takes_batch_idx=takes_two(model.methods.get("validation_step", ())),
        output_used=enabled and output_used,
        collects_outputs=enabled and user.model_has("validation_epoch_end"),
        # every validation, with or without accumulation: a validation in the middle of an accumulation window
        # drops the window's gradients so far (EvaluationLoop.on_run_start calls lightning_module.zero_grad())
        clears_grads=enabled and seed_loop,
        sanity_batches_at_load=not seed_loop,
        takes_dataloader_idx=takes_dataloader_idx(model.methods.get("validation_step", ())),
    )
