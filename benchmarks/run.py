"""The generated loop against a hand-written PyTorch loop and pytorch_lightning.Trainer, in one command.

    python benchmarks/run.py            # the full run (about 25 minutes on a busy 2-core machine)
    python benchmarks/run.py --quick    # a short one
    python benchmarks/run.py --compare  # ... and the change against the last saved run

For each model (benchmarks/models.py: a tiny MLP, a small CNN, an LSTM) and configuration (plain; validation +
gradient accumulation + norm clipping + a StepLR scheduler; bf16-mixed under CPU autocast; compiled: the
script's `loop: {compile: true}`, the hand loop's `torch.compile` of its step, the Trainer given
`torch.compile(model)`), on the same seed, data and number of optimizer steps, it trains:

    hand          the hand-written loop (benchmarks/hand_loops.py)
    script        the loopgen script, progress bar, logger, checkpointing and model summary off
    trainer       pytorch_lightning.Trainer with the same four off
    script_full   the loopgen script with the four on (a CSVLogger)
    trainer_full  the Trainer with its defaults on (a CSVLogger)

Every run is a fresh process forked from a server that has imported torch, pytorch_lightning and the models
once (every side needs them: the models are LightningModules), so a run starts from the same untouched state
and its peak RSS is its own process's. The runs of one repeat are interleaved (model by model, configuration
by configuration, the variants in a rotating order), with one intra-op thread. Per step: from the first step
after the first epoch (warm-up) to the end of the fit, over the steps since, so per-epoch costs (validation,
checkpoints, loggers, the end of the fit) count, and torch.compile's compilation, which happens in the first
step, does not (the first step's time is reported apart); `compute_loss` notes each step's start, the same line for
every side. Whole run: from the fork to the end of the child (the imports the variant adds, setup, fit).
Every run's final weights are hashed: a run whose weights differ from the hand-written loop's is void.

Auditability: the lines of pytorch_lightning and lightning_fabric executed during `Trainer.fit` (coverage.py)
against the generated script's lines, statements and the share of them executed, for each configuration.

Results: benchmarks/results/<UTC time>.json and benchmarks/results/latest.json (every run, the summary, the
machine).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
SEED = 42
VARIANTS = ("hand", "script", "trainer", "script_full", "trainer_full")
# model: (class, class with validation + scheduler, epochs, quick epochs)
MODELS = {
    "mlp": ("TinyMLP", "TinyMLPVal", 12, 4),
    "cnn": ("SmallCNN", "SmallCNNVal", 6, 3),
    "lstm": ("SmallLSTM", "SmallLSTMVal", 6, 3),
}
# configuration: the Trainer flags it adds (the hand loop: benchmarks/hand_loops.py)
CONFIGS = {
    "plain": {},
    "val_acc_clip_sched": {"accumulate_grad_batches": 2, "gradient_clip_val": 0.5},
    "bf16": {"precision": "bf16-mixed"},
    "compiled": {},  # torch.compile: loop.compile, the hand loop's torch.compile, the Trainer given torch.compile(model)
}
# (name, numerator, denominator) of the per-step medians
RATIOS = (
    ("script_over_hand", "script", "hand"),
    ("trainer_over_script", "trainer", "script"),
    ("trainer_full_over_script_full", "trainer_full", "script_full"),
)
MEASURES = (
    "per_step_cpu_s",
    "per_step_s",
    "step_cpu_median_s",
    "step_median_s",
    "run_s",
    "fit_s",
    "peak_rss_mib",
    "first_step_s",
)
FEATURES_OFF = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
FEATURES_OFF_TRAINER = {**FEATURES_OFF, "enable_model_summary": False}


def class_of(model: str, config: str) -> str:
    """The model's class for the configuration (benchmarks/models.py)."""
    if config == "compiled":
        return MODELS[model][0] + "Compiled"
    return MODELS[model][1 if config == "val_acc_clip_sched" else 0]


def spec_for(model: str, config: str, epochs: int, full: bool) -> dict:
    """The loopgen spec of one cell (and, read as LightningCLI reads it, the Trainer's arguments)."""
    class_name = class_of(model, config)
    trainer = {"accelerator": "cpu", "max_epochs": epochs, **CONFIGS[config]}
    if full:
        trainer["logger"] = {"class_path": "CSVLogger", "init_args": {"save_dir": "."}}
    else:
        trainer.update(FEATURES_OFF, enable_model_summary=False)
    spec = {
        "seed_everything": SEED,
        "model": {"class_path": f"benchmarks.models.{class_name}", "init_args": {}},
        "trainer": trainer,
    }
    if config == "compiled":
        spec["loop"] = {"compile": True}
    return spec


