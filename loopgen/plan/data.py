"""The dataloaders: from the model or the datamodule, sized or not."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.common import batch_limits, flag_problem, follows_1_9_5, limits_batches
from loopgen.plan.distributed import engine_kind
from loopgen.plan.objects import is_lightning
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Data:
    train_owner: str  # "data" | "model": the script variable whose train_dataloader() is called
    val_owner: str | None
    limit_train: int | float
    limit_val: int | float
    counts_train: bool  # num_training_batches differs from len(loader): the num_batches helper
    counts_val: bool
    counts: bool  # either
    sequential: bool  # overfit_batches: random samplers are replaced by sequential ones
    reload_every: int
    reloads: bool
    unsized: bool  # a loader may have no length (IterableDataset): decided when the script runs
    checks_fraction: bool  # ... and val_check_interval is a float other than 1.0: Lightning's error then
    # val_dataloader's source may return several loaders: fit validates each in turn (dataloader_idx passed,
    # logged names suffixed /dataloader_idx_N when there are several)
    several_val: bool = False
    one_val_loader_shown: bool = False  # ... or returns one DataLoader on every path: no check for a list
    # the batch-transfer hooks (BATCH_HOOKS) the script calls, each with the variable whose it is: "data" where the
    # data module overrides it (Lightning's _DataHookSelector takes it over the module's), else "model"
    batch_hooks: tuple[tuple[str, str], ...] = ()
    # the loaders' workers are seeded by Lightning 1.9.5's pl_worker_init_function (numpy's SeedSequence), not
    # 2.x's (a hash of the seed, the worker and the rank)
    workers_1_9_5: bool = False
    # the code read names num_workers: its loaders may read in worker processes, which Lightning seeds (else the
    # script only checks that no loader has workers where Lightning would seed them)
    seeds_workers: bool = False
    # the code read names sampler or batch_sampler: a loader's own sampler may have a set_epoch, which Lightning
    # calls with the epoch (_set_sampler_epoch) as each training epoch and each validation in fit starts
    sets_sampler_epoch: bool = False

    def batch_hook(self, name: str) -> str | None:
        """Whose batch-transfer hook `name` the script calls ("data" or "model"); None: neither overrides it."""
        return dict(self.batch_hooks).get(name)

    @property
    def data_transfers(self) -> bool:
        """The data module's batch-transfer hooks are called: `data` goes where a batch moves."""
        return "data" in dict(self.batch_hooks).values()


# The hooks a batch passes through on its way to the step, in order
BATCH_HOOKS = ("on_before_batch_transfer", "transfer_batch_to_device", "on_after_batch_transfer")


def resolve_data(spec: Spec, model: ClassFacts, data: ClassFacts | None, problems: list[Problem]) -> Data:
    t = spec.trainer

    def owner(hook: str) -> str | None:
        # With a data class, Lightning reads the loaders from it only (the model's are ignored).
        if data is not None:
            return "data" if data.defines(hook) else None
        return "model" if model.defines(hook) else None

    train_owner = owner("train_dataloader")
    if train_owner is None:
        where = f"{spec.data.class_path} or {spec.model.class_path}" if spec.data else spec.model.class_path
        problems.append(Problem("data" if spec.data else "model", f"no train_dataloader() defined on {where}"))
    limit_train, limit_val = batch_limits(spec)
    val_owner = owner("val_dataloader")
    validation = val_owner is not None and model.defines("validation_step") and limit_val != 0
    owner_facts = data if val_owner == "data" else model
    listed_at = owner_facts.val_loaders_listed_at if validation and owner_facts is not None else ""
    counts_train = limits_batches(limit_train)
    counts_val = validation and limits_batches(limit_val)
    unsized, checks_fraction = unsized_loaders(spec, model, data, problems)
    if listed_at:
        _check_several_val_loaders(spec, model, listed_at, problems)
    return Data(
        train_owner=train_owner or "model",
        val_owner=val_owner if validation else None,
        limit_train=limit_train,
        limit_val=limit_val,
        counts_train=counts_train,
        counts_val=counts_val,
        counts=counts_train or counts_val,
        sequential=bool(t.overfit_batches),
        reload_every=t.reload_dataloaders_every_n_epochs,
        reloads=t.reload_dataloaders_every_n_epochs > 0,
        unsized=unsized,
        checks_fraction=checks_fraction,
        several_val=bool(listed_at),
        one_val_loader_shown=validation and owner_facts is not None and owner_facts.val_loader_built,
        batch_hooks=tuple(
            (hook, "data" if data is not None and data.defines(hook) else "model")
            for hook in BATCH_HOOKS
            if model.defines(hook) or (data is not None and data.defines(hook))
        ),
        workers_1_9_5=follows_1_9_5(spec, model),
        seeds_workers=model.mentions_num_workers or (data is not None and data.mentions_num_workers),
        sets_sampler_epoch=model.mentions_sampler or (data is not None and data.mentions_sampler),
    )


