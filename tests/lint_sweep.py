"""A sweep of rendered scripts through `ruff check --isolated --select E,F,W,B,ARG` and `black --check`, at black's
defaults (line length 88): every script loopgen renders must pass both.

The full sweep renders, in-process (`loopgen.pipeline.render_spec`), every spec of:

- the examples, the parity cases (Lightning 2.x's, the objects', the streams', manual optimization's, the metric
  attributes', every attribute's) and Lightning 1.9.5's seed-loop cases (`tests/test_lightning195.py`);
- the flag sets of `tests/test_text.py` (their models define every hook a script may call) and the specs of the DDP
  and Horovod tests;
- a cross product of the flags that change the code (`CROSS`) over models that take different paths through the
  templates (`MODELS`): every value of every flag on each model, `COMBINATIONS` drawn with a fixed seed, and the
  `PRODUCTS` (every combination of a few flags);

into one directory that no pyproject.toml configures, then runs ruff once and black once over that directory and
names each finding with its spec. Rendering is black's work mostly (0.7 to 1 s of CPU a script on this 2-core
machine), so the full sweep takes minutes (582 specs, 540 of which render: 8.3 minutes of CPU);
`tests/test_script_lint.py` sweeps `QUICK`, the fewest specs that reach every template line the full sweep
reaches (30 s), and the full sweep when LOOPGEN_LINT_SWEEP=full.

    python -m tests.lint_sweep            # the full sweep: its findings, by spec
    python -m tests.lint_sweep --choose   # the template lines each spec reaches, and a new QUICK

(from the repository root, where the specs' `tests.` and `examples.` modules are found).
"""

from __future__ import annotations

import copy
import itertools
import json
import random
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import yaml

from tests.harness import ROOT

RULES = "E,F,W,B,ARG"

# models whose scripts take different paths through the templates, each with the spec keys it needs
MODELS: dict[str, dict[str, Any]] = {
    # a plain nn.Module with its own data
    "module": {"model": {"class_path": "examples.models.Classifier"}},
    # a LightningModule that logs with self.log, validates, and returns its optimizer in a form the source shows
    "logging": {"model": {"class_path": "tests.parity.models.LoggingModel"}},
    # configure_optimizers whose return the source does not show: the general unpack_optimizers path
    "helper": {"model": {"class_path": "tests.parity.models.HelperOptimizerModel"}},
    "helper_schedulers": {
        "model": {"class_path": "tests.parity.models.HelperSchedulersModel"},
        "loop": {"lr_schedulers": True},
    },
    # manual optimization, two optimizers
    "manual": {"model": {"class_path": "tests.parity.manual_models.ManualGAN"}},
    # the seed loop: two optimizers; truncated BPTT
    "seed_gan": {"model": {"class_path": "examples.seed_models.GAN"}},
    "seed_tbptt": {"model": {"class_path": "examples.seed_models.SequenceRNN"}, "trainer": {"truncated_bptt_steps": 5}},
}

CSV = {"class_path": "CSVLogger", "init_args": {"save_dir": "logs"}}
TENSORBOARD = {"class_path": "TensorBoardLogger", "init_args": {"save_dir": "tb"}}
MLFLOW = {"class_path": "MLFlowLogger", "init_args": {"save_dir": "mlruns"}}
WANDB = {"class_path": "WandbLogger", "init_args": {"offline": True}}
MONITORED = {"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "save_top_k": 2, "save_last": True}}
TIMED = {"class_path": "ModelCheckpoint", "init_args": {"train_time_interval": "00:00:30"}}
STOPPING = {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 2}}
LR_MONITOR = {"class_path": "LearningRateMonitor"}
TQDM = {"class_path": "TQDMProgressBar", "init_args": {"refresh_rate": 2}}
RICH = {"class_path": "RichProgressBar"}

