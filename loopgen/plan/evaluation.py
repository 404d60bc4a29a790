"""validate, test and predict: LightningCLI's other subcommands, as the script's command line offers them."""

from __future__ import annotations

from dataclasses import dataclass, replace

from loopgen.errors import Problem
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.common import batch_limits, follows_1_9_5, limits_batches, takes_dataloader_idx, takes_two
from loopgen.plan.data import Data
from loopgen.plan.distributed import Distributed
from loopgen.plan.hooks import EVALUATION_HOOKS, UserCode
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import Callback, is_lightning
from loopgen.plan.precision import Device
from loopgen.plan.profiling import Profiling
from loopgen.plan.progress import Progress
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import Spec

# Lightning's names, by subcommand: the loader's prefix (limit_<prefix>_batches, <prefix>_dataloader), the step,
# and the hooks' infix (on_<infix>_start, on_<infix>_model_eval, ...)
STAGES = {
    "validate": ("val", "validation_step", "validation"),
    "test": ("test", "test_step", "test"),
    "predict": ("predict", "predict_step", "predict"),
}


@dataclass(frozen=True)
class Stage:
    """One subcommand the script has: where its batches come from and what it calls."""

    command: str  # "validate" | "test" | "predict": the subcommand, and the `stage` setup() and teardown() get
    prefix: str  # "val" | "test" | "predict"
    step: str  # the module's step method
    infix: str  # "validation" | "test" | "predict"
    owner: str  # "data" | "model": whose <prefix>_dataloader() gives the loaders
    takes_batch_idx: bool  # the step takes batch_idx (Lightning passes it when the step has 2 parameters)
    takes_dataloader_idx: bool  # ... and dataloader_idx, which Lightning requires with several loaders
    default_step: bool  # predict without predict_step: Lightning's default calls the module on the batch
    limit: int | float  # limit_<prefix>_batches
    counts: bool  # the limit is not 1.0: the num_batches helper decides each loader's batches
    model_eval_hook: bool  # the module overrides on_<infix>_model_eval (else eval() on every submodule)
    model_train_hook: bool  # ... on_<infix>_model_train (else `after`; predict: always)
    model_hooks: frozenset[str]  # the module's evaluation hooks, by their full names
    returns_metrics: bool  # validate and test return the logged metrics and print them as a table
    # the training flags after the run, without an on_<infix>_model_train of the module: "restore" (each
    # submodule's as before, Lightning 2.x) | "train" (every submodule in train mode: Lightning 1.9.5's default
    # on_validation_model_train / on_test_model_train) | "eval" (left in eval mode: 1.9.5's predict)
    after: str
    # Lightning 1.9.5's predict: on_predict_epoch_end gets the predictions (a list per loader), as do a prediction
    # writer's write_on_epoch_end (a list per loader, one loader too)
    epoch_end_outputs: bool
    # Lightning 1.9.5's <infix>_step_end (the step's output through it) and <infix>_epoch_end (the steps' outputs)
    step_end: bool
    epoch_end: bool
    callbacks: tuple[Callback, ...]  # the callbacks with hooks of this stage (a DeviceStatsMonitor's included)
    # the trainer's attributes of this stage that something reads (set by make_plan once `trainer` is known):
    # its number of batches per loader (num_val_batches, ...) and its loaders (val_dataloaders, ...)
    sets_batches: bool = False
    sets_loaders: bool = False
    # ... and whether the trainer has should_stop (a DeviceStatsMonitor's writes when it is set, even after fit)
    stops: bool = False

    @property
    def takes_trainer(self) -> bool:
        """The stage's function gets `trainer`: for the callbacks' hooks (a DeviceStatsMonitor reads only
        should_stop), or to set its attributes."""
        hooked = any(c.kind != "device_stats" or self.stops for c in self.callbacks)
        return hooked or self.sets_batches or self.sets_loaders

    @property
    def batches_attribute(self) -> str:
        """The trainer's number of batches per loader of this stage (Lightning's property)."""
        return {"validate": "num_val_batches", "test": "num_test_batches", "predict": "num_predict_batches"}[
            self.command
        ]

    @property
    def loaders_attribute(self) -> str:
        """The trainer's loaders of this stage (Lightning's property)."""
        return f"{self.prefix}_dataloaders"

    @property
    def writers(self) -> tuple[Callback, ...]:
        """The BasePredictionWriter callbacks (predict): their write_on_batch_end / write_on_epoch_end."""
        return tuple(c for c in self.callbacks if c.writer)

    @property
    def output_used(self) -> bool:
        """The step's output is kept: the predictions, or an on_<infix>_batch_end hook gets it (a
        DeviceStatsMonitor's does not)."""
        end = self.hook("on_{}_batch_end")
        hooked = end in self.model_hooks or any(end in c.hooks and c.kind != "device_stats" for c in self.callbacks)
        return not self.returns_metrics or hooked or self.step_end or self.epoch_end

    @property
    def function(self) -> str:
        return f"run_{self.command}"

    @property
    def bar_description(self) -> str:
        """The progress bar's description (Lightning's TQDMProgressBar)."""
        return {"validate": "Validation", "test": "Testing", "predict": "Predicting"}[self.command]

    def hook(self, place: str) -> str:
        """The hook's full name: hook("on_{}_start") is "on_test_start" for test."""
        return place.format(self.infix)

    def limit_constant(self) -> str:
        return f"LIMIT_{self.prefix.upper()}_BATCHES"