def render_all(jobs_path: str) -> None:
    """Render each [spec.yaml, script.py] of the JSON list at `jobs_path` (run in its own process: the server
    never imports loopgen, Jinja or black)."""
    from loopgen.pipeline import render_spec

    for spec_path, script_path in json.loads(Path(jobs_path).read_text()):
        Path(script_path).write_text(render_spec(Path(spec_path), Path(script_path))[0])


# ---------------------------------------------------------------------------------------------------------
# the server: imports once, forks one child per run


def serve(plan_path: str, out_path: str) -> None:
    import time

    t0 = time.perf_counter()
    import pytorch_lightning  # noqa: F401
    import torch

    import benchmarks.hand_loops
    import benchmarks.models  # noqa: F401

    shared_import_s = time.perf_counter() - t0
    torch.set_num_threads(1)
    plan = json.loads(Path(plan_path).read_text())
    with open(out_path, "w") as out:
        out.write(json.dumps({"shared_import_s": shared_import_s}) + "\n")
        for n, job in enumerate(plan):
            result = fork_job(job)
            out.write(json.dumps(result) + "\n")
            out.flush()
            status = "failed" if "error" in result else f"{result.get('per_step_cpu_s', 0) * 1e6:8.1f} us/step (CPU)"
            print(f"  [{n + 1}/{len(plan)}] {job['model']:4} {job['config']:18} {job['variant']:12} {status}",
                  file=sys.stderr, flush=True)  # fmt: skip