# each flag (or group of flags) that changes the code, and its values, the first the base every spec starts from;
# a value is the trainer flags it sets (its callbacks are added to the others')
CROSS: dict[str, list[dict[str, Any]]] = {
    "summary": [{"enable_model_summary": False}, {"enable_model_summary": True}],
    "accelerator": [{"accelerator": "cpu"}, {"accelerator": "auto"}, {"accelerator": "cuda"}],
    "precision": [{}, {"precision": "bf16-mixed"}, {"precision": "16-mixed"}, {"precision": "64"}],
    "logger": [
        {"logger": False},
        {"logger": True},
        {"logger": CSV},
        {"logger": TENSORBOARD},
        {"logger": MLFLOW},
        {"logger": WANDB},
        {"logger": [CSV, TENSORBOARD, MLFLOW, WANDB]},
    ],
    "progress_bar": [
        {"enable_progress_bar": False},
        {"enable_progress_bar": True},
        {"enable_progress_bar": True, "callbacks": [TQDM]},
        {"enable_progress_bar": True, "callbacks": [RICH]},
    ],
    "profiler": [{}, {"profiler": "simple"}, {"profiler": "advanced"}, {"profiler": "pytorch"}],
    "checkpoints": [
        {"enable_checkpointing": False},
        {"enable_checkpointing": True},
        {"enable_checkpointing": True, "callbacks": [MONITORED]},
        {"enable_checkpointing": True, "callbacks": [TIMED]},
    ],
    "callbacks": [{}, {"callbacks": [STOPPING]}, {"logger": True, "callbacks": [LR_MONITOR]}],
    "accumulation": [{}, {"accumulate_grad_batches": 3}, {"accumulate_grad_batches": {0: 1, 1: 2}}],
    "clipping": [{}, {"gradient_clip_val": 0.5}, {"gradient_clip_val": 0.5, "gradient_clip_algorithm": "value"}],
    "validation": [{}, {"val_check_interval": 0.5}, {"max_steps": 7, "max_epochs": None}, {"fast_dev_run": True}],
    "strategy": [
        {},
        {"strategy": "ddp", "devices": 2},
        {"strategy": "dp", "devices": 2, "accelerator": "cuda"},
        {"strategy": "horovod", "devices": 2},
        {"accelerator": "tpu", "devices": 2},
    ],
}
COMBINATIONS = 4  # drawn per model, beyond one flag at a time
SEED = 0
# flags whose values meet in every combination (where the device is chosen, and what reads it), on these models
PRODUCTS = {("summary", "accelerator", "precision"): ("module", "logging")}