@dataclass(frozen=True)
class Evaluation:
    """The subcommands beside fit. Each exists when the module (or the data class) provides what it needs, and
    only on the engines and features whose evaluation the script serves; see `served`."""

    stages: tuple[Stage, ...]
    # what the runs are under: "inference_mode" | "no_grad" (the flag inference_mode false, or the gloo backend of
    # several processes, as Lightning has it) | "by_backend" (no_grad when the process group is gloo's)
    grad_context: str
    logs: bool  # validate and test write their values to the loggers (and every run its hyperparameters)
    bar: bool  # the progress bar shows each run (the script's own, or tqdm's for the spec's TQDMProgressBar)
    # several processes (ddp): each reads its share of every loader (Lightning's use_distributed_sampler), the
    # table and the loggers are the first process's
    shards: bool = False
    # ... the main() variables the samplers' shares read (ModelParallelStrategy's: the data-parallel rank; the
    # data-parallel size is a constant)
    share_variables: tuple[str, ...] = ("world_size", "global_rank")
    unrepeated: bool = False  # ... and predict's shares repeat no sample (Lightning's UnrepeatedDistributedSampler)
    rank_zero_gates: bool = False  # several processes: printing is the first process's
    feeds_device: bool = False  # several TPU devices: each loader becomes an MpDeviceLoader (XLAStrategy's)
    # strategy dp: each step runs through the DataParallel wrapper (dp_model) on every GPU's slice of the batch,
    # the outputs gathered (Lightning 1.9.5's DataParallelStrategy runs its evaluation steps as its training steps)
    data_parallel: bool = False
    # the results table is rich's, as Lightning prints it when rich is installed (the spec's RichProgressBar, or a
    # subclass of it, brings rich; else the plain-text table)
    rich_table: bool = False
    # the constants of the limits the stages read that fit does not define (name, value)
    limit_constants: tuple[tuple[str, int | float], ...] = ()
    # main()'s variables evaluate() takes besides the model (set by make_plan once every part is known)
    variables: tuple[str, ...] = ()

    @property
    def enabled(self) -> bool:
        return bool(self.stages)

    @property
    def commands(self) -> tuple[str, ...]:
        return ("fit", *(s.command for s in self.stages))

    def has(self, command: str) -> bool:
        return any(s.command == command for s in self.stages)

    @property
    def counts(self) -> bool:
        return any(s.counts for s in self.stages)

    @property
    def returns_metrics(self) -> bool:
        return any(s.returns_metrics for s in self.stages)

    @property
    def writes_predictions(self) -> bool:
        return any(s.writers for s in self.stages)

    @property
    def sets_loaders(self) -> bool:
        """A stage sets the trainer's loaders (their structure rebuilt by the as_returned helper)."""
        return any(stage.sets_loaders for stage in self.stages)


