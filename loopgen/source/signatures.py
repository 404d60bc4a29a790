"""The spec's `init_args` against the signatures of the classes they go to, checked at render time.

Nothing is imported: a user class's `__init__` is read from its source with `ast` (loopgen/source/reader.py,
`ClassFacts.init`); torch's optimizers and LR schedulers come from the table below, which
tests/test_signatures.py checks against the installed torch with `inspect.signature`; Lightning's callbacks,
loggers and profilers are checked by their tables in loopgen/spec/flags.py as the spec is read.

Each problem names its key and YAML line; the pipeline reports them together with the plan's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from loopgen.errors import Problem, did_you_mean


@dataclass(frozen=True)
class Signature:
    """What a constructor accepts by keyword, after the argument the script passes itself (self, params,
    optimizer)."""

    names: tuple[str, ...]  # the parameters that may be given by keyword, in order
    required: tuple[str, ...] = ()  # those without a default
    var_keyword: bool = False  # **kwargs: any other name is accepted
    positional_only: tuple[str, ...] = ()  # parameters that cannot be given by keyword
    # a parameter the script passes itself (params / optimizer), or that no YAML value can be (a function)
    fixed: Mapping[str, str] | None = None
    defaults: Mapping[str, Any] | None = None  # the defaults the source writes as literals, by parameter
    # the parameters typed Callable or as a class (`type`, `Type[...]`), not str as well: a string given for one
    # is an import path, which jsonargparse (LightningCLI) imports
    imported: tuple[str, ...] = ()


# torch.optim's optimizers: the keyword parameters after `params` (none is required, none takes **kwargs).
# Checked against the installed torch by tests/test_signatures.py.
TORCH_OPTIMIZERS: Mapping[str, tuple[str, ...]] = {
    "ASGD": ("lr", "lambd", "alpha", "t0", "weight_decay", "foreach", "maximize", "differentiable", "capturable"),
    "Adadelta": ("lr", "rho", "eps", "weight_decay", "foreach", "capturable", "maximize", "differentiable"),
    "Adafactor": ("lr", "beta2_decay", "eps", "d", "weight_decay", "foreach", "maximize"),
    "Adagrad": ("lr", "lr_decay", "weight_decay", "initial_accumulator_value", "eps", "foreach", "maximize", "differentiable", "fused"),
    "Adam": ("lr", "betas", "eps", "weight_decay", "amsgrad", "foreach", "maximize", "capturable", "differentiable", "fused", "decoupled_weight_decay"),
    "AdamW": ("lr", "betas", "eps", "weight_decay", "amsgrad", "maximize", "foreach", "capturable", "differentiable", "fused"),
    "Adamax": ("lr", "betas", "eps", "weight_decay", "foreach", "maximize", "differentiable", "capturable"),
    "LBFGS": ("lr", "max_iter", "max_eval", "tolerance_grad", "tolerance_change", "history_size", "line_search_fn"),
    "Muon": ("lr", "weight_decay", "momentum", "nesterov", "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn"),
    "NAdam": ("lr", "betas", "eps", "weight_decay", "momentum_decay", "decoupled_weight_decay", "foreach", "maximize", "capturable", "differentiable"),
    "RAdam": ("lr", "betas", "eps", "weight_decay", "decoupled_weight_decay", "foreach", "maximize", "capturable", "differentiable"),
    "RMSprop": ("lr", "alpha", "eps", "weight_decay", "momentum", "centered", "capturable", "foreach", "maximize", "differentiable"),
    "Rprop": ("lr", "etas", "step_sizes", "capturable", "foreach", "maximize", "differentiable"),
    "SGD": ("lr", "momentum", "dampening", "weight_decay", "nesterov", "maximize", "foreach", "differentiable", "fused"),
    "SparseAdam": ("lr", "betas", "eps", "maximize"),
}  # fmt: skip

# torch.optim.lr_scheduler's schedulers: (keyword parameters after `optimizer`, the required ones).
TORCH_SCHEDULERS: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "ConstantLR": (("factor", "total_iters", "last_epoch"), ()),
    "CosineAnnealingLR": (("T_max", "eta_min", "last_epoch"), ("T_max",)),
    "CosineAnnealingWarmRestarts": (("T_0", "T_mult", "eta_min", "last_epoch"), ("T_0",)),
    "CyclicLR": (("base_lr", "max_lr", "step_size_up", "step_size_down", "mode", "gamma", "scale_fn", "scale_mode", "cycle_momentum", "base_momentum", "max_momentum", "last_epoch"), ("base_lr", "max_lr")),
    "ExponentialLR": (("gamma", "last_epoch"), ("gamma",)),
    "LambdaLR": (("lr_lambda", "last_epoch"), ("lr_lambda",)),
    "LinearLR": (("start_factor", "end_factor", "total_iters", "last_epoch"), ()),
    "MultiStepLR": (("milestones", "gamma", "last_epoch"), ("milestones",)),
    "MultiplicativeLR": (("lr_lambda", "last_epoch"), ("lr_lambda",)),
    "OneCycleLR": (("max_lr", "total_steps", "epochs", "steps_per_epoch", "pct_start", "anneal_strategy", "cycle_momentum", "base_momentum", "max_momentum", "div_factor", "final_div_factor", "three_phase", "last_epoch"), ("max_lr",)),
    "PolynomialLR": (("total_iters", "power", "last_epoch"), ()),
    "ReduceLROnPlateau": (("mode", "factor", "patience", "threshold", "threshold_mode", "cooldown", "min_lr", "eps"), ()),
    "SequentialLR": (("schedulers", "milestones", "last_epoch"), ("schedulers", "milestones")),
    "StepLR": (("step_size", "gamma", "last_epoch"), ("step_size",)),
}  # fmt: skip
# schedulers built on other schedulers (ChainedScheduler too): a spec cannot give them those objects
_NEEDS_OBJECTS = {
    "lr_lambda": "a function, which a spec cannot give",
    "scale_fn": "a function, which a spec cannot give",
    "schedulers": "scheduler objects, which a spec cannot give",
}
_SPEC_ONLY_SCHEDULER_ARGS = {"ReduceLROnPlateau": ("monitor",)}  # LightningCLI's: the metric it reads


def torch_signature(class_path: str, kind: str) -> Signature | str | None:
    """The signature of torch.optim's `class_path` (kind "optimizer" or "lr_scheduler"); a message when torch
    has no such class; None when `class_path` is not torch's."""
    module, _, name = class_path.rpartition(".")
    if kind == "optimizer" and (module == "torch.optim" or module.startswith("torch.optim.")):
        if module.startswith("torch.optim.lr_scheduler"):
            return f"'{class_path}' is an LR scheduler, not an optimizer"
        if name not in TORCH_OPTIMIZERS:
            return f"torch.optim has no optimizer '{name}'{did_you_mean(name, TORCH_OPTIMIZERS)}"
        return Signature(TORCH_OPTIMIZERS[name], fixed={"params": "the script passes the model's parameters"})
    if kind == "lr_scheduler" and (module == "torch.optim.lr_scheduler" or module.startswith("torch.optim.")):
        if name not in TORCH_SCHEDULERS:
            if name == "ChainedScheduler":
                return "ChainedScheduler takes scheduler objects, which a spec cannot give"
            return f"torch.optim.lr_scheduler has no scheduler '{name}'{did_you_mean(name, TORCH_SCHEDULERS)}"
        names, required = TORCH_SCHEDULERS[name]
        fixed = {"optimizer": "the script passes the optimizer"}
        fixed.update({arg: f"takes {why}" for arg, why in _NEEDS_OBJECTS.items() if arg in required})
        return Signature(names + _SPEC_ONLY_SCHEDULER_ARGS.get(name, ()), required, fixed=fixed)
    return None


