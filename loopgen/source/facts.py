"""What loopgen learns of a user's class: its methods, what they log and read, its optimizers' shapes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loopgen.source.fingerprints import Read
from loopgen.source.signatures import Signature


@dataclass(frozen=True)
class ClassFacts:
    class_path: str  # as given in the spec
    file: Path  # the source file the class is defined in
    root: Path  # the sys.path root the module was found under (the script must run with it importable)
    is_lightning_module: bool  # a base is pytorch_lightning's / lightning's LightningModule
    is_lightning_callback: bool  # a base is Lightning's Callback
    is_prediction_writer: bool = False  # a base is Lightning's BasePredictionWriter
    # the Lightning classes among its bases, by their names ("Callback", "BaseFinetuning", "LightningModule", ...)
    lightning_bases: tuple[str, ...] = ()
    # methods defined by the class or its bases in the user's code (not Lightning's),
    # each with its parameter names after `self` (keyword-only included; *args/**kwargs as "*args"/"**kwargs")
    methods: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # ... those of its parameters with a default
    defaults: Mapping[str, tuple[str, ...]] = field(default_factory=dict, compare=False)
    uses_log: bool = False  # the class body calls self.log(...) or self.log_dict(...)
    logs_in: frozenset[str] = frozenset()  # ... in these methods
    saves_hyperparameters: bool = False  # ... calls self.save_hyperparameters(...)
    # ... for the loggers too: its `logger` argument (True unless a literal False; None when not a literal)
    hyperparameters_to_loggers: bool | None = False
    sources: tuple[Path, ...] = ()  # every user file read to learn these facts
    attributes_read: frozenset[str] = frozenset()  # every `self.X` the methods mention
    class_attributes: frozenset[str] = frozenset()  # the names the class bodies assign
    mentions_scheduler: bool = False  # configure_optimizers mentions an LR scheduler (name or "lr_scheduler" key)
    mentions_lbfgs: bool = False  # configure_optimizers mentions LBFGS (a closure optimizer)
    returns_log_dicts: bool = False  # a step or epoch-end hook mentions the seed's "log" / "progress_bar" keys
    # a `.log(...)` / `.log_dict(...)` call may pass prog_bar=True, or a step hook mentions the seed's "progress_bar"
    logs_to_progress_bar: bool = False
    # what the methods read from the trainer (`self.trainer.X` in a module; the `trainer` parameter or
    # `pl_module.trainer.X` in a callback); None: the trainer itself is passed on or stored, so anything may be read
    trainer_reads: frozenset[str] | None = frozenset()
    # ... each `trainer.X` read by name, also where trainer_reads is None: these are served (or refused) whatever
    # else reads the trainer
    trainer_named: frozenset[str] = frozenset()
    module_reads: frozenset[str] = frozenset()  # a callback's `pl_module.X` attributes
    optimizers: OptimizersFacts | None = None  # configure_optimizers' return, when its source shows it
    optimizers_unknown: str = ""  # why its source does not show it (with configure_optimizers defined)
    init: Signature | None = None  # what its constructor takes (None: the source does not show it)
    imports_torchmetrics: bool = False  # a file it was read from imports torchmetrics (Metric objects may be logged)
    # `self.automatic_optimization = False` (or a class attribute / property saying so): manual optimization;
    # None: it is assigned something else than a literal True / False
    manual_optimization: bool | None = False
    # where each trainer attribute is first read: "file:line" (for render-time errors)
    trainer_read_at: Mapping[str, str] = field(default_factory=dict, compare=False)
    defined_at: Mapping[str, str] = field(default_factory=dict, compare=False)  # "file:line" of each method's `def`
    mentions_iterable_dataset: bool = False  # ... names IterableDataset (its loaders may have no length)
    mentions_num_workers: bool = False  # ... names num_workers (its loaders may have worker processes)
    mentions_sampler: bool = False  # ... names sampler or batch_sampler (its loaders may have their own sampler)
    # "file:line" of the first method reading a logger's `experiment` (`logger.experiment`, `loggers[i].experiment`)
    experiment_read_at: str = field(default="", compare=False)
    # what configure_callbacks returns (loopgen.source.callbacks.ReturnedCallback each), or why its source does
    # not show it; None: the class does not define it
    configured_callbacks: tuple[Any, ...] | str | None = None
    # "file:line" of a return of val_dataloader that may give several loaders (a list or tuple of two or more, a
    # dict of them, a comprehension): fit validates each of them in turn
    val_loaders_listed_at: str = field(default="", compare=False)
    val_loader_built: bool = False  # every return of val_dataloader builds one DataLoader
    # every class and function of the user's code these facts were read from (the class, its bases in the user's
    # code, the project's functions the module is handed to), with their fingerprints: the script's guards
    read: tuple[Read, ...] = field(default=(), compare=False)
    # the attributes holding a child LightningModule of the project (`self.online = OnlineClassifier()`): their
    # trainer reads are among these facts', and the script gives them the trainer as Lightning's setter does
    child_modules: tuple[str, ...] = ()

    def defines(self, hook: str) -> bool:
        return hook in self.methods


@dataclass(frozen=True)
class SchedulerFacts:
    """One LR scheduler in configure_optimizers' return, as its source writes it."""

    cls: str  # the class it constructs (the last part of the dotted name: "StepLR")
    optimizer: int | None  # the index of the optimizer it is built on, when the source shows which
    config: Mapping[str, Any] | None = None  # the keys of its {"scheduler": ...} dict (literals); None: given bare
    name: str | None = None  # its dict's "name" (what LearningRateMonitor logs it as)
    name_known: bool = True  # False: a "name" whose value the source does not show


@dataclass(frozen=True)
class OptimizersFacts:
    """What configure_optimizers returns, read from its one return statement (Lightning's forms)."""

    form: str  # "optimizer" | "optimizers" (a list or tuple) | "lists" ([optimizers], [schedulers]) | "dict" | "dicts"
    optimizers: tuple[str, ...]  # the class of each optimizer, in order
    schedulers: tuple[SchedulerFacts, ...] = ()
    monitor: str | None = None  # the dict form's top-level "monitor" (for a bare ReduceLROnPlateau)
    frequencies: tuple[int, ...] | None = None  # the dicts' "frequency" values, when each dict has one
