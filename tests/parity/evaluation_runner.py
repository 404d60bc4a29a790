"""Run one process of an evaluation parity case on one side and save what each of its calls gave.

    python -m tests.parity.evaluation_runner lightning|loopgen CASE.json INDEX OUT.pt
    torchrun --standalone --nproc_per_node=2 -m tests.parity.evaluation_runner ... (strategy ddp)
    horovodrun -np 2 -H localhost:2 python -m tests.parity.evaluation_runner ... (strategy horovod)

CASE.json holds {"spec", "lightning", "loopgen"}: the spec (loopgen's shape, LightningCLI's config), and for each
side its processes, run in order in the case's directory (each side has its own). A Lightning process is a list
of Trainer calls, [method, ckpt_path], made on one Trainer as a script using Lightning would make them
(`trainer.fit(model, datamodule=data)`, then `trainer.test(model, datamodule=data, ckpt_path="best")`); a loopgen
process is the generated script's command line. INDEX picks the process. OUT.pt gets a list with one entry per
call: {"result": what the call returned, "table": the results table it printed, "calls": the hooks recorded
(tests/parity/eval_models.py), "callback_metrics"}. Under torchrun or horovodrun, each process saves its own
list, to OUT.rank<RANK>.pt; the script is rendered before the launch (train.py in the directory).
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import runpy
import sys
from pathlib import Path
from typing import Any

from tests.harness import instantiate
from tests.parity.runner import LOGGER_ENVIRONMENT, lightning_trainer_kwargs, render

# the characters of a table's rules: the plain table's lines, rich's borders (its default box, HEAVY_HEAD)
RULES = set("─-━┏┓┳┡┩╇└┘┴")


def table(text: str) -> list[str]:
    """The results tables in a call's output: from the first table's first rule to the last one's last."""
    lines = text.splitlines()
    rules = [i for i, line in enumerate(lines) if line.strip() and set(line.strip()) <= RULES]
    return lines[rules[0] : rules[-1] + 1] if rules else []


def run_lightning(spec: dict[str, Any], calls: list[list[Any]]) -> list[dict[str, Any]]:
    import pytorch_lightning as pl

    try:
        from pytorch_lightning.loops import evaluation_loop
    except ImportError:  # Lightning 1.9.5
        from pytorch_lightning.loops.dataloader import evaluation_loop

    from tests.parity import eval_models

    # the plain table, as the script prints it without rich; rich's with a RichProgressBar, as the script's
    callbacks = spec.get("trainer", {}).get("callbacks") or []
    evaluation_loop._RICH_AVAILABLE = any("RichProgressBar" in str(entry) for entry in callbacks)
    pl.seed_everything(spec["seed_everything"], workers=True)  # as LightningCLI seeds
    model = instantiate(spec["model"])
    data = instantiate(spec["data"])
    trainer = pl.Trainer(**lightning_trainer_kwargs(spec.get("trainer", {})))
    out = []
    for method, ckpt_path in calls:
        eval_models.CALLS.clear()
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            kwargs = {} if method == "fit" else {"ckpt_path": ckpt_path}
            result = getattr(trainer, method)(model, datamodule=data, **kwargs)
        sys.stdout.write(stdout.getvalue())
        metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
        out.append({"result": result, "table": table(stdout.getvalue()), "calls": list(eval_models.CALLS),
                    "callback_metrics": metrics})  # fmt: skip
    return out


def run_loopgen(spec: dict[str, Any], argv: list[str], directory: Path) -> list[dict[str, Any]]:
    from tests.parity import eval_models

    script = directory / "train.py"
    if not script.exists():
        script = render(spec, directory)
    namespace = runpy.run_path(str(script), run_name="loopgen_evaluation_script")
    sys.argv = [str(script), *argv]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        result = namespace["main"]()
    sys.stdout.write(stdout.getvalue())
    if not argv or argv[0] == "fit" or argv[0].startswith("--"):
        result = None  # fit returns the model
    return [{"result": result, "table": table(stdout.getvalue()), "calls": list(eval_models.CALLS)}]


def main(side: str, case_path: str, index: str, out: str) -> int:
    import torch
    import torch.distributed

    os.environ.update(LOGGER_ENVIRONMENT)
    case = json.loads(Path(case_path).read_text(encoding="utf-8"))
    directory = Path(out).resolve().parent
    os.chdir(directory)
    rank = os.environ.get("HOROVOD_RANK", os.environ.get("RANK"))
    if rank is not None:  # one of torchrun's (or horovodrun's) processes
        out = str(Path(out).with_suffix(f".rank{rank}.pt"))
    process = case[side][int(index)]
    if side == "lightning":
        results = run_lightning(case["spec"], process)
    else:
        results = run_loopgen(case["spec"], process, directory)
    torch.save(results, out)
    if "wandb" in sys.modules and sys.modules["wandb"].run is not None:
        sys.modules["wandb"].run.finish()  # what the interpreter's exit does (a forked child exits without it)
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        torch.distributed.destroy_process_group()  # as a script's `__main__` block does: no abort at exit
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:]))