def check_arguments(key: str, cls: str, args: Mapping[str, Any], signature: Signature, line_of: Any) -> list[Problem]:
    """Every problem with the keyword arguments `args` (the spec's `key`: "model.init_args") for the class
    named `cls` with `signature`; `line_of(dotted key)` is the YAML line.

    A value that is itself a class entry (`{class_path: ..., init_args: ...}`) is one argument here, whatever
    it builds.
    """
    problems = []
    fixed = signature.fixed or {}
    for name in args:
        at = f"{key}.{name}"
        if name in fixed and name not in signature.required:
            problems.append(Problem(at, f"{cls}'s `{name}` is not set in the spec: {fixed[name]}", line_of(at)))
        elif name in signature.positional_only:
            problems.append(
                Problem(at, f"{cls}'s `{name}` is positional-only: it cannot be given by name", line_of(at))
            )
        elif name not in signature.names and not signature.var_keyword:
            hint = did_you_mean(name, signature.names)
            takes = ", ".join(signature.names) if signature.names else "no arguments"
            problems.append(Problem(at, f"unknown argument of {cls}{hint or f' (it takes {takes})'}", line_of(at)))
    for name in signature.imported:
        given = args.get(name)
        for value in given if isinstance(given, list) else [given]:
            if not isinstance(value, str) or _import_path(value):
                continue
            at = f"{key}.{name}"
            message = (
                f"{cls}'s `{name}` is typed as a function or class: LightningCLI imports a string given for it, and"
                f" {value!r} is not an import path (give it as `package.module.name`)"
            )
            problems.append(Problem(at, message, line_of(at)))
    for name in signature.required:
        if name in fixed:
            if name in args or name in signature.names:
                at = f"{key}.{name}"
                problems.append(Problem(at if name in args else key, f"{cls} {fixed[name]}", line_of(at)))
            continue
        if name not in args:
            problems.append(Problem(key, f"{cls} needs `{name}` (it has no default)", line_of(key)))
    return _unique(problems)


def _import_path(text: str) -> bool:
    """`package.module.name`: dotted Python names."""
    parts = text.split(".")
    return len(parts) > 1 and all(part.isidentifier() for part in parts)


def _unique(problems: list[Problem]) -> list[Problem]:
    return list(dict.fromkeys(problems))