# the specs tests/test_script_lint.py sweeps: the fewest that reach every template line the full sweep reaches
# (`python -m tests.lint_sweep --choose`), and specs whose scripts once had findings that no other spec showed
QUICK = (
    (
        "cross:helper_schedulers:summary=1,accelerator=2,precision=1,progress_bar=3,profiler=3,checkpoints=2,"
        "callbacks=2,accumulation=1,clipping=1,validation=2,strategy=1"
    ),
    "manual:trainer_attributes_loggers_csv_first",
    "text:progress_bar_tqdm",
    "text:seed_profiler",
    "text:logger_every_kind_hparams",
    "horovod:early_stopping",
    "case:early_stop_subclass_own_rule_on_validation_end",
    "case:tqdm_subclass_totals_and_metrics",
    "case:rich_subclass_totals_and_metrics",
    "case:lr_monitor_subclass_every_step_helper",
    "case:checkpoint_subclass_steps_deferred_link",
    "manual:manual_checkpoint_every_n_steps_skips_step_0",
    "text:tpu_files",
    "text:manual_profiler",
    "case:reload_every_epoch_datamodule",
    "metric_attributes:spec_plateau_configs",
    "cross:seed_gan:checkpoints=3",
    "text:clip_hook_estimate",
    "example:callback_stop_min_steps",
    "lightning195:gan_accumulate_clip_gradnorm_step_schedulers",
    "lightning195:lbfgs_accumulate",
    "ddp:manual_gan",
    "horovod:accumulation_stepwise_lr",
    "text:tpu_one_device",
    "text:ddp_entry_accumulate_auto",
    "text:seed_apex",
    "example:accumulate_schedule",
    "case:overfit_batches_shuffled_val_no_sanity",
    "case:plateau_per_step_not_strict",
    "case:lr_monitor_param_groups",
    "example:val_cadence",
    "case:step_scheduler_literal_frequency_3_accumulate_2",
    "ddp:resumed",
    "model_parallel:sharded_mid_resumed",
    "model_parallel:full_resumed",
    "fsdp:full",
    "fsdp:sharded",
    "fsdp:late",
    "ddp:mlflow",
    "cross:module:strategy=2",
    "case:max_time_stops_after_the_batch_that_reaches_it",
    "case:timer_up_at_fit_start_held_by_min_steps",
    "case:timer_without_duration_only_times",
    "case:backbone_finetuning_doubles_then_aligns",
    "case:ema_weight_averaging_by_epoch_and_every_3_steps",
    "case:weight_averaging_equal_weights_without_buffers",
    "case:scheduler_chosen_at_run_time_step",
    "case:device_stats_cpu_accumulate_val_twice",
    "case:model_pruning_global_l1_lottery_ticket",
    "case:model_pruning_random_rows_at_each_validation_masks_kept",
    "case:model_pruning_l2_columns_resampled",
    "case:spike_detection_watches_accumulated_losses",
    "case:swa_batch_norm_epoch_and_checkpoints",
    "case:swa_replaces_a_step_scheduler",
    "ddp:pruning_spike_detection",
    "cross:module:accelerator=1,precision=2",
    "text:deterministic",
    "throughput:accumulating",
    "throughput:silent",
    "throughput:logged",
    "every_attribute:every_attribute",  # the trainer of reads the render cannot list
    "every_attribute:passed_on_estimate",
    # findings once, in these alone: an argument, a variable or an import the script did not use
    "cross:module:summary=1,accelerator=1",  # the model summary's `device`, without an example input
    "ddp:lbfgs_accumulate",  # the closure's `should_step`, nullcontext
    "ddp:manual_accumulate",  # prepare_all_reduce's `loss`
    "cross:module:logger=3",  # warnings, for a TensorBoardLogger
    "cross:module:logger=4",  # default_root_dir, for an MLFlowLogger
)


def with_flags(model: str, *values: dict[str, Any]) -> dict[str, Any]:
    """The spec of `model` (a MODELS key) with the trainer flags of each of `values` in turn, after the base."""
    spec: dict[str, Any] = {"seed_everything": 0, **copy.deepcopy(MODELS[model])}
    trainer = spec["trainer"] = {"max_epochs": 2, **spec.get("trainer", {})}
    for value in [*(flags[0] for flags in CROSS.values()), *values]:
        for key, flag in copy.deepcopy(value).items():
            if key == "callbacks":
                trainer["callbacks"] = [*trainer.get("callbacks", []), *flag]
            else:
                trainer[key] = flag
    return spec


def cross_specs() -> dict[str, dict[str, Any]]:
    """Each model with every value of every flag, one flag at a time, and COMBINATIONS drawn at random (seeded);
    the PRODUCTS."""
    draw = random.Random(SEED)
    picked: list[tuple[str, dict[str, int]]] = []
    for model in MODELS:
        picked.append((model, {}))
        picked += [(model, {name: i}) for name, values in CROSS.items() for i in range(1, len(values))]
        for _ in range(COMBINATIONS):
            picked.append((model, {name: draw.randrange(len(values)) for name, values in CROSS.items()}))
    for names, models in PRODUCTS.items():
        for indices in itertools.product(*(range(len(CROSS[name])) for name in names)):
            picked += [(model, dict(zip(names, indices))) for model in models]
    specs = {}
    for model, picks in picked:
        label = ",".join(f"{name}={i}" for name, i in picks.items() if i)
        name = f"cross:{model}:{label}" if label else f"cross:{model}"
        specs[name] = with_flags(model, *(CROSS[flag][i] for flag, i in picks.items()))
    return specs


