"""Stage 3: Spec + ClassFacts -> Plan, every decision the script depends on.

The Plan is frozen data made of small per-feature parts. Each part lives in its own module of this package with
the `resolve_*` function that computes it and that function's private helpers (the precision in precision.py,
ModelCheckpoint and EarlyStopping in checkpointing.py, the DDP engine in ddp.py, ...). `make_plan` below calls
them in dependency order; a part may read the parts resolved before it. Those functions are the only place where
flags interact (Lightning's rules for max_epochs and max_steps, what fast_dev_run and overfit_batches do to the
limits, native AMP with LBFGS refused, ...): every condition that combines flags is one named field. Templates
test the fields and print code; nothing in the Plan is Python source, only values, names of script variables
and of the user's classes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from loopgen.errors import LoopgenError, Problem
from loopgen.plan.bounds import Bounds, resolve_bounds
from loopgen.plan.build import Build, resolve_build
from loopgen.plan.callbacks import resolve_hooks
from loopgen.plan.checkpointing import Checkpointing, resolve_checkpointing
from loopgen.plan.command_line import CommandLine, resolve_command_line
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.compiling import Compiling, resolve_compiling
from loopgen.plan.constants import Constants, resolve_constants
from loopgen.plan.data import Data, resolve_data
from loopgen.plan.distributed import Distributed
from loopgen.plan.engine import resolve_engine
from loopgen.plan.epoch import Epoch, resolve_epoch
from loopgen.plan.evaluation import (
    Evaluation,
    evaluation_variables,
    resolve_evaluation,
    with_callback_order,
    with_trainer_attributes,
)
from loopgen.plan.failure import Failure, resolve_failure
from loopgen.plan.guards import Guards, resolve_guards
from loopgen.plan.header import Header, resolve_header
from loopgen.plan.hooks import (
    Hooks,
    builtin_facts,
    check_callbacks,
    check_data,
    check_model,
    resolve_user_code,
    with_base_reads,
)
from loopgen.plan.loggers import Logging, check_logger_experiments, resolve_logging
from loopgen.plan.manual import Manual, resolve_manual
from loopgen.plan.metrics import Metrics, resolve_metrics
from loopgen.plan.optimization import Optimization, resolve_optimization
from loopgen.plan.optimizers import Optimizers, resolve_optimizers
from loopgen.plan.precision import Device, Precision, resolve_device, resolve_precision
from loopgen.plan.profiling import Profiling, resolve_profiling
from loopgen.plan.progress import Progress, resolve_progress
from loopgen.plan.pruning import Pruning, resolve_pruning
from loopgen.plan.state import State, resolve_state
from loopgen.plan.summary import Summary, resolve_summary
from loopgen.plan.swa import Swa, resolve_swa
from loopgen.plan.timer import Timer, resolve_timer
from loopgen.plan.validation import Validation, resolve_validation
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Helpers:
    """Helper functions more than one feature needs."""

    map_tensors: bool
    numpy: bool  # main() looks numpy up (seeded, its state kept by the sanity check and the checkpoints)
    loads_checkpoints: bool  # load_checkpoint / restore: fit resumes, or an evaluation loads weights
    num_batches: bool  # a loop runs fewer batches than its loader has (a limit_*_batches)
    one_loader: bool  # fit validates one loader: one in a list is that loader
    loaders_of: bool  # a loop takes several loaders (evaluation, or fit's validation of several)
    as_returned: bool  # trainer.<stage>_dataloaders: the loaders as the hook returned them


@dataclass(frozen=True)
class Plan:
    header: Header
    build: Build
    state: State
    device: Device
    data: Data
    bounds: Bounds
    validation: Validation
    evaluation: Evaluation
    precision: Precision
    optimizers: Optimizers
    optimization: Optimization
    metrics: Metrics
    hooks: Hooks
    checkpointing: Checkpointing
    timer: Timer | None
    swa: Swa | None
    pruning: Pruning | None
    failure: Failure
    logging: Logging
    summary: Summary
    profiling: Profiling
    progress: Progress
    constants: Constants
    helpers: Helpers
    epoch: Epoch
    command_line: CommandLine
    manual: Manual
    distributed: Distributed
    compiling: Compiling
    guards: Guards
    notices: tuple[str, ...] = ()  # decisions the user should hear about

    @property
    def throughput_logged(self) -> bool:
        """ThroughputMonitor's rows also go to trainer.logged_metrics, which the user's code reads (Lightning's
        logger connector puts them there)."""
        throughput = self.logging.throughput
        return throughput is not None and throughput.writes and self.state.has("logged_metrics")

    @property
    def reads_logged(self) -> bool:
        """trainer.callback_metrics, logged_metrics or progress_bar_metrics is read (by the user's code, Lightning's
        callbacks or the bar): the script's MetricLog brings them up to date when read, as Lightning's do."""
        return self.metrics.collect and (self.state.reads_metrics or self.metrics.progress_bar)

    @property
    def builds_on_device(self) -> bool:
        """configure_model builds the layers on the process's device (Lightning's strategies' tensor_init_context),
        but under ModelParallelStrategy and FSDPStrategy on the CPU, moved to the device once sharded."""
        return self.device.moves and not self.distributed.shards_module

    @property
    def configure_model_place(self) -> str:
        """Where configure_model builds the layers, in words for the script's comment."""
        if self.distributed.model_parallel:
            return "the CPU, and shards them on the device mesh"
        if self.distributed.fsdp:
            return "the CPU, where torch's wrap() wraps a layer in FullyShardedDataParallel"
        return "the device" if self.builds_on_device else "the CPU"

    @property
    def fsdp_dtype(self) -> str:
        """FSDPStrategy's MixedPrecision dtype (gathered parameters, reduced gradients, buffers): FSDPPrecision's,
        from the precision."""
        return {"bf16-mixed": "bfloat16", "bf16-true": "bfloat16", "16-true": "float16"}.get(self.precision.name,
                                                                                           "float32")  # fmt: skip

    @property
    def fsdp_full_state(self) -> bool:
        """The FSDP script reads or writes full-state checkpoints: it saves them, or resumes (from either kind)."""
        saves_full = self.checkpointing.saves and not self.distributed.sharded_checkpoints
        return saves_full or self.checkpointing.resumes

    @property
    def fsdp_sharded_state(self) -> bool:
        """... and sharded ones."""
        saves_sharded = self.checkpointing.saves and self.distributed.sharded_checkpoints
        return saves_sharded or self.checkpointing.resumes

    @property
    def dummy_logger(self) -> bool:
        """fast_dev_run's DummyLogger is read (trainer.logger, trainer.loggers, self.logger): the script has one."""
        return self.logging.dummy and self.state.serves_loggers

    @property
    def moves_model(self) -> bool:
        """The module goes to the device before the engine wraps it; FullyShardedDataParallel moves it itself
        (device_id), as Lightning's FSDPStrategy leaves it to."""
        return self.device.moves and not self.distributed.fsdp


