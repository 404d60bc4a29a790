"""The script's command line."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.plan.bounds import Bounds
from loopgen.plan.build import Build
from loopgen.plan.checkpointing import Checkpointing
from loopgen.plan.distributed import Distributed
from loopgen.plan.evaluation import Evaluation
from loopgen.plan.guards import Guards
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class CommandLine:
    """The script's own options (argparse), each defaulting to the spec's value: only those whose override the
    script's shape serves. The loop tests MAX_EPOCHS / MAX_STEPS only when the spec bounds the run by them, so
    --max-epochs / --max-steps are offered only then (and not under fast_dev_run, which sets both), and take an
    integer >= 0 (-1, no limit, would need another loop); --seed only where the script seeds."""

    ckpt_path: bool  # --ckpt-path: the script resumes, or evaluates a checkpoint
    fit_resumes: bool  # ... fit reads it (else only the evaluation subcommands do)
    weights_only: bool  # --weights-only replaces WEIGHTS_ONLY (how that checkpoint is loaded)
    max_epochs: bool  # --max-epochs replaces MAX_EPOCHS
    max_steps: bool  # --max-steps replaces MAX_STEPS
    seed: bool  # --seed replaces SEED, or the seed chosen at run time (seed_everything: true)
    commands: tuple[str, ...]  # the subcommands beside fit ("fit" first), none when fit is the only one
    test_after_fit: bool  # fit --test CKPT: test once fit ends
    # with the subcommands: --help's description, less its end (" as loopgen rendered it."), and what
    # --ckpt-path gives the evaluation subcommands, less its end (" (default: the model as built)")
    description: str
    weights_help: str
    allow_changed_code: bool  # --allow-changed-code: run on user code that changed since the render (warning)

    @property
    def enabled(self) -> bool:
        return bool(
            self.ckpt_path
            or self.consolidates
            or self.weights_only
            or self.max_epochs
            or self.max_steps
            or self.seed
            or self.commands
            or self.allow_changed_code
        )

    seed_at_run_time: bool  # ... the seed chosen at run time unless --seed: no SEED constant
    # --consolidate DIR: a distributed checkpoint written as one file (ModelParallelStrategy's sharded checkpoints)
    consolidates: bool

    @property
    def seed_constant(self) -> bool:
        """--seed replaces the SEED constant (a seed chosen at run time has none: --seed replaces the choice)."""
        return self.seed and not self.seed_at_run_time

    @property
    def limits(self) -> bool:
        """--max-epochs or --max-steps is offered: the script checks a limit's value (its `limit` type)."""
        return self.max_epochs or self.max_steps

    @property
    def overrides(self) -> tuple[str, ...]:
        """The module constants main() replaces with the parsed values."""
        offered = {"WEIGHTS_ONLY": self.weights_only, "MAX_EPOCHS": self.max_epochs, "MAX_STEPS": self.max_steps}
        offered["SEED"] = self.seed_constant
        return tuple(name for name, on in offered.items() if on)


def resolve_command_line(
    spec: Spec,
    build: Build,
    bounds: Bounds,
    checkpointing: Checkpointing,
    evaluation: Evaluation,
    distributed: Distributed,
    guards: Guards,
) -> CommandLine:
    bounded = not spec.trainer.fast_dev_run  # fast_dev_run decides both limits (Lightning)
    loads = checkpointing.resumes or evaluation.enabled
    return CommandLine(
        ckpt_path=loads,
        fit_resumes=checkpointing.resumes,
        weights_only=loads,
        commands=evaluation.commands if evaluation.enabled else (),
        test_after_fit=evaluation.has("test"),
        description=f"{', '.join(evaluation.commands)} {build.model.cls},",
        weights_help=f"{', '.join(evaluation.commands[1:])}: the weights to use, a path"
        + (', "last" or "best"' if checkpointing.directories else ""),
        max_epochs=bounded and bounds.loop_until in ("epochs", "epochs_and_steps"),
        max_steps=bounded and bounds.step_limit,
        seed=build.seeds,
        seed_at_run_time=build.seed_at_run_time,
        consolidates=distributed.sharded_checkpoints and checkpointing.resumes,
        allow_changed_code=guards.enabled,
    )
