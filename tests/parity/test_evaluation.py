"""validate, test and predict: the generated script's subcommands against Lightning's Trainer.validate / test /
predict (2.x), on the modules of tests/parity/eval_models.py.

Each case runs both sides in their own directories (tests/parity/evaluation_runner.py), each process fresh (a
child the parity runner's server forks, for a one-process case of this interpreter's Lightning; else a new
interpreter, under torchrun or horovodrun, or Lightning 1.9.5's), and compares what the evaluation calls returned (the metric dicts, the predictions with torch.equal), the results
table they printed, and the hooks of the module, the datamodule and a user's callback, in order, with their
batch and loader indices and whether gradients (and inference mode) were on.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import torch

from tests.harness import Case, case_ids, log_facts
from tests.helpers import env_with_root
from tests.logger_files import run_ids, with_ids_replaced
from tests.parity.runner import render
from tests.parity.test_parity import Runner

pytest.importorskip("pytorch_lightning")

MODELS = "tests.parity.eval_models"
CHECKPOINTS = {
    "class_path": "ModelCheckpoint",
    "init_args": {"monitor": "val_loss", "save_top_k": 2, "save_last": True},
}


# two processes on the CPU, under torchrun; 37 samples per loader, which a DistributedSampler pads to 38
DDP = {"strategy": "ddp", "devices": 2, "accelerator": "cpu"}
# two processes on the CPU, under horovodrun (Lightning 1.9.5's HorovodStrategy, against 1.9.5)
HOROVOD = {**DDP, "strategy": "horovod"}
UNEVEN = 37
LOADERS = f"{MODELS}.LoadersCallback"
COMPAT_WRITER = "tests.parity.compat_models.CompatWriter"


def spec(
    model: str = "EvalModel",
    loaders: int = 1,
    callback: bool = False,
    sync_dist: bool = False,
    n_eval: int = 40,
    drop_last: bool = False,
    named: bool = False,
    data: str = "EvalData",
    **flags,
) -> dict:
    trainer = {"max_epochs": 3, "enable_model_summary": False, **flags}
    if callback:
        trainer.setdefault("callbacks", []).append(f"{MODELS}.EvalCallback")
    return {
        "seed_everything": 3,
        "model": {"class_path": f"{MODELS}.{model}", "init_args": {"sync_dist": sync_dist}},
        "data": {
            "class_path": f"{MODELS}.{data}",
            "init_args": {"loaders": loaders, "n_eval": n_eval, "drop_last": drop_last, "named": named},
        },
        "trainer": trainer,
    }


def fitted(**flags) -> dict:
    """A spec whose fit keeps checkpoints: the best two by val_loss, and the last."""
    return spec(callbacks=[CHECKPOINTS, *flags.pop("callbacks", [])], **flags)


def writer(interval: str, model: str = "EvalModel", loaders: int = 1, **flags) -> dict:
    """A spec with tests/parity/eval_models.py's RecordingWriter, writing at `interval`."""
    entry = {"class_path": f"{MODELS}.RecordingWriter", "init_args": {"write_interval": interval}}
    return spec(model, loaders=loaders, callbacks=[*flags.pop("callbacks", []), entry], **flags)


DEVICE_STATS = {"class_path": "DeviceStatsMonitor"}


# a SimpleProfiler writing its reports into files (STAGE-perf.txt in profiles/), read back by profiled()
PROFILER = {"class_path": "SimpleProfiler", "init_args": {"dirpath": "profiles", "filename": "perf"}}


# flags only Lightning 1.9.5 has: a spec with one runs under 1.9.5's semantics, and is compared with 1.9.5's
# Trainer (its venv, .venv195)
FLAGS_1_9_5 = ("track_grad_norm",)


def follows_1_9_5(spec_: dict) -> bool:
    """A flag or strategy only Lightning 1.9.5 has, or one of tests/parity/eval_models.py's modules with 1.9.5's
    hooks."""
    return (
        any(flag in spec_["trainer"] for flag in FLAGS_1_9_5)
        or spec_["trainer"].get("strategy") == "horovod"
        or spec_["model"]["class_path"].endswith((".EpochEndModel", ".OutputsModel", ".TwoLoaderOutputsModel"))
    )


def streamed(spec_: dict) -> dict:
    """The spec with tests/parity/eval_streams.py's data module: its evaluation loaders have no length."""
    return {**spec_, "data": {**spec_["data"], "class_path": "tests.parity.eval_streams.StreamEvalData"}}


