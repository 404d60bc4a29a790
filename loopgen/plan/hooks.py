"""The hooks of the model, the data class and the user's callbacks that the script calls."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from loopgen.errors import Problem
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.distributed import engine_kind
from loopgen.plan.objects import (
    PROGRESS_BAR_BASES,
    Callback,
    Construct,
    check_unique_names,
    construct_of,
    is_lightning,
)
from loopgen.plan.pruning import Pruning
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, Spec

# Hooks of the model a generated script may call (Lightning's names).
MODEL_HOOKS = (
    "prepare_data", "setup", "configure_sharded_model", "configure_model", "configure_optimizers", "on_fit_start", "on_train_start", "on_train_epoch_start",
    "on_train_batch_start", "training_step", "training_step_end", "on_before_zero_grad", "backward",
    "optimizer_zero_grad", "on_before_backward", "on_after_backward", "on_before_optimizer_step",
    "on_train_batch_end", "training_epoch_end", "on_train_epoch_end", "on_validation_model_eval",
    "on_validation_model_train", "on_validation_start", "on_validation_epoch_start", "on_validation_batch_start",
    "validation_step", "on_validation_batch_end", "validation_epoch_end", "on_validation_epoch_end",
    "on_validation_end", "lr_scheduler_step", "on_train_end", "on_fit_end", "teardown", "on_before_batch_transfer",
    "transfer_batch_to_device", "on_after_batch_transfer", "optimizer_step", "tbptt_split_batch",
    "on_save_checkpoint", "on_load_checkpoint",
)  # fmt: skip


# LightningModule hooks Lightning's fit calls that the script does not (a module overriding one is refused)
UNSERVED_FIT_HOOKS: tuple[str, ...] = ()

# ... and the hooks that build the module's layers, served as Lightning 2.x calls them (once the setup hooks ran: on
# the device, in a true precision's dtype) on one device and under DDP
MODEL_BUILDING_HOOKS = ("configure_sharded_model", "configure_model")


# Callback hooks (Lightning's `Callback` API) the script calls when a user callback defines them.
CALLBACK_HOOKS = (
    "setup", "on_fit_start", "on_sanity_check_start", "on_sanity_check_end", "on_train_start",
    "on_train_epoch_start", "on_train_batch_start", "on_before_zero_grad", "on_before_backward", "on_after_backward",
    "on_before_optimizer_step", "on_train_batch_end", "on_train_epoch_end", "on_validation_start",
    "on_validation_epoch_start", "on_validation_batch_start", "on_validation_batch_end", "on_validation_epoch_end",
    "on_validation_end", "on_train_end", "on_fit_end", "teardown",
)  # fmt: skip


# The hooks an evaluation run (validate, test, predict) calls, by their place: "{}" is the stage's infix
EVALUATION_HOOKS = (
    "on_{}_start", "on_{}_epoch_start", "on_{}_batch_start", "on_{}_batch_end", "on_{}_epoch_end", "on_{}_end",
)  # fmt: skip

# The test and predict runs' callback hooks (validate's are among fit's)
EVALUATION_CALLBACK_HOOKS = tuple(place.format(infix) for infix in ("test", "predict") for place in EVALUATION_HOOKS)


# What a callback may define for checkpoints (called by the script's checkpoint code, not in the loop).
CALLBACK_CHECKPOINT_METHODS = ("state_dict", "load_state_dict", "on_save_checkpoint", "on_load_checkpoint")


VALIDATION_CALLBACK_HOOKS = (
    "on_validation_start", "on_validation_epoch_start", "on_validation_batch_start", "on_validation_batch_end",
    "on_validation_epoch_end", "on_validation_end",
)  # fmt: skip


@dataclass(frozen=True)
class UserCode:
    """The hooks the user's code defines: the model's, the data class's and the user's callbacks'. Resolved first,
    as the features read it; the script's `Hooks` (callbacks.py) add Lightning's callbacks once they are planned."""

    model: frozenset[str]
    data: frozenset[str]
    callbacks: tuple[Callback, ...]
    # on_before_optimizer_step also gets the optimizer's index (Lightning 1.9.5's signature, for callbacks and model)
    step_hook_index: bool

    def model_has(self, name: str) -> bool:
        return name in self.model

    def data_has(self, name: str) -> bool:
        return name in self.data

    def callbacks_with(self, name: str) -> tuple[Callback, ...]:
        return tuple(c for c in self.callbacks if name in c.hooks)

    @property
    def builtin_finetuning(self) -> bool:
        """Lightning's BackboneFinetuning is among the callbacks: the script carries the class."""
        return any(c.finetuning and not c.construct.module for c in self.callbacks)

    @property
    def builtin_spike_detection(self) -> bool:
        """Lightning's SpikeDetection is among the callbacks: the script carries the class."""
        return any(c.construct.cls == "SpikeDetection" and not c.construct.module for c in self.callbacks)

    @property
    def builtin_averaging(self) -> str | None:
        """Lightning's WeightAveraging or EMAWeightAveraging among the callbacks (one at most): the script carries
        the class of that name."""
        return next(
            (c.construct.cls for c in self.callbacks if not c.construct.module and c.construct.cls in AVERAGING), None
        )


