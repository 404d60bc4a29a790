"""The generated scripts on a CUDA machine, against pytorch_lightning.Trainer on the same specs.

    python benchmarks/gpu.py [--epochs N] [--hidden H] [--only NAME ...]

One command for a machine with a GPU. It renders specs of examples/lit_classifier.yaml's LitClassifier
(`accelerator: cuda`): single device in 32-bit, `16-mixed`, `bf16-mixed`; DDP, FSDPStrategy (FSDP1, its Linear
layers auto-wrapped) and ModelParallelStrategy (LitShardedClassifier: FSDP2 over every GPU) over every visible
GPU (nccl, launched with torchrun, Lightning under the same torchrun); and `loop: {compile: true}` on one GPU
(benchmarks/models.py's SmallCNNCompiled: Lightning fits `torch.compile(model)`): the time from the fit's start
to the first step's end, which holds the compilation, is printed apart (the step times are between steps). Each side trains in a fresh process; the script
prints, per spec and side, the median and mean time of an optimizer step, the peak CUDA memory, and whether the
final weights are equal (`torch.equal`, else the largest difference).

It also runs each generated script with `torch.cuda.set_sync_debug_mode("warn")` from its first optimizer step
on, counts the host-device synchronisations CUDA reports, and attributes each to the optimizer step it happened
after. A synchronisation is allowed on a logging step (global step a multiple of log_every_n_steps) and at an
epoch's end (validation, epoch-end metrics); any other one is listed and makes the exit status 1.

Without CUDA (torch.cuda.is_available() is False) it says so and exits with status 2: it has nothing to measure.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
LOG_EVERY_N_STEPS = 10
SAMPLES, BATCH_SIZE = 512, 32  # LitClassifier's random data: 16 batches an epoch

# Run in the child (a file of its own, so that torchrun can launch it): train one side and write its facts.
CHILD = r"""
import json, os, runpy, sys, time, warnings
import torch

side, spec_path, out, sharded = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4] == "sharded"
rank = int(os.environ.get("RANK", "0"))
step_times, syncs = [], []


def after_step(optimizer, args, kwargs):
    torch.cuda.nvtx.range_push("step")  # no sync: marks the step for profilers
    torch.cuda.nvtx.range_pop()
    step_times.append(time.perf_counter())
    if side == "loopgen" and len(step_times) == 1:
        torch.cuda.set_sync_debug_mode("warn")  # from the first step on: the set-up may synchronise


torch.optim.optimizer.register_optimizer_step_post_hook(after_step)


def on_warning(message, category, filename, lineno, file=None, line=None):
    if "synchroniz" in str(message).lower():
        syncs.append({"after_step": len(step_times), "where": f"{filename}:{lineno}", "message": str(message)[:200]})


warnings.showwarning = on_warning
warnings.simplefilter("always")
if side == "lightning":
    import yaml
    import pytorch_lightning as pl
    from tests.harness import instantiate

    spec = yaml.safe_load(open(spec_path))
    pl.seed_everything(spec["seed_everything"], verbose=False)
    model = instantiate(spec["model"])
    flags = dict(spec["trainer"])
    if isinstance(flags.get("strategy"), dict):  # Lightning's strategy object, its layer classes as a set
        import importlib

        entry = flags["strategy"]
        arguments = dict(entry.get("init_args", {}))
        for key in ("auto_wrap_policy", "activation_checkpointing_policy"):
            if key in arguments:
                paths = [path.rpartition(".") for path in arguments[key]]
                arguments[key] = {getattr(importlib.import_module(module), name) for module, _, name in paths}
        flags["strategy"] = getattr(pl.strategies, entry["class_path"].rpartition(".")[2])(**arguments)
    trainer = pl.Trainer(**flags, enable_model_summary=False)
    start = time.perf_counter()
    trainer.fit(torch.compile(model) if spec.get("loop", {}).get("compile") else model)
else:
    namespace = runpy.run_path(spec_path)
    start = time.perf_counter()
    model = namespace["main"]()
torch.cuda.set_sync_debug_mode(0)
torch.cuda.synchronize()
end = time.perf_counter()
if sharded:  # the full weights, gathered from every process's shards (a collective call)
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    weights = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
else:
    weights = {k: v.detach().cpu() for k, v in model.state_dict().items()}
if rank == 0:
    torch.save(weights, out + ".pt")
    gaps = [b - a for a, b in zip(step_times, step_times[1:])]
    with open(out, "w") as f:
        first = step_times[0] - start if step_times else float("nan")
        json.dump({"steps": len(step_times), "total_s": end - start, "gaps": gaps, "syncs": syncs, "first_s": first,
                   "peak_bytes": torch.cuda.max_memory_allocated()}, f)
