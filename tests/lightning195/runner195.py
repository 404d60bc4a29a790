"""Train a loopgen spec with pytorch-lightning 1.9.5's Trainer: the reference for the seed-era features.

    PYTHONPATH=<repo root> <venv195>/bin/python tests/lightning195/runner195.py SPEC.yaml OUT.pt
    (or: ... -m tests.lightning195.runner195 SPEC.yaml OUT.pt)

Reads the spec's `seed_everything`, `model`, `data`, `trainer` (and, as LightningCLI 1.9.5 would, optional
`optimizer` / `lr_scheduler`), then:

1. `pl.seed_everything(seed, workers=True)` as LightningCLI 1.9.5 does (`seed_everything: true` draws a seed,
   false/null seeds nothing);
2. instantiates the model, then the data (`class_path` + `init_args`), and with `optimizer:` replaces the
   model's configure_optimizers as LightningCLI does (tests/harness.py, shared with the Lightning 2.x runner);
3. builds `pl.Trainer(**flags, logger=False, enable_checkpointing=False, enable_progress_bar=False,
   enable_model_summary=False)` (the spec's loggers instead of `logger=False` when it names them, written
   under the working directory) and runs `fit(model)` or `fit(model, datamodule=data)`;
4. `torch.save({"state_dict": model.state_dict(), "records": model.records}, OUT)` (records: None when the
   model keeps none), plus `"global_step"` and `"current_epoch"` of the trainer.

The spec's trainer flags use Lightning 2.x names and values (loopgen's contract); `trainer_kwargs`
translates the few that 1.9.5 spells differently and moves `truncated_bptt_steps` onto the module
(1.9.5 reads `LightningModule.truncated_bptt_steps`; the Trainer argument was removed in 1.5).
`terminate_on_nan` was removed from the Trainer in 1.7, so only `false` is accepted.

Runs under 1.9.5 only: it imports pytorch_lightning and refuses any other version.
"""

from __future__ import annotations

import argparse
import inspect
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch
import yaml

from tests.harness import SpecError, cli_configure_optimizers, instantiate, logger_entry

# 2.x precision spellings -> 1.9.5's
PRECISION_195 = {
    "32": 32,
    "32-true": 32,
    32: 32,
    "64": 64,
    "64-true": 64,
    64: 64,
    "16": 16,
    "16-mixed": 16,
    16: 16,
    "bf16": "bf16",
    "bf16-mixed": "bf16",
}

# 2.x-only Trainer arguments: dropped when they hold their 2.x default, refused otherwise
TWO_X_ONLY_DEFAULTS = {
    "barebones": False,
    "enable_autolog_hparams": True,
    "model_registry": None,
}

# forced, as every reference run: no side effects on disk, nothing printed per batch
FORCED = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False, "enable_model_summary": False}


def trainer_kwargs(flags: Mapping[str, Any], model: Any) -> dict[str, Any]:
    """The spec's `trainer:` mapping as keyword arguments of 1.9.5's `Trainer` (may set attributes on `model`)."""
    import pytorch_lightning as pl

    accepted = set(inspect.signature(pl.Trainer.__init__).parameters) - {"self"}
    kwargs: dict[str, Any] = {}
    for key, value in dict(flags or {}).items():
        if key == "logger" and isinstance(value, (dict, list)):
            kwargs["logger"] = [
                instantiate(logger_entry(entry)) for entry in (value if isinstance(value, list) else [value])
            ]
            continue
        if key in FORCED:
            continue  # overridden below
        if key == "truncated_bptt_steps":
            if value is not None:
                model.truncated_bptt_steps = int(value)
            continue
        if key == "terminate_on_nan":
            if value:
                raise SpecError("terminate_on_nan: true has no 1.9.5 reference (the flag was removed in 1.7)")
            continue
        if key == "use_distributed_sampler":
            key = "replace_sampler_ddp"
        if key in TWO_X_ONLY_DEFAULTS:
            if value != TWO_X_ONLY_DEFAULTS[key]:
                raise SpecError(f"trainer.{key}: {value!r} has no pytorch-lightning 1.9.5 equivalent")
            continue
        if value is None and key != "check_val_every_n_epoch":
            continue  # null = Lightning's default, which 1.9.5 spells as its own default
        # (check_val_every_n_epoch: null is no default: validation counts batches across epochs, in 1.9.5 too)
        if key == "precision":
            if value not in PRECISION_195:
                raise SpecError(f"trainer.precision: {value!r} has no pytorch-lightning 1.9.5 equivalent")
            value = PRECISION_195[value]
        if key == "callbacks":
            value = [instantiate(ref) for ref in (value if isinstance(value, list) else [value])]
        if key == "plugins" and value:
            raise SpecError("trainer.plugins: not supported by the 1.9.5 runner")
        if key not in accepted:
            raise SpecError(f"trainer.{key}: not an argument of pytorch-lightning 1.9.5's Trainer")
        kwargs[key] = value
    if kwargs.get("devices") == "auto" and "accelerator" not in kwargs:
        kwargs["accelerator"] = "auto"  # 1.9.5 refuses devices="auto" without an accelerator
    kwargs.update({key: value for key, value in FORCED.items() if key not in kwargs})
    return kwargs


def run(spec_path: str | Path, out_path: str | Path) -> dict[str, Any]:
    import pytorch_lightning as pl

    if pl.__version__ != "1.9.5":
        raise RuntimeError(f"runner195 needs pytorch-lightning 1.9.5, found {pl.__version__}")
    spec = yaml.safe_load(Path(spec_path).read_text(encoding="utf-8")) or {}
    # `loop:` holds loopgen-only facts (e.g. optimizer_frequencies) that Lightning finds at run time
    known = {"seed_everything", "model", "data", "trainer", "optimizer", "lr_scheduler", "ckpt_path", "loop"}
    unknown = set(spec) - known
    if unknown:
        raise SpecError(f"unknown top-level keys: {sorted(unknown)}")
    if spec.get("ckpt_path") is not None:
        raise SpecError("ckpt_path: not supported by the 1.9.5 runner")

    seed = spec.get("seed_everything")
    if seed is True:
        pl.seed_everything(workers=True)
    elif seed is not None and seed is not False:
        pl.seed_everything(int(seed), workers=True)

    if spec.get("model") is None:
        raise SpecError("the spec needs a model")
    model = instantiate(spec["model"])
    data = instantiate(spec["data"]) if spec.get("data") is not None else None
    cli_configure_optimizers(model, spec)

    trainer = pl.Trainer(**trainer_kwargs(spec.get("trainer") or {}, model))
    if data is None:
        trainer.fit(model)
    else:
        trainer.fit(model, datamodule=data)

    result = {
        "state_dict": model.state_dict(),
        # as tests/parity/runner.py takes them: a parity model's, or those the 1.9.5 cases' models keep
        "records": model.parity_records() if hasattr(model, "parity_records") else getattr(model, "records", None),
        "global_step": trainer.global_step,
        "current_epoch": trainer.current_epoch,
    }
    if trainer.global_rank == 0:  # one file from a multi-process run (horovodrun)
        torch.save(result, out_path)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("spec", help="the YAML spec")
    parser.add_argument("out", help="where to torch.save {'state_dict', 'records', ...}")
    parser.add_argument("--show-warnings", action="store_true", help="keep Lightning's warnings")
    args = parser.parse_args(argv)
    if not args.show_warnings:
        warnings.filterwarnings("ignore")
    try:
        run(args.spec, args.out)
    except SpecError as error:
        print(f"runner195: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