@dataclass(frozen=True)
class Hooks(UserCode):
    """Every hook the script calls: the user's code's, and Lightning's callbacks' (ModelCheckpoint, EarlyStopping,
    LearningRateMonitor, the bar, the summary) in the order Lightning calls them."""

    validation_callbacks: tuple[Callback, ...]  # callbacks validate() must be given
    stops: bool = False  # the trainer has should_stop (set by make_plan once `trainer` is known)

    @property
    def validation_trainer(self) -> bool:
        """validate() passes `trainer` to a callback (the progress bar takes none; a DeviceStatsMonitor reads only
        should_stop)."""
        return any(c.kind != "progress" and (c.kind != "device_stats" or self.stops) for c in self.validation_callbacks)

    def user_code(self, name: str) -> bool:
        """The user's code runs at hook `name` (and may log there)."""
        return self.model_has(name) or any(c.kind == "user" for c in self.callbacks_with(name))

    def callbacks_before_model(self, name: str) -> tuple[Callback, ...]:
        """on_train_epoch_end: Lightning calls the monitoring callbacks after the module, the others before."""
        return tuple(c for c in self.callbacks_with(name) if not c.monitoring)

    def callbacks_after_model(self, name: str) -> tuple[Callback, ...]:
        return tuple(c for c in self.callbacks_with(name) if c.monitoring)

    @property
    def subclassed(self) -> tuple[tuple[str, str], ...]:
        """The user's subclasses of the Lightning callbacks the script writes out as base classes: (class name,
        Lightning's base), each once."""
        return tuple(dict.fromkeys((c.construct.cls, c.base) for c in self.callbacks if c.base is not None))

    @property
    def user_bar(self) -> Callback | None:
        """The user's TQDMProgressBar or RichProgressBar subclass: the bar (trainer.progress_bar_callback)."""
        return next((c for c in self.callbacks if c.bar), None)

    def subclasses_of(self, base: str) -> tuple[str, ...]:
        """The class names of the user's subclasses of `base` (one of WRITTEN_BASES)."""
        return tuple(name for name, of in self.subclassed if of == base)

    @property
    def stopping_callbacks(self) -> tuple[Callback, ...]:
        """trainer.early_stopping_callbacks: the script's EarlyStopping objects and the user's subclasses."""
        return tuple(c for c in self.callbacks if c.stopping or c.kind == "early_stopping")