def fork_job(job: dict) -> dict:
    import time

    run_dir = Path(job["dir"])
    run_dir.mkdir(parents=True, exist_ok=True)
    result_path = run_dir / "result.json"
    start = time.perf_counter()
    pid = os.fork()
    if pid == 0:  # the child: run, write the result, leave without the parent's cleanup
        code = 1
        try:
            os.chdir(run_dir)
            log = os.open(run_dir / "output.log", os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
            os.dup2(log, 1)
            os.dup2(log, 2)
            result = run_job(job, start)
            result_path.write_text(json.dumps(result))
            code = 0
        except Exception:  # noqa: BLE001 - the child reports any failure and exits
            import traceback

            result_path.write_text(json.dumps({"error": traceback.format_exc()}))
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    os.waitpid(pid, 0)
    result = {**job, **json.loads(result_path.read_text())}
    result["process_s"] = time.perf_counter() - start  # fork to reaped, the child's exit included
    return result


def run_job(job: dict, start: float) -> dict:
    import random
    import resource
    import time

    import numpy
    import torch

    from benchmarks import hand_loops, models

    variant, epochs, coverage_of = job["variant"], job["epochs"], job.get("coverage")
    cov = None
    fit_start = time.perf_counter()
    if variant == "hand":
        random.seed(SEED)
        numpy.random.seed(SEED)
        torch.manual_seed(SEED)
        model = getattr(models, job["class"])()
        fit_start = time.perf_counter()
        if job["config"] == "plain":
            hand_loops.train_plain(model, epochs)
        elif job["config"] == "bf16":
            hand_loops.train_bf16(model, epochs)
        elif job["config"] == "compiled":
            hand_loops.train_compiled(model, epochs)
        else:
            flags = CONFIGS[job["config"]]
            hand_loops.train_val_accumulate_clip(
                model, epochs, flags["accumulate_grad_batches"], flags["gradient_clip_val"]
            )
    elif variant.startswith("trainer"):
        import pytorch_lightning as pl

        pl.seed_everything(SEED, verbose=False)
        model = getattr(models, job["class"])()
        flags = {"accelerator": "cpu", "max_epochs": epochs, **CONFIGS[job["config"]]}
        if variant == "trainer_full":
            flags["logger"] = pl.loggers.CSVLogger(save_dir=".")
        else:
            flags.update(FEATURES_OFF_TRAINER)
        trainer = pl.Trainer(**flags)
        if coverage_of:
            import coverage

            cov = coverage.Coverage(data_file=None, source_pkgs=["pytorch_lightning", "lightning_fabric"])
            cov.start()
        trainer.fit(torch.compile(model) if job["config"] == "compiled" else model)
    else:
        import runpy

        script = job["script"]
        if coverage_of:
            import coverage

            cov = coverage.Coverage(data_file=None, include=[script])
            cov.start()
        sys.argv = [script]
        model = runpy.run_path(script, run_name="benchmark_script")["main"]()
    end, cpu_end = time.perf_counter(), time.process_time()
    if cov is not None:
        cov.stop()
    result = {
        "fit_s": end - fit_start,
        "run_s": end - start,
        "peak_rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "weights_sha256": weights_hash(model.state_dict()),
    }
    times, warmup = model.step_times, job["warmup_steps"]
    result["steps"] = len(times)
    if len(times) > 1:  # the first step, with what happens once in it (torch.compile's compilation)
        result["first_step_s"] = times[1] - times[0]
    if len(times) > warmup + 1:
        deltas = [b - a for a, b in zip(times[warmup:], times[warmup + 1 :])]
        result["per_step_s"] = (end - times[warmup]) / (len(times) - warmup)
        result["step_median_s"] = statistics.median(deltas)
        cpu_times = model.step_cpu_times
        result["per_step_cpu_s"] = (cpu_end - cpu_times[warmup]) / (len(times) - warmup)
        result["step_cpu_median_s"] = statistics.median(
            b - a for a, b in zip(cpu_times[warmup:], cpu_times[warmup + 1 :])
        )
    if cov is not None:
        result["coverage"] = coverage_facts(cov, job)
    return result


def weights_hash(state_dict) -> str:
    import hashlib

    digest = hashlib.sha256()
    for key in sorted(state_dict):
        digest.update(key.encode())
        digest.update(state_dict[key].detach().contiguous().view(-1).view(dtype=__import__("torch").uint8).numpy())
    return digest.hexdigest()


def coverage_facts(cov, job: dict) -> dict:
    data = cov.get_data()
    if job["variant"].startswith("script"):
        _, statements, _, missing, _ = cov.analysis2(job["script"])
        text = Path(job["script"]).read_text().splitlines()
        code = [line for line in text if line.strip() and not line.strip().startswith("#")]
        return {
            "lines": len(text),
            "code_lines": len(code),
            "statements": len(statements),
            "executed": len(statements) - len(missing),
        }
    packages: dict[str, dict] = {}
    for name in data.measured_files():
        package = "lightning_fabric" if "lightning_fabric" in Path(name).parts else "pytorch_lightning"
        entry = packages.setdefault(package, {"files": 0, "executed": 0})
        executed = len(data.lines(name) or ())
        entry["files"] += executed > 0
        entry["executed"] += executed
    return packages


# ---------------------------------------------------------------------------------------------------------
# the driver


def machine() -> dict:
    cpu = platform.processor()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    versions = subprocess.run(
        [sys.executable, "-c", "import torch, pytorch_lightning as pl; print(torch.__version__, pl.__version__)"],
        capture_output=True,
        text=True,
    ).stdout.split()
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "python": platform.python_version(),
        "torch": versions[0] if versions else None,
        "pytorch_lightning": versions[1] if len(versions) > 1 else None,
        "load_average_before": os.getloadavg(),
    }


def make_plan(args, tmp: Path) -> tuple[list[dict], list[list[str]]]:
    """The runs, in the order they run, and the scripts to render."""
    renders, scripts, cells = [], {}, []
    for model in args.models:
        for config in args.configs:
            epochs = args.epochs or MODELS[model][3 if args.quick else 2]
            cells.append((model, config, epochs))
            for full in (False, True):
                name = f"{model}_{config}_{'full' if full else 'off'}"
                spec_path, script_path = tmp / f"{name}.yaml", tmp / f"{name}.py"
                spec_path.write_text(json.dumps(spec_for(model, config, epochs, full)))  # JSON is YAML
                renders.append([str(spec_path), str(script_path)])
                scripts[model, config, full] = str(script_path)
    jobs = []
    # one untimed run per model first, so that every timed compiled run finds torch's compile caches (Inductor's
    # kernels) as warm as the others did: the first of them would otherwise pay the cold compilation alone
    for model, config, epochs in cells:
        if config == "compiled":
            jobs.append(job(model, config, 1, class_of(model, config), "hand", "warmup", scripts, tmp))
    rotation = 0
    for repeat in range(args.repeats):
        for model, config, epochs in cells:
            class_name = class_of(model, config)
            order = VARIANTS[rotation % len(VARIANTS) :] + VARIANTS[: rotation % len(VARIANTS)]
            rotation += 1
            for variant in order:
                jobs.append(job(model, config, epochs, class_name, variant, repeat, scripts, tmp))
    if args.coverage:
        for config in args.configs:
            model = args.models[0]
            epochs = args.epochs or MODELS[model][3 if args.quick else 2]
            class_name = class_of(model, config)
            for variant in VARIANTS[1:]:
                jobs.append(job(model, config, epochs, class_name, variant, "coverage", scripts, tmp))
    return jobs, renders


