"""The script's docstring: where it came from, what it is specialised for, how to run it."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen import __version__
from loopgen.cache import templates_sha256
from loopgen.plan.bounds import Bounds
from loopgen.plan.distributed import Distributed
from loopgen.plan.optimization import Optimization
from loopgen.plan.optimizers import Optimizers
from loopgen.plan.precision import Device, Precision
from loopgen.plan.validation import Validation
from loopgen.spec.model import Spec

SCRIPT_SHA256_PLACEHOLDER = "-" * 64  # the script's own sha256 is of its text with this in its place


@dataclass(frozen=True)
class Header:
    """What the script's docstring says (templates/header.j2 writes it): where the script came from, what it was
    specialised for, where it is general, and how to run it (the engine's part: templates/engines/<engine>.j2)."""

    version: str
    spec_name: str
    spec_sha256: str
    script_name: str
    model_module: str
    model_package: str
    # what the script was specialised for
    accelerator: str
    precision: str
    max_epochs: int
    max_steps: int | None  # None: no limit (Lightning's -1)
    accumulate_schedule: dict[int, int] | None  # accumulate_grad_batches as a schedule {epoch: batches}
    accumulate: int | None  # ... as one number; None: no accumulation, or the schedule
    clip_val: float | None  # gradient_clip_val; None: no clipping
    clip_algorithm: str  # "norm" | "value"
    validation: bool
    # the paragraphs between the choices and how to run the script, in order: "general" (configure_optimizers'
    # return is unpacked at run time, for `general_reason`), "engine" (how the engine's launcher starts it)
    notes: tuple[str, ...]
    general_reason: str | None  # why the optimizers' shape is read at run time; None: the source shows it
    templates_sha256: str = ""  # of loopgen's templates (`loopgen check` tells a change of loopgen by it)
    script_sha256: str = SCRIPT_SHA256_PLACEHOLDER  # of the script itself: filled in once formatted


def resolve_header(
    spec: Spec,
    optimizers: Optimizers,
    script_name: str,
    device: Device,
    precision: Precision,
    bounds: Bounds,
    optimization: Optimization,
    validation: Validation,
    distributed: Distributed,
) -> Header:
    """The header, once the engine is known (it adds the paragraph on its launcher)."""
    notes = ("general",) if optimizers.general else ()
    if distributed.enabled:
        notes += ("engine",)
    return Header(
        version=__version__,
        spec_name=spec.path.name,
        spec_sha256=spec.sha256,
        script_name=script_name,
        model_module=spec.model.module,
        model_package=spec.model.module.split(".")[0],
        accelerator=device.name,
        precision=precision.name,
        max_epochs=bounds.max_epochs,
        max_steps=bounds.max_steps if bounds.max_steps != -1 else None,
        accumulate_schedule=dict(optimization.schedule) if optimization.schedule is not None else None,
        accumulate=optimization.accumulate if optimization.schedule is None and optimization.accumulates else None,
        clip_val=optimization.clip_val if optimization.clip else None,
        clip_algorithm=spec.trainer.gradient_clip_algorithm,
        validation=validation.enabled,
        notes=notes,
        general_reason=optimizers.general_reason if optimizers.general else None,
        templates_sha256=templates_sha256(),
    )