def check_model(spec: Spec, model: ClassFacts, problems: list[Problem]) -> None:
    """What the model must define, and the hooks the script cannot serve."""
    where, line = "model.class_path", spec.model.line
    if not model.defines("training_step"):
        problems.append(Problem(where, f"{spec.model.class_path} does not define training_step", line))
    if spec.optimizer is None and not model.defines("configure_optimizers"):
        message = f"{spec.model.class_path} defines no configure_optimizers and the spec has no `optimizer:`"
        problems.append(Problem(where, message, line))
    for step in ("training_step", "validation_step", "test_step", "predict_step"):
        if "dataloader_iter" in model.methods.get(step, ()):
            message = (
                f"{spec.model.class_path}.{step} takes dataloader_iter (Lightning's steps that fetch their own"
                " batches), which the script does not serve: take the batch, (batch, batch_idx)"
            )
            problems.append(Problem(model.defined_at.get(step, where), message))
    if isinstance(model.configured_callbacks, str):  # its return read from the source: merged into the spec's
        message = refusal(
            f"{spec.model.class_path}.configure_callbacks as written",
            f"the script builds the callbacks it returns as its source shows them: {model.configured_callbacks}",
            "return callbacks built with literal or self.hparams arguments, or give them in trainer.callbacks",
        )
        problems.append(Problem(model.defined_at.get("configure_callbacks", where), message))
    unserved = [*UNSERVED_FIT_HOOKS, *([] if model.manual_optimization else ["on_validation_model_zero_grad"])]
    for hook in MODEL_BUILDING_HOOKS:
        kind = engine_kind(spec)
        cases = (
            (follows_1_9_5(spec, model), "in a spec that follows Lightning 1.9.5", "follow Lightning 2.x"),
            (
                kind not in (None, "ddp", "model_parallel", "fsdp"),
                f"with the {kind} engine",
                "run on one device, under DDP, ModelParallelStrategy or FSDPStrategy",
            ),
        )
        for refused, what, instead in cases:
            if refused and model.defines(hook):
                message = refusal(
                    f"{spec.model.class_path}.{hook} {what}",
                    "the script builds the module's layers where Lightning 2.x does, on one device or each DDP"
                    " process's",
                    instead,
                )
                problems.append(Problem(model.defined_at.get(hook, where), message))
    for hook in unserved:
        if model.defines(hook):
            message = (
                f"{spec.model.class_path} overrides {hook}, which Lightning calls in fit and the script does not;"
                " move its work to a hook loopgen calls (see docs/spec.md, hooks) or remove it"
            )
            problems.append(Problem(model.defined_at.get(hook, where), message))