def fixture_specs() -> dict[str, dict[str, Any]]:
    """The specs other tests render (examples, parity cases, Lightning 1.9.5's cases, DDP's, ModelParallelStrategy's,
    FSDPStrategy's and Horovod's), by
    name (the files they write: relative to where their script runs)."""
    from tests import (
        test_ddp,
        test_fsdp,
        test_horovod,
        test_lightning195,
        test_model_parallel,
        test_no_silent_render,
        test_throughput,
    )
    from tests.parity import test_every_attribute, test_manual, test_metric_attributes

    specs = test_no_silent_render.fixture_specs()
    for prefix, cases in (
        ("manual", test_manual.CASES),
        ("metric_attributes", test_metric_attributes.CASES),
        ("every_attribute", test_every_attribute.CASES),
        ("lightning195", test_lightning195.CASES),
    ):
        specs.update({f"{prefix}:{case.id}": copy.deepcopy(case.spec) for case in cases})
    for name, (init_args, flags, *model) in test_ddp.SPECS.items():
        specs[f"ddp:{name}"] = test_ddp.spec(init_args, flags, *model)
    for name, (model, init_args, flags) in test_ddp.MANUAL_SPECS.items():
        specs[f"ddp:{name}"] = test_ddp.spec(init_args, flags, model)
    for job in test_ddp.FILE_JOBS:
        specs[f"ddp:{job}"] = test_ddp.file_spec(job, Path(job), Path("files"))
    for job in test_ddp.MORE_JOBS:
        specs[f"ddp:{job}"] = test_ddp.more_spec(job, Path(job))
    for name, case in test_model_parallel.SPECS.items():
        specs[f"model_parallel:{name}"] = test_model_parallel.case_spec(*case)
    specs["model_parallel:logged"] = test_model_parallel.logged_spec(Path("logged"))
    for form, sharded in test_model_parallel.FORMATS.items():
        jobs = [*test_model_parallel.FILE_JOBS, *test_model_parallel.MID_JOBS, *test_model_parallel.LATER_JOBS]
        for job in jobs:
            specs[f"model_parallel:{form}_{job}"] = test_model_parallel.checkpoint_spec(job, sharded, Path(job), Path())
    specs.update({f"fsdp:{name}": copy.deepcopy(case) for name, case in test_fsdp.SPECS.items()})
    for name, (model, args, flags) in test_horovod.CASES.items():
        specs[f"horovod:{name}"] = test_horovod.spec("horovod", 0.05, model, args, **flags)
    silent = test_throughput.spec(logger=False)
    for name, case in {**test_throughput.CASES, "logged": test_throughput.LOGGED, "silent": silent}.items():
        specs[f"throughput:{name}"] = copy.deepcopy(case)
    return specs


def write_specs(directory: Path) -> dict[str, Path]:
    """Every spec of the full sweep, written under `directory` (the flag sets of tests/test_text.py beside the
    package of their models): its file, by name."""
    from tests import test_text

    specs_dir, project = directory / "specs", directory / "project"
    specs_dir.mkdir()
    project.mkdir()
    paths = {}
    for name, spec in {**fixture_specs(), **cross_specs()}.items():
        paths[name] = specs_dir / (re.sub(r"[^\w=,]", "_", name)[:200] + ".yaml")  # a long name heads the script
        paths[name].write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    test_text.write_project(project)
    for name, flags in {**test_text.FLAG_SETS, **test_text.SEED_FLAG_SETS}.items():
        paths[f"text:{name}"] = test_text.spec_with(project, name, flags)
    return paths