def _check_several_val_loaders(spec: Spec, model: ClassFacts, where: str, problems: list[Problem]) -> None:
    """Several val loaders in fit (val_dataloader's source returns a list of them): what the script's
    validation of each in turn does not serve."""
    t = spec.trainer
    cases = (
        (
            follows_1_9_5(spec, model),
            "a spec that follows Lightning 1.9.5",
            "its validation_epoch_end gets a list per loader",
        ),
        (engine_kind(spec) is not None, f"the {engine_kind(spec)} engine", "each process would shard every loader"),
        (t.profiler is not None, "a profiler", "its actions are named per loader"),
        (
            any(is_lightning(ref, "ThroughputMonitor") for ref in t.callbacks),
            "a ThroughputMonitor",
            "its counts and steps run on across the loaders, which the script does not follow",
        ),
    )
    for refused, what, why in cases:
        if refused:
            message = refusal(
                f"val_dataloader returning several loaders with {what}",
                f"fit validates them one after the other, and {why}",
                "return one loader from val_dataloader, or validate the others with the script's `validate` command",
            )
            problems.append(Problem(where, message))


def unsized_loaders(
    spec: Spec, model: ClassFacts, data: ClassFacts | None, problems: list[Problem]
) -> tuple[bool, bool]:
    """Loaders without `__len__` (an IterableDataset, streaming data), when the model's or data class's source uses
    IterableDataset: the script asks each loader for its length when it loads it and follows Lightning's rules
    for the loaders that have none (num_training_batches infinite, an epoch that ends when the iterator does,
    val_check_interval an int or 1.0, the fetcher reading one batch ahead to know the last one). What such a
    script does not serve yet is refused here. (unsized, checks_fraction)"""
    for facts, ref in ((data, spec.data), (model, spec.model)):
        if facts is None or ref is None or not facts.mentions_iterable_dataset:
            continue
        t = spec.trainer
        given = {"ckpt_path": spec.ckpt_path is not None}
        given["overfit_batches"] = bool(t.overfit_batches)
        given["reload_dataloaders_every_n_epochs"] = t.reload_dataloaders_every_n_epochs > 0
        given["profiler"] = t.profiler is not None
        for flag in (flag for flag, on in given.items() if on):
            message = refusal(
                f"{ref.class_path}'s source uses IterableDataset: {flag} with a loader that may have no length",
                f"the script's {flag} code is written for loaders with a length",
                f"give the dataset a length (a map-style Dataset with __len__), or remove {flag}",
            )
            problems.append(
                Problem(flag, message, spec.line(flag)) if flag == "ckpt_path" else flag_problem(spec, flag, message)
            )
        interval = t.val_check_interval
        fraction = isinstance(interval, float) and interval != 1.0 and not t.fast_dev_run and t.limit_train_batches != 0
        return True, fraction
    return False, False
