"""What the two Lightning reference runners and their test files share.

tests/parity/runner.py trains a spec with Lightning 2.x (the main venv), tests/lightning195/runner195.py with
Lightning 1.9.5 (its own venv); tests/parity/test_parity.py and tests/test_lightning195.py list their cases
as `Case`s. Both runners read the spec as LightningCLI does: `{class_path, init_args}` entries (`instantiate`)
and the optional `optimizer:` / `lr_scheduler:` (`cli_configure_optimizers`).

Both venvs' Pythons import this module, so it imports nothing at module level but the standard library: no
loopgen, torch or pytorch_lightning (each runner brings its own).
"""

from __future__ import annotations

import importlib
import os
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """One case: its test id and the spec (loopgen's shape, LightningCLI's config) that both sides train."""

    id: str
    spec: dict[str, Any]


def case_ids(cases: Iterable[Case]) -> list[str]:
    """The cases' ids, for pytest.mark.parametrize(ids=...); a repeated id is an error (pytest would rename it)."""
    ids = [c.id for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"repeated case ids: {repeated}")
    return ids


def env_with_root(*extra: Path) -> dict[str, str]:
    """os.environ with the repository root (then `extra`) in front of PYTHONPATH: for a subprocess that imports
    `tests.*` or loopgen from this checkout."""
    env = dict(os.environ)
    paths = [str(p) for p in (ROOT, *extra)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


class SpecError(ValueError):
    """A spec that a runner cannot train."""


def import_object(class_path: str) -> Any:
    """`package.module.Name` -> the object."""
    module_name, _, name = class_path.rpartition(".")
    if not module_name:
        raise SpecError(f"class_path {class_path!r} must be dotted: module.Class")
    return getattr(importlib.import_module(module_name), name)


def instantiate(entry: Any, *args: Any) -> Any:
    """A `{class_path, init_args}` mapping (or a bare dotted string) -> an instance; `args` come first, as
    LightningCLI passes the parameters to an optimizer and the optimizer to a scheduler."""
    if isinstance(entry, str):
        entry = {"class_path": entry}
    if not isinstance(entry, Mapping) or "class_path" not in entry:
        raise SpecError(f"expected a mapping with class_path (and init_args), got {entry!r}")
    return import_object(entry["class_path"])(*args, **dict(entry.get("init_args") or {}))


def cli_configure_optimizers(model: Any, spec: Mapping[str, Any]) -> None:
    """What LightningCLI does with the spec's `optimizer:` / `lr_scheduler:`: replace the model's
    configure_optimizers with one that returns that optimizer (over the model's parameters) and scheduler.

    `monitor` in the scheduler's init_args is LightningCLI's key for ReduceLROnPlateau's metric, not an argument
    of the scheduler's constructor: it is taken out before the scheduler is made, and goes into the returned
    lr_scheduler config. Without `optimizer:` the model keeps its own configure_optimizers.
    """
    optimizer_entry, scheduler_entry = spec.get("optimizer"), spec.get("lr_scheduler")
    if optimizer_entry is None:
        if scheduler_entry is not None:
            raise SpecError("lr_scheduler without optimizer")
        return
    if isinstance(scheduler_entry, str):
        scheduler_entry = {"class_path": scheduler_entry}

    def configure_optimizers(self: Any) -> Any:
        import torch

        optimizer = instantiate(optimizer_entry, self.parameters())
        if scheduler_entry is None:
            return optimizer
        init_args = dict(scheduler_entry.get("init_args") or {})
        monitor = init_args.pop("monitor", None)
        scheduler = instantiate({**scheduler_entry, "init_args": init_args}, optimizer)
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": monitor}}
        return [optimizer], [scheduler]

    model.configure_optimizers = types.MethodType(configure_optimizers, model)