def resolve_evaluation(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    user: UserCode,
    data_plan: Data,
    distributed: Distributed,
    logging: Logging,
    progress: Progress,
    problems: list[Problem],
    notices: list[str],
) -> Evaluation:
    """The subcommands the module provides: validate with validation_step, test with test_step, predict with
    predict_step or a forward() for Lightning's default predict_step; each with its loader, from the data class
    when there is one (Lightning reads only the datamodule's loaders then), else from the module.

    Which of them the script has: those `loop.subcommands` lists (each must be provided, and served), else every
    one provided when the module shows that it evaluates (a test_step or a predict_step of its own), else none:
    a fit-only module keeps a fit-only script (no evaluation code for a validation_step that fit runs)."""
    t = spec.trainer

    def owner(hook: str) -> str | None:
        if data is not None:
            return "data" if data.defines(hook) else None
        return "model" if model.defines(hook) else None

    _, limit_val = batch_limits(spec)
    limits = {"val": limit_val, "test": t.limit_test_batches, "predict": t.limit_predict_batches}
    if t.fast_dev_run:  # fast_dev_run=N limits every loop to N batches (Lightning)
        limits = {"val": limit_val, "test": t.fast_dev_run, "predict": t.fast_dev_run}
    legacy = evaluates_as_1_9_5(spec, model, distributed)  # the runs follow Lightning 1.9.5's loops where they differ
    stages = []
    for command, (prefix, step, infix) in STAGES.items():
        loader_owner = owner(f"{prefix}_dataloader")
        defined = model.defines(step) or (command == "predict" and model.defines("forward"))
        limit = limits[prefix]
        if loader_owner is None or not defined:
            continue
        model_hooks = frozenset(h.format(infix) for h in EVALUATION_HOOKS if model.defines(h.format(infix)))
        params = model.methods.get(step, ("batch", "batch_idx"))
        names = {h.format(infix) for h in EVALUATION_HOOKS}
        stages.append(
            Stage(
                command=command,
                prefix=prefix,
                step=step,
                infix=infix,
                owner=loader_owner,
                takes_batch_idx=takes_two(params),
                takes_dataloader_idx=takes_dataloader_idx(params),
                default_step=not model.defines(step),
                limit=limit,
                counts=limits_batches(limit),
                model_eval_hook=model.defines(f"on_{infix}_model_eval"),
                model_train_hook=command != "predict" and model.defines(f"on_{infix}_model_train"),
                model_hooks=model_hooks,
                returns_metrics=command != "predict",
                after=("eval" if command == "predict" else "train") if legacy else "restore",
                epoch_end_outputs=command == "predict" and legacy,
                step_end=command != "predict" and model.defines(f"{infix}_step_end"),
                epoch_end=command != "predict" and model.defines(f"{infix}_epoch_end"),
                callbacks=tuple(c for c in user.callbacks if c.hooks & names or (c.writer and command == "predict")),
            )
        )
    requested = spec.loop.subcommands
    if requested is None:
        evaluates = model.defines("test_step") or model.defines("predict_step")
        chosen = [stage for stage in stages if evaluates]
    else:
        provided = {stage.command for stage in stages}
        for command in requested[1:]:
            if command not in provided:
                problems.append(Problem("loop.subcommands", needs(spec, command), spec.line("loop.subcommands")))
        chosen = [stage for stage in stages if stage.command in requested]
    unserved = unserved_reason(spec, model, distributed) if chosen else None
    if unserved and requested is not None:
        message = f"validate, test and predict are not written for {unserved} yet: list only fit"
        problems.append(Problem("loop.subcommands", message, spec.line("loop.subcommands")))
    elif unserved:
        notices.append(
            f"the module has {'test_step' if model.defines('test_step') else 'predict_step'}, but the script's"
            f" validate, test and predict are not written for {unserved} yet: it has fit only"
            " (docs/evaluation.md)"
        )
    served = () if unserved else tuple(chosen)
    # fit's constants: LIMIT_VAL_BATCHES when fit validates on fewer batches than the loader has
    defined = {"LIMIT_VAL_BATCHES"} if data_plan.counts_val else set()
    constants = tuple((s.limit_constant(), s.limit) for s in served if s.counts and s.limit_constant() not in defined)
    return Evaluation(
        stages=served,
        grad_context=grad_context(t.inference_mode, distributed),
        logs=logging.enabled and any(stage.returns_metrics for stage in served),
        bar=bool(served) and progress.enabled,
        shards=bool(served) and distributed.replaces_samplers,
        share_variables=("data_parallel_rank",) if distributed.model_parallel else ("world_size", "global_rank"),
        unrepeated=distributed.replaces_samplers and any(stage.command == "predict" for stage in served),
        rank_zero_gates=bool(served) and distributed.rank_zero_gates,
        rich_table=progress.rich and any(stage.returns_metrics for stage in served),
        feeds_device=bool(served) and distributed.xla and distributed.several_processes,
        data_parallel=bool(served) and distributed.kind == "dp",
        limit_constants=constants,
    )


