"""Train one parity case on one side and save what came out.

    python -m tests.parity.runner lightning|loopgen SPEC.yaml OUT.pt
    python -m tests.parity.runner serve

SPEC.yaml holds the spec as loopgen reads it (seed_everything, model {class_path, init_args}, data, trainer,
optionally optimizer, lr_scheduler and ckpt_path). `lightning` trains with pytorch_lightning.Trainer, reading
the spec as LightningCLI does (tests/harness.py, shared with the Lightning 1.9.5 runner); `loopgen` renders the
spec with loopgen (into OUT's directory, as train.py) and runs the script's main(). Either way the job runs in
OUT's directory, and OUT.pt gets {"state_dict", "records", "checkpoints"}: the last are the facts of the
checkpoint files left in that directory (tests/harness.py, checkpoint_facts). A spec that turns checkpointing on
(`enable_checkpointing: true`) has its files put there too: default_root_dir is OUT's directory, and a
ModelCheckpoint's relative dirpath is relative to it. Run each side in a fresh process, from the repository root
or with it on PYTHONPATH.

`serve` is the same, faster: it imports torch, Lightning, loopgen and the test models once, then for each
request line on stdin (JSON: a list of [side, SPEC, OUT, LOG] jobs) forks one fresh child per job, runs the
jobs at the same time, and answers with one line (JSON: their exit statuses). Each child starts from the
server's untouched state (nothing has trained or seeded there), so each side still runs in its own process. A job
["evaluation", SIDE, CASE.json, INDEX, OUT, LOG] runs one process of an evaluation case instead
(tests/parity/evaluation_runner.py).

Exit status 3: loopgen refused the spec (its messages are in the output).
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import runpy
import signal
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.harness import (
    callback_entry,
    checkpoint_facts,
    cli_configure_optimizers,
    in_directory,
    instantiate,
    lightning_plugins,
    log_facts,
    logger_entry,
)
from tests.logger_files import run_ids, with_ids_replaced

EXIT_RENDER_FAILED = 3
EXIT_TIMEOUT = 124
JOB_TIMEOUT = 300  # seconds
PRELOAD = ("tests.parity.data", "tests.parity.models", "tests.parity.callbacks", "tests.parity.eval_models")
# the loggers' packages, and their readers (tests/logger_files.py): seconds per job otherwise
PRELOAD_LOGGERS = (
    "torch.utils.tensorboard",
    "tensorboard.backend.event_processing.event_accumulator",
    "mlflow.tracking",
    "mlflow.entities",
    "wandb",
    "wandb.proto.wandb_internal_pb2",
)

# The loggers' packages on both sides: W&B offline (no network), MLflow's file stores allowed (MLflow 3 refuses them
# unless told), no console noise
LOGGER_ENVIRONMENT = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "MLFLOW_ALLOW_FILE_STORE": "true"}

# Flags both sides get: no progress bar, on the CPU; no logger and no checkpointing, unless a case turns them on.
COMMON_FLAGS = {"accelerator": "cpu", "logger": False, "enable_checkpointing": False, "enable_progress_bar": False}


def lightning_trainer_kwargs(flags: dict[str, Any]) -> dict[str, Any]:
    """The spec's trainer flags as pl.Trainer arguments (translating loopgen-only spellings)."""
    from pytorch_lightning.callbacks import GradientAccumulationScheduler

    kwargs = {**common_flags(flags), **flags}
    callbacks = [instantiate(callback_entry(entry)) for entry in kwargs.pop("callbacks", None) or []]
    logger = kwargs.get("logger", True)
    if logger is True:  # loopgen's default logger: a CSVLogger where Lightning's default logger writes
        kwargs["logger"] = instantiate(logger_entry("CSVLogger"), kwargs.get("default_root_dir") or os.getcwd())
    elif logger:
        kwargs["logger"] = [
            instantiate(logger_entry(entry)) for entry in (logger if isinstance(logger, list) else [logger])
        ]
    profiler = kwargs.get("profiler")
    if isinstance(profiler, dict):  # {class_path, init_args}: one of Lightning's profilers
        from pytorch_lightning import profilers

        kwargs["profiler"] = getattr(profilers, profiler["class_path"])(**profiler.get("init_args", {}))
    if kwargs.get("plugins"):  # Lightning's plugins, by class name ({class_path, init_args} or a name)
        kwargs["plugins"] = lightning_plugins(kwargs["plugins"])
    accumulate = kwargs.get("accumulate_grad_batches")
    if isinstance(accumulate, dict):  # the seed's {epoch: factor}: Lightning's GradientAccumulationScheduler
        del kwargs["accumulate_grad_batches"]
        callbacks.append(GradientAccumulationScheduler(scheduling={int(k): v for k, v in accumulate.items()}))
    return {**kwargs, "callbacks": callbacks, "devices": kwargs.get("devices", 1), "enable_model_summary": False}


