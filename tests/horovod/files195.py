"""Lightning 1.9.5's HorovodStrategy on specs that write files (loggers, ModelCheckpoint), several in one
horovodrun launch (a launch costs the start of the processes and the import of torch):

    horovodrun -np 2 -H localhost:2 python -m tests.horovod.files195 SPEC.yaml OUT.pt [SPEC.yaml OUT.pt ...]

tests/lightning195/runner195.py forces the loggers and checkpoints off; this runner passes the spec's
`logger`, `callbacks` and `enable_checkpointing` to the Trainer as LightningCLI 1.9.5 would, and the rest
through runner195's translation. Rank 0 saves the final weights to OUT.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path


def train(spec_path: str, out: str) -> None:
    import pytorch_lightning as pl
    import torch
    import yaml

    from tests.harness import callback_entry, instantiate, logger_entry
    from tests.lightning195.runner195 import trainer_kwargs

    spec = yaml.safe_load(Path(spec_path).read_text(encoding="utf-8"))
    pl.seed_everything(int(spec["seed_everything"]), workers=True)
    model = instantiate(spec["model"])
    flags = dict(spec["trainer"])
    callbacks = [instantiate(callback_entry(entry)) for entry in flags.pop("callbacks", None) or []]
    logger = flags.pop("logger", False)
    kwargs = trainer_kwargs(flags, model)
    kwargs["callbacks"] = callbacks
    kwargs["logger"] = instantiate(logger_entry(logger)) if isinstance(logger, dict) else logger
    kwargs["enable_checkpointing"] = flags.get("enable_checkpointing", True)
    trainer = pl.Trainer(**kwargs)
    trainer.fit(model)
    if trainer.global_rank == 0:
        torch.save(
            {
                "state_dict": model.state_dict(),
                "global_step": trainer.global_step,
                "current_epoch": trainer.current_epoch,
            },
            out,
        )


def main() -> None:
    warnings.filterwarnings("ignore")
    args = sys.argv[1:]
    for spec_path, out in zip(args[::2], args[1::2]):
        train(spec_path, out)


if __name__ == "__main__":
    main()
