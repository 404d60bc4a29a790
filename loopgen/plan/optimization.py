"""Automatic optimization: accumulation, clipping, closures, TBPTT, frequencies, the step window."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.bounds import Bounds
from loopgen.plan.common import follows_1_9_5, takes_two
from loopgen.plan.distributed import steps_every_batch
from loopgen.plan.hooks import UserCode, only_epoch_end
from loopgen.plan.optimizers import Optimizers, frequencies_of
from loopgen.plan.swa import is_swa
from loopgen.plan.validation import Validation
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Optimization:
    accumulate: int  # the spec's one factor (1 with a schedule)
    schedule: Mapping[int, int] | None
    accumulates: bool
    scheduled: bool  # accumulation factor per epoch
    window_end: bool  # is_last_batch is needed (accumulation, schedulers, validation at the epoch's end)
    clip: bool
    clip_val: float | None
    clip_by_value: bool
    closure: bool  # optimizer.step(closure): LBFGS or an optimizer_step override
    step_override: bool
    step_override_seed: bool  # the override takes the seed's arguments (optimizer_idx, on_tpu, using_lbfgs)
    zero_grad_override: bool
    zero_grad_override_seed: bool
    step_args_batch_idx: bool  # training_step takes batch_idx
    frequencies: tuple[int, ...] | None  # one optimizer per batch, each in turn (1.9.5)
    loops_optimizers: bool  # several optimizers, all on every batch
    tbptt_steps: int | None
    tbptt: bool
    tbptt_split_hook: bool
    track_grad_norm: float | None
    track_grad_norm_inf: bool
    grad_norm_first_only: bool  # several optimizers: norms of optimizer 0's steps only (1.9.5)
    terminate_on_nan: bool
    # Lightning's detect_anomaly: autograd's anomaly mode on around the fit loop (after the sanity check)
    detect_anomaly: bool
    step_end: bool  # training_step_end
    outputs_used: bool  # training_step outputs go to on_train_batch_end / training_epoch_end
    nested_outputs: bool  # ... nested per time split and optimizer (1.9.5)
    batch_outputs_for_hook: bool  # on_train_batch_end gets the nested outputs
    epoch_outputs: bool  # training_epoch_end
    nested_epoch_outputs: bool  # ... with 1.9.5's nesting
    skip_hiddens_key: bool  # the outputs leave out "hiddens"
    total_batch_idx: bool  # the loop counts batches across epochs
    schedulers_follow_active: bool  # with frequencies, only the active optimizer's schedulers step (1.9.5)
    notes_epoch_end: bool  # an epoch can end before its last batch, and a scheduler must know (epoch_complete)
    last_batch_block: bool  # something happens at the epoch's last batch (known schedulers, epoch_complete)
    schedulers_after_batch: bool  # a scheduler may step (or epoch_complete be noted) after a batch
    # configure_gradient_clipping override: called at each optimizer step with the Trainer's clipping flags
    clip_hook: bool = False
    # the gradient_clip_algorithm it gets: a member of the script's GradClipAlgorithmType ("NORM", "VALUE"), or
    # None where the spec gives none
    clip_hook_algorithm: str | None = None
    clips_at_step: bool = False  # clipping or the hook happen before each optimizer step
    # code runs between the backward and the optimizer step (on_before_optimizer_step, gradient norms, clipping)
    before_step: bool = False
    # ... which the closure runs only when the accumulation window ends (should_step)
    gates_before_step: bool = False
    # ... which an optimizer_step override reaches only through the optimizer's step (its LightningOptimizer), as
    # in Lightning: an override that calls the closure itself and does not step skips them
    hooks_in_step: bool = False
    # ... and the loop's variables that code reads (its function binds them)
    before_step_reads: tuple[str, ...] = ()
    # the factor is a variable for StochasticWeightAveraging's batch-norm epoch (the spec gives one number)
    swa_window: bool = False

    @property
    def clip_algorithm(self) -> str:
        """self.clip_gradients' algorithm when it is given none: the Trainer's (Lightning's), "norm" by default."""
        return "value" if self.clip_by_value else "norm"

    @property
    def clip_hook_enum(self) -> bool:
        """configure_gradient_clipping gets a GradClipAlgorithmType member: the script defines Lightning's enum."""
        return self.clip_hook_algorithm is not None

    @property
    def names_schedule(self) -> bool:
        """The spec's accumulation schedule, for the script's header."""
        return self.scheduled and not self.swa_window


def steps_at_last_batch(optimizers: Optimizers, notes_epoch_end: bool) -> bool:
    """Schedulers are stepped at the epoch's last batch (is_last_batch): the general helper's epoch-interval ones,
    the known epoch-interval ones, or the note that the epoch ran to its end."""
    return optimizers.general_schedulers or bool(optimizers.at_epoch_end) or notes_epoch_end


def resolve_optimization(
    spec: Spec,
    model: ClassFacts,
    user: UserCode,
    optimizers: Optimizers,
    bounds: Bounds,
    validation: Validation,
    problems: list[Problem],
) -> Optimization:
    t = spec.trainer
    step_params = model.methods.get("training_step", ())
    frequencies = frequencies_of(spec, model, optimizers, problems)
    tbptt = t.truncated_bptt_steps
    if tbptt and "hiddens" not in step_params and "*args" not in step_params:
        message = f"truncated_bptt_steps is set, but {spec.model.name}.training_step has no `hiddens` parameter"
        problems.append(Problem("model.class_path", message, spec.model.line))
    schedule = t.accumulate_grad_batches if isinstance(t.accumulate_grad_batches, Mapping) else None
    accumulate = 1 if schedule is not None else t.accumulate_grad_batches
    swa_window = is_swa(spec) and schedule is None
    if swa_window:
        # StochasticWeightAveraging's batch-norm epoch accumulates over the whole epoch: the factor is a variable
        schedule = {0: accumulate}
    accumulates = schedule is not None or accumulate > 1
    step_style = model.methods.get("optimizer_step")
    zero_grad_style = model.methods.get("optimizer_zero_grad")
    outputs_used = bool(user.callbacks_with("on_train_batch_end")) or user.model_has("on_train_batch_end")
    outputs_used = outputs_used or user.model_has("training_epoch_end")
    nested = (optimizers.several or bool(tbptt)) and outputs_used
    ends_early = bounds.stop_requests or bounds.step_limit or user.model_has("on_train_batch_start")
    notes_epoch_end = optimizers.completes_epoch and ends_early
    track = t.track_grad_norm if t.track_grad_norm != -1 else None
    clip_hook = model.defines("configure_gradient_clipping")
    if clip_hook and follows_1_9_5(spec, model):
        message = "configure_gradient_clipping is supported with Lightning 2.x's loop only (no optimizer_idx)"
        problems.append(Problem("model.class_path", message, spec.model.line))
    before_hook = bool(user.callbacks_with("on_before_optimizer_step")) or user.model_has("on_before_optimizer_step")
    before_step = before_hook or track is not None or t.gradient_clip_val is not None or clip_hook
    # manual optimization: the automatic loop's optimization switched off (no closure, no overrides, no scheduler
    # steps, nothing clipped: Lightning clips nothing for a module that steps itself)
    auto = not model.manual_optimization
    if not auto and optimizers.general_schedulers:
        message = (
            "with manual optimization, configure_optimizers must return its schedulers in a form its source shows"
            " (e.g. `return [opt1, opt2], [sched1, sched2]`)"
        )
        problems.append(Problem("model.class_path", message, spec.model.line))
    last_batch = steps_at_last_batch(optimizers, notes_epoch_end)
    if not auto:
        window_end = validation.at_epoch_end
    elif steps_every_batch(spec, accumulates):
        window_end = last_batch or validation.at_epoch_end
    else:
        window_end = accumulates or last_batch or validation.at_epoch_end
    return Optimization(
        accumulate=accumulate,
        schedule=schedule,
        accumulates=accumulates,
        scheduled=schedule is not None,
        swa_window=swa_window,
        window_end=window_end,
        clip=t.gradient_clip_val is not None,
        clip_val=t.gradient_clip_val,
        clip_by_value=t.gradient_clip_algorithm == "value",
        closure=auto and (optimizers.lbfgs or step_style is not None),
        step_override=auto and step_style is not None,
        step_override_seed=auto and step_style is not None and "optimizer_idx" in step_style,
        zero_grad_override=auto and zero_grad_style is not None,
        zero_grad_override_seed=auto and zero_grad_style is not None and "optimizer_idx" in zero_grad_style,
        step_args_batch_idx=takes_two(step_params),
        frequencies=frequencies,
        loops_optimizers=optimizers.several and frequencies is None,
        tbptt_steps=tbptt or None,
        tbptt=bool(tbptt),
        tbptt_split_hook=bool(tbptt) and model.defines("tbptt_split_batch"),
        track_grad_norm=track,
        track_grad_norm_inf=track == float("inf"),
        grad_norm_first_only=track is not None and optimizers.several,
        terminate_on_nan=t.terminate_on_nan,
        detect_anomaly=spec.trainer.detect_anomaly,
        step_end=model.defines("training_step_end"),
        outputs_used=auto and outputs_used,
        nested_outputs=nested,
        batch_outputs_for_hook=nested and outputs_used and not only_epoch_end(user),
        epoch_outputs=model.defines("training_epoch_end"),
        nested_epoch_outputs=nested and model.defines("training_epoch_end"),
        skip_hiddens_key=bool(tbptt),
        total_batch_idx=validation.across_epochs or (frequencies is not None and optimizers.any_schedulers),
        schedulers_follow_active=frequencies is not None and optimizers.any_schedulers,
        notes_epoch_end=auto and notes_epoch_end,
        last_batch_block=auto and (bool(optimizers.at_epoch_end) or notes_epoch_end),
        schedulers_after_batch=auto
        and (
            optimizers.general_schedulers
            or bool(optimizers.after_step)
            or bool(optimizers.at_epoch_end)
            or notes_epoch_end
        ),
        clip_hook=auto and clip_hook,
        # Lightning passes the Trainer's flags: the algorithm None unless the spec gives one, else its
        # GradClipAlgorithmType member
        clip_hook_algorithm=(
            t.gradient_clip_algorithm.upper() if clip_hook and "gradient_clip_algorithm" in spec.trainer_given else None
        ),
        clips_at_step=auto and (t.gradient_clip_val is not None or clip_hook),
        before_step=before_step,
        gates_before_step=before_step and accumulates and not (auto and step_style is not None),
        hooks_in_step=before_step and auto and step_style is not None,
        before_step_reads=tuple(
            name
            for name, read in (
                ("optimizer", before_hook or t.gradient_clip_val is not None or clip_hook),
                ("optimizer_idx", optimizers.several and (before_hook or track is not None)),
            )
            if read
        ),
    )