def run_lightning(spec: dict[str, Any]) -> Any:
    import pytorch_lightning as pl
    import torch

    seed = spec.get("seed_everything", True)
    if seed is not False:  # as LightningCLI seeds: a seed drawn for `true`, the workers too
        pl.seed_everything(None if seed is True else seed, workers=True)
    model = instantiate(spec["model"])
    cli_configure_optimizers(model, spec)
    data = instantiate(spec["data"]) if spec.get("data") else None
    trainer = pl.Trainer(**lightning_trainer_kwargs(spec.get("trainer", {})))
    compiled = (spec.get("loop") or {}).get("compile")  # loopgen's loop.compile: Lightning fits torch.compile(model)
    fitted = torch.compile(model, **({} if compiled is True else compiled)) if compiled else model
    trainer.fit(fitted, datamodule=data, ckpt_path=spec.get("ckpt_path"))
    return model


def common_flags(flags: dict[str, Any]) -> dict[str, Any]:
    """COMMON_FLAGS for a spec's trainer flags: checkpointing stays on when the callbacks have a ModelCheckpoint."""
    entries = flags.get("callbacks") or []
    names = [(entry if isinstance(entry, str) else entry.get("class_path", "")).rpartition(".")[2] for entry in entries]
    return {**COMMON_FLAGS, "enable_checkpointing": "ModelCheckpoint" in names}


def writes_files(spec: dict[str, Any]) -> bool:
    """Whether the spec turns checkpointing or a logger on (null: Lightning's default, on)."""
    flags = {**common_flags(spec.get("trainer") or {}), **(spec.get("trainer") or {})}
    return any(flags[name] is None or bool(flags[name]) for name in ("enable_checkpointing", "logger"))


def loopgen_spec(spec: dict[str, Any]) -> dict[str, Any]:
    spec = copy.deepcopy(spec)
    spec["trainer"] = {**common_flags(spec.get("trainer", {})), **spec.get("trainer", {})}
    return spec


def render(spec: dict[str, Any], workdir: Path) -> Path:
    """Write the spec as YAML and render it with `loopgen render` (the CLI's entry point, in this process)."""
    import yaml

    from loopgen.cli import main as loopgen_main

    spec_file = workdir / "loopgen_spec.yaml"
    spec_file.write_text(yaml.safe_dump(loopgen_spec(spec), sort_keys=False), encoding="utf-8")
    script = workdir / "train.py"
    status = loopgen_main(["render", str(spec_file), "-o", str(script)])
    if status != 0:
        sys.exit(EXIT_RENDER_FAILED)
    return script


def run_loopgen(spec: dict[str, Any], workdir: Path) -> Any:
    script = render(spec, workdir)  # from the working directory, where loopgen finds the test modules
    os.chdir(workdir)
    namespace = runpy.run_path(str(script), run_name="loopgen_parity_script")
    # as `python train.py ARGS` would see it: ARGS from $LOOPGEN_SCRIPT_ARGS (JSON), for the script's own options
    sys.argv = [str(script), *json.loads(os.environ.get("LOOPGEN_SCRIPT_ARGS", "[]"))]
    return namespace["main"]()


