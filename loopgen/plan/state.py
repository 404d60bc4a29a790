"""The script's `trainer` object: which of Lightning's Trainer attributes the user's code reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopgen.errors import LoopgenError, Problem
from loopgen.plan.bounds import Bounds
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.common import (
    FLAG_ATTRIBUTES,
    LOADER_ATTRIBUTES,
    METRIC_ATTRIBUTES,
    MODULE_API_READS,
    TRAINER_ATTRIBUTES,
    UNSERVED_TRAINER_ATTRIBUTES,
    flag_problem,
    follows_1_9_5,
)
from loopgen.plan.distributed import Distributed
from loopgen.plan.metrics import Metrics
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Device
from loopgen.plan.profiling import Profiling
from loopgen.plan.timer import Timer
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class SchedulerConfig:
    """One of trainer.lr_scheduler_configs: Lightning's LRSchedulerConfig of the scheduler `var`, as Lightning
    builds it from configure_optimizers' return (its _configure_schedulers_automatic_opt / _manual_opt)."""

    var: str
    name: str | None
    interval: str
    frequency: int
    reduce_on_plateau: bool
    monitor: str | None
    strict: bool


@dataclass(frozen=True)
class State:
    """The object hooks and callbacks receive as `trainer`: the attributes something reads, or (where the reads
    cannot be listed) every public attribute of Lightning's Trainer, served or raising a clear error."""

    exists: bool
    attributes: frozenset[str]
    counters: bool  # current_epoch and global_step live on it (else they are local variables of main)
    attach_private: bool  # a LightningModule reads it through self.trainer: model._trainer = trainer
    attach_public: bool  # a plain module reads self.trainer: model.trainer = trainer
    attach_data: bool  # the data module reads self.trainer: data.trainer = trainer (Lightning's attach_datamodule)
    # ... and the model's child LightningModules, by their attribute paths (Lightning's trainer setter reaches them)
    attach_children: tuple[str, ...]
    mirror_epoch: bool  # a plain module reads self.current_epoch: the loop keeps model.current_epoch current
    mirror_step: bool
    local_rank: bool  # the script holds the rank on this node (the CUDA device, trainer.local_rank, the profiler)
    node_rank: bool  # ... and the node's rank (trainer.node_rank)
    # trainer.lr_scheduler_configs: one per scheduler the script holds by name (see scheduler_configs);
    # None: the general helper's schedulers, their configs made at run time
    scheduler_configs: tuple[SchedulerConfig, ...] | None = ()
    # the reads cannot all be listed (the trainer passed on, or read by a name computed at run time): the trainer
    # has every attribute of Lightning's, served, or one of `unserved`
    complete: bool = False
    # Lightning's attributes the trainer cannot serve in this spec, each with why and what to read instead:
    # reading one raises the script's TrainerAttributeError, saying so (only where `complete`: a read the
    # source shows is refused at render time)
    unserved: tuple[tuple[str, str], ...] = ()
    # the flags the trainer holds (FLAG_ATTRIBUTES it has), with the values Lightning's Trainer gives them
    flag_values: tuple[tuple[str, Any], ...] = ()
    # trainer.val_check_batch as the training data loads: an int val_check_interval, or (None) the fraction's
    # batches, `val_check_fraction` of the epoch's
    val_check_every: int | None = None
    val_check_fraction: float = 1.0
    # trainer.estimated_stepping_batches needs the training data (max_epochs is not -1): the script loads it when
    # the estimate is first read, where Lightning loads it, or where Lightning's fit loop starts
    loads_on_demand: bool = False

    @property
    def estimates(self) -> bool:
        """trainer.estimated_stepping_batches is served: computed when read, from the training data (loaded
        then if it is not yet, as Lightning's is)."""
        return "estimated_stepping_batches" in self.attributes

    @property
    def serves_loggers(self) -> bool:
        """trainer.logger or trainer.loggers is read: the script's loggers are handed to the user's code, with
        Lightning's `experiment` (the writer or client underneath)."""
        return self.has("logger") or self.has("loggers")

    @property
    def own_class(self) -> bool:
        """The trainer is an object of the script's Trainer class (properties computed when read, attributes that
        raise), not a plain namespace."""
        return bool(self.unserved) or self.reads_metrics or self.loads_on_demand or self.has("print")

    @property
    def reads_metrics(self) -> bool:
        """trainer.callback_metrics, logged_metrics or progress_bar_metrics is read: properties that bring the
        script's metric dicts up to date when read, as Lightning's do."""
        return bool(self.attributes & METRIC_ATTRIBUTES)

    def has(self, name: str) -> bool:
        return name in self.attributes


