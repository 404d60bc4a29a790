"""Train one side of a fuzz example, or serve many: a fork server that runs under Lightning 2.x or 1.9.5.

    python -m tests.fuzz.runner serve          (in the main venv: sides `lightning` and `script`)
    .venv195/bin/python -m tests.fuzz.runner serve    (with the repository on PYTHONPATH: side `lightning195`)

Each request line on stdin is JSON, a list of jobs `[side, SPEC, SCRIPT, OUT, LOG]`; the server forks a fresh
child per job (torch, Lightning and the zoo are imported once, before any job), runs them at the same time and
answers one line: their exit statuses. A job trains in OUT's directory and saves to OUT:

- `state_dict`: the final weights (None when training raised);
- `records`: what the zoo's Probe callback saw (None without one);
- `steps`: how many times training_step ran (counted on the model's class, the same on both sides);
- `error`: None, or what training raised: its type's name, its nearest builtin base class and its message;
- `checkpoints`, `logs`: the facts of the files left in the directory (tests/harness.py), when nothing raised.

`lightning` trains the spec with Lightning 2.x's Trainer as tests/parity/runner.py does, `lightning195` with
1.9.5's as tests/lightning195/runner195.py does, and `script` runs the SCRIPT loopgen rendered (its `main()`).
Only the standard library, torch, yaml and Lightning are imported here, so that both venvs can run it.
"""

from __future__ import annotations

import functools
import importlib
import json
import os
import runpy
import sys
import traceback
import warnings
from pathlib import Path
from typing import Any

from tests.harness import checkpoint_facts, cli_configure_optimizers, import_object, instantiate, log_facts
from tests.logger_files import run_ids, with_ids_replaced

# the parity runner's: a forked job's child, and the exit statuses of forked jobs with a deadline
from tests.parity.runner import _wait, run_forked

JOB_TIMEOUT = 180  # seconds
LOGGER_ENVIRONMENT = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "MLFLOW_ALLOW_FILE_STORE": "true"}
PRELOAD = ("torch", "yaml", "tests.fuzz.zoo")
PRELOAD_2X = (
    "tests.parity.runner",
    "torch.utils.tensorboard",
    "tensorboard.backend.event_processing.event_accumulator",
    "mlflow.tracking",
    "mlflow.entities",
)


def count_steps(spec: dict[str, Any]) -> list[int]:
    """Wrap the model class's training_step so that its calls are counted (the wrapper keeps the signature that
    Lightning inspects); the returned one-item list holds the count. It replaces the method where the class's
    source defines it (the class or a base): a method the class did not have would stop the script (its guards)."""
    cls = import_object(spec["model"]["class_path"] if isinstance(spec["model"], dict) else spec["model"])
    cls = next(c for c in cls.__mro__ if "training_step" in vars(c))
    step = cls.training_step
    calls = [0]

    @functools.wraps(step)
    def training_step(self, *args, **kwargs):
        calls[0] += 1
        return step(self, *args, **kwargs)

    cls.training_step = training_step
    return calls


def error_facts(error: BaseException) -> dict[str, Any]:
    """The exception's type, its builtin base classes (nearest first) and its message."""
    builtins = [c.__name__ for c in type(error).__mro__ if c.__module__ == "builtins"]
    return {"type": type(error).__name__, "builtins": builtins, "builtin": builtins[0], "message": str(error)}


def run_lightning(spec: dict[str, Any]) -> Any:
    from tests.parity.runner import run_lightning as train

    return train(spec)


def run_lightning195(spec: dict[str, Any]) -> Any:
    import pytorch_lightning as pl

    from tests.lightning195.runner195 import trainer_kwargs

    seed = spec.get("seed_everything")
    if seed is not None and seed is not False:
        pl.seed_everything(int(seed), workers=True)
    model = instantiate(spec["model"])
    data = instantiate(spec["data"]) if spec.get("data") is not None else None
    cli_configure_optimizers(model, spec)
    trainer = pl.Trainer(**trainer_kwargs(spec.get("trainer") or {}, model))
    trainer.fit(model, datamodule=data)
    return model


def run_script(script: str) -> Any:
    namespace = runpy.run_path(script, run_name="loopgen_fuzz_script")
    sys.argv = [script]
    return namespace["main"]()


def run_job(side: str, spec_path: str, script: str, out: str) -> int:
    import torch
    import yaml

    from tests.fuzz import zoo

    os.environ.update(LOGGER_ENVIRONMENT)
    warnings.filterwarnings("ignore")
    spec = yaml.safe_load(Path(spec_path).read_text(encoding="utf-8"))
    directory = Path(out).resolve().parent
    os.chdir(directory)
    importlib.invalidate_caches()  # a drawn module file written since the server started
    calls = count_steps(spec)
    result: dict[str, Any] = {"state_dict": None, "records": None, "error": None, "checkpoints": [], "logs": []}
    try:
        if side == "lightning":
            model = run_lightning(spec)
        elif side == "lightning195":
            model = run_lightning195(spec)
        elif side == "script":
            model = run_script(script)
        else:
            raise SystemExit(f"unknown side {side!r}")
    except Exception as error:  # noqa: BLE001 - what training raised is a fact to compare
        result["error"] = error_facts(error)
        traceback.print_exc()
    except SystemExit as error:  # the script's own checks exit with a message
        result["error"] = error_facts(error)
        traceback.print_exc()
    else:
        result["state_dict"] = {name: t.detach().clone() for name, t in model.state_dict().items()}
        facts = {"checkpoints": checkpoint_facts(directory), "logs": log_facts(directory)}
        result.update(with_ids_replaced(facts, run_ids(directory)))  # MLflow's run ids and times: stable names
    result["steps"] = calls[0]
    if zoo.PROBES:
        result["records"] = zoo.PROBES[-1].records()
    if "wandb" in sys.modules and sys.modules["wandb"].run is not None:
        sys.modules["wandb"].run.finish()
    torch.save(result, out)
    return 0


def _child(side: str, spec: str, script: str, out: str, log: str) -> None:
    """In a forked child: one job, stdin from /dev/null, stdout and stderr to `log`; never returns."""
    run_forked(lambda: run_job(side, spec, script, out), log)


def serve() -> int:
    warnings.filterwarnings("ignore")
    import pytorch_lightning

    preload = PRELOAD + (PRELOAD_2X if not pytorch_lightning.__version__.startswith("1.") else ())
    for name in preload:
        try:
            importlib.import_module(name)
        except ImportError:  # an optional logger package: its examples fail on their own
            pass
    print(json.dumps({"ready": pytorch_lightning.__version__}), flush=True)
    for line in sys.stdin:
        pids = []
        for job in json.loads(line):
            pid = os.fork()
            if pid == 0:
                _child(*job)
            pids.append(pid)
        print(json.dumps(_wait(pids, JOB_TIMEOUT)), flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] != ["serve"]:
        raise SystemExit(__doc__)
    sys.exit(serve())