def evaluates_as_1_9_5(spec: Spec, model: ClassFacts, distributed: Distributed) -> bool:
    """The runs follow Lightning 1.9.5's loops where they differ from 2.x's: the spec uses a flag or hook only
    1.9.5 has, or one of its strategies (horovod, dp)."""
    return follows_1_9_5(spec, model) or distributed.kind in STRATEGIES_1_9_5


def grad_context(inference_mode: bool, distributed: Distributed) -> str:
    """torch.inference_mode as the flag asks, but torch.no_grad in a gloo process group (Lightning's
    _no_grad_context: inference mode does not work with gloo's collectives), and on TPUs. Horovod's processes
    have no torch.distributed group: inference mode (Lightning 1.9.5's _evaluation_context)."""
    if not inference_mode or distributed.backend == "gloo" or distributed.xla:
        return "no_grad"
    if distributed.several_processes and distributed.backend is None and distributed.kind != "horovod":
        return "by_backend"
    return "inference_mode"


def needs(spec: Spec, command: str) -> str:
    """Why the module does not provide a subcommand loop.subcommands lists."""
    prefix, step, _ = STAGES[command]
    loaders = (spec.data or spec.model).class_path
    steps = f"{step} (or forward, for Lightning's default predict_step)" if command == "predict" else step
    return f"{command} needs {steps} on {spec.model.class_path} and {prefix}_dataloader() on {loaders}"


# the evaluation hooks Lightning 1.9.5 has and 2.x removed (its trainer.validate / test refuse a module with them):
# served when the spec follows 1.9.5, refused as 2.x refuses them otherwise
OUTPUT_HOOKS_1_9_5 = ("validation_step_end", "validation_epoch_end", "test_step_end", "test_epoch_end")
# the strategies only Lightning 1.9.5 has: their runs follow 1.9.5's loops
STRATEGIES_1_9_5 = ("horovod", "dp")