def scheduler_configs(
    spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], optimizers: Optimizers
) -> tuple[SchedulerConfig, ...] | None | str:
    """trainer.lr_scheduler_configs: Lightning's LRSchedulerConfig of each scheduler, from what configure_optimizers'
    source (or the spec's lr_scheduler, as LightningCLI returns it) shows; the general helper's at run time.

    Refused where the script cannot know a config as Lightning holds it; a trainer passed on without reading
    the attribute by name gets the reason instead (a str), which its attribute raises when read."""
    named = any("lr_scheduler_configs" in facts.trainer_named for facts in (model, *callbacks))
    reason = ""
    if optimizers.several:
        reason = "with optimizer_idx (Lightning 1.9.5), whose configs hold opt_idx"
    elif optimizers.general:  # configs made at run time, where the helper returns schedulers
        return None if optimizers.general_schedulers else ()
    facts = model.optimizers
    named_in_source = facts is None or all(s.name_known for s in facts.schedulers)
    if not reason and spec.optimizer is None and not named_in_source:
        reason = 'configure_optimizers gives a scheduler a "name" its source does not show'
    if reason:
        if not named:
            return f"the script cannot serve it {reason}; read the schedulers from configure_optimizers' return"
        at = {name: where for facts in (model, *callbacks) for name, where in facts.trainer_read_at.items()}
        message = f"reads trainer.lr_scheduler_configs, which the script cannot serve {reason}"
        raise LoopgenError([Problem(at.get("lr_scheduler_configs", ""), message)])
    manual = optimizers.manual
    configs = []
    for index, planned in enumerate(optimizers.schedulers):
        if spec.optimizer is not None:  # LightningCLI: {"scheduler": s, "monitor": m} for ReduceLROnPlateau
            entry = {"monitor": planned.monitor} if planned.plateau else None
            plateau, outer_monitor = planned.plateau, None
        else:
            source = facts.schedulers[index]
            entry = None if source.config is None else dict(source.config)
            if entry is not None and source.name is not None:
                entry["name"] = source.name
            plateau = source.cls == "ReduceLROnPlateau"
            outer_monitor = facts.monitor if facts.form == "dict" else None
        configs.append(_lightning_scheduler_config(planned.var, entry, plateau, outer_monitor, manual))
    return tuple(configs)


def _lightning_scheduler_config(
    var: str, entry: Mapping[str, Any] | None, plateau: bool, outer_monitor: str | None, manual: bool
) -> SchedulerConfig:
    """Lightning's LRSchedulerConfig of a scheduler given bare (`entry` None) or in a dict (its other keys)."""
    given = dict(entry or {})
    if manual:  # Lightning ignores these keys in manual optimization
        given = {key: value for key, value in given.items() if key not in ("reduce_on_plateau", "monitor", "strict")}
    elif entry is not None:
        given.setdefault("reduce_on_plateau", plateau)
    elif plateau:
        given = {"reduce_on_plateau": True, "monitor": outer_monitor}
    return SchedulerConfig(
        var=var,
        name=given.get("name"),
        interval=given.get("interval", "epoch"),
        frequency=given.get("frequency", 1),
        reduce_on_plateau=bool(given.get("reduce_on_plateau", False)),
        monitor=given.get("monitor"),
        strict=given.get("strict", True),
    )


