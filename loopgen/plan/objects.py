"""What the plan names of the user's code: classes to build, script variables, imports, callbacks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopgen.errors import LoopgenError, Problem
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, ObjectSpec


@dataclass(frozen=True)
class Construct:
    """A class to import and instantiate: `ref(**args)`."""

    module: str
    cls: str
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def from_torch(self) -> bool:
        return self.module == "torch" or self.module.startswith("torch.")

    @property
    def ref(self) -> str:
        """How the script names the class: torch's by their full dotted path, the user's by their own name."""
        return f"{self.module}.{self.cls}" if self.from_torch else self.cls


@dataclass(frozen=True)
class Name:
    """An argument value that is a script variable (an object the script built before, see `Built`)."""

    name: str


@dataclass(frozen=True)
class Reference:
    """An argument given as an import path for a parameter typed as a function or class: the object it names,
    imported as LightningCLI (jsonargparse) imports it."""

    module: str
    name: str

    @property
    def from_torch(self) -> bool:
        return self.module == "torch" or self.module.startswith("torch.")

    @property
    def ref(self) -> str:
        """How the script names it: torch's by the full dotted path, the user's by its own name (imported)."""
        return f"{self.module}.{self.name}" if self.from_torch else self.name


def referenced(construct: Construct, imported: tuple[str, ...]) -> Construct:
    """The construct with the strings it is given for `imported` parameters (typed as a function or class, or a
    list of them) as the objects they name."""

    def resolved(value: Any) -> Any:
        if isinstance(value, str) and "." in value:
            return Reference(*value.rsplit(".", 1))
        if isinstance(value, list) and all(isinstance(item, str) for item in value):
            return [resolved(item) for item in value]
        return value

    args = {name: resolved(value) if name in imported else value for name, value in construct.args.items()}
    return Construct(construct.module, construct.cls, args) if args != dict(construct.args) else construct


def references_in(value: Any) -> list[Reference]:
    """Every Reference in an argument value, at any depth."""
    if isinstance(value, Reference):
        return [value]
    if isinstance(value, Construct):
        return [r for item in value.args.values() for r in references_in(item)]
    if isinstance(value, (list, tuple)):
        return [r for item in value for r in references_in(item)]
    if isinstance(value, Mapping):
        return [r for item in value.values() for r in references_in(item)]
    return []


@dataclass(frozen=True)
class Built:
    """An object argument the script builds before the object that takes it: `var = value`, where `value` is a
    Construct or a list / mapping holding Constructs (each nested object inline, its own arguments first)."""

    var: str
    value: Any


@dataclass(frozen=True)
class Import:
    """`from module import names` of the user's classes."""

    module: str
    names: tuple[str, ...]


# Lightning's progress bars a user's subclass may extend (the script writes each out as its base)
PROGRESS_BAR_BASES = ("TQDMProgressBar", "RichProgressBar")


@dataclass(frozen=True)
class Callback:
    construct: Construct
    var: str  # the script variable holding the instance
    hooks: frozenset[str]
    # "user" | "checkpoint" (ModelCheckpoint) | "early_stopping" | "lr_monitor" (LearningRateMonitor) | "summary"
    # (ModelSummary) | "progress" (the progress bar): the script implements Lightning's callbacks itself
    kind: str = "user"
    monitoring: bool = (
        False  # Lightning runs its on_train_epoch_end after the module's (ModelCheckpoint, EarlyStopping)
    )
    dirpath: str | None = None  # a ModelCheckpoint's directory from the spec (None: the default directory)
    state_key: str | None = None  # the key of its state in a checkpoint; None: its `state_key` attribute
    writer: bool = False  # a subclass of Lightning's BasePredictionWriter: predict calls its write_on_* methods
    finetuning: bool = False  # a subclass of Lightning's BaseFinetuning: setup calls its freeze_before_training
    # a subclass of one of Lightning's callbacks the script writes out as a base class (templates/subclassed.j2):
    # that class's name ("EarlyStopping", "TQDMProgressBar", ...); the script's <name>Base goes under the subclass
    base: str | None = None

    @property
    def stopping(self) -> bool:
        return self.base == "EarlyStopping"

    @property
    def rates(self) -> bool:
        """A LearningRateMonitor subclass: it logs at the loggers' step, when they are due."""
        return self.base == "LearningRateMonitor"

    @property
    def checkpointer(self) -> bool:
        """A ModelCheckpoint subclass: it writes through the script's checkpoint files, in its base's names."""
        return self.base == "ModelCheckpoint"

    @property
    def bar(self) -> bool:
        return self.base in PROGRESS_BAR_BASES

    @property
    def keyed_at_run_time(self) -> bool:
        """Its `state_key` (Lightning's name of it, in checkpoints and profiler actions) is read from the object
        when the script runs: a user's callback that defines it, the script's ModelCheckpoint and EarlyStopping
        (whose keys hold their arguments)."""
        return self.state_key is None and self.kind in ("user", "checkpoint", "early_stopping")


def is_lightning(ref: ClassRef, name: str) -> bool:
    return ref.name == name and ref.module.startswith("pytorch_lightning")


def numbered_name(name: str, index: int, count: int) -> str:
    return f"{name}_{index}" if count > 1 else name


def callback_defaults(name: str) -> dict[str, Any]:
    from loopgen.spec.flags import CALLBACK_ARGS

    return {arg.name: arg.default for arg in CALLBACK_ARGS[name]}


def construct_of(ref: ClassRef) -> Construct:
    """The class to build with its arguments; objects among them (ObjectSpecs) as Constructs, their
    dict_kwargs after their init_args, as jsonargparse passes them."""
    args = {name: argument_value(value) for name, value in ref.init_args.items()}
    if isinstance(ref, ObjectSpec):
        args.update(ref.dict_kwargs)
    return Construct(ref.module, ref.name, args)


def argument_value(value: Any) -> Any:
    if isinstance(value, ObjectSpec):
        return construct_of(value)
    if isinstance(value, list):
        return [argument_value(item) for item in value]
    if isinstance(value, dict):
        return {key: argument_value(item) for key, item in value.items()}
    return value


def constructs_in(value: Any) -> list[Construct]:
    """Every Construct in an argument value, at any depth."""
    if isinstance(value, Construct):
        return [value, *(c for item in value.args.values() for c in constructs_in(item))]
    if isinstance(value, (list, tuple)):
        return [c for item in value for c in constructs_in(item)]
    if isinstance(value, Mapping):
        return [c for item in value.values() for c in constructs_in(item)]
    return []


def check_unique_names(refs: list[ClassRef]) -> None:
    seen: dict[str, str] = {}
    for ref in refs:
        other = seen.setdefault(ref.name, ref.class_path)
        if other != ref.class_path:
            message = refusal(
                f"two different classes named {ref.name} ({other}, {ref.class_path})",
                "the script imports each class under its own name, and these two would collide",
                "rename one of them, or import it under another name in a module of your own and name that",
            )
            raise LoopgenError(Problem("", message))