def render_all(paths: dict[str, Path], scripts: Path) -> tuple[dict[str, str], list[str]]:
    """Each spec of `paths` rendered into `scripts`: the spec of each script (by file name), and the specs loopgen
    refuses."""
    from loopgen.errors import LoopgenError
    from loopgen.pipeline import render_spec

    scripts.mkdir()
    named, refused = {}, []
    for i, (name, path) in enumerate(paths.items()):
        script = scripts / f"script_{i}.py"
        try:
            text, _ = render_spec(path, script)
        except LoopgenError:
            refused.append(name)
            continue
        script.write_text(text, encoding="utf-8")
        named[script.name] = name
    return named, refused


def findings(scripts: Path, named: dict[str, str]) -> list[str]:
    """What ruff and `black --check` find in the scripts under `scripts`, each line naming its spec."""
    found = []
    result = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "--isolated", "--select", RULES,
         "--output-format", "json", str(scripts)],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    for f in json.loads(result.stdout):
        script = Path(f["filename"])
        line = script.read_text(encoding="utf-8").splitlines()[f["location"]["row"] - 1]
        found.append(f"{named[script.name]}: line {f['location']['row']}: {f['code']} {f['message']}: {line.strip()}")
    config = scripts.parent / "black.toml"  # no [tool.black]: black's defaults, whatever the user's configuration
    config.write_text("", encoding="utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "black", "--check", "--config", str(config), str(scripts)],
        capture_output=True,
        text=True,
    )
    assert result.returncode in (0, 1), result.stderr
    for line in result.stderr.splitlines():
        if line.startswith("would reformat "):
            found.append(f"{named[Path(line.removeprefix('would reformat ')).name]}: black would reformat it")
    return sorted(found)


def template_lines(paths: dict[str, Path]) -> dict[str, set[tuple[str, int]]]:
    """The template lines (file, line) each spec's render runs, by spec (none for a spec loopgen refuses)."""
    import os

    from loopgen.errors import LoopgenError
    from loopgen.pipeline import render_spec
    from loopgen.render.script import _environment

    os.environ["LOOPGEN_NO_CACHE"] = "1"
    environment = _environment()
    reached: dict[str, set[tuple[str, int]]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name, path in paths.items():
            lines: set[tuple[str, int]] = set()

            def local(frame: Any, event: str, arg: Any, lines: set = lines) -> Any:
                if event == "line":
                    lines.add((frame.f_code.co_filename, frame.f_lineno))
                return local

            def calls(frame: Any, event: str, arg: Any) -> Any:
                return local if frame.f_code.co_filename.endswith(".j2") else None

            sys.settrace(calls)
            try:
                render_spec(path, Path(scratch) / "train.py")
            except LoopgenError:
                continue
            finally:
                sys.settrace(None)
            reached[name] = {
                (Path(file).name, environment.get_template(Path(file).name).get_corresponding_lineno(line))
                for file, line in lines
            }
    return reached


def choose(reached: dict[str, set[tuple[str, int]]]) -> list[str]:
    """The fewest specs (greedily) that reach every template line some spec reaches."""
    left = set().union(*reached.values())
    chosen = []
    while left:
        best = max(reached, key=lambda name: len(reached[name] & left))
        chosen.append(best)
        left -= reached[best]
    return chosen


def main(argv: list[str]) -> int:
    import os

    os.chdir(ROOT)
    with tempfile.TemporaryDirectory() as directory:
        paths = write_specs(Path(directory))
        if "--choose" in argv:
            reached = template_lines(paths)
            print(f"{len(reached)} of {len(paths)} specs render, {len(set().union(*reached.values()))} template lines")
            for name in choose(reached):
                print(f"    {name!r},")
            return 0
        named, refused = render_all(paths, Path(directory) / "scripts")
        found = findings(Path(directory) / "scripts", named)
        print(f"{len(named)} scripts ({len(refused)} specs refused), {len(found)} findings", *found, sep="\n")
        return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