def resolve_state(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts, ...],
    device: Device,
    bounds: Bounds,
    optimizers: Optimizers,
    optimization: Optimization,
    metrics: Metrics,
    checkpointing: Checkpointing,
    timer: Timer | None,
    profiling: Profiling,
    distributed: Distributed,
) -> State:
    """The `trainer` object: the attributes the model, the data module and the callbacks read, each one true; every
    attribute of Lightning's (or its clear error) where the reads cannot be listed."""
    readers = (model, *([data] if data is not None else []), *callbacks)
    reads: set[str] = set()
    if checkpointing.checkpoints:  # what the script's ModelCheckpoint reads
        reads |= {"current_epoch", "global_step", "sanity_checking", "ckpt_path"}
        reads |= {"num_training_batches"} if checkpointing.defers else set()
        reads |= {"callback_metrics"} if checkpointing.reads_metrics else set()
    if checkpointing.early_stopping:  # ... and its EarlyStopping
        reads |= {"current_epoch", "sanity_checking", "should_stop", "callback_metrics"}
    if timer is not None and timer.stops:  # ... and its Timer
        reads.add("should_stop")
    if model.manual_optimization:  # the wrapped optimizers count global_step; toggle_optimizer reads optimizers
        reads |= {"global_step", "current_epoch"}  # the loop's counters live on the trainer then
        reads |= {"optimizers"} if model.attributes_read & {"toggle_optimizer", "untoggle_optimizer"} else set()
    # what the source reads by name is served (or refused here) even where something else passes the trainer on
    complete = False
    for facts in readers:
        complete = complete or facts.trainer_reads is None
        reads |= facts.trainer_named | (facts.trainer_reads or set())
    counters = {"current_epoch", "global_step"}
    module_counters = model.attributes_read | {r for facts in callbacks for r in facts.module_reads}
    module_loggers = module_counters & {"logger", "loggers"}
    api_reads = {read for name in module_counters & set(MODULE_API_READS) for read in MODULE_API_READS[name]}
    # Lightning's toggle_optimizer reads self.trainer.optimizers
    toggles = model.manual_optimization and bool(model.attributes_read & {"toggle_optimizer", "untoggle_optimizer"})
    if model.is_lightning_module:
        reads |= module_counters & counters  # a LightningModule's counters are read through its trainer
        reads |= module_loggers  # ... and its self.logger, self.loggers
        reads |= api_reads  # ... and what its methods read (self.all_gather: trainer.strategy)
    # where each attribute is first read, for the refusals below
    where = {name: at for facts in readers for name, at in facts.trainer_read_at.items()}
    _refuse_unknown(reads, where)
    wrapped = distributed.kind in ("ddp", "dp")  # Lightning's trainer.model: its wrapper around the module
    seed_loop = follows_1_9_5(spec, model)
    unservable = _unservable(spec, optimization, wrapped, distributed.kind, seed_loop)
    _refuse_named(spec, reads & set(unservable), where, distributed.kind)
    configs = (
        scheduler_configs(spec, model, callbacks, optimizers) if complete or "lr_scheduler_configs" in reads else ()
    )
    if isinstance(configs, str):
        unservable["lr_scheduler_configs"] = configs
    attributes = frozenset(TRAINER_ATTRIBUTES) - set(unservable) if complete else frozenset(reads)
    if not metrics.collect:  # (never where complete: every attribute read keeps what is logged)
        attributes -= METRIC_ATTRIBUTES
    if attributes & counters:  # the loop counts on the trainer: both counters live there
        attributes |= counters
    if "estimated_stepping_batches" in attributes:  # computed from these when read, as Lightning's is
        attributes |= {"num_training_batches", "max_epochs", "max_steps"}
    if "print" in attributes:  # Lightning's prints on each node's first process
        attributes |= {"local_rank"}
    data_reads_trainer = data is not None and (data.trainer_reads is None or bool(data.trainer_reads))
    # the user's callbacks get it, and a data module reading it
    exists = bool(attributes) or bool(callbacks) or bool(checkpointing.directories) or data_reads_trainer
    module_reads_trainer = (model.trainer_reads or set()) != set() or model.trainer_reads is None
    plain_counters = set() if model.is_lightning_module else module_counters & counters
    flags = flag_values(spec)
    interval = dict(flags)["val_check_interval"]
    return State(
        exists=exists,
        attributes=attributes,
        counters=bool(attributes & counters),
        attach_private=model.is_lightning_module
        and (
            module_reads_trainer
            or bool(module_counters & counters)
            or bool(module_loggers)
            or bool(api_reads)
            or toggles
        ),
        attach_public=not model.is_lightning_module and module_reads_trainer,
        attach_data=data_reads_trainer,
        attach_children=model.child_modules if model.is_lightning_module else (),
        mirror_epoch="current_epoch" in plain_counters,
        mirror_step="global_step" in plain_counters,
        scheduler_configs=() if isinstance(configs, str) else configs,
        local_rank=distributed.enabled and (device.moves or "local_rank" in attributes or profiling.ranked),
        node_rank=distributed.enabled and "node_rank" in attributes,
        complete=complete,
        unserved=tuple(sorted(unservable.items())) if complete else (),
        flag_values=tuple((name, value) for name, value in flags if name in attributes),
        val_check_every=interval if isinstance(interval, int) else None,
        val_check_fraction=float(interval),
        loads_on_demand="estimated_stepping_batches" in attributes and bounds.estimate_epochs != -1,
    )


