"""torch.compile: the module compiled as Lightning 2.x fits a `torch.compile(model)` it is given."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopgen.errors import Problem
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.distributed import engine_kind
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec

# the module's methods Lightning's from_compiled runs under the compiled module's context, in its order
COMPILED_METHODS = ("forward", "training_step", "validation_step", "test_step", "predict_step")


@dataclass(frozen=True)
class Compiling:
    """`loop.compile`: Lightning's Trainer given `torch.compile(model, **options)` unwraps it (its from_compiled)
    and runs the module's forward and step methods each under the compiled module's dynamo context; the script
    does the same to the module it builds, before anything else sees it."""

    enabled: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)  # torch.compile's keyword arguments the spec gives

    @property
    def methods(self) -> tuple[str, ...]:
        return COMPILED_METHODS


def resolve_compiling(spec: Spec, model: ClassFacts, problems: list[Problem]) -> Compiling:
    options = spec.loop.compile
    if options is None:
        return Compiling()
    kind = engine_kind(spec)
    logging = sorted(set(COMPILED_METHODS) & model.logs_in)
    cases = (
        (
            bool(logging),
            f"loop.compile with {spec.model.class_path}.{logging[0] if logging else ''} calling self.log",
            (
                "Lightning 2.6.6 fitting a torch.compile(model) under torch 2.13 raises when a compiled step logs"
                " (torch's compiler fails in Lightning's log: `'method' object has no attribute '__dict__'`)"
            ),
            (
                "log in a hook the compiler does not run (on_train_batch_end, the epoch-end hooks), or compile the"
                " network in configure_model"
            ),
        ),
        (
            follows_1_9_5(spec, model),
            "loop.compile in a spec that follows Lightning 1.9.5",
            "1.9.5's Trainer takes no compiled module",
            "follow Lightning 2.x",
        ),
        (
            not model.is_lightning_module,
            f"loop.compile with {spec.model.class_path}, which is not a LightningModule",
            "Lightning's from_compiled expects a compiled LightningModule (it raises for another module)",
            "compile the network inside your module (in configure_model), or subclass LightningModule",
        ),
        (
            kind in ("dp", "horovod", "xla", "model_parallel"),
            f"loop.compile with the {kind} engine",
            (
                "Lightning fits a compiled module on one device, under DDP and under FSDP only (it raises: `Using a"
                " compiled model is incompatible with the current strategy`)"
            ),
            "run on one device or under DDP; under ModelParallelStrategy, compile the layers in configure_model",
        ),
        (
            kind == "fsdp",
            "loop.compile with FSDPStrategy",
            "Lightning compiles the module FullyShardedDataParallel has wrapped, which the FSDP script does not write",
            "compile the layers in configure_model, or run under DDP",
        ),
    )
    for refused, what, why, instead in cases:
        if refused:
            problems.append(Problem("loop.compile", refusal(what, why, instead), spec.line("loop.compile")))
    return Compiling(enabled=True, options=dict(options))
