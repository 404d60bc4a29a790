"""The optimizers and LR schedulers configure_optimizers returns (or the spec names)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem
from loopgen.plan.objects import Construct, construct_of
from loopgen.plan.precision import Precision
from loopgen.plan.swa import is_swa
from loopgen.source.facts import ClassFacts, OptimizersFacts, SchedulerFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, Spec


@dataclass(frozen=True)
class Scheduler:
    """One LR scheduler, stepped where Lightning steps it."""

    var: str
    cls: Construct | None  # built by the script (the spec's lr_scheduler); None: from configure_optimizers
    in_dict: bool  # configure_optimizers gives it inside an lr_scheduler dict
    interval: str  # "step" | "epoch"
    frequency: int
    every_time: bool  # frequency 1
    plateau: bool
    monitor: str | None
    strict: bool
    optimizer_idx: int
    name: str | None = None  # its dict's "name" (LearningRateMonitor's name for it)


@dataclass(frozen=True)
class Optimizers:
    """Where the optimizers and LR schedulers come from, and how the script unpacks them."""

    from_spec: Construct | None  # the spec's `optimizer:` (LightningCLI replaces configure_optimizers)
    form: str | None  # the shape configure_optimizers returns (OptimizersFacts.form); None: unknown
    general: bool  # unknown shape: the script unpacks any of Lightning's forms at run time
    general_reason: str  # why (for the script's header)
    count: int  # optimizers the shape holds (general: 1, or 2+ with optimizer_idx)
    several: bool  # training_step takes optimizer_idx: one optimizer step per optimizer
    list_var: bool  # the script holds them in a list `optimizers`
    schedulers: tuple[Scheduler, ...]  # known schedulers, in the order configure_optimizers gives them
    general_schedulers: bool  # schedulers come as configs from the general helper
    any_schedulers: bool
    after_step: tuple[Scheduler, ...]  # interval "step", not plateau: after each optimizer step
    at_epoch_end: tuple[Scheduler, ...]  # interval "epoch", not plateau: at the epoch's last batch
    plateau_after_validation: tuple[Scheduler, ...]  # plateau, interval "step": after validation, per step
    plateau_at_epoch_end: tuple[Scheduler, ...]  # plateau, interval "epoch": after the epoch's validation
    plateau: bool  # some scheduler reads a monitored metric
    strict_plateau: bool  # a known plateau scheduler whose metric must exist (Lightning's `strict`)
    lenient_plateau: bool  # a known plateau scheduler that skips its step, with a warning, when the metric is missing
    completes_epoch: bool  # some scheduler steps only after an epoch that ran to its end (plateau, "epoch")
    scheduler_hook: bool  # the model overrides lr_scheduler_step
    scheduler_hook_seed: bool  # ... with the seed's signature (optimizer_idx)
    check_frequencies: tuple[int, ...] | None  # general helper: the frequencies it must find
    closure_check: bool  # general helper, no closure: refuse an LBFGS at run time
    lbfgs: bool
    manual: bool = False  # manual optimization: any number of optimizers, schedulers the module steps


def resolve_optimizers(spec: Spec, model: ClassFacts, precision: Precision, problems: list[Problem]) -> Optimizers:
    """The spec's optimizer, or configure_optimizers' shape read from its source (else the general helper)."""
    several = "optimizer_idx" in model.methods.get("training_step", ())
    manual = bool(model.manual_optimization)
    where, line = "model.class_path", spec.model.line
    facts = model.optimizers
    if several and facts is not None and len(facts.optimizers) == 1 and spec.optimizer is None:
        # Lightning 1.9.5 passes optimizer_idx only when there are several: with one, training_step runs on its
        # default (without one, Lightning's call raises a TypeError)
        several = "optimizer_idx" not in model.defaults.get("training_step", ())
    schedulers: list[Scheduler] = []
    reason = model.optimizers_unknown
    if spec.optimizer is not None:
        form, general, count = None, False, 1
        if spec.lr_scheduler is not None:
            schedulers.append(_spec_scheduler(spec.lr_scheduler, problems))
        lbfgs = spec.optimizer.name == "LBFGS"
    elif facts is not None:
        form, general, count = facts.form, False, len(facts.optimizers)
        lbfgs = "LBFGS" in facts.optimizers
        if several and count < 2:
            message = f"training_step takes `optimizer_idx`, but {_returns(facts)}"
            if count == 1:  # (with a default it runs on it: several is False then)
                message += (
                    ": Lightning 1.9.5 then calls training_step without it, a TypeError; give optimizer_idx a default"
                    " (`optimizer_idx=0`), or remove it"
                )
            problems.append(Problem(where, message, line))
        elif not several and count != 1 and not manual:
            problems.append(
                Problem(
                    where,
                    f"{_returns(facts)}; training with several optimizers is only supported with manual"
                    " optimization (Lightning 2.x): set `self.automatic_optimization = False` in __init__ and make"
                    " the steps in training_step with `opt1, opt2 = self.optimizers()`",
                    line,
                )
            )
        for index, scheduler in enumerate(facts.schedulers):
            planned = _source_scheduler(scheduler, index, len(facts.schedulers), facts, count, manual, problems, line)
            if planned is None:  # which optimizer it steps is known at run time only
                general, schedulers = True, []
                reason = f"configure_optimizers returns a {scheduler.cls} whose optimizer its source does not show"
                break
            schedulers.append(planned)
    else:
        form, general, count = None, True, 2 if several else 1
        lbfgs = model.mentions_lbfgs
    # (refused with manual optimization, several optimizers and the spec's optimizer: plan/swa.py)
    swa = is_swa(spec) and spec.optimizer is None and not manual and not several and count == 1
    if swa and not general:
        # its SWALR replaces the scheduler, or joins as the only one, at run time: the schedulers are configs in a
        # list, as Lightning's trainer.lr_scheduler_configs
        general, schedulers = True, []
        reason = "StochasticWeightAveraging swaps the scheduler at run time, as Lightning's does"
    general_schedulers = general and (swa or _returns_schedulers(spec, model))
    if lbfgs and precision.scaler:
        message = "native 16-bit AMP and the LBFGS optimizer are not compatible"
        problems.append(flag_problem(spec, "precision", message))
    if lbfgs and precision.apex:
        problems.append(flag_problem(spec, "amp_backend", "apex AMP and the LBFGS optimizer are not compatible"))
    if model.defines("optimizer_step") and (precision.scaler or precision.apex):
        message = refusal(
            "an optimizer_step override together with 16-bit AMP",
            "under Lightning, the optimizer the override steps runs the GradScaler (or apex) inside its step();"
            " the script hands the override the plain optimizer",
            "use precision bf16-mixed or 32 with the override, or do its work in on_before_optimizer_step",
        )
        problems.append(Problem(where, message, line))
    frequencies = spec.loop.optimizer_frequencies
    if manual:  # Lightning steps no scheduler and calls no lr_scheduler_step: training_step does it all
        # (each keeps its interval, "epoch" unless its dict says otherwise: LearningRateMonitor logs by it)
        schedulers = [replace(s, plateau=False, strict=False) for s in schedulers]
    stepped = () if manual else schedulers
    return Optimizers(
        from_spec=construct_of(spec.optimizer) if spec.optimizer else None,
        form=form,
        general=general,
        general_reason=reason if general else "",
        count=count,
        several=several,
        list_var=several or (manual and (count > 1 or general)),
        schedulers=tuple(schedulers),
        general_schedulers=general_schedulers,
        any_schedulers=general_schedulers or bool(schedulers),
        after_step=tuple(s for s in stepped if s.interval == "step" and not s.plateau),
        at_epoch_end=tuple(s for s in stepped if s.interval == "epoch" and not s.plateau),
        plateau_after_validation=tuple(s for s in stepped if s.interval == "step" and s.plateau),
        plateau_at_epoch_end=tuple(s for s in stepped if s.interval == "epoch" and s.plateau),
        plateau=not manual and (general_schedulers or any(s.plateau for s in schedulers)),
        strict_plateau=any(s.plateau and s.strict for s in schedulers),
        lenient_plateau=any(s.plateau and not s.strict for s in schedulers),
        completes_epoch=not manual
        and (general_schedulers or any(s.interval == "epoch" and s.plateau for s in schedulers)),
        scheduler_hook=model.defines("lr_scheduler_step") and not manual,
        scheduler_hook_seed="optimizer_idx" in model.methods.get("lr_scheduler_step", ()),
        check_frequencies=tuple(frequencies or ()) if general and several else None,
        closure_check=general and not several and not manual and not lbfgs and not model.defines("optimizer_step"),
        lbfgs=lbfgs and not manual,
        manual=manual,
    )


def _returns(facts: OptimizersFacts) -> str:
    count = len(facts.optimizers)
    return f"configure_optimizers returns {count} optimizer{'s' if count != 1 else ''}"


def _returns_schedulers(spec: Spec, model: ClassFacts) -> bool:
    """configure_optimizers returns LR schedulers: `loop.lr_schedulers`, else read from its source."""
    if spec.loop.lr_schedulers is not None:
        return spec.loop.lr_schedulers
    return model.mentions_scheduler


def _spec_scheduler(ref: ClassRef, problems: list[Problem]) -> Scheduler:
    """The spec's lr_scheduler, as LightningCLI configures it: every epoch; ReduceLROnPlateau reads `monitor`."""
    args = dict(ref.init_args)
    plateau = ref.name == "ReduceLROnPlateau"
    monitor = args.pop("monitor", None) if plateau else None
    if plateau and monitor is None:
        problems.append(
            Problem("lr_scheduler.init_args.monitor", "ReduceLROnPlateau needs a `monitor` metric", ref.line)
        )
    return Scheduler(
        var="scheduler",
        cls=Construct(ref.module, ref.name, args),
        in_dict=False,
        interval="epoch",
        frequency=1,
        every_time=True,
        plateau=plateau,
        monitor=monitor,
        strict=True,
        optimizer_idx=0,
    )