def job(model, config, epochs, class_name, variant, repeat, scripts, tmp) -> dict:
    steps_per_epoch = {"mlp": 1024, "cnn": 512, "lstm": 512}[model] // 32
    entry = {
        "model": model,
        "config": config,
        "variant": variant,
        "repeat": repeat,
        "epochs": epochs,
        "class": class_name,
        "warmup_steps": steps_per_epoch,
        "dir": str(tmp / "runs" / f"{repeat}_{model}_{config}_{variant}"),
    }
    if variant.startswith("script"):
        entry["script"] = scripts[model, config, variant == "script_full"]
    if repeat == "coverage":
        entry["coverage"] = True
    return entry


def spread(values: list[float]) -> dict:
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "n": len(values)}


def summarise(runs: list[dict]) -> dict:
    """Per cell and variant: medians and ranges; the ratios; void runs (weights unlike the hand loop's)."""
    timed = [r for r in runs if r["repeat"] not in ("coverage", "warmup")]
    reference = {}
    for r in timed:
        if r["variant"] == "hand" and "weights_sha256" in r:
            reference.setdefault((r["model"], r["config"]), r["weights_sha256"])
    for r in runs:
        ref = reference.get((r["model"], r["config"]))
        r["weights_equal"] = ref is not None and r.get("weights_sha256") == ref
        r["void"] = "error" in r or not r["weights_equal"]
    cells: dict[str, dict] = {}
    for r in timed:
        cell = cells.setdefault(f"{r['model']}/{r['config']}", {"model": r["model"], "config": r["config"]})
        cell.setdefault(r["variant"], []).append(r)
    summary = {}
    for key, cell in cells.items():
        out = {"model": cell["model"], "config": cell["config"]}
        for variant in VARIANTS:
            rs = [r for r in cell.get(variant, []) if "per_step_s" in r]
            if not rs:
                continue
            out[variant] = {measure: spread([r[measure] for r in rs]) for measure in MEASURES}
            out[variant]["weights_equal"] = all(r["weights_equal"] for r in cell[variant])
            out[variant]["void"] = any(r["void"] for r in cell[variant])
        for measure, suffix in (("per_step_cpu_s", ""), ("per_step_s", "_wall")):
            medians = {v: out[v][measure]["median"] for v in VARIANTS if v in out}
            for name, num, den in RATIOS:
                out[name + suffix] = medians[num] / medians[den] if num in medians and den in medians else None
            # the same ratio within each repeat (the runs next to each other), then its median over the repeats
            for name, num, den in RATIOS:
                pairs = {}
                for r in cell.get(num, []) + cell.get(den, []):
                    pairs.setdefault(r["repeat"], {})[r["variant"]] = r.get(measure)
                paired = [p[num] / p[den] for p in pairs.values() if p.get(num) and p.get(den)]
                out[name + suffix + "_paired"] = statistics.median(paired) if paired else None
            if all(v in medians for v in ("hand", "script", "trainer")):
                a, b, c = medians["hand"], medians["script"], medians["trainer"]
                out["gap_removed" + suffix] = (c - b) / (c - a) if c != a else None
        summary[key] = out
    return summary


def audit(runs: list[dict]) -> dict:
    """Per configuration and feature set: Lightning's lines executed during fit, the script's lines."""
    table: dict[str, dict] = {}
    for r in runs:
        if r["repeat"] != "coverage" or "coverage" not in r or not isinstance(r["coverage"], dict):
            continue
        features = "full" if r["variant"].endswith("_full") else "off"
        entry = table.setdefault(f"{r['config']}/{features}", {"model": r["model"]})
        entry["lightning" if r["variant"].startswith("trainer") else "script"] = r["coverage"]
    return table