# (id, spec, Lightning's processes, the script's processes, the calls compared: Lightning's (process, call) and
# the script's process)
def workers(spec_: dict, **init_args) -> dict:
    """The spec with tests/parity/worker_models.py's WorkerEvalData: its loaders read by two workers drawing noise."""
    data = {"class_path": "tests.parity.worker_models.WorkerEvalData"}
    data["init_args"] = {**spec_["data"]["init_args"], **init_args}
    return {**spec_, "data": data}


CASES = [
    ("validate", spec(), [[["validate", None]]], [["validate"]]),
    # loaders read by two workers drawing noise, seeded as LightningCLI's seed_everything(workers=True) seeds them
    ("validate_workers", workers(spec()), [[["validate", None]]], [["validate"]]),
    ("predict_two_loaders_workers", workers(spec("TwoLoaderModel", loaders=2)), [[["predict", None]]], [["predict"]]),
    # ... in fit (the sanity check's and the validations' too) and the test after it, with persistent workers
    (
        "fit_then_test_persistent_workers",
        workers(fitted(), persistent=True),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    ("test", spec(), [[["test", None]]], [["test"]]),
    ("predict", spec(), [[["predict", None]]], [["predict"]]),
    ("test_hooks_callback", spec("HookedEvalModel", callback=True), [[["test", None]]], [["test"]]),
    ("validate_hooks_callback", spec("HookedEvalModel", callback=True), [[["validate", None]]], [["validate"]]),
    ("predict_hooks_callback", spec("HookedEvalModel", callback=True), [[["predict", None]]], [["predict"]]),
    ("test_two_loaders", spec("TwoLoaderModel", loaders=2), [[["test", None]]], [["test"]]),
    ("validate_two_loaders", spec("TwoLoaderModel", loaders=2), [[["validate", None]]], [["validate"]]),
    ("predict_two_loaders", spec("TwoLoaderModel", loaders=2), [[["predict", None]]], [["predict"]]),
    ("test_no_inference_mode", spec("HookedEvalModel", inference_mode=False), [[["test", None]]], [["test"]]),
    ("predict_no_inference_mode", spec(inference_mode=False), [[["predict", None]]], [["predict"]]),
    ("test_limit_int", spec(limit_test_batches=2), [[["test", None]]], [["test"]]),
    ("validate_limit_fraction", spec(limit_val_batches=0.5), [[["validate", None]]], [["validate"]]),
    ("predict_limit", spec("TwoLoaderModel", loaders=2, limit_predict_batches=1), [[["predict", None]]], [["predict"]]),
    ("test_limit_zero", spec(limit_test_batches=0), [[["test", None]]], [["test"]]),
    ("fit_then_test_best", fitted(), [[["fit", None], ["test", "best"]]], [["fit", "--test", "best"]]),
    ("fit_then_test_last", fitted(), [[["fit", None], ["test", "last"]]], [["--test", "last"]]),
    # the stage flags (trainer.training, validating, sanity_checking, testing, evaluating) at every hook of fit's
    # sanity check and validations, then of the test after it
    (
        "fit_then_test_stage_flags",
        fitted(model="HookedEvalModel", callback=True, callbacks=[LOADERS]),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    # the trainer's loaders and numbers of batches of each stage, as the hooks returned them (a dict), and
    # predict's numbers of batches
    (
        "validate_named_loaders_attributes",
        spec("TwoLoaderModel", loaders=2, named=True, callbacks=[LOADERS]),
        [[["validate", None]]],
        [["validate"]],
    ),
    (
        "predict_two_loaders_attributes",
        spec("TwoLoaderModel", loaders=2, limit_predict_batches=2, callbacks=[LOADERS]),
        [[["predict", None]]],
        [["predict"]],
    ),
    ("best_fresh_process", fitted(), [[["fit", None], ["test", "best"]]], [["fit"], ["test", "--ckpt-path", "best"]]),
    (
        "last_fresh_process",
        fitted(),
        [[["fit", None], ["validate", "last"]]],
        [[], ["validate", "--ckpt-path", "last"]],
    ),
    # a BasePredictionWriter, at each interval (its calls are recorded with the predictions and batch indices)
    ("predict_writer_batch", writer("batch", "TwoLoaderModel", loaders=2), [[["predict", None]]], [["predict"]]),
    ("predict_writer_epoch", writer("epoch", "TwoLoaderModel", loaders=2), [[["predict", None]]], [["predict"]]),
    ("predict_writer_both", writer("batch_and_epoch", limit_predict_batches=2), [[["predict", None]]], [["predict"]]),
    # ... one whose BasePredictionWriter comes through the project's compat module (Lightning imported under try /
    # except ImportError, tests/parity/compat.py): once taken for a plain callback, its write_on_* never called
    (
        "predict_writer_compat",
        spec(callbacks=[{"class_path": COMPAT_WRITER, "init_args": {"write_interval": "batch_and_epoch"}}]),
        [[["predict", None]]],
        [["predict"]],
    ),
    # with the default logger (a CSVLogger): the same metrics.csv and hparams.yaml files
    ("test_csv_logs", spec(logger=True), [[["test", None]]], [["test"]]),
    (
        "validate_two_loaders_csv_logs",
        spec("TwoLoaderModel", loaders=2, logger=True),
        [[["validate", None]]],
        [["validate"]],
    ),
    ("predict_csv_logs", spec(logger=True), [[["predict", None]]], [["predict"]]),
    (
        "fit_then_test_best_csv_logs",
        fitted(logger=True),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "best_fresh_process_csv_logs",
        fitted(logger=True),
        [[["fit", None], ["test", "best"]]],
        [["fit"], ["test", "--ckpt-path", "best"]],
    ),
    # DeviceStatsMonitor: an evaluation counts its batches across its loaders; a test after fit writes at fit's
    # last step (the rows compared, not the measured values)
    (
        "validate_two_loaders_device_stats_logs",
        spec("TwoLoaderModel", loaders=2, logger=True, log_every_n_steps=2, callbacks=[DEVICE_STATS]),
        [[["validate", None]]],
        [["validate"]],
    ),
    (
        "fit_then_test_best_device_stats_logs",
        fitted(logger=True, log_every_n_steps=3, callbacks=[DEVICE_STATS]),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    # TensorBoard and MLflow (their files read back by tests/logger_files.py)
    (
        "test_tensorboard_logs",
        spec(logger=[{"class_path": "TensorBoardLogger", "init_args": {"save_dir": "."}}]),
        [[["test", None]]],
        [["test"]],
    ),
    (
        "test_wandb_logs",
        spec(logger={"class_path": "WandbLogger", "init_args": {"save_dir": ".", "offline": True}}),
        [[["test", None]]],
        [["test"]],
    ),
    (
        "validate_mlflow_logs",
        spec(logger={"class_path": "MLFlowLogger", "init_args": {"tracking_uri": "file:./mlruns"}}),
        [[["validate", None]]],
        [["validate"]],
    ),
    # loaders with drop_last=True (37 samples, batches of BATCH_SIZE): test drops the last batch, predict reads it
    # (Lightning re-creates predict's batch sampler with drop_last=False), its writer sees its indices
    ("test_drop_last", spec(n_eval=UNEVEN, drop_last=True), [[["test", None]]], [["test"]]),
    ("predict_drop_last_writer", writer("batch", n_eval=UNEVEN, drop_last=True), [[["predict", None]]], [["predict"]]),
    # evaluation loaders without a length (IterableDataset): run to their end, or to an int limit
    ("test_unsized", streamed(spec("HookedEvalModel", callback=True)), [[["test", None]]], [["test"]]),
    (
        "validate_unsized_two_loaders_limit",
        streamed(spec("TwoLoaderModel", loaders=2, limit_val_batches=2)),
        [[["validate", None]]],
        [["validate"]],
    ),
    ("predict_unsized_writer", streamed(writer("batch_and_epoch")), [[["predict", None]]], [["predict"]]),
    # a RichProgressBar: rich's results table (and rich's bar, on the same console)
    ("test_rich", spec(callbacks=["RichProgressBar"], enable_progress_bar=True), [[["test", None]]], [["test"]]),
    (
        "validate_two_loaders_rich",
        spec("TwoLoaderModel", loaders=2, callbacks=["RichProgressBar"], enable_progress_bar=True),
        [[["validate", None]]],
        [["validate"]],
    ),
    (
        "predict_rich",
        spec(callbacks=["RichProgressBar"], enable_progress_bar=True),
        [[["predict", None]]],
        [["predict"]],
    ),
    # trainer.callback_metrics and logged_metrics as fit's validations and the test after it start and end: the
    # test's hold none of fit's (Lightning resets them as each run starts)
    (
        "fit_then_test_metrics_reset",
        fitted(callbacks=[f"{MODELS}.MetricsCallback"]),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    # the data module's batch-transfer hooks, called instead of the module's in every loop (the sanity check,
    # fit's training and validation, test, predict), with the trainer's stage flags they read; its own override
    # of on_after_batch_transfer beside the module's; their profiler actions; under DDP
    (
        "fit_then_test_data_transfer_hooks",
        fitted(model="HookedEvalModel", data="TransferEvalData", callback=True),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "validate_two_loaders_data_transfer_hooks",
        spec("TwoLoaderModel", loaders=2, data="TransferEvalData"),
        [[["validate", None]]],
        [["validate"]],
    ),
    ("predict_data_transfer_hooks", spec(data="TransferEvalData"), [[["predict", None]]], [["predict"]]),
    (
        "fit_then_test_data_transfer_over_the_module_s",
        fitted(model="AfterTransferModel", data="TransferEvalData"),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "fit_then_test_data_transfer_profiler",
        fitted(data="TransferEvalData", profiler=PROFILER),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "ddp_fit_then_test_data_transfer_hooks",
        fitted(model="HookedEvalModel", data="TransferEvalData", sync_dist=True, n_eval=UNEVEN, max_epochs=2, **DDP),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    # DDP, 1 node x 2 processes: each process's results, table (the first one's), hooks and the logger's files;
    # the loaders' shares padded for validate and test (sync_dist reduces the loss, max and count, not the
    # accuracy), unpadded for predict, whose writer gets each process's sample indices
    (
        "ddp_fit_then_test_best_csv_logs",
        fitted(sync_dist=True, n_eval=UNEVEN, logger=True, max_epochs=2, **DDP),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "ddp_validate_two_loaders_hooks_callback",
        spec("TwoLoaderModel", loaders=2, callback=True, sync_dist=True, n_eval=UNEVEN, **DDP),
        [[["validate", None]]],
        [["validate"]],
    ),
    (
        "ddp_predict_writer_two_loaders",
        writer("batch_and_epoch", "TwoLoaderModel", loaders=2, n_eval=UNEVEN, **DDP),
        [[["predict", None]]],
        [["predict"]],
    ),
    # a SimpleProfiler: the same report files, the script's actions Lightning's, called as often (profiled())
    (
        "test_hooks_callback_profiler",
        spec("HookedEvalModel", callback=True, profiler=PROFILER),
        [[["test", None]]],
        [["test"]],
    ),
    (
        "validate_two_loaders_profiler",
        spec("TwoLoaderModel", loaders=2, profiler=PROFILER),
        [[["validate", None]]],
        [["validate"]],
    ),
    ("predict_writer_profiler", writer("batch_and_epoch", profiler=PROFILER), [[["predict", None]]], [["predict"]]),
    (
        "fit_then_test_best_profiler",
        fitted(profiler=PROFILER),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "ddp_test_hooks_callback_profiler",
        spec("HookedEvalModel", callback=True, sync_dist=True, n_eval=UNEVEN, profiler=PROFILER, **DDP),
        [[["test", None]]],
        [["test"]],
    ),
    # the precisions: the steps in Lightning's step context (autocast; the cast dtype as the default, the batch
    # converted), as fit's
    ("test_bf16_mixed", spec("HookedEvalModel", precision="bf16-mixed"), [[["test", None]]], [["test"]]),
    ("predict_bf16_true", spec(precision="bf16-true"), [[["predict", None]]], [["predict"]]),
    (
        "validate_two_loaders_64",
        spec("TwoLoaderModel", loaders=2, precision="64-true"),
        [[["validate", None]]],
        [["validate"]],
    ),
    ("test_bf16_mixed_1_9_5", spec(precision="bf16", track_grad_norm=2), [[["test", None]]], [["test"]]),
    # a submodule in eval mode before the run: its mode after the run (2.x restores it)
    ("test_partly_frozen", spec("PartlyFrozen"), [[["test", None]]], [["test"]]),
    ("predict_partly_frozen", spec("PartlyFrozen"), [[["predict", None]]], [["predict"]]),
    # Lightning 1.9.5's flags (the fit they change follows 1.9.5, and so do the evaluation runs): against 1.9.5
    (
        "test_hooks_callback_1_9_5",
        spec("HookedEvalModel", callback=True, track_grad_norm=2),
        [[["test", None]]],
        [["test"]],
    ),
    ("test_partly_frozen_1_9_5", spec("PartlyFrozen", track_grad_norm="inf"), [[["test", None]]], [["test"]]),
    ("predict_partly_frozen_1_9_5", spec("PartlyFrozen", track_grad_norm=2), [[["predict", None]]], [["predict"]]),
    (
        "validate_two_loaders_csv_logs_1_9_5",
        spec("TwoLoaderModel", loaders=2, logger=True, track_grad_norm="inf"),
        [[["validate", None]]],
        [["validate"]],
    ),
    (
        "predict_writer_two_loaders_1_9_5",
        writer("batch_and_epoch", "TwoLoaderModel", loaders=2, track_grad_norm=2),
        [[["predict", None]]],
        [["predict"]],
    ),
    ("predict_writer_epoch_1_9_5", writer("epoch", track_grad_norm=2), [[["predict", None]]], [["predict"]]),
    (
        "fit_then_test_best_csv_logs_1_9_5",
        fitted(logger=True, track_grad_norm=2),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "ddp_fit_then_test_best_csv_logs_1_9_5",
        fitted(model="EpochEndModel", sync_dist=True, n_eval=UNEVEN, logger=True, max_epochs=2, **DDP),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "ddp_predict_writer_1_9_5",
        writer("batch_and_epoch", "EpochEndModel", n_eval=UNEVEN, **DDP),
        [[["predict", None]]],
        [["predict"]],
    ),
    # Horovod (Lightning 1.9.5's strategy, against 1.9.5): the shares as 1.9.5 wraps the samplers, sync_dist
    # values not reduced (1.9.5 reduces them only in a torch.distributed group), rank 0's table and files
    (
        "horovod_fit_then_test_best_csv_logs",
        fitted(sync_dist=True, n_eval=UNEVEN, logger=True, max_epochs=2, **HOROVOD),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "horovod_validate_two_loaders_hooks_callback",
        spec("TwoLoaderModel", loaders=2, callback=True, sync_dist=True, n_eval=UNEVEN, **HOROVOD),
        [[["validate", None]]],
        [["validate"]],
    ),
    (
        "horovod_predict_writer_two_loaders",
        writer("batch_and_epoch", "TwoLoaderModel", loaders=2, n_eval=UNEVEN, **HOROVOD),
        [[["predict", None]]],
        [["predict"]],
    ),
    ("test_outputs_1_9_5", spec("OutputsModel"), [[["test", None]]], [["test"]]),
    ("validate_outputs_1_9_5", spec("OutputsModel"), [[["validate", None]]], [["validate"]]),
    ("test_two_loaders_outputs_1_9_5", spec("TwoLoaderOutputsModel", loaders=2), [[["test", None]]], [["test"]]),
    (
        "fit_then_test_best_outputs_1_9_5",
        fitted(model="OutputsModel", logger=True),
        [[["fit", None], ["test", "best"]]],
        [["fit", "--test", "best"]],
    ),
    (
        "best_fresh_process_1_9_5",
        fitted(track_grad_norm="inf"),
        [[["fit", None], ["test", "best"]]],
        [["fit"], ["test", "--ckpt-path", "best"]],
    ),
    (
        "path_fresh_process",
        fitted(),
        [[["fit", None]], [["predict", "checkpoints/epoch=1-step=12.ckpt"]]],
        [["fit"], ["predict", "--ckpt-path", "checkpoints/epoch=1-step=12.ckpt"]],
    ),
]


KEPT = {"case.json", "train.py", "loopgen_spec.yaml"}  # what a case's directory holds before its first process


def launch(command: list[str], directory: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=directory, env=env_with_root(), capture_output=True, text=True, timeout=300)


def run_side(side: str, case: dict, directory: Path, runner: Runner) -> list[list[list[dict]]]:
    """Each process's (each launch's) calls, per rank: outputs[process][rank][call]."""
    directory.mkdir()
    (directory / "case.json").write_text(json.dumps(case), encoding="utf-8")
    processes = case["spec"]["trainer"].get("devices", 1)
    python = sys.executable
    if side == "lightning" and follows_1_9_5(case["spec"]):
        from tests.test_lightning195 import venv195

        python = str(venv195())
    prefix = [python, "-m"]
    if processes > 1 and case["spec"]["trainer"].get("strategy") == "horovod":
        from tests.test_horovod import horovodrun, venv195_python

        if side == "lightning" and venv195_python() is None:
            pytest.skip("no Lightning 1.9.5 venv with horovod: run `bash .ci/setup --lightning-1.9.5`")
        prefix = [horovodrun(), "-np", str(processes), "-H", f"localhost:{processes}", *prefix]
    elif processes > 1:  # torchrun
        prefix += ["torch.distributed.run", "--standalone", f"--nproc_per_node={processes}", "-m"]
    if processes > 1 and side == "loopgen":  # the script is rendered once, before its processes start
        render(case["spec"], directory)
    outputs = []
    for index in range(len(case[side])):
        out = directory / f"out{index}.pt"
        if processes == 1 and python == sys.executable and runner.server is not None:
            # one process of this interpreter's Lightning: forked by the parity runner's server, which has
            # imported torch and Lightning once (a fresh interpreter spends seconds of CPU on them)
            log = directory / f"out{index}.log"
            [status] = runner.run([["evaluation", side, str(directory / "case.json"), str(index), str(out), str(log)]])
            assert status == 0, f"{side} process {index}:\n{log.read_text(encoding='utf-8')[-5000:]}"
            outputs.append([torch.load(out, weights_only=False)])
            continue
        command = [*prefix, "tests.parity.evaluation_runner", side, "case.json", str(index), str(out)]
        result = launch(command, directory)
        if result.returncode != 0 and processes > 1 and index == 0:
            # a first torchrun launch that failed (gloo's connections on a loaded machine): once more, from a clean
            # directory, and the first failure in the warnings summary
            warnings.warn(f"{side} process {index} failed once, launched again:\n{result.stderr[-3000:]}")
            for path in directory.iterdir():
                if path.name not in KEPT:
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
            result = launch(command, directory)
        assert result.returncode == 0, f"{side} process {index}:\n{result.stdout[-3000:]}\n{result.stderr[-5000:]}"
        outs = [out.with_suffix(f".rank{rank}.pt") for rank in range(processes)] if processes > 1 else [out]
        outputs.append([torch.load(path, weights_only=False) for path in outs])
    return outputs


def logs(directory: Path) -> list:
    """What the loggers wrote under `directory`, the ids and times of its runs replaced by stable names; a CSV
    file's rows as dicts (Lightning 1.9.5's CSVLogger orders its columns as it first meets them, 2.x sorts them)."""
    facts = with_ids_replaced(log_facts(directory), run_ids(directory))
    for entry in facts:
        if "rows" in entry:
            header, *rows = entry.pop("rows")
            entry["rows"] = [{k: v for k, v in zip(header, row, strict=True) if v != ""} for row in rows]
    return facts


def comparable(table: list[str], lightning_1_9_5: bool) -> list[str]:
    """A results table; from Lightning 1.9.5, without its header line: on Python 3.11 and later, 1.9.5 formats its
    stage enum into it ("Runningstage.testing metric"), where the script prints "Test metric" as 1.9.5 did on
    the Pythons it supported."""
    return [line for line in table if "DataLoader" not in line] if lightning_1_9_5 else table


def profiled(directory: Path) -> dict[str, dict[str, int]]:
    """The SimpleProfiler's report files in directory/profiles: each one's actions and their numbers of calls."""
    reports = {}
    for path in sorted((directory / "profiles").glob("*.txt")):
        rows: dict[str, int] = {}
        for line in path.read_text(encoding="utf-8").splitlines():
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) == 5 and cells[2].isdigit() and cells[0] != "Total":
                rows[cells[0]] = int(cells[2])
        reports[path.name] = rows
    return reports


# the module's hooks the script times whether the module overrides them or not (its own code for Lightning's)
TIMED_AS_LIGHTNING = {"configure_optimizers", "optimizer_zero_grad", "optimizer_step", "lr_scheduler_step"}
# Lightning's ModelCheckpoint hooks that have nothing to do without every_n_train_steps or train_time_interval:
# the script does not call them
IDLE_CHECKPOINT_HOOKS = {"on_train_start", "on_train_batch_end"}


def lightning_only(action: str) -> bool:
    """An action Lightning times that the script has no code for (docs/logging.md): its strategy's own hooks and
    batch_to_device without a device to move to, configure_callbacks, its fit loop's enclosing actions, and a hook
    that the module, the data module or the callback leaves as Lightning's base class has it."""
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import BasePredictionWriter

    from tests.parity import eval_models

    strategy = re.fullmatch(r"\[Strategy\]\w+\.(\w+)", action)
    if strategy:  # its hooks, and batch_to_device: these cases run on the CPU, where the script moves nothing
        return strategy.group(1).startswith("on_") or strategy.group(1) == "batch_to_device"
    if action in ("run_training_batch", "run_training_epoch"):
        return True
    hook = re.fullmatch(r"\[(LightningModule|LightningDataModule|Callback)\](\w+)(\{.*\})?\.(\w+)", action)
    if hook is None:
        return False
    kind, name, _, method = hook.groups()
    base = {"LightningModule": pl.LightningModule, "LightningDataModule": pl.LightningDataModule}.get(kind, pl.Callback)
    cls = getattr(eval_models, name, None) or getattr(pl.callbacks, name)
    if method in TIMED_AS_LIGHTNING or method.endswith(("_model_eval", "_dataloader")):
        return False  # the script times its own code for them, under the hook's name
    if name == "ModelCheckpoint" and method in IDLE_CHECKPOINT_HOOKS:
        return True
    if issubclass(cls, BasePredictionWriter) and method == "setup":
        return True  # its check that predict_step takes no dataloader_iter: the script's is at render time
    return method == "configure_callbacks" or getattr(cls, method).__code__ is getattr(base, method).__code__


def assert_same_profiles(ours: dict[str, dict[str, int]], theirs: dict[str, dict[str, int]]) -> None:
    """The same report files; in each, the script's actions Lightning's with as many calls (but loopgen's own
    *_dataloader_iter), and every action of Lightning's that the script has code for."""
    assert ours.keys() == theirs.keys() and theirs
    for name, actions in theirs.items():
        expected = {action: calls for action, calls in actions.items() if not lightning_only(action)}
        mine = {action: calls for action, calls in ours[name].items() if not action.endswith("_dataloader_iter")}
        assert mine == expected, name


def evaluation_calls(calls: list) -> list:
    """The hooks of the last evaluation run in a process's records: after fit's teardown, when fit ran too."""
    ends = [i for i, call in enumerate(calls) if call[0].endswith("teardown:fit")]
    return calls[ends[-1] + 1 :] if ends else calls


def assert_same_result(ours, theirs) -> None:
    if isinstance(theirs, torch.Tensor):
        assert torch.equal(ours, theirs)
    elif isinstance(theirs, (list, tuple)):
        assert len(ours) == len(theirs)
        for a, b in zip(ours, theirs):
            assert_same_result(a, b)
    else:
        assert ours == theirs


@pytest.mark.parametrize(("name", "spec_", "lightning", "script"), CASES, ids=case_ids(Case(c[0], c[1]) for c in CASES))
def test_evaluation_matches_lightning(tmp_path, name, spec_, lightning, script, runner):
    case = {"spec": spec_, "lightning": lightning, "loopgen": script}
    theirs_ranks = [calls[-1] for calls in run_side("lightning", case, tmp_path / "lightning", runner)[-1]]
    ours_ranks = [calls[-1] for calls in run_side("loopgen", case, tmp_path / "loopgen", runner)[-1]]
    for ours, theirs in zip(ours_ranks, theirs_ranks, strict=True):
        if script[-1][:1] != ["fit"] and "--test" not in script[-1]:
            assert_same_result(ours["result"], theirs["result"])  # fit --test returns the model: its table says
        legacy = follows_1_9_5(spec_)
        assert comparable(ours["table"], legacy) == comparable(theirs["table"], legacy)
        assert evaluation_calls(ours["calls"]) == evaluation_calls(theirs["calls"])
    ours, theirs = ours_ranks[0], theirs_ranks[0]
    if name.endswith("_logs") and "fresh_process" not in name:  # a fresh process logs to a version of its own
        theirs_logs, ours_logs = (logs(tmp_path / side) for side in ("lightning", "loopgen"))
        assert ours_logs == theirs_logs
        assert theirs_logs, "a logger case that logs nothing compares nothing"
    if name.endswith("_profiler"):
        assert_same_profiles(profiled(tmp_path / "loopgen"), profiled(tmp_path / "lightning"))
    if name != "test_limit_zero":
        assert theirs["result"], "a case that evaluates nothing compares nothing"