# The Lightning callback classes a user's callback may subclass, each with the hooks of its own the script calls
# on the subclass, where Lightning calls them (they run as Lightning's code, or the subclass's override): Callback's
# do nothing; the script calls a BasePredictionWriter's write_on_* as its base class does; BaseFinetuning's freeze
# the modules in setup (the script calls freeze_before_training there), restore the optimizers' groups on resume
# (on_fit_start), call finetune_function and record the groups it adds (on_train_epoch_start), and keep them in the
# checkpoint (state_dict / load_state_dict). An EarlyStopping subclass runs on the script's EarlyStoppingBase
# (templates/subclassed.j2), Lightning's class with its methods' names and signatures: it decides in setup where
# it checks, checks at on_train_epoch_end or on_validation_end, and keeps its state in the checkpoint. A
# TQDMProgressBar or RichProgressBar subclass runs on the script's TQDMProgressBarBase or RichProgressBarBase, its
# bars drawn at each of Lightning's hooks (rich's display also stops at teardown and when fit raises). A
# LearningRateMonitor subclass runs on LearningRateMonitorBase: it names the learning rates when training starts
# and logs them at each batch's start (when the loggers are due) and each epoch's. A ModelCheckpoint subclass runs
# on ModelCheckpointBase: it decides its directory in setup, saves at a batch's end, an epoch's end or after a
# validation (or when fit raises), through the script's checkpoint files, and keeps its state in the checkpoint.
PROGRESS_BAR_HOOKS = frozenset(
    {
        "setup",
        "on_sanity_check_start",
        "on_sanity_check_end",
        "on_train_start",
        "on_train_epoch_start",
        "on_train_batch_end",
        "on_train_epoch_end",
        *(
            f"on_{stage}_{hook}"
            for stage in ("validation", "test", "predict")
            for hook in ("start", "batch_start", "batch_end", "end")
        ),
    }
)
SUBCLASSED_CALLBACKS: Mapping[str, frozenset[str]] = {
    "Callback": frozenset(),
    "BasePredictionWriter": frozenset(),
    "BaseFinetuning": frozenset({"setup", "on_fit_start", "on_train_epoch_start", "state_dict", "load_state_dict"}),
    "EarlyStopping": frozenset({"setup", "on_train_epoch_end", "on_validation_end", "state_dict", "load_state_dict"}),
    "TQDMProgressBar": PROGRESS_BAR_HOOKS | {"on_train_end"},
    "RichProgressBar": PROGRESS_BAR_HOOKS | {"on_validation_epoch_end", "teardown", "on_exception"},
    "LearningRateMonitor": frozenset({"on_train_start", "on_train_batch_start", "on_train_epoch_start"}),
    "ModelCheckpoint": frozenset(
        {
            "setup",
            "on_train_start",
            "on_train_batch_end",
            "on_train_epoch_end",
            "on_validation_end",
            "on_exception",
            "on_train_end",
            "state_dict",
            "load_state_dict",
        }
    ),
}
# what those hooks read from the trainer (a progress bar's: its base ProgressBar's totals, metrics and version)
PROGRESS_BAR_READS = frozenset(
    {
        "max_epochs",
        "max_steps",
        "global_step",
        "current_epoch",
        "num_training_batches",
        "sanity_checking",
        "num_sanity_val_batches",
        "num_val_batches",
        "num_test_batches",
        "num_predict_batches",
        "state",
        "is_global_zero",
        "progress_bar_metrics",
        "loggers",
        "enable_validation",
    }
)
BASE_TRAINER_READS: Mapping[str, frozenset[str]] = {
    "BaseFinetuning": frozenset({"optimizers", "current_epoch"}),
    "EarlyStopping": frozenset(
        {"callback_metrics", "should_stop", "current_epoch", "sanity_checking", "state", "world_size", "global_rank"}
    ),
    "TQDMProgressBar": PROGRESS_BAR_READS,
    # ... and what rich's metrics column reads as it draws
    "RichProgressBar": PROGRESS_BAR_READS | {"training", "progress_bar_callback"},
    "LearningRateMonitor": frozenset(
        {"loggers", "lr_scheduler_configs", "optimizers", "callback_metrics", "lightning_module", "is_global_zero"}
    ),
    # ... its directory (the first logger's, or default_root_dir's), its triggers and its files' names
    "ModelCheckpoint": frozenset(
        {
            "callback_metrics",
            "current_epoch",
            "global_step",
            "sanity_checking",
            "state",
            "is_global_zero",
            "loggers",
            "default_root_dir",
            "ckpt_path",
            "num_val_batches",
            "enable_validation",
            "is_last_batch",
        }
    ),
}


def with_base_reads(facts: ClassFacts) -> ClassFacts:
    """A user's callback's facts, with what its Lightning base class's hooks read from the trainer."""
    reads = frozenset().union(*(BASE_TRAINER_READS.get(name, frozenset()) for name in facts.lightning_bases))
    if not reads or facts.trainer_reads is None:
        return facts
    return replace(facts, trainer_reads=facts.trainer_reads | reads)


AVERAGING = ("WeightAveraging", "EMAWeightAveraging")