def fmt_us(spread_: dict) -> str:
    return f"{spread_['median'] * 1e6:.0f} ({spread_['min'] * 1e6:.0f}–{spread_['max'] * 1e6:.0f})"


def num(value: float | None, form: str = ".3f") -> str:
    return "–" if value is None else format(value, form)


def report(results: dict) -> str:
    """The results as Markdown tables (benchmarks/README.md holds them)."""
    meta = results["meta"]
    lines = [
        (
            f"{meta['cpu']}, {meta['cores']} cores, Python {meta['python']}, torch {meta['torch']},"
            f" pytorch_lightning {meta['pytorch_lightning']}; load average {meta['load_average_before'][0]:.1f} before,"
            f" {meta['load_average_after'][0]:.1f} after; `{meta['command']}` ({meta['time']}), {meta['repeats']}"
            f" interleaved repeats. Shared imports (torch, pytorch_lightning, the models): {meta['shared_import_s']:.1f} s"
            " in the server, not in the run times."
        ),
        "",
        (
            "Per step, µs of CPU time: median (min–max) over the repeats; ratios of the medians (b/a paired: the"
            " median over the repeats of each repeat's own ratio; wall-clock ratios last). a hand-written loop, b loopgen script, c Trainer (b and c: progress bar,"
            " logger, checkpointing, model summary off), d the script and the Trainer with the four on (CSVLogger)."
        ),
        "",
        (
            "| model / config | a hand | b script | c Trainer | b/a | c/b | gap removed | d script | d Trainer"
            " | d Trainer/script | b/a paired | b/a wall | c/b wall |"
        ),
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, cell in results["summary"].items():

        def col(variant: str, cell=cell) -> str:
            if variant not in cell:
                return "–"
            void = " **void**" if cell[variant]["void"] else ""
            return fmt_us(cell[variant]["per_step_cpu_s"]) + void

        lines.append(
            f"| {key} | {col('hand')} | {col('script')} | {col('trainer')} | {num(cell['script_over_hand'])}"
            f" | {num(cell['trainer_over_script'], '.2f')} | {num(cell.get('gap_removed'), '.1%')}"
            f" | {col('script_full')} | {col('trainer_full')} | {num(cell['trainer_full_over_script_full'], '.2f')}"
            f" | {num(cell['script_over_hand_paired'])} | {num(cell['script_over_hand_wall'])} | {num(cell['trainer_over_script_wall'], '.2f')} |"
        )
    lines += [
        "",
        (
            "Whole run (s, fork to end: the variant's own imports, setup, fit) and peak RSS (MiB), medians;"
            " final weights against the hand-written loop's."
        ),
        "",
        "| model / config | run a | b | c | d script | d Trainer | RSS a | b | c | d script | d Trainer | weights |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for key, cell in results["summary"].items():
        present = [v for v in VARIANTS if v in cell]
        runs = [f"{cell[v]['run_s']['median']:.2f}" if v in cell else "–" for v in VARIANTS]
        rss = [f"{cell[v]['peak_rss_mib']['median']:.0f}" if v in cell else "–" for v in VARIANTS]
        unequal = [v for v in present if not cell[v]["weights_equal"]]
        weights = "equal" if not unequal else "**differ: " + ", ".join(unequal) + "**"
        lines.append(f"| {key} | " + " | ".join(runs + rss) + f" | {weights} |")
    lines += [
        "",
        (
            "First step (s, from its start to the next one's), medians: in the compiled configuration it holds"
            " torch.compile's compilation of the step (forward, loss, backward), which the per-step figures"
            " above leave out (they start after the first epoch)."
        ),
        "",
        "| model / config | a hand | b script | c Trainer | d script | d Trainer |",
        "|---|---|---|---|---|---|",
    ]
    for key, cell in results["summary"].items():
        firsts = [f"{cell[v]['first_step_s']['median']:.3f}" if v in cell else "–" for v in VARIANTS]
        lines.append(f"| {key} | " + " | ".join(firsts) + " |")
    failed = [r for r in results["runs"] if "error" in r]
    if failed:
        lines += ["", f"**{len(failed)} runs failed**: " + ", ".join(
            sorted({f"{r['model']}/{r['config']}/{r['variant']}" for r in failed}))]  # fmt: skip
    if results["audit"]:
        lines += [
            "",
            (
                "Auditability: lines of pytorch_lightning + lightning_fabric executed during `Trainer.fit` (files),"
                " against the generated script: its lines, statements, and the share of them executed."
            ),
            "",
            "| config / features | Lightning lines executed (files) | script lines | statements | executed |",
            "|---|---|---|---|---|",
        ]
        for key, entry in results["audit"].items():
            light = entry.get("lightning", {})
            executed = sum(p["executed"] for p in light.values())
            files = sum(p["files"] for p in light.values())
            script = entry.get("script", {})
            share = script["executed"] / script["statements"] if script.get("statements") else 0
            lines.append(
                f"| {entry['model']} {key} | {executed} ({files}) | {script.get('lines', 0)}"
                f" | {script.get('statements', 0)} | {script.get('executed', 0)} ({share:.0%}) |"
            )
    return "\n".join(lines)


def compare(old: dict, new: dict) -> str:
    lines = [f"change against {old['meta'].get('time')} (per-step CPU-time medians):"]
    for key, cell in new["summary"].items():
        before = old.get("summary", {}).get(key)
        if not before:
            continue
        parts = []
        for variant in VARIANTS:
            if variant in cell and variant in before:
                measure = "per_step_cpu_s" if "per_step_cpu_s" in before[variant] else "per_step_s"
                a, b = before[variant][measure]["median"], cell[variant][measure]["median"]
                parts.append(f"{variant} {b * 1e6:.0f} us ({(b / a - 1) * 100:+.1f}%)")
        lines.append(f"  {key:24} " + ", ".join(parts))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer epochs and repeats")
    parser.add_argument("--repeats", type=int, help="interleaved repeats (default 7, quick 2)")
    parser.add_argument("--epochs", type=int, help="epochs for every model (default: per model)")
    parser.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    parser.add_argument("--configs", nargs="+", choices=list(CONFIGS), default=list(CONFIGS))
    parser.add_argument("--no-coverage", dest="coverage", action="store_false", help="skip the auditability runs")
    parser.add_argument("--out", type=Path, default=RESULTS, help="where the JSON goes (default benchmarks/results)")
    parser.add_argument("--compare", action="store_true", help="print the change against the last saved run")
    args = parser.parse_args(argv)
    args.repeats = args.repeats or (2 if args.quick else 7)

    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    meta = {
        "time": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "command": "python benchmarks/run.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "quick": args.quick,
        "repeats": args.repeats,
        **machine(),
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        jobs, renders = make_plan(args, tmp)
        (tmp / "renders.json").write_text(json.dumps(renders))
        subprocess.run(
            [sys.executable, "-c", "import sys; from benchmarks.run import render_all; render_all(sys.argv[1])",
             str(tmp / "renders.json")],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        (tmp / "plan.json").write_text(json.dumps(jobs))
        print(f"{len(jobs)} runs", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-c", "import sys; from benchmarks.run import serve; serve(*sys.argv[1:])",
             str(tmp / "plan.json"), str(tmp / "out.jsonl")],
            cwd=ROOT, env=env, check=True,
        )  # fmt: skip
        lines = [json.loads(line) for line in (tmp / "out.jsonl").read_text().splitlines()]
        scripts = {Path(s).stem: Path(s).read_text() for _, s in renders}
    for r in lines[1:]:
        r.pop("dir", None)
        r.pop("script", None)
    meta["shared_import_s"] = lines[0]["shared_import_s"]
    meta["load_average_after"] = os.getloadavg()
    runs = lines[1:]
    results = {"meta": meta, "summary": summarise(runs), "audit": audit(runs), "runs": runs}
    results["script_lines"] = {name: len(text.splitlines()) for name, text in scripts.items()}
    print(report(results))
    previous = args.out / "latest.json"
    if args.compare and previous.exists():
        print()
        print(compare(json.loads(previous.read_text()), results))
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = meta["time"].replace(":", "").replace("-", "")
    for path in (args.out / f"{stamp}.json", previous):
        path.write_text(json.dumps(results, indent=1) + "\n")
    print(f"\nraw results: {args.out / f'{stamp}.json'} and {previous}")
    return results


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    main()