def _source_scheduler(
    facts: SchedulerFacts,
    index: int,
    total: int,
    optimizers: OptimizersFacts,
    count: int,
    manual: bool,
    problems: list[Problem],
    line: int | None,
) -> Scheduler | None:
    """A scheduler configure_optimizers builds, with Lightning's defaults for what its dict leaves out. Under manual
    optimization the module steps it: Lightning ignores `monitor`, `strict` and `reduce_on_plateau` there."""
    config = dict(facts.config or {})
    where = "model.class_path"
    optimizer_idx = facts.optimizer if facts.optimizer is not None else (0 if count == 1 else None)
    if optimizer_idx is None:
        return None
    interval = config.get("interval", "epoch")
    if interval not in ("step", "epoch"):
        problems.append(Problem(where, f'lr_scheduler "interval" must be "step" or "epoch", not {interval!r}', line))
    frequency = config.get("frequency", 1)
    if not isinstance(frequency, int) or isinstance(frequency, bool) or frequency < 1:
        problems.append(Problem(where, f'lr_scheduler "frequency" must be a positive integer, not {frequency!r}', line))
        frequency = 1
    plateau = not manual and config.get("reduce_on_plateau", facts.cls == "ReduceLROnPlateau")
    monitor = config.get("monitor") if facts.config is not None else optimizers.monitor
    if plateau and monitor is None:
        message = "configure_optimizers returns a ReduceLROnPlateau scheduler without a `monitor` metric"
        problems.append(Problem(where, message, line))
    return Scheduler(
        var="scheduler" if total == 1 else f"scheduler_{index}",
        cls=None,
        in_dict=facts.config is not None,
        interval=interval,
        frequency=frequency,
        every_time=frequency == 1,
        plateau=bool(plateau),
        monitor=monitor if plateau else None,
        strict=bool(config.get("strict", True)),
        optimizer_idx=optimizer_idx,
        name=facts.name,
    )


def frequencies_of(
    spec: Spec, model: ClassFacts, optimizers: Optimizers, problems: list[Problem]
) -> tuple[int, ...] | None:
    """The optimizer frequencies (1.9.5): from configure_optimizers' source, or declared in `loop:`."""
    declared = spec.loop.optimizer_frequencies
    read = model.optimizers.frequencies if model.optimizers is not None and spec.optimizer is None else None
    if (declared or read) and not optimizers.several:
        problems.append(
            Problem("loop.optimizer_frequencies", f"{spec.model.name}.training_step has no `optimizer_idx` parameter")
        )
        return None
    if declared and read is not None and tuple(declared) != read:
        message = f"{list(declared)}, but configure_optimizers returns the frequencies {list(read)}"
        problems.append(Problem("loop.optimizer_frequencies", message))
    if declared and not optimizers.general and read is None:
        problems.append(
            Problem("loop.optimizer_frequencies", 'configure_optimizers returns no frequencies (no "frequency" keys)')
        )
    frequencies = read if read is not None else declared
    return tuple(frequencies) if frequencies else None
