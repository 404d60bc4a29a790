"""The validated spec: the model, data, callbacks and objects as class references, and the trainer flags
(`TrainerFlags`, made from the flag table).
"""

from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, make_dataclass
from pathlib import Path
from typing import Any

from loopgen.spec.flags import (
    FLAGS,
    Flag,
)


@dataclass(frozen=True)
class ClassRef:
    """A `class_path` + `init_args` entry (model, data, optimizer, callbacks, ...)."""

    class_path: str  # dotted path, e.g. "examples.models.Classifier"
    init_args: Mapping[str, Any] = field(default_factory=dict)  # plain YAML values
    line: int | None = None  # YAML line of the entry
    where: str = ""  # "file:line" of an entry that comes from the user's code (configure_callbacks' return)

    @property
    def module(self) -> str:
        return self.class_path.rpartition(".")[0]

    @property
    def name(self) -> str:
        return self.class_path.rpartition(".")[2]


@dataclass(frozen=True)
class ObjectSpec(ClassRef):
    """An object given as an argument: a `class_path` entry nested in `init_args` (at any depth, also as an item
    of a list or a value of a mapping there), which LightningCLI (jsonargparse) instantiates before the object
    that takes it.

    `init_args` holds plain YAML values and further ObjectSpecs; `dict_kwargs` (jsonargparse's extra keyword
    arguments, for a `**kwargs` parameter) holds plain values only: jsonargparse passes them as they are. The
    top-level entries (model, data, callbacks, ...) stay ClassRefs with their dict_kwargs merged into init_args.
    """

    dict_kwargs: Mapping[str, Any] = field(default_factory=dict)


def objects_in(value: Any) -> list[ObjectSpec]:
    """The ObjectSpecs `value` holds at its top (itself, or items of its lists / values of its mappings), in order;
    not those nested in their init_args."""
    if isinstance(value, ObjectSpec):
        return [value]
    if isinstance(value, (list, tuple)):
        return [found for item in value for found in objects_in(item)]
    if isinstance(value, Mapping):
        return [found for item in value.values() for found in objects_in(item)]
    return []


def _default_field(flag: Flag) -> Any:
    """A field defaulting to `flag.default`; an unhashable (mutable) default is copied for each instance."""
    try:
        hash(flag.default)
    except TypeError:
        return field(default_factory=functools.partial(copy.deepcopy, flag.default))
    return field(default=flag.default)


TrainerFlags = make_dataclass(
    "TrainerFlags",
    [(flag.name, Any, _default_field(flag)) for flag in FLAGS],
    frozen=True,
    namespace={"__module__": __name__},
)


TrainerFlags.__doc__ = """Trainer flags, normalised to Lightning 2.x names and canonical values.

Made from the flag table, so that a flag is declared once: one field per
`flags.FLAGS` entry, in its order, named as the flag and defaulting to the
flag's default (what null or absence means). A field holds what that flag's
`Kind` normalises to (`callbacks`: a tuple of ClassRef). `None` keeps its
Lightning meaning where Lightning gives it one (e.g. max_epochs None: decided
together with max_steps by the plan).
"""


@dataclass(frozen=True)
class LoopFlags:
    """loopgen-only `loop:` section: facts Lightning finds at run time that shape the code."""

    optimizer_frequencies: tuple[int, ...] | None = None
    lr_schedulers: bool | None = None  # configure_optimizers returns LR schedulers (None: read its source)
    # the script's subcommands (LightningCLI's); None: fit, and validate, test and predict when the module has a
    # test_step or a predict_step (each that it provides)
    subcommands: tuple[str, ...] | None = None
    # torch.compile's arguments for the module, as Lightning fits a torch.compile(model) it is given; None: not
    # compiled ({} for `compile: true`: torch's defaults)
    compile: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class Spec:
    path: Path  # the spec file as given
    sha256: str  # of the spec file's bytes
    seed_everything: int | bool  # int seed; True: seed chosen at run time; False: do not seed
    model: ClassRef
    data: ClassRef | None
    trainer: TrainerFlags
    optimizer: ClassRef | None
    lr_scheduler: ClassRef | None
    loop: LoopFlags
    ckpt_path: str | None = None
    weights_only: bool | None = None  # how the script loads a checkpoint: null or true, safely; false, any pickle
    notices: tuple[str, ...] = ()  # one-line notices (seed-era spellings, defaults not implemented, ...)
    trainer_given: frozenset[str] = frozenset()  # the trainer flags the spec sets (null counts only where nullable)
    progress_bar_refresh_rate: int | None = None  # the seed's `progress_bar_refresh_rate: n` (n >= 1)
    # the accumulation schedule came from a GradientAccumulationScheduler entry of trainer.callbacks (Lightning 2.x's
    # form of the {epoch: factor} flag)
    accumulation_callback: bool = False
    # trainer.callbacks from this index on are those configure_callbacks returned (merged as Lightning merges them)
    callbacks_configured_at: int | None = None
    lines: Mapping[str, int] = field(default_factory=dict)  # the YAML line of each key, by its dotted path
    # a spec composed of several sources (config files, overrides): how the header names them, each source as it
    # records it (a file's path from the script's directory and its sha256, an override's text and None), and
    # the render arguments that compose them again; a plain spec file: empty
    name: str = ""
    sources: tuple[tuple[str, str | None], ...] = ()
    render_args: str = ""

    def line(self, key: str) -> int | None:
        """The YAML line of `key` ("trainer.amp_level"), or of the nearest enclosing key the spec has."""
        while key and key not in self.lines:
            key = key.rpartition(".")[0]
        return self.lines.get(key)


TOP_LEVEL_KEYS = (
    "seed_everything", "model", "data", "trainer", "optimizer", "lr_scheduler",  # LightningCLI `fit`
    "ckpt_path", "weights_only",  # LightningCLI `fit`: Trainer.fit arguments
    "loop",  # loopgen-only
)  # fmt: skip


CLASS_REF_KEYS = ("class_path", "init_args", "dict_kwargs")  # jsonargparse's


LOOP_KEYS = tuple(f.name for f in fields(LoopFlags))
SUBCOMMANDS = ("fit", "validate", "test", "predict")  # LightningCLI's, in its order


MAX_SEED = 2**32 - 1  # Lightning's seed_everything bounds (numpy's)