def make_plan(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts | None, ...],
    script_name: str = "train.py",
    objects: Mapping[str, ClassFacts | None] | None = None,
) -> Plan:
    """Every decision, from the spec and what the user's source says; all problems are reported together.

    `callbacks` holds the facts of each of the spec's callbacks, None for Lightning's own (ModelCheckpoint,
    EarlyStopping, LearningRateMonitor), which the script implements itself. `objects` holds the facts of the
    classes of the objects given as init args (None for a class outside the project), by class path."""
    problems: list[Problem] = []
    notices: list[str] = []
    check_model(spec, model, problems)
    pruning = resolve_pruning(spec, model, problems)
    callbacks = builtin_facts(spec, callbacks, pruning)
    check_callbacks(spec, model, callbacks, problems)
    callbacks = tuple(None if facts is None else with_base_reads(facts) for facts in callbacks)
    user_callbacks = tuple(facts for facts in callbacks if facts is not None)
    user = resolve_user_code(spec, model, data, callbacks)
    device = resolve_device(spec)
    precision = resolve_precision(spec, model, device, problems, notices)
    optimizers = resolve_optimizers(spec, model, precision, problems)
    data_plan = resolve_data(spec, model, data, problems)
    bounds = resolve_bounds(spec, model, user_callbacks, data_plan)
    validation = resolve_validation(spec, model, user, data_plan, bounds, problems)
    optimization = resolve_optimization(spec, model, user, optimizers, bounds, validation, problems)
    logging = resolve_logging(
        spec, model, data, user_callbacks, validation, optimizers, optimization, problems, notices
    )
    timer = resolve_timer(spec, problems, notices)
    swa = resolve_swa(spec, model, user_callbacks, problems)
    checkpointing = resolve_checkpointing(
        spec, model, data, user, validation, optimization, bounds, logging, timer, swa, problems
    )
    summary, summaries = resolve_summary(spec, model, data_plan, device, precision, problems)
    profiling = resolve_profiling(spec, logging, problems, notices)
    progress = resolve_progress(spec, model, user_callbacks, bounds, validation, logging, problems, notices)
    distributed = resolve_engine(spec, model, precision, optimizers, optimization, data_plan,
                                 checkpointing, logging, profiling, progress, timer, problems)  # fmt: skip
    manual = resolve_manual(spec, model, user, distributed, problems)
    compiling = resolve_compiling(spec, model, problems)
    if problems:
        raise LoopgenError(problems)
    evaluation = resolve_evaluation(spec, model, data, user, data_plan, distributed, logging, progress, problems,
                                    notices)  # fmt: skip
    check_data(spec, data, checkpointing.saves or checkpointing.resumes or evaluation.enabled, problems)
    hooks = resolve_hooks(spec, user, checkpointing, logging, summaries, progress, timer, swa)
    evaluation = with_callback_order(evaluation, hooks.callbacks)
    metrics = resolve_metrics(spec, model, user_callbacks, hooks, optimizers, optimization, checkpointing, logging,
                              progress, distributed, evaluation, data_plan, problems)  # fmt: skip
    if problems:
        raise LoopgenError(problems)
    state = resolve_state(
        spec,
        model,
        data,
        user_callbacks,
        device,
        bounds,
        optimizers,
        optimization,
        metrics,
        checkpointing,
        timer,
        profiling,
        distributed,
    )
    hooks = replace(hooks, stops=state.has("should_stop"))
    check_logger_experiments(model, user_callbacks, logging)
    epoch = resolve_epoch(hooks, optimization, checkpointing, state)
    build = resolve_build(spec, hooks.callbacks, model, data, callbacks, objects or {})
    header = resolve_header(spec, script_name, follows_1_9_5(spec, model))
    guards = resolve_guards(spec, build, model, data, callbacks, objects or {}, distributed)
    command_line = resolve_command_line(spec, build, bounds, checkpointing, evaluation, distributed, guards)
    helpers = resolve_helpers(build, device, precision, optimization, validation, hooks, data_plan, checkpointing,
                              evaluation, state)  # fmt: skip
    evaluation = with_trainer_attributes(evaluation, state.attributes)
    variables = evaluation_variables(evaluation, device, metrics.collect, checkpointing, logging, profiling)
    evaluation = replace(evaluation, variables=variables)
    profiling = replace(profiling, stages=profiling.enabled and evaluation.enabled)
    return Plan(
        header=header,
        build=build,
        state=state,
        device=device,
        data=data_plan,
        bounds=bounds,
        validation=validation,
        evaluation=evaluation,
        precision=precision,
        optimizers=optimizers,
        optimization=optimization,
        metrics=metrics,
        hooks=hooks,
        checkpointing=checkpointing,
        timer=timer,
        swa=swa,
        pruning=pruning,
        failure=resolve_failure(hooks, logging, follows_1_9_5(spec, model)),
        logging=logging,
        summary=summary,
        profiling=profiling,
        progress=progress,
        constants=resolve_constants(build, state, bounds, validation, checkpointing, logging, profiling),
        helpers=helpers,
        command_line=command_line,
        notices=tuple(notices),
        manual=manual,
        epoch=epoch,
        distributed=distributed,
        compiling=compiling,
        guards=guards,
    )


def resolve_helpers(
    build: Build,
    device: Device,
    precision: Precision,
    optimization: Optimization,
    validation: Validation,
    hooks: Hooks,
    data: Data,
    checkpointing: Checkpointing,
    evaluation: Evaluation,
    state: State,
) -> Helpers:
    """The script's helper functions that more than one feature calls."""
    return Helpers(
        map_tensors=precision.casts
        or optimization.tbptt
        or (device.moves_batches and data.batch_hook("transfer_batch_to_device") is None)
        or (device.moves and evaluation.has("predict")),  # the predictions, to the CPU
        # main() seeds numpy (and reseeds it under DDP) and keeps its state across the sanity check
        numpy=build.seeds or validation.sanity,
        loads_checkpoints=checkpointing.resumes or evaluation.enabled,
        num_batches=data.counts or evaluation.counts,
        one_loader=validation.enabled and not data.several_val and not data.one_val_loader_shown,
        loaders_of=evaluation.enabled or data.several_val,
        as_returned=evaluation.sets_loaders or (validation.enabled and state.has("val_dataloaders")),
    )
