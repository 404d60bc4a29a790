"""Lightning's Timer: a `Timer` entry of trainer.callbacks, or the one `max_time` adds (Lightning's callback
connector). It times the training and validation loops, keeps those times in checkpoints, and stops training once
the training time reaches its duration."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem
from loopgen.plan.objects import Callback, Construct, is_lightning
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Timer:
    callback: Callback
    duration: float | None  # seconds; None: it only times the loops
    interval: str  # "step": checked after every training batch; "epoch": at each training epoch's end
    verbose: bool  # it says when the time is up
    entry: int | None  # its place among the spec's callbacks; None: max_time's, after them

    @property
    def stops(self) -> bool:
        return self.duration is not None


def resolve_timer(spec: Spec, problems: list[Problem], notices: list[str]) -> Timer | None:
    """The run's Timer: the spec's entry, else max_time's (interval "step", verbose), else none."""
    t = spec.trainer
    entries = [i for i, ref in enumerate(t.callbacks) if is_lightning(ref, "Timer")]
    if len(entries) > 1:
        problems.append(
            flag_problem(
                spec,
                "callbacks",
                refusal(
                    "a second Timer callback",
                    "Lightning refuses them: both would keep their state under the key `Timer` in a checkpoint",
                    "give one Timer",
                ),
            )
        )
        return None
    if entries:
        if t.max_time is not None:
            notices.append("Ignoring `Trainer(max_time=...)`, callbacks list already contains a Timer.")
        args = t.callbacks[entries[0]].init_args
        duration, interval, verbose, entry = args["duration"], args["interval"], args["verbose"], entries[0]
    elif t.max_time is not None:
        duration, interval, verbose, entry = t.max_time, "step", True, None
    else:
        return None
    hooks = {"on_train_start", "on_validation_start", "on_validation_end", "state_dict", "load_state_dict"}
    if duration is not None:
        # Lightning checks at fit's start whatever the interval (a resumed run's time may be up already)
        hooks |= {"on_fit_start", "on_train_batch_end" if interval == "step" else "on_train_epoch_end"}
    callback = Callback(
        construct=Construct("", "Timer"), var="timer", hooks=frozenset(hooks), kind="timer", state_key="Timer"
    )
    return Timer(callback=callback, duration=duration, interval=interval, verbose=verbose, entry=entry)


def timer_stops(spec: Spec) -> bool:
    """Whether the run's Timer can stop training (it has a duration)."""
    entries = [ref for ref in spec.trainer.callbacks if is_lightning(ref, "Timer")]
    if entries:
        return any(ref.init_args["duration"] is not None for ref in entries)
    return spec.trainer.max_time is not None