# Lightning's callbacks the script carries a class for (templates/finetuning.j2, templates/averaging.j2), served as
# a user's callback is: the hooks their class defines, with Lightning's signatures, and what they read of the trainer
BUILTIN_CALLBACKS: Mapping[str, ClassFacts] = {
    "BackboneFinetuning": ClassFacts(
        class_path="pytorch_lightning.callbacks.BackboneFinetuning",
        file=Path(),
        root=Path(),
        is_lightning_module=False,
        is_lightning_callback=True,
        lightning_bases=("BaseFinetuning",),  # its hooks are BaseFinetuning's (SUBCLASSED_CALLBACKS)
        methods={"freeze_before_training": ("pl_module",), "finetune_function": ("pl_module", "epoch", "optimizer")},
        module_reads=frozenset({"backbone"}),
    ),
    **{
        name: ClassFacts(
            class_path=f"pytorch_lightning.callbacks.{name}",
            file=Path(),
            root=Path(),
            is_lightning_module=False,
            is_lightning_callback=True,
            lightning_bases=("Callback",),
            methods={
                "setup": ("trainer", "pl_module", "stage"),
                "on_fit_start": ("trainer", "pl_module"),  # (the averaged copy joins the module's device)
                "on_train_batch_end": ("trainer", "pl_module", "outputs", "batch", "batch_idx"),
                # (WeightAveraging's by-epoch update never happens: only EMAWeightAveraging's can)
                **({"on_train_epoch_end": ("trainer", "pl_module")} if name == "EMAWeightAveraging" else {}),
                "on_train_end": ("trainer", "pl_module"),
                "on_validation_epoch_start": ("trainer", "pl_module"),
                "on_validation_epoch_end": ("trainer", "pl_module"),
                "state_dict": (),
                "load_state_dict": ("state_dict",),
                "on_save_checkpoint": ("trainer", "pl_module", "checkpoint"),
                "on_load_checkpoint": ("trainer", "pl_module", "checkpoint"),
            },
            trainer_reads=frozenset({"global_step", "current_epoch"}),
        )
        for name in AVERAGING
    },
    "SpikeDetection": ClassFacts(
        class_path="pytorch_lightning.callbacks.SpikeDetection",
        file=Path(),
        root=Path(),
        is_lightning_module=False,
        is_lightning_callback=True,
        lightning_bases=("Callback",),
        methods={
            "on_train_batch_end": ("trainer", "pl_module", "outputs", "batch", "batch_idx"),
            "state_dict": (),
            "load_state_dict": ("state_dict",),
        },
        trainer_reads=frozenset({"default_root_dir"}),
    ),
}

# what the script's class does not take of Lightning's arguments (their refusals are in spec/flags.py)
BUILTIN_DROPPED_ARGS = ("lambda_func",)


def builtin_callback(ref: ClassRef) -> bool:
    return any(is_lightning(ref, name) for name in (*BUILTIN_CALLBACKS, "ModelPruning"))


def builtin_facts(
    spec: Spec, callbacks: tuple[ClassFacts | None, ...], pruning: Pruning | None
) -> tuple[ClassFacts | None, ...]:
    """The facts of each callback, with those of Lightning's callbacks that the script carries a class for filled
    in (BUILTIN_CALLBACKS; ModelPruning's class is specialised to its entry, plan/pruning.py)."""
    return tuple(
        (
            (pruning.facts(ref.class_path) if pruning is not None and ref.name == "ModelPruning" else None)
            or BUILTIN_CALLBACKS.get(ref.name)
            if facts is None and builtin_callback(ref)
            else facts
        )
        for ref, facts in zip(spec.trainer.callbacks, callbacks)
    )


def builtin_construct(ref: ClassRef) -> Construct:
    """The script's class for one of Lightning's callbacks, with the spec's arguments (ModelPruning's class holds
    its entry's)."""
    given = {} if ref.name == "ModelPruning" else construct_of(ref).args
    return Construct("", ref.name, {name: value for name, value in given.items() if name not in BUILTIN_DROPPED_ARGS})


def finetuning(facts: ClassFacts) -> bool:
    return "BaseFinetuning" in facts.lightning_bases


def stopping(facts: ClassFacts) -> bool:
    return "EarlyStopping" in facts.lightning_bases


# Lightning's callbacks the script writes out as base classes (templates/subclassed.j2) for the user's subclasses
WRITTEN_BASES = ("EarlyStopping", *PROGRESS_BAR_BASES, "LearningRateMonitor", "ModelCheckpoint")


def written_base(facts: ClassFacts) -> str | None:
    """The Lightning class a user's callback subclasses that the script writes out under it, if any."""
    return next((name for name in WRITTEN_BASES if name in facts.lightning_bases), None)


def once_in_2x(
    spec: Spec, model: ClassFacts, refs: list[ClassRef], what: str, why_one: str, problems: list[Problem]
) -> None:
    """The entries `refs` of a callback only Lightning 2.x has (`what`): refused in a spec that follows 1.9.5, and
    a second one (`why_one`: why)."""
    if refs and follows_1_9_5(spec, model):
        message = refusal(
            f"{refs[0].class_path} in a spec that follows Lightning 1.9.5",
            f"Lightning 1.9.5 has no {what}",
            "follow Lightning 2.x",
        )
        problems.append(Problem("trainer.callbacks", message, refs[0].line))
    if len(refs) > 1:
        message = refusal(f"a second {what} ({refs[1].class_path})", why_one, "keep one")
        problems.append(Problem("trainer.callbacks", message, refs[1].line))


