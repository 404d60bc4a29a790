"""One torchrun launch that trains several DDP jobs in turn (tests/test_ddp.py): a launch costs the start of the
processes and the import of torch, so the test makes one for Lightning and one for loopgen's scripts.

    torchrun --nproc_per_node=2 tests/ddp_runner.py lightning OUT SPEC.yaml [SPEC.yaml ...]
    torchrun --nproc_per_node=2 tests/ddp_runner.py loopgen OUT SCRIPT.py [SCRIPT.py ...]

A spec with `command: validate` (the test's key) runs Trainer.validate from its ckpt_path; a script beside a
SCRIPT.args file runs with those arguments (a line each). Either saves what validate returned in
OUT/<job>/results.json.

`lightning`: pytorch_lightning.Trainer(strategy="ddp", devices=..., accelerator="cpu") on each spec, read as
LightningCLI reads it. `loopgen`: each rendered script's main(); the first one's process group stays for the
others (a gloo group cannot be made again in the same torchrun launch), so later init_process_group calls are
checked and skipped. Each job's weights land in OUT/<job>/rank<RANK>.pt (the models' on_train_end).
"""

from __future__ import annotations

import os
import runpy
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def lightning(spec_path: Path) -> None:
    import pytorch_lightning as pl
    import yaml

    from tests.harness import callback_entry, instantiate, lightning_plugins, logger_entry

    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    pl.seed_everything(spec["seed_everything"], workers=True)  # as LightningCLI seeds
    model = instantiate(spec["model"])
    flags = dict(spec["trainer"])
    flags["callbacks"] = [instantiate(with_timedelta(callback_entry(entry))) for entry in flags.get("callbacks") or []]
    if isinstance(flags.get("logger"), dict):
        flags["logger"] = instantiate(logger_entry(flags["logger"]))
    if isinstance(flags.get("profiler"), dict):
        profiler = dict(flags["profiler"])
        profiler["class_path"] = "pytorch_lightning.profilers." + profiler["class_path"].rpartition(".")[2]
        flags["profiler"] = instantiate(profiler)
    if isinstance(flags.get("strategy"), dict):  # a strategy entry: Lightning's class of that name
        name = flags["strategy"]["class_path"].rpartition(".")[2]
        flags["strategy"] = getattr(pl.strategies, name)(**flags["strategy"].get("init_args") or {})
    if flags.get("plugins"):  # Lightning's plugins by class name (cluster environments: tests/test_clusters.py)
        flags["plugins"] = lightning_plugins(flags["plugins"])
    trainer = pl.Trainer(**{**flags, "enable_model_summary": False})
    compiled = (spec.get("loop") or {}).get("compile")  # loopgen's loop.compile: Lightning fits torch.compile(model)
    if compiled:
        import torch

        model = torch.compile(model, **({} if compiled is True else compiled))
    if spec.get("command") == "validate":  # the test's own key: Trainer.validate from a checkpoint
        save_results(trainer.validate(model, ckpt_path=spec["ckpt_path"]))
        return
    trainer.fit(model, ckpt_path=spec.get("ckpt_path"))


def save_results(results) -> None:
    """What validate returned, in $DDP_SAVE/results.json (rank 0's)."""
    import json

    if os.environ["RANK"] == "0":
        with open(f"{os.environ['DDP_SAVE']}/results.json", "w") as out:
            json.dump(results, out)


def with_timedelta(entry: dict) -> dict:
    """A ModelCheckpoint entry's train_time_interval "H:MM:SS" as the timedelta LightningCLI makes of it."""
    from datetime import timedelta

    interval = (entry.get("init_args") or {}).get("train_time_interval")
    if not isinstance(interval, str):
        return entry
    hours, minutes, seconds = map(float, interval.split(":"))
    return {
        **entry,
        "init_args": {
            **entry["init_args"],
            "train_time_interval": timedelta(hours=hours, minutes=minutes, seconds=seconds),
        },
    }


def loopgen(script: Path) -> None:
    import torch.distributed as dist

    if dist.is_initialized():
        backend = dist.get_backend()

        def joined(requested, **_kwargs):
            assert requested == backend, (requested, backend)

        dist.init_process_group = joined
    sys.argv = [str(script)]  # a script that resumes reads its command line
    arguments = script.with_suffix(".args")  # the test's arguments for it (validate --ckpt-path ...), a line each
    if arguments.exists():
        sys.argv += arguments.read_text(encoding="utf-8").splitlines()
    namespace = runpy.run_path(str(script), run_name="ddp_job")
    returned = namespace["main"]()
    if isinstance(returned, list):  # an evaluation's results
        save_results(returned)


def allow_sync_batchnorm_on_cpu() -> None:
    """The one stand-in of these launches, on both sides alike: DistributedDataParallel's refusal of a CPU module
    with SyncBatchNorm layers is lifted, so that the sync_batchnorm job (whose layers never synchronise on the CPU:
    tests/ddp_models.py's DDPBatchNormNet) shows where the layers are converted and reverted."""
    from torch.nn.parallel import DistributedDataParallel

    DistributedDataParallel._passing_sync_batchnorm_handle = lambda self, module: None


def main() -> None:
    side, out, *jobs = sys.argv[1:]
    allow_sync_batchnorm_on_cpu()
    for job in map(Path, jobs):
        directory = Path(out) / job.stem
        directory.mkdir(parents=True, exist_ok=True)
        os.environ["DDP_SAVE"] = str(directory)
        (lightning if side == "lightning" else loopgen)(job)
    finish()


def finish() -> None:
    """Destroy the process group the jobs started, as a script's `__main__` block does: a process that exits with
    Gloo's threads still running may abort ("terminate called without an active exception")."""
    import torch.distributed as dist

    if dist.is_available() and dist.is_initialized():
        dist.barrier()  # as the scripts' __main__ block: every process done before any tears the group down
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
