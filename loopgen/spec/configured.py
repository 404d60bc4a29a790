"""The callbacks a LightningModule's configure_callbacks() returns, merged into the spec's as Lightning 2.x's
Trainer merges them (its _CallbackConnector._attach_model_callbacks): a returned callback replaces the trainer's
callbacks of its class or of a class it subclasses, and the returned ones come after the trainer's (its
ModelCheckpoints still last). The script builds them as it builds the spec's, from what the source shows."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

from loopgen.errors import LoopgenError, Problem
from loopgen.source.callbacks import HParam, ReturnedCallback
from loopgen.source.facts import ClassFacts
from loopgen.spec.flags import CALLBACK_ARGS, POSITIONAL_ARGS
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, ObjectSpec, Spec

# Lightning's callbacks that its Trainer adds by default, whose merge with a returned one depends on what is
# installed (rich: the RichProgressBar and RichModelSummary defaults), and the accumulation schedule, which the
# spec gives as a flag: why each is refused when configure_callbacks returns it, and what to do instead
_DEFAULTS_DEPEND_ON_RICH = (
    "Lightning merges it with the {} its Trainer adds, which depends on whether rich is installed"
)
_REFUSED = {
    "TQDMProgressBar": (_DEFAULTS_DEPEND_ON_RICH.format("progress bar"), "give it in trainer.callbacks"),
    "RichProgressBar": (_DEFAULTS_DEPEND_ON_RICH.format("progress bar"), "give it in trainer.callbacks"),
    "ModelSummary": (_DEFAULTS_DEPEND_ON_RICH.format("model summary"), "give it in trainer.callbacks"),
    "RichModelSummary": (_DEFAULTS_DEPEND_ON_RICH.format("model summary"), "give it in trainer.callbacks"),
    "GradientAccumulationScheduler": (
        "the script sets the accumulation schedule before training, from the spec",
        "give it as `accumulate_grad_batches: {epoch: factor}`",
    ),
}


def with_configured_callbacks(
    spec: Spec,
    model: ClassFacts,
    normalise: Callable[[str, int, dict[str, Any]], tuple[ClassRef | None, list[Problem]]],
    lineage: Callable[[str], tuple[str, ...]],
    follows_1_9_5: bool,
) -> Spec:
    """`spec` with the callbacks `model`'s configure_callbacks returns merged into trainer.callbacks.

    `normalise(where, line, entry)` checks one returned callback as a trainer.callbacks entry (its ClassRef, or
    its problems); `lineage(class_path)` is the class and its bases, each where it is defined."""
    returned = model.configured_callbacks
    if not isinstance(returned, tuple) or not returned:
        return spec
    where = model.defined_at.get("configure_callbacks", "configure_callbacks")
    if follows_1_9_5:
        message = refusal(
            "configure_callbacks in a spec that follows Lightning 1.9.5",
            "loopgen merges the returned callbacks as Lightning 2.x does",
            "give them in trainer.callbacks, or follow Lightning 2.x",
        )
        raise LoopgenError(Problem(where, message))
    problems: list[Problem] = []
    refs = [_ref(spec, model, callback, normalise, problems) for callback in returned]
    if problems:
        raise LoopgenError(problems)
    kept = _merge(spec, [ref for ref in refs if ref is not None], lineage, problems)
    if problems:
        raise LoopgenError(problems)
    added = tuple(ref for ref in refs if ref is not None)
    trainer = dataclasses.replace(spec.trainer, callbacks=(*kept, *added))
    if any(ref.name == "ModelCheckpoint" for ref in added) and not trainer.enable_checkpointing:
        # Lightning refuses enable_checkpointing False with a ModelCheckpoint among the Trainer's callbacks, not
        # one configure_callbacks adds later
        trainer = dataclasses.replace(trainer, enable_checkpointing=True)
    return dataclasses.replace(spec, trainer=trainer, callbacks_configured_at=len(kept))


def _ref(
    spec: Spec,
    model: ClassFacts,
    callback: ReturnedCallback,
    normalise: Callable[[str, int, dict[str, Any]], tuple[ClassRef | None, list[Problem]]],
    problems: list[Problem],
) -> ClassRef | None:
    """The returned callback as a trainer.callbacks entry, its `self.hparams.NAME` arguments read from the spec."""
    file = str(model.defined_at.get("configure_callbacks", "")).rpartition(":")[0] or str(model.file)
    at = f"{file}:{callback.line}"
    name = callback.class_path.rpartition(".")[2]
    if name in _REFUSED and callback.class_path.split(".")[0] in ("pytorch_lightning", "lightning"):
        why, instead = _REFUSED[name]
        problems.append(Problem(at, refusal(f"{name} returned by configure_callbacks", why, instead)))
        return None
    args: dict[str, Any] = {}
    lightning = callback.class_path.split(".")[0] in ("pytorch_lightning", "lightning")
    if callback.positional:
        names = positional_names(name) if lightning else None
        if names is None:
            problems.append(Problem(at, f"pass {name}'s arguments by keyword (loopgen reads a class of yours by name)"))
            return None
        if len(callback.positional) > len(names):
            given = len(callback.positional)
            problems.append(Problem(at, f"{name}() takes {len(names)} positional arguments but {given} were given"))
            return None
        args.update(zip(names, callback.positional))
    for key, value in callback.args:
        if key in args:  # Python's TypeError, as Lightning's Trainer never starts
            problems.append(Problem(at, f"{name}() got multiple values for argument '{key}'"))
            return None
        args[key] = value
    for key, value in args.items():
        if isinstance(value, HParam):
            args[key] = _hparam(spec, model, name, key, value, at, problems)
    ref, found = normalise(at, callback.line, {"class_path": callback.class_path, "init_args": args})
    problems.extend(found)
    return None if ref is None else dataclasses.replace(ref, where=at)


def positional_names(name: str) -> tuple[str, ...] | None:
    """The parameters Lightning's callback `name` takes by position, in order (None: not one loopgen knows)."""
    flags = CALLBACK_ARGS.get(name)
    if flags is None:
        return None
    return tuple(flag.name for flag in flags)[: POSITIONAL_ARGS.get(name)]