def check_callbacks(
    spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts | None, ...], problems: list[Problem]
) -> None:
    """A user's callback that subclasses another of Lightning's callbacks (Timer, ...): the script would run the
    subclass's own methods only, never the base's behaviour, so it is refused. BaseFinetuning, EarlyStopping,
    TQDMProgressBar, RichProgressBar, LearningRateMonitor and ModelCheckpoint subclasses are served
    as Lightning 2.x's, where their base's hooks run (all but the first on a base class the script writes out)."""
    averaging = [ref for ref in spec.trainer.callbacks if ref.name in AVERAGING and builtin_callback(ref)]
    once_in_2x(
        spec,
        model,
        averaging,
        "weight-averaging callback",
        "each swaps its average into the module for validation and copies it into the module when training ends, so"
        " the second would average and validate the first's average",
        problems,
    )
    once_in_2x(
        spec,
        model,
        [ref for ref in spec.trainer.callbacks if is_lightning(ref, "SpikeDetection")],
        "SpikeDetection callback",
        "Lightning keeps each one's state under the same key, `SpikeDetection`, and raises when it saves a checkpoint",
        problems,
    )
    for ref, facts in zip(spec.trainer.callbacks, callbacks):
        bases = [name for name in facts.lightning_bases if name not in SUBCLASSED_CALLBACKS] if facts else []
        if bases:
            message = (
                f"{ref.class_path} subclasses Lightning's {bases[0]}, whose own behaviour the script does not run (it would"
                f" call only the methods {ref.name} defines): subclassing {bases[0]} is not supported by loopgen;"
                " subclass Callback and write the behaviour in its hooks"
            )
            problems.append(Problem("trainer.callbacks", message, ref.line))
        elif facts is not None and finetuning(facts):
            check_finetuning(spec, model, ref, facts, problems)
        base = written_base(facts) if facts is not None else None
        cases = (
            (
                base is not None and follows_1_9_5(spec, model),
                f"{ref.class_path} (a subclass of {base}) in a spec that follows Lightning 1.9.5",
                (
                    f"the script's base class under it is Lightning 2.x's {base} (1.9.5's EarlyStopping keeps no"
                    " stopping reason, its TQDMProgressBar has a main_progress_bar, its RichProgressBar no theme of"
                    " metrics' format, its LearningRateMonitor names and logs by the optimizer frequencies)"
                ),
                "follow Lightning 2.x",
            ),
            (
                is_lightning(ref, "BackboneFinetuning")
                and "backbone" not in model.attributes_read | model.class_attributes,
                f"{ref.class_path} with {spec.model.class_path}, whose source sets no `self.backbone`",
                (
                    "BackboneFinetuning freezes the module's `backbone` attribute and later trains it (Lightning"
                    " raises at fit's start without one)"
                ),
                "name the module to fine-tune `self.backbone`, or subclass BaseFinetuning to freeze another",
            ),
        )
        for refused, what, why, instead in cases:
            if refused:
                problems.append(Problem("trainer.callbacks", refusal(what, why, instead), ref.line))