def _refuse_unknown(reads: set[str], where: Mapping[str, str]) -> None:
    """A read of what Lightning's Trainer has and the script never serves (with the reason), or of what it does not
    have at all."""
    unknown = sorted(reads - set(TRAINER_ATTRIBUTES) - {"_trainer"})
    if unknown:
        supported = ", ".join(TRAINER_ATTRIBUTES)
        instead = f"compute it in your code or remove the read (the script's trainer provides {supported})"
        raise LoopgenError(
            [
                Problem(
                    where.get(name, ""),
                    f"reads trainer.{name}, which the script's trainer does not provide: "
                    + UNSERVED_TRAINER_ATTRIBUTES.get(name, instead),
                )
                for name in unknown
            ]
        )


def _unservable(spec: Spec, optimization: Optimization, wrapped: bool, kind: str, seed_loop: bool) -> dict[str, str]:
    """Lightning's attributes the script cannot serve in this spec, each with why and what to read instead: those
    it never serves (UNSERVED_TRAINER_ATTRIBUTES), and those this spec's flags put out of reach."""
    unservable = dict(UNSERVED_TRAINER_ATTRIBUTES)
    if spec.accumulation_callback:
        unservable["accumulate_grad_batches"] = (
            "with a GradientAccumulationScheduler entry Lightning 2.x changes it where the entry stands among the"
            " callbacks, and it is 1 until the first epoch starts (the script sets it after all of your callbacks'"
            " on_train_epoch_start); give the schedule as `accumulate_grad_batches: {epoch: factor}`, whose value"
            " the script gives as Lightning 1.9.5 does"
        )
    if wrapped:
        unservable["model"] = (
            f"with strategy {kind} Lightning's is its own wrapper around the module (DistributedDataParallel or"
            " DataParallel over its _LightningModuleWrapperBase), whose names and state_dict keys the script's"
            " wrapper does not have; read trainer.lightning_module"
        )
    if kind not in (None, "ddp"):
        unservable["strategy"] = _STRATEGY_UNSERVED.format(kind=kind)
    if seed_loop:
        for name in LOADER_ATTRIBUTES:
            unservable[name] = (
                "in a spec that follows Lightning 1.9.5 it is 1.9.5's own CombinedLoader (training) or list of"
                " loaders, which the script does not build; keep the loader your *_dataloader() hook returns, or"
                " follow Lightning 2.x"
            )
    if optimization.names_schedule:
        unservable["estimated_stepping_batches"] = (
            "with an accumulation schedule Lightning refuses it too (the number of steps per epoch changes with"
            " the schedule); use a constant accumulate_grad_batches, or count the steps in configure_optimizers"
        )
    return unservable


_STRATEGY_UNSERVED = (
    "with strategy {kind} the script serves no strategy object (it serves the one-device and DDP strategies' "
    "collectives); read trainer.world_size, global_rank and is_global_zero"
)