"""


def specs(devices: int, epochs: int = 3, hidden: int = 256) -> dict[str, dict[str, Any]]:
    """The specs measured, by name: LitClassifier on CUDA, with Lightning's flags as the spec spells them."""
    base = {
        "seed_everything": 42,
        "model": {"class_path": "examples.lightning_models.LitClassifier", "init_args": {"hidden": hidden, "lr": 0.05}},
        "trainer": {
            "accelerator": "cuda",
            "devices": 1,
            "max_epochs": epochs,
            "log_every_n_steps": LOG_EVERY_N_STEPS,
            "logger": False,
            "enable_checkpointing": False,
            "enable_progress_bar": False,
        },
    }

    def variant(**flags: Any) -> dict[str, Any]:
        return {**base, "trainer": {**base["trainer"], **flags}}

    fsdp1 = {"class_path": "FSDPStrategy", "init_args": {"auto_wrap_policy": ["torch.nn.Linear"]}}
    fsdp2 = {"class_path": "ModelParallelStrategy", "init_args": {"data_parallel_size": devices,
                                                                  "tensor_parallel_size": 1}}  # fmt: skip
    sharded_model = {**base["model"], "class_path": "examples.lightning_models.LitShardedClassifier"}
    compiled_model = {"class_path": "benchmarks.models.SmallCNNCompiled", "init_args": {}}
    return {
        "cuda-32": variant(),
        "cuda-16-mixed": variant(precision="16-mixed"),
        "cuda-bf16-mixed": variant(precision="bf16-mixed"),
        f"ddp-{devices}gpu": variant(strategy="ddp", devices=devices),
        f"fsdp1-{devices}gpu": variant(strategy=fsdp1, devices=devices),
        f"fsdp2-{devices}gpu": {**variant(strategy=fsdp2, devices=devices), "model": sharded_model},
        "cuda-compiled": {**variant(), "model": compiled_model, "loop": {"compile": True}},
    }


def render_specs(directory: Path, devices: int, **options: Any) -> dict[str, tuple[Path, Path]]:
    """Write each spec and the script loopgen renders from it into `directory`: {name: (spec, script)}. Pure
    text work: runs on a machine without CUDA too (the tests check it there)."""
    import yaml

    sys.path.insert(0, str(ROOT))
    from loopgen.pipeline import render_spec

    written = {}
    for name, spec in specs(devices, **options).items():
        spec_path = directory / f"{name}.yaml"
        spec_path.write_text(yaml.safe_dump(spec, sort_keys=False))
        script = directory / f"{name}.py"
        script.write_text(render_spec(spec_path, script.name)[0])
        written[name] = (spec_path, script)
    return written


def launch(side: str, target: Path, out: Path, devices: int, distributed: bool, child: Path) -> dict[str, Any]:
    """Train one side in a fresh process (torchrun for DDP, FSDP1 and FSDP2); its facts and final weights."""
    sharded = "sharded" if target.name.startswith("fsdp") else "whole"
    command = [sys.executable, str(child), side, str(target), str(out), sharded]
    if distributed:
        command = [shutil.which("torchrun") or "torchrun", f"--nproc_per_node={devices}", *command[1:]]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    result = subprocess.run(command, cwd=out.parent, env=env, capture_output=True, text=True)
    if result.returncode:
        raise SystemExit(f"{side} failed on {target.name}:\n{result.stderr[-4000:]}")
    import torch

    facts = json.loads(out.read_text())
    facts["weights"] = torch.load(f"{out}.pt", weights_only=True)
    return facts


def compare(a: dict[str, Any], b: dict[str, Any]) -> str:
    import torch

    if all(torch.equal(a[k], b[k]) for k in a):
        return "equal"
    largest = max(float((a[k].float() - b[k].float()).abs().max()) for k in a)
    return f"max |diff| {largest:.3g}"


def unexpected_syncs(facts: dict[str, Any], world_size: int = 1) -> list[dict[str, Any]]:
    """The synchronisations after a step that is neither a logging step nor an epoch's last."""
    per_epoch = SAMPLES // (BATCH_SIZE * world_size)
    allowed = {s for s in range(facts["steps"] + 1) if s % LOG_EVERY_N_STEPS == 0 or s % per_epoch == 0}
    return [s for s in facts["syncs"] if s["after_step"] not in allowed]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--hidden", type=int, default=256)
    parser.add_argument("--only", nargs="*", help="names of the specs to run (default: all)")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print(
            "benchmarks/gpu.py needs a CUDA GPU: torch.cuda.is_available() is False here"
            f" (torch {torch.__version__}). Run it on a machine with one; nothing was measured.",
            file=sys.stderr,
        )
        return 2
    devices = torch.cuda.device_count()
    print(f"{devices} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}")
    failed = False
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        child = directory / "child.py"
        child.write_text(CHILD)
        rendered = render_specs(directory, devices, epochs=args.epochs, hidden=args.hidden)
        header = f"{'spec':18} {'side':9} {'steps':>5} {'median ms':>9} {'mean ms':>8} {'peak MiB':>9}  weights"
        print(header)
        for name, (spec_path, script) in rendered.items():
            if args.only and name not in args.only:
                continue
            distributed = name.startswith(("ddp", "fsdp"))
            runs = {}
            for side, target in (("lightning", spec_path), ("loopgen", script)):
                runs[side] = launch(side, target, directory / f"{name}.{side}.json", devices, distributed, child)
            verdict = compare(runs["lightning"]["weights"], runs["loopgen"]["weights"])
            for side, facts in runs.items():
                if name == "cuda-compiled":  # the compilation happens before the first step ends: timed apart
                    print(f"{name:18} {side:9} fit start to first step (set-up, compilation) {facts['first_s']:.2f} s")
                median = 1000 * statistics.median(facts["gaps"]) if facts["gaps"] else float("nan")
                mean = 1000 * facts["total_s"] / max(facts["steps"], 1)
                print(
                    f"{name:18} {side:9} {facts['steps']:5d} {median:9.3f} {mean:8.3f}"
                    f" {facts['peak_bytes'] / 2**20:9.1f}  {verdict if side == 'loopgen' else ''}"
                )
            bad = unexpected_syncs(runs["loopgen"], devices if distributed else 1)
            print(f"{'':18} syncs in the generated loop: {len(runs['loopgen']['syncs'])}, unexpected: {len(bad)}")
            for sync in bad[:5]:
                print(f"{'':20} after step {sync['after_step']}: {sync['where']}: {sync['message']}")
            failed |= bool(bad) or verdict != "equal"
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