def check_finetuning(spec: Spec, model: ClassFacts, ref: ClassRef, facts: ClassFacts, problems: list[Problem]) -> None:
    """What the script cannot serve of a BaseFinetuning subclass, refused where it stands."""
    where = ref.line
    if follows_1_9_5(spec, model):
        message = refusal(
            f"{ref.class_path} (a BaseFinetuning) in a spec that follows Lightning 1.9.5",
            "1.9.5's base calls finetune_function with each optimizer's index, by the optimizer frequencies",
            "follow Lightning 2.x",
        )
        problems.append(Problem("trainer.callbacks", message, where))
    if facts.defines("setup"):
        message = refusal(
            f"{ref.class_path} overriding BaseFinetuning.setup",
            "Lightning's setup reads trainer.strategy, which the script has none of; the script calls"
            " freeze_before_training where Lightning's setup does",
            "move that work to freeze_before_training or on_fit_start",
        )
        problems.append(Problem(facts.defined_at.get("setup", "trainer.callbacks"), message))
    params = [p for p in facts.methods.get("finetune_function", ()) if not p.startswith("*")]
    if len(params) > 3:
        message = refusal(
            f"{ref.class_path}.finetune_function with {len(params)} parameters",
            "Lightning 2.x calls it with the module, the epoch and the optimizer (1.9.5 also passed opt_idx)",
            "define finetune_function(self, pl_module, epoch, optimizer)",
        )
        problems.append(Problem(facts.defined_at.get("finetune_function", "trainer.callbacks"), message))


# LightningDataModule methods Lightning calls that the script does not: its state, with each checkpoint saved or
# loaded (a data class that defines one is refused, never skipped in silence)
UNSERVED_DATA_STATE = ("state_dict", "load_state_dict")


def check_data(spec: Spec, data: ClassFacts | None, checkpoints: bool, problems: list[Problem]) -> None:
    """What the data class defines that the script would not call (`checkpoints`: it saves or loads some)."""
    for hook in UNSERVED_DATA_STATE if checkpoints else ():
        if data is not None and data.defines(hook) and spec.data is not None:
            message = refusal(
                f"{spec.data.class_path}.{hook}",
                f"Lightning calls a data module's {hook} with each checkpoint it saves or loads; the script does not",
                "keep the data's state elsewhere, or turn checkpointing off",
            )
            problems.append(Problem(data.defined_at.get(hook, "data.class_path"), message))


def data_hooks(spec: Spec, model: ClassFacts) -> tuple[str, ...]:
    """The datamodule's hooks the script calls: 2.x also calls its on_exception when the run raises."""
    return ("prepare_data", "setup", "teardown") + (() if follows_1_9_5(spec, model) else ("on_exception",))


def resolve_user_code(
    spec: Spec, model: ClassFacts, data: ClassFacts | None, callbacks: tuple[ClassFacts | None, ...]
) -> UserCode:
    """The hooks of the model, the data class and the user's callbacks (the script's `Hooks` add Lightning's,
    callbacks.py, once their plan is known)."""
    refs = spec.trainer.callbacks
    plans = tuple(
        Callback(
            construct=builtin_construct(ref) if builtin_callback(ref) else construct_of(ref),
            var=f"callback_{i}" if len(refs) > 1 else "callback",
            hooks=frozenset(
                h
                for h in (*CALLBACK_HOOKS, *EVALUATION_CALLBACK_HOOKS, *CALLBACK_CHECKPOINT_METHODS, "on_exception")
                if facts.defines(h)
            ).union(*(SUBCLASSED_CALLBACKS.get(name, ()) for name in facts.lightning_bases)),
            state_key=(
                None
                if facts.defines("state_key")
                or facts.is_lightning_callback
                or stopping(facts)
                or written_base(facts) == "ModelCheckpoint"
                else ref.name
            ),
            writer=facts.is_prediction_writer,
            finetuning=finetuning(facts),
            base=written_base(facts),
            # Lightning's on_train_epoch_end of an EarlyStopping or a ModelCheckpoint follows the module's
            monitoring=stopping(facts) or "ModelCheckpoint" in facts.lightning_bases,
        )
        for i, (ref, facts) in enumerate(zip(refs, callbacks))
        if facts is not None
    )
    check_unique_names([spec.model] + ([spec.data] if spec.data else []) + [r for r, f in zip(refs, callbacks) if f])
    return UserCode(
        model=frozenset(h for h in MODEL_HOOKS if model.defines(h)),
        data=frozenset(h for h in data_hooks(spec, model) if data is not None and data.defines(h)),
        callbacks=plans,
        step_hook_index=follows_1_9_5(spec, model),  # manual optimization under 1.9.5 is refused
    )


def only_epoch_end(user: UserCode) -> bool:
    return not user.callbacks_with("on_train_batch_end") and not user.model_has("on_train_batch_end")