def _refuse_named(spec: Spec, named: set[str], where: Mapping[str, str], kind: str) -> None:
    """A read the source shows of an attribute this spec's flags put out of reach: refused at its line."""
    if "accumulate_grad_batches" in named:
        message = refusal(
            "trainer.accumulate_grad_batches with a GradientAccumulationScheduler entry",
            "Lightning 2.x changes it where the entry stands among the callbacks, and it is 1 until the first"
            " epoch starts; the script sets it after all of your callbacks' on_train_epoch_start",
            "give the schedule as `accumulate_grad_batches: {epoch: factor}`, whose value the script gives as"
            " Lightning 1.9.5 does",
        )
        raise LoopgenError(Problem(where.get("accumulate_grad_batches", ""), message))
    if "model" in named:
        message = refusal(
            f"trainer.model with strategy {kind}",
            "Lightning's is its own wrapper around the module (DistributedDataParallel or DataParallel over"
            " its _LightningModuleWrapperBase), whose names and state_dict keys the script's wrapper does not have",
            "read trainer.lightning_module",
        )
        raise LoopgenError(Problem(where.get("model", ""), message))
    if named & LOADER_ATTRIBUTES:
        name = min(named & LOADER_ATTRIBUTES)
        message = refusal(
            f"trainer.{name} in a spec that follows Lightning 1.9.5",
            "1.9.5's are its own CombinedLoader (training) and lists of loaders, which the script does not build",
            "keep the loader your *_dataloader() hook returns, or follow Lightning 2.x",
        )
        raise LoopgenError(Problem(where.get(name, ""), message))
    if "strategy" in named:
        message = f"reads trainer.strategy, which the script's trainer does not provide: {_STRATEGY_UNSERVED}"
        raise LoopgenError(Problem(where.get("strategy", ""), message.format(kind=kind)))
    if "estimated_stepping_batches" in named:
        message = refusal(
            "trainer.estimated_stepping_batches with an accumulation schedule",
            "Lightning 1.9.5 refuses it too: the number of steps per epoch changes with the schedule",
            "use a constant accumulate_grad_batches, or count the steps in configure_optimizers yourself",
        )
        raise LoopgenError(flag_problem(spec, "accumulate_grad_batches", message))


def flag_values(spec: Spec) -> tuple[tuple[str, Any], ...]:
    """FLAG_ATTRIBUTES with the values Lightning's Trainer gives them from the spec's flags (its
    _init_debugging_flags: fast_dev_run and overfit_batches set the limits; -1 sanity steps is inf)."""
    t = spec.trainer
    fast = t.fast_dev_run
    limits = {stage: getattr(t, f"limit_{stage}_batches") for stage in ("train", "val", "test", "predict")}
    sanity = float("inf") if t.num_sanity_val_steps == -1 else t.num_sanity_val_steps
    interval, every_n = t.val_check_interval, t.check_val_every_n_epoch
    if fast:
        limits = dict.fromkeys(limits, int(fast))
        sanity, interval, every_n = 0, 1.0, 1
    if t.overfit_batches > 0:
        limits["train"] = limits["val"] = t.overfit_batches
    given = spec.trainer_given
    values = {
        "barebones": t.barebones,
        "check_val_every_n_epoch": every_n,
        "enable_autolog_hparams": t.enable_autolog_hparams,
        "fast_dev_run": bool(fast) if fast in (0, 1) else fast,  # Lightning's True for 1
        "gradient_clip_algorithm": t.gradient_clip_algorithm if "gradient_clip_algorithm" in given else None,
        "gradient_clip_val": t.gradient_clip_val,
        **{f"limit_{stage}_batches": limit for stage, limit in limits.items()},
        "log_every_n_steps": t.log_every_n_steps,
        "num_sanity_val_steps": sanity,
        "overfit_batches": t.overfit_batches,
        "reload_dataloaders_every_n_epochs": t.reload_dataloaders_every_n_epochs,
        "val_check_interval": interval,
    }
    return tuple((name, values[name]) for name in FLAG_ATTRIBUTES)