def unserved_reason(spec: Spec, model: ClassFacts, distributed: Distributed) -> str | None:
    """What keeps the script to fit although the module could evaluate: a hook of Lightning 1.9.5's evaluation
    outputs in a spec that follows 2.x, whose validate and test refuse it; a ThroughputMonitor, which the
    script carries in fit only. Every engine evaluates, under
    Lightning 2.x's semantics or 1.9.5's (its flags, hooks and strategies)."""
    legacy = evaluates_as_1_9_5(spec, model, distributed)
    hooks = [hook for hook in OUTPUT_HOOKS_1_9_5 if model.defines(hook)]
    if hooks and not legacy:
        return f"a `{hooks[0]}` hook (Lightning 1.9.5's; 2.x refuses it in evaluation)"
    if distributed.fsdp:
        return "FSDPStrategy (its evaluation loads sharded checkpoints, which the script does not yet)"
    if any(is_lightning(ref, "ThroughputMonitor") for ref in spec.trainer.callbacks):
        return "a ThroughputMonitor (Lightning's also counts the batches of validate, test and predict)"
    if any(is_lightning(ref, "StochasticWeightAveraging") for ref in spec.trainer.callbacks):
        return "a StochasticWeightAveraging (the script carries it in fit only)"
    return None


def with_callback_order(evaluation: Evaluation, callbacks: tuple[Callback, ...]) -> Evaluation:
    """Each stage's callbacks in the order Lightning calls them (`callbacks`, fit's order), with a
    DeviceStatsMonitor among them where it logs (the batches of validate and test)."""
    stages = tuple(
        replace(
            stage,
            callbacks=tuple(
                c
                for c in callbacks
                if c in stage.callbacks or (c.kind == "device_stats" and stage.hook("on_{}_batch_start") in c.hooks)
            ),
        )
        for stage in evaluation.stages
    )
    return replace(evaluation, stages=stages)


def with_trainer_attributes(evaluation: Evaluation, attributes: frozenset[str]) -> Evaluation:
    """Each stage sets the trainer's attributes of its own that the user's code reads (the trainer's
    `attributes`)."""
    stages = tuple(
        replace(
            stage,
            sets_batches=stage.batches_attribute in attributes and stage.limit != 0,
            sets_loaders=stage.loaders_attribute in attributes and stage.limit != 0,
            stops="should_stop" in attributes,
        )
        for stage in evaluation.stages
    )
    return replace(evaluation, stages=stages)


def evaluation_variables(
    evaluation: Evaluation,
    device: Device,
    collects_metrics: bool,
    checkpointing: Checkpointing,
    logging: Logging,
    profiling: Profiling,
) -> tuple[str, ...]:
    """main()'s variables evaluate() takes besides the model: what its stages' functions take, and what loading a
    checkpoint touches (the callbacks' states, `trainer` for their on_load_checkpoint, the ModelCheckpoint whose
    directory "best" and "last" are looked for in)."""
    names: list[str] = []
    for stage in evaluation.stages:
        names += ["data"] if stage.owner == "data" else []
        names += ["device"] if device.moves_batches else []
        names += ["dp_model"] if evaluation.data_parallel else []
        names += ["metrics"] if collects_metrics else []
        names += ["trainer"] if stage.takes_trainer or checkpointing.load_hook_callbacks else []
        names += [c.var for c in stage.callbacks]
        names += ["progress_bar"] if evaluation.bar else []
        names += list(evaluation.share_variables) if evaluation.shards else []
        names += ["profiler"] if profiling.enabled else []
    if evaluation.enabled and logging.enabled:  # the hyperparameters, the graph (as fit's start_logging)
        names += ["loggers"]
        names += ["data"] if logging.hparams_data else []
        names += ["device"] if logging.graphs and device.moves else []
    if evaluation.enabled:
        names += ["is_global_zero"] if evaluation.rank_zero_gates else []  # evaluate() and the tables print on rank 0
        # (a ModelCheckpoint subclass finds the last files with the trainer, as Lightning's)
        names += ["trainer"] if checkpointing.load_hook_callbacks or checkpointing.subclassed else []
        names += [c.var for c in (*checkpointing.load_hook_callbacks, *checkpointing.stateful_callbacks)]
        names += [c.var for c in checkpointing.directories]
    return tuple(dict.fromkeys(names))
