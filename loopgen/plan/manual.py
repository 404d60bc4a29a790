"""Manual optimization (automatic_optimization = False)."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem, follows_1_9_5
from loopgen.plan.distributed import Distributed
from loopgen.plan.hooks import UserCode
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Manual:
    """Manual optimization (`self.automatic_optimization = False`, Lightning 2.x): training_step makes the optimizer
    steps itself, through what the script gives the module in place of Lightning's Trainer."""

    enabled: bool
    optimizers: bool = False  # the module calls self.optimizers()
    wraps: bool = False  # ... in manual optimization: the wrapped optimizers, whose steps the loop counts
    lr_schedulers: bool = False  # ... self.lr_schedulers()
    backward: bool = False  # ... self.manual_backward(loss)
    clip_gradients: bool = False  # ... self.clip_gradients(optimizer, ...)
    outputs_used: bool = False  # on_train_batch_end receives training_step's output
    # strategy ddp: training_step runs through DistributedDataParallel's forward, which prepares no all-reduce
    # when it returns; manual_backward prepares the all-reduce of each backward (Lightning's DDPStrategy)
    ddp: bool = False
    ddp_finds_unused: bool = False  # ... and finds the parameters the loss does not depend on (find_unused_parameters)

    @property
    def prepares_all_reduce(self) -> bool:
        """Under DDP, the module's self.manual_backward prepares the all-reduce of the gradients it computes
        (the script's prepare_all_reduce, Lightning's prepare_for_backward)."""
        return self.ddp and self.backward


# the LightningModule methods a manually optimizing module calls that the script binds to the model
MANUAL_METHODS = ("optimizers", "lr_schedulers", "manual_backward", "clip_gradients")


def resolve_manual(
    spec: Spec, model: ClassFacts, user: UserCode, distributed: Distributed, problems: list[Problem]
) -> Manual:
    """Manual optimization: what the module calls, and the flags Lightning refuses with it (its reasons)."""
    where, line = "model.class_path", spec.model.line
    if model.manual_optimization is None:
        message = (
            f"{spec.model.class_path} sets automatic_optimization to a value loopgen cannot read from its source;"
            " assign a literal True or False"
        )
        problems.append(Problem(where, message, line))
        return Manual(enabled=False)
    reads = model.attributes_read
    if not model.manual_optimization:
        if "manual_backward" in reads and model.is_lightning_module:
            message = (
                f"{spec.model.class_path} calls self.manual_backward, which needs manual optimization: set"
                " `self.automatic_optimization = False` in __init__"
            )
            problems.append(Problem(where, message, line))
        # self.optimizers() / self.lr_schedulers() read in the automatic loop (e.g. a learning rate)
        return Manual(
            enabled=False,
            optimizers=model.is_lightning_module and "optimizers" in reads,
            lr_schedulers=model.is_lightning_module and "lr_schedulers" in reads,
            # a configure_gradient_clipping override that calls self.clip_gradients gets the script's
            clip_gradients=model.defines("configure_gradient_clipping") and "clip_gradients" in reads,
        )
    t = spec.trainer
    if not model.is_lightning_module:
        message = f"{spec.model.class_path} turns automatic_optimization off but is not a LightningModule subclass"
        problems.append(Problem(where, message, line))
    if t.gradient_clip_val is not None and t.gradient_clip_val > 0:
        message = (
            "Automatic gradient clipping is not supported for manual optimization. Remove"
            f" `gradient_clip_val: {t.gradient_clip_val}` or switch to automatic optimization (clip in training_step"
            " with self.clip_gradients)"
        )
        problems.append(flag_problem(spec, "gradient_clip_val", message))
    if spec.accumulation_callback:
        message = (  # Lightning's, raised in the callback's on_train_start
            "Automatic gradient accumulation and the `GradientAccumulationScheduler` is not supported for manual"
            " optimization. Please remove the callback or switch to automatic optimization."
        )
        problems.append(Problem("trainer.callbacks", message, spec.line("trainer.callbacks")))
    elif t.accumulate_grad_batches != 1:
        message = (
            "Automatic gradient accumulation is not supported for manual optimization. Remove"
            f" `accumulate_grad_batches: {t.accumulate_grad_batches}` or switch to automatic optimization"
            " (accumulate in training_step)"
        )
        problems.append(flag_problem(spec, "accumulate_grad_batches", message))
    if "optimizer_idx" in model.methods.get("training_step", ()):
        message = (
            "Training with multiple optimizers is only supported with manual optimization. Remove the"
            " `optimizer_idx` argument from `training_step` and access your optimizers in `training_step` with"
            " `opt1, opt2, ... = self.optimizers()`"
        )
        problems.append(Problem(where, message, line))
    if follows_1_9_5(spec, model):
        message = (
            "manual optimization follows Lightning 2.x; this spec uses Lightning 1.9.5's automatic loop"
            " (truncated_bptt_steps, track_grad_norm, terminate_on_nan, amp_backend: apex or a *_epoch_end /"
            " training_step_end hook): remove those"
        )
        problems.append(Problem(where, message, line))
    if spec.loop.optimizer_frequencies is not None:
        problems.append(Problem("loop.optimizer_frequencies", "is not used with manual optimization: remove it"))
    outputs_used = bool(user.callbacks_with("on_train_batch_end")) or user.model_has("on_train_batch_end")
    if distributed.enabled:
        check_strategy(spec, distributed, problems)
    return Manual(
        enabled=True,
        optimizers="optimizers" in reads,
        wraps="optimizers" in reads,
        lr_schedulers="lr_schedulers" in reads,
        backward="manual_backward" in reads,
        clip_gradients="clip_gradients" in reads,
        outputs_used=outputs_used,
        ddp=distributed.ddp,
        ddp_finds_unused=distributed.ddp and distributed.find_unused_parameters,
    )


def check_strategy(spec: Spec, distributed: Distributed, problems: list[Problem]) -> None:
    """Manual optimization under a strategy: DDP as Lightning's DDPStrategy runs it (the step through the wrapper,
    manual_backward preparing the all-reduce), ModelParallelStrategy as on one device (no wrapper: the module's
    sharded layers reduce their gradients in each backward); the other strategies are refused."""
    where, line = "trainer.strategy", spec.line("trainer.strategy")
    if distributed.model_parallel:
        return
    if not distributed.ddp:
        message = refusal(
            f"manual optimization (self.automatic_optimization = False) with strategy {distributed.kind}",
            f"the {distributed.kind} script steps the optimizer itself after training_step; manual_backward and the"
            " steps inside training_step are not wired to it",
            "train it on one CPU or GPU, with strategy ddp or ModelParallelStrategy, or with automatic optimization",
        )
        problems.append(Problem(where, message, line))
        return
    if distributed.static_graph:
        message = refusal(
            "DDPStrategy(static_graph=True) with manual optimization (self.automatic_optimization = False)",
            "Lightning then delays the first backward's all-reduce by hand, and the script does not",
            "remove static_graph",
        )
        problems.append(Problem(where, message, line))