def _hparam(spec: Spec, model: ClassFacts, name: str, key: str, value: HParam, at: str, problems: list[Problem]) -> Any:
    """The model's init argument `value.name`, as the spec gives it (what self.hparams holds)."""
    if not model.saves_hyperparameters:
        problems.append(Problem(at, f"{name}({key}=self.hparams.{value.name}): the model never calls"
                                    " self.save_hyperparameters(), so self.hparams has no such value"))  # fmt: skip
        return None
    defaults = (model.init.defaults or {}) if model.init is not None else {}
    given = spec.model.init_args.get(value.name, defaults.get(value.name, _MISSING))
    if given is _MISSING or isinstance(given, ObjectSpec):
        problems.append(Problem(at, (
            f"{name}({key}=self.hparams.{value.name}): neither the spec nor a literal default of the model's"
            f" __init__ gives its value: set model.init_args.{value.name}" if given is _MISSING else
            f"{name}({key}=self.hparams.{value.name}): an object, not a value loopgen can pass on"
        )))  # fmt: skip
        return None
    return given


_MISSING: Any = object()


def _merge(
    spec: Spec, added: Sequence[ClassRef], lineage: Callable[[str], tuple[str, ...]], problems: list[Problem]
) -> list[ClassRef]:
    """The spec's callbacks Lightning keeps: those whose class no returned callback's class is or subclasses."""
    kept = list(spec.trainer.callbacks)
    for ref in added:
        bases = lineage(ref.class_path) or (ref.class_path,)
        overridden = {
            _identity(old, lineage) for old in kept if _identity(old, lineage) in bases and old.name != "Callback"
        }
        if len(overridden) > 1:
            message = (
                f"{ref.name} returned by configure_callbacks subclasses several of trainer.callbacks' classes"
                f" ({', '.join(sorted(overridden))}): Lightning replaces one of them, which one depends on the"
                " order of a set; keep one of them in trainer.callbacks"
            )
            problems.append(Problem(ref.where, message))
        kept = [old for old in kept if _identity(old, lineage) not in overridden]
    return kept


def _identity(ref: ClassRef, lineage: Callable[[str], tuple[str, ...]]) -> str:
    """A callback's class as the place it is defined (Lightning's: its canonical class path)."""
    if ref.class_path.startswith("pytorch_lightning."):
        return ref.class_path
    found = lineage(ref.class_path)
    return found[0] if found else ref.class_path
