"""Lightning's StochasticWeightAveraging (a trainer.callbacks entry): the script carries its class
(templates/swa.j2), called where Lightning calls its hooks, and the loop surgery it makes in Lightning's fit loop:
at `swa_epoch_start` its SWALR replaces the module's scheduler (or joins as the only one), the weights are averaged
at the start of each epoch up to the last, and a module with BatchNorm layers gets one more epoch, with the
average's weights, that recomputes the layers' statistics: forward passes only, one optimizer step at its last
batch (Lightning skips the backward and accumulates over the whole epoch)."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.distributed import engine_kind
from loopgen.plan.objects import Callback, Construct, is_lightning
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec

NAME = "StochasticWeightAveraging"
SWA_HOOKS = frozenset(
    {"setup", "on_fit_start", "on_train_epoch_start", "on_train_epoch_end", "on_train_end", "state_dict",
     "load_state_dict"}
)  # fmt: skip


@dataclass(frozen=True)
class Swa:
    callback: Callback  # kind "swa": built with the entry's arguments, its hooks dispatched in templates/hooks.j2


def is_swa(spec: Spec) -> bool:
    return any(is_lightning(ref, NAME) for ref in spec.trainer.callbacks)


def resolve_swa(
    spec: Spec, model: ClassFacts, callbacks: tuple[ClassFacts, ...], problems: list[Problem]
) -> Swa | None:
    """The entry, or None; what the script cannot serve with it (beside the user's `callbacks`) is refused at the
    entry."""
    entries = [ref for ref in spec.trainer.callbacks if is_lightning(ref, NAME)]
    if not entries:
        return None
    ref = entries[0]

    def refuse(what: str, why: str, instead: str, where: str = "trainer.callbacks", line: int | None = None) -> None:
        problems.append(Problem(where, refusal(what, why, instead), ref.line if line is None else line))

    if len(entries) > 1:
        refuse(
            f"a second StochasticWeightAveraging ({entries[1].class_path})",
            "Lightning keeps each one's state under the same key, and both would swap the scheduler",
            "keep one",
            line=entries[1].line,
        )
    if ref.init_args.get("swa_lrs") is None:
        refuse(f"{ref.class_path} without swa_lrs", "Lightning requires the SWA learning rate", "give swa_lrs")
    t = spec.trainer
    surgery = "SWA changes Lightning's fit loop (its scheduler swap and its extra batch-norm epoch), which the script"
    limits: list[tuple[str, str, str]] = []
    if follows_1_9_5(spec, model):
        limits.append(
            ("a spec that follows Lightning 1.9.5", "1.9.5's SWA runs the loop of 1.9.5", "follow Lightning 2.x")
        )
    if model.manual_optimization:
        limits.append(
            (
                "manual optimization",
                (
                    "Lightning's SWA skips the automatic loop's backward in its batch-norm epoch, which a module"
                    " that steps itself does not have"
                ),
                "turn automatic optimization on",
            )
        )
    # (training_step's optimizer_idx, and truncated_bptt_steps, make the spec follow 1.9.5: refused above)
    if model.optimizers is not None and len(model.optimizers.optimizers) > 1:
        limits.append(("several optimizers", "Lightning's SWA works with one optimizer", "return one optimizer"))
    if model.defines("optimizer_step") or model.mentions_lbfgs:
        limits.append(
            (
                "an optimizer_step override or LBFGS",
                f"{surgery} runs through its accumulation path, not the closure these need",
                "step a plain optimizer",
            )
        )
    if spec.optimizer is not None:
        limits.append(
            (
                "the spec's optimizer:",
                "the script takes the schedulers SWA swaps from configure_optimizers",
                "return the optimizer (and scheduler) from configure_optimizers",
            )
        )
    if engine_kind(spec) is not None:
        limits.append((f"strategy {t.strategy}", f"{surgery} carries on one device only", "train on one device"))
    if not isinstance(t.accumulate_grad_batches, int):
        limits.append(
            (
                "an accumulation schedule",
                (
                    "Lightning's GradientAccumulationScheduler sets its factor after SWA's hook, in the batch-norm"
                    " epoch too, where SWA's one window over the epoch must hold"
                ),
                "give accumulate_grad_batches as one number",
            )
        )
    if t.fast_dev_run:
        limits.append(("fast_dev_run", "its single batch leaves no epochs to average", "leave fast_dev_run off"))
    if t.max_steps not in (None, -1):
        limits.append(("max_steps", "Lightning's SWA counts epochs (up to max_epochs)", "bound the run by max_epochs"))
    if t.max_epochs == -1:
        limits.append(
            ("max_epochs=-1", "the average is copied into the module only when training ends", "give max_epochs")
        )
    averaging = [r for r in t.callbacks if is_lightning(r, "WeightAveraging") or is_lightning(r, "EMAWeightAveraging")]
    if averaging:
        limits.append(
            (
                f"{averaging[0].class_path}",
                "both average the module's weights and copy their average into it when training ends",
                "keep one of them",
            )
        )
    # a user's subclass of LearningRateMonitor (on Lightning's class) reads trainer.lr_scheduler_configs, which the
    # script does not swap
    subclasses = {facts.class_path for facts in callbacks if "LearningRateMonitor" in facts.lightning_bases}
    monitors = [r for r in t.callbacks if r.class_path in subclasses]
    if monitors:
        limits.append(
            (
                f"{monitors[0].class_path} (a LearningRateMonitor)",
                "Lightning's monitor then reads the swapped scheduler configs, which the script's trainer does not hold",
                "use Lightning's LearningRateMonitor, or log the learning rate from your module's hooks",
            )
        )
    if model.is_lightning_module and "lr_schedulers" in model.attributes_read:
        limits.append(
            (
                f"{spec.model.class_path} reading self.lr_schedulers()",
                "after the swap Lightning returns SWALR there",
                "read the optimizer's learning rate instead",
            )
        )
    for what, why, instead in limits:
        refuse(f"{ref.class_path} with {what}", why, instead)
    # (avg_fn is refused unless null: spec/flags.py)
    args = {name: value for name, value in ref.init_args.items() if name != "avg_fn"}
    callback = Callback(construct=Construct("", NAME, args), var="swa", hooks=SWA_HOOKS, kind="swa", state_key=NAME)
    return Swa(callback=callback)
