"""Lightning's ModelPruning (a trainer.callbacks entry): torch.nn.utils.prune applied to the module's weights at
each epoch's end, the weights left reset to their values at set-up (the lottery ticket hypothesis), and the masks
applied for good when training ends and in full checkpoints. The script carries a class specialised to the entry's
arguments (templates/pruning.j2), whose hooks run among the callbacks in Lightning's order as a user's callback's
do."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loopgen.errors import Problem
from loopgen.plan.common import follows_1_9_5
from loopgen.plan.objects import is_lightning
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec

# torch.nn.utils.prune's classes of the unstructured methods, which rank every module's weights together
GLOBAL_METHODS = {"l1_unstructured": "L1Unstructured", "random_unstructured": "RandomUnstructured"}


@dataclass(frozen=True)
class Pruning:
    method: str  # torch.nn.utils.prune's function: "l1_unstructured", "ln_structured", ...
    together: bool  # use_global_unstructured: torch.nn.utils.prune.global_unstructured over every parameter
    amount: int | float  # a count of weights (int) or a fraction of those left (float)
    names: tuple[str, ...]  # the parameters pruned in each module ("weight", "bias")
    dim: int | None  # a structured method's dimension
    norm: int | None  # ln_structured's norm
    prunes: bool  # apply_pruning and an amount: otherwise it never prunes
    permanent: bool  # make_pruning_permanent
    lottery: bool  # use_lottery_ticket_hypothesis
    resample: bool  # resample_parameters: the reset draws new values (reset_parameters) instead
    verbose: int  # 0: quiet, 1: the totals after each pruning, 2: also each parameter's
    at_train_epoch_end: bool  # prune_on_train_epoch_end; else at each validation's end (not the sanity check's)

    @property
    def method_class(self) -> str:
        """The class global_unstructured takes."""
        return GLOBAL_METHODS[self.method]

    @property
    def keywords(self) -> dict[str, int]:
        """What a structured method takes besides the amount (Lightning's pruning_norm, pruning_dim)."""
        norm = {"n": self.norm} if self.method == "ln_structured" else {}
        return {**norm, "dim": self.dim} if self.method.endswith("_structured") else {}

    @property
    def hooks(self) -> dict[str, tuple[str, ...]]:
        """The methods of the script's class, with Lightning's parameters: those this entry needs."""
        prunes: dict[str, tuple[str, ...]] = {}
        if self.prunes:
            epoch_end = "on_train_epoch_end" if self.at_train_epoch_end else "on_validation_epoch_end"
            prunes = {"setup": ("trainer", "pl_module", "stage"), epoch_end: ("trainer", "pl_module")}
        permanent: dict[str, tuple[str, ...]] = {
            "on_train_end": ("trainer", "pl_module"),
            "on_save_checkpoint": ("trainer", "pl_module", "checkpoint"),
        }
        return {**prunes, **(permanent if self.permanent else {})}

    def facts(self, class_path: str) -> ClassFacts:
        """The script's class, served as a user's callback is: its hooks, and what they read of the trainer."""
        reads = {"sanity_checking"} if self.prunes and not self.at_train_epoch_end else set()
        return ClassFacts(
            class_path=class_path,
            file=Path(),
            root=Path(),
            is_lightning_module=False,
            is_lightning_callback=True,
            lightning_bases=("Callback",),
            methods=self.hooks,
            trainer_reads=frozenset(reads),
        )


def resolve_pruning(spec: Spec, model: ClassFacts, problems: list[Problem]) -> Pruning | None:
    """The spec's ModelPruning entry, with what Lightning raises for at construction refused here."""
    entries = [ref for ref in spec.trainer.callbacks if is_lightning(ref, "ModelPruning")]
    if not entries:
        return None
    ref = entries[0]
    where = "trainer.callbacks (ModelPruning)"

    def problem(message: str) -> None:
        problems.append(Problem(where, message, ref.line))

    if len(entries) > 1:
        problem(
            refusal(
                "a second ModelPruning callback",
                "the script carries one pruning class, specialised to one entry's arguments",
                "prune with one entry (torch prunes a pruned weight again at each epoch)",
            )
        )
    if follows_1_9_5(spec, model):
        problem(
            refusal(
                "ModelPruning in a spec that follows Lightning 1.9.5",
                "the script's class is Lightning 2.x's, whose lottery-ticket reset writes the weights"
                " 1.9.5's leaves as they are",
                "follow Lightning 2.x",
            )
        )
    averaging = [r for r in spec.trainer.callbacks if r.name in ("WeightAveraging", "EMAWeightAveraging")]
    if averaging:
        problem(
            refusal(
                f"ModelPruning beside {averaging[0].name}",
                "pruning registers each pruned weight again (as `weight_orig`, after the module's other"
                " parameters), and the averaged copy pairs its parameters with the module's by their order",
                "keep one of them",
            )
        )
    args = ref.init_args
    method = args["pruning_fn"]
    if method is None:
        problem("ModelPruning needs `pruning_fn` (one of ln_structured, l1_unstructured, random_structured,"
                " random_unstructured)")  # fmt: skip
        return None
    # Lightning's MisconfigurationException messages
    if method.endswith("_structured") and args["pruning_dim"] is None:
        problem("When requesting `structured` pruning, the `pruning_dim` should be provided.")
    if method == "ln_structured" and args["pruning_norm"] is None:
        problem("When requesting `ln_structured` pruning, the `pruning_norm` should be provided.")
    if args["use_global_unstructured"] and method not in GLOBAL_METHODS:
        problem(
            'Only the "unstructured" PRUNING_TYPE is supported with `use_global_unstructured=True`:'
            f" {method} is structured (set use_global_unstructured: false)"
        )
    names = tuple(args["parameter_names"] or ("weight", "bias"))
    if method.endswith("_structured") and "bias" in names:
        problem(
            refusal(
                f"{method} of the modules' biases",
                "torch's structured pruning needs a tensor of two or more dimensions, and a layer's bias has one"
                " (Lightning raises at the first pruning)",
                "set parameter_names: [weight]",
            )
        )
    if args["verbose"] not in (0, 1, 2):
        problem("`verbose` must be any of (0, 1, 2)")
    return Pruning(
        method=method,
        together=args["use_global_unstructured"],
        amount=args["amount"],
        names=names,
        dim=args["pruning_dim"],
        norm=args["pruning_norm"],
        prunes=bool(args["apply_pruning"] and args["amount"]),
        permanent=args["make_pruning_permanent"],
        lottery=args["use_lottery_ticket_hypothesis"],
        resample=args["resample_parameters"],
        verbose=args["verbose"],
        at_train_epoch_end=args["prune_on_train_epoch_end"],
    )
