"""When training stops: max_epochs, max_steps, min_*, limits, fast_dev_run, overfit_batches."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.plan.common import early_stopping_checks, reads_trainer
from loopgen.plan.data import Data
from loopgen.plan.objects import is_lightning
from loopgen.plan.timer import timer_stops
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Bounds:
    max_epochs: int  # -1: no limit
    max_steps: int  # -1: no limit
    min_epochs: int
    min_steps: int
    loop_until: str  # "epochs_and_steps" | "epochs" | "steps" | "forever"
    step_limit: bool
    stop_requests: bool  # something can set trainer.should_stop
    holds_stop: bool  # a stop request can be held back by min_epochs / min_steps
    holds_for_epochs: bool
    holds_for_steps: bool
    holds_for_both: bool
    message_min_epochs: str  # the values Lightning's message shows
    message_min_steps: str
    min_steps_given: int | None = None  # trainer.min_steps: the flag as given (None when not)

    @property
    def estimate_epochs(self) -> int:
        """The epochs in Lightning's estimated_stepping_batches: max(max_epochs, 1); -1: no epoch limit (the
        estimate is max_steps, or inf)."""
        return max(self.max_epochs, 1) if self.max_epochs != -1 else -1


def resolve_bounds(spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], data: Data) -> Bounds:
    """Lightning's resolution of max_epochs / max_steps / min_* (fast_dev_run included)."""
    t = spec.trainer
    max_steps, max_epochs = t.max_steps, t.max_epochs
    if t.fast_dev_run:
        max_steps, max_epochs = t.fast_dev_run, 1
    if max_epochs is None:
        max_epochs = 1000 if max_steps == -1 else -1
    min_epochs = t.min_epochs
    if min_epochs is None:  # Lightning's _parse_loop_limits
        min_epochs = 1 if t.min_steps is not None else 0
    min_steps = t.min_steps or 0
    stop_requests = any(reads_trainer(facts, "should_stop") for facts in (model, *callbacks))
    validates = data.val_owner is not None
    stops_early = (
        any(early_stopping_checks(ref, spec, validates) for ref in t.callbacks if is_lightning(ref, "EarlyStopping"))
        and not t.fast_dev_run
    )
    stop_requests = stop_requests or stops_early or timer_stops(spec)
    if max_epochs != -1 and max_steps != -1:
        loop_until = "epochs_and_steps"
    elif max_epochs != -1:
        loop_until = "epochs"
    else:
        loop_until = "steps" if max_steps != -1 else "forever"
    holds = stop_requests and bool(min_epochs or min_steps)
    return Bounds(
        max_epochs=max_epochs,
        max_steps=max_steps,
        min_epochs=min_epochs,
        min_steps=min_steps,
        loop_until=loop_until,
        step_limit=max_steps != -1,
        stop_requests=stop_requests,
        holds_stop=holds,
        holds_for_epochs=holds and bool(min_epochs),
        holds_for_steps=holds and bool(min_steps),
        holds_for_both=holds and bool(min_epochs) and bool(min_steps),
        message_min_epochs=str(min_epochs) if min_epochs else "0",
        message_min_steps=str(min_steps) if min_steps else "None",
        min_steps_given=t.min_steps,
    )