def run_job(side: str, spec_path: str, out: str) -> int:
    import torch
    import yaml

    os.environ.update(LOGGER_ENVIRONMENT)
    # one intra-op thread on both sides: a CPU matmul's sums are ordered by its thread count, which the BLAS
    # may lower under load (the two sides run at once), and the last bits of the weights then differ
    torch.set_num_threads(1)

    spec = yaml.safe_load(Path(spec_path).read_text(encoding="utf-8"))
    out_path = Path(out).resolve()
    directory = out_path.parent  # each side trains in it: whatever it writes lands there
    if writes_files(spec):
        spec = in_directory(spec, directory)
    if side == "lightning":
        os.chdir(directory)
        model = run_lightning(spec)
    elif side == "loopgen":
        model = run_loopgen(spec, directory)
    else:
        raise SystemExit(f"unknown side {side!r}: lightning or loopgen")
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    # the parity models' records, or those the Lightning 1.9.5 cases' models keep (tests/lightning195)
    records = model.parity_records() if hasattr(model, "parity_records") else getattr(model, "records", None)
    if "wandb" in sys.modules and sys.modules["wandb"].run is not None:
        sys.modules["wandb"].run.finish()  # what the interpreter's exit does (the child exits without it)
    facts = {"checkpoints": checkpoint_facts(directory), "logs": log_facts(directory)}
    facts = with_ids_replaced(facts, run_ids(directory))  # the runs' ids and times: stable names
    torch.save({"state_dict": state, "records": records, **facts}, out_path)
    return 0


def _child(side: str, spec_path: str, out: str, log: str) -> None:
    """In a forked child: run one job with stdin from /dev/null and stdout/stderr to `log`; never return."""
    run_forked(lambda: run_job(side, spec_path, out), log)


def run_forked(job: Callable[[], int], log: str) -> None:
    """In a forked child: `job()` with stdin from /dev/null and stdout/stderr to `log`, then exit with its status
    (a SystemExit's code, 1 for anything else it raised, its traceback in `log`); never return."""
    status = 1
    try:
        fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        status = job()
    except SystemExit as exit:
        status = exit.code if isinstance(exit.code, int) else 1
    except BaseException:  # noqa: BLE001 - report anything, then exit with a status
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(status)


def _wait(pids: list[int], timeout: float) -> list[int]:
    """Exit statuses of the children `pids`; those still running after `timeout` are killed (status 124)."""
    statuses = {}
    deadline = time.monotonic() + timeout
    while len(statuses) < len(pids):
        for pid in pids:
            if pid in statuses:
                continue
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                statuses[pid] = EXIT_TIMEOUT
                continue
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                statuses[pid] = os.waitstatus_to_exitcode(status)
        time.sleep(0.05)
    return [statuses[pid] for pid in pids]


def serve() -> int:
    """Import everything once, then fork a fresh child per job (see the module docstring)."""
    for name in ("torch", "pytorch_lightning", "yaml", "loopgen.cli", "loopgen.pipeline", *PRELOAD):
        importlib.import_module(name)
    for name in PRELOAD_LOGGERS:
        try:
            importlib.import_module(name)
        except ImportError:  # a logger's package is an optional extra: its cases fail on their own
            pass

    for line in sys.stdin:
        jobs = json.loads(line)
        pids = []
        for job in jobs:
            pid = os.fork()
            if pid == 0:
                if job[0] == "evaluation":  # one process of an evaluation case (tests/parity/evaluation_runner.py)
                    from tests.parity import evaluation_runner

                    *args, log = job[1:]
                    run_forked(lambda args=args: evaluation_runner.main(*args), log)
                _child(*job)
            pids.append(pid)
        print(json.dumps(_wait(pids, JOB_TIMEOUT)), flush=True)
    return 0


def main(argv: list[str]) -> int:
    if argv == ["serve"]:
        return serve()
    return run_job(*argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
