"""strategy ddp: real multi-process runs on CPU with gloo, against Lightning's DDPStrategy on the same specs.

The processes of all runs start together in one fixture (two cores: torch's import dominates a launch):
- Lightning: one torchrun launch of 2 processes training the four specs in turn (tests/ddp_runner.py);
- loopgen: one torchrun launch of 2 processes running the four rendered scripts' main() in turn;
- one rendered script as 2 nodes x 1 process: two torchrun launches with --nnodes=2 (rendezvous on 127.0.0.1);
- a script whose rank 1 raises: every process must end, non-zero, within seconds;
- a script run without torchrun: it says how to launch it and exits 2.
Weights come from the models' on_train_end (tests/ddp_models.py), one file per rank.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from loopgen.errors import LoopgenError
from loopgen.pipeline import render_spec
from tests.harness import ROOT, env_with_root

OFF = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
DDP = {"accelerator": "cpu", "strategy": "ddp", "devices": 2, **OFF}
MODEL = "tests.ddp_models.DDPNet"
SPECS = {
    "plain": ({"dropout": 0.0, "shuffle": False}, {"max_epochs": 2}),
    "shuffled_dropout": ({"dropout": 0.3}, {"max_epochs": 2}),
    # strategy auto with two devices: DDP, as Lightning's accelerator connector chooses it
    "strategy_auto": ({"dropout": 0.3}, {"max_epochs": 2, "strategy": "auto"}),
    # use_distributed_sampler: false: the module's own DistributedSampler, the validation loader read whole
    "own_sampler": ({"dropout": 0.0}, {"max_epochs": 3, "use_distributed_sampler": False}, "DDPOwnSampler"),
    # sync_batchnorm: SyncBatchNorm layers from the set-up to fit's end (accelerator auto: refused on cpu)
    "sync_batchnorm": (
        {"dropout": 0.0},
        {"max_epochs": 2, "sync_batchnorm": True, "accelerator": "auto"},
        "DDPBatchNormNet",
    ),
    "accumulate_clip": ({}, {"max_epochs": 2, "accumulate_grad_batches": 3, "gradient_clip_val": 0.5}),
    "plateau_sync_dist": ({"plateau": True}, {"max_epochs": 4}),
    "bf16_mixed": ({"dropout": 0.0}, {"max_epochs": 2, "precision": "bf16-mixed"}),
    # bfloat16 weights, their gradients all-reduced in bfloat16 (gloo); sync_dist of the float32 logged values
    "bf16_true_plateau_clip": (
        {"plateau": True, "log_train": True},
        {"max_epochs": 2, "precision": "bf16-true", "gradient_clip_val": 0.5},
    ),
    "16_true_accumulate": ({}, {"max_epochs": 2, "precision": "16-true", "accumulate_grad_batches": 2}),
    # an optimizer step through a closure (tests.ddp_models.DDPLBFGSNet); accumulation skips the all-reduce
    "lbfgs": ({"dropout": 0.0}, {"max_epochs": 2}, "DDPLBFGSNet"),
    "lbfgs_accumulate": ({"dropout": 0.0}, {"max_epochs": 2, "accumulate_grad_batches": 2}, "DDPLBFGSNet"),
    # the network built in configure_model, with activation checkpointing, before DDP wraps the module
    "configure_model": ({}, {"max_epochs": 2}, "DDPLateBuilt"),
    # Lightning fitting torch.compile(model) under DDP: the steps compiled inside DDP's wrapper
    "compiled": ({}, {"max_epochs": 2, "loop": {"compile": {"backend": "aot_eager"}}}, "DDPCompiled"),
    # Lightning's ModelPruning: each process prunes its own copy of the weights, alike; SpikeDetection: whether
    # any process's loss spikes, whether every one's is finite, decided together after each batch
    "pruning_spike_detection": (
        {"dropout": 0.0},
        {
            "max_epochs": 2,
            "callbacks": [
                {"class_path": "ModelPruning", "init_args": {"pruning_fn": "l1_unstructured", "amount": 0.2}},
                {"class_path": "SpikeDetection", "init_args": {"window": 4, "finite_only": False}},
            ],
        },
    ),
    # the strategy's collectives as the module calls them (self.all_gather with gradients, trainer.strategy.reduce,
    # broadcast, barrier, reduce_boolean_decision), self.print, and a child LightningModule reading the counters
    "collectives": ({}, {"max_epochs": 2}, "DDPCollectives"),
    # loaders read by two workers per process, drawing noise: seeded by the seed, the worker and the global rank
    "workers": ({"dropout": 0.0}, {"max_epochs": 2}, "DDPWorkerNet"),
    # stops after 3 of 8 epochs
    "early_stopping": (
        {"plateau": True},
        {
            "max_epochs": 8,
            "callbacks": [
                {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 1, "min_delta": 0.02}}
            ],
        },
    ),
}
# Manual optimization (self.automatic_optimization = False) under DDP: (model, init args, flags). The GAN toggles
# its optimizers, so each backward leaves the other network's parameters unused: Lightning needs
# find_unused_parameters for it (plain ddp fails in both, with DDP's error).
FIND_UNUSED = {"strategy": "ddp_find_unused_parameters_true"}
MANUAL_SPECS = {
    "manual_gan": ("tests.ddp_models.DDPManualGAN", {}, {"max_epochs": 2, **FIND_UNUSED}),
    "manual_accumulate": ("tests.ddp_models.DDPManualAccumulate", {}, {"max_epochs": 3}),
}
# Jobs that write files (a CSVLogger, a ModelCheckpoint on a sync_dist metric, the progress bar), each side into
# its own directory: `files`, then `resumed` from its last.ckpt to 5 epochs, and `uninterrupted` for 5 epochs.
FILE_JOBS = ("files", "resumed", "uninterrupted")
# Jobs whose processes each do their part as Lightning's do, in the same launches: MLflow and W&B runs that rank 0
# alone writes (and the checkpoints in them), each process's profiler report, a time-triggered ModelCheckpoint
# whose rank 1 starts late (rank 0's clock decides for both).
PROFILERS = {
    "profiler_simple": {"class_path": "SimpleProfiler", "init_args": {"filename": "report"}},
    "profiler_advanced": {
        "class_path": "AdvancedProfiler",
        "init_args": {"filename": "adv", "dump_stats": True, "line_count_restriction": 3},
    },
    "profiler_pytorch": {"class_path": "PyTorchProfiler", "init_args": {"filename": "pt", "export_to_chrome": True}},
    "profiler_printed": "simple",
}
MORE_JOBS = ("mlflow", "wandb", *PROFILERS, "time_interval")
LOGGER_ENVIRONMENT = {"WANDB_MODE": "offline", "WANDB_SILENT": "true", "MLFLOW_ALLOW_FILE_STORE": "true"}
LAUNCH_TIMEOUT = 700  # seconds, for all the launches together (about 500 on a loaded 2-core machine)


def file_spec(job: str, root: Path, files_root: Path) -> dict:
    """The spec of a FILE_JOBS job whose files go under `root` (`files_root`: the `files` job's)."""
    checkpoint = {"monitor": "val_loss", "save_top_k": 2, "save_last": True, "filename": "{epoch}-{val_loss:.3f}"}
    flags = {
        "max_epochs": 3 if job == "files" else 5,
        "log_every_n_steps": 2,
        "default_root_dir": str(root),
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": str(root)}},
        "enable_checkpointing": True,
        "enable_progress_bar": True,
        # DeviceStatsMonitor: the first process writes (its values are masked)
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": checkpoint}, {"class_path": "DeviceStatsMonitor"}],
    }
    content = spec({"dropout": 0.0, "plateau": True, "log_train": True}, flags)
    if job == "resumed":
        content["ckpt_path"] = str(files_root / "lightning_logs" / "version_0" / "checkpoints" / "last.ckpt")
    return content


def more_spec(job: str, root: Path) -> dict:
    """The spec of a MORE_JOBS job whose files go under `root`."""
    if job in ("mlflow", "wandb"):
        logger = {
            "mlflow": {"class_path": "MLFlowLogger",
                       "init_args": {"tracking_uri": f"file:{root}/mlruns", "run_name": "ddp run", "tags": {"k": "v"}}},
            "wandb": {"class_path": "WandbLogger",
                      "init_args": {"save_dir": str(root), "project": "ddp", "name": "a run", "offline": True}},
        }[job]  # fmt: skip
        checkpoint = {"monitor": "val_loss", "save_top_k": 2, "save_last": True}
        flags = {
            "max_epochs": 2,
            "log_every_n_steps": 2,
            "default_root_dir": str(root),
            "logger": logger,
            "enable_checkpointing": True,
            "callbacks": [
                {"class_path": "ModelCheckpoint", "init_args": checkpoint},
                {"class_path": "LearningRateMonitor"},
            ],
        }
        return spec({"dropout": 0.0, "plateau": True, "log_train": True}, flags)
    if job in PROFILERS:
        flags = {"max_epochs": 1, "default_root_dir": str(root), "profiler": PROFILERS[job]}
        if job != "profiler_printed":
            flags["logger"] = {"class_path": "CSVLogger", "init_args": {"save_dir": str(root)}}
        return spec({"dropout": 0.0}, flags)
    # rank 1 starts 4 s late: only rank 0's clock says that 2 s have passed at the first batch; then none do
    checkpoint = {"train_time_interval": "0:00:02"}
    flags = {
        "max_epochs": 1,
        "limit_train_batches": 4,
        "limit_val_batches": 0,
        "default_root_dir": str(root),
        "enable_checkpointing": True,
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": checkpoint}],
    }
    return spec({"dropout": 0.0, "late_start": 4.0}, flags)


def spec(init_args: dict, flags: dict, model: str = MODEL, **trainer) -> dict:
    """A spec; a `loop` entry among `flags` is the spec's loop section (Lightning's runner reads its compile)."""
    flags = dict(flags)
    loop = flags.pop("loop", None)
    return {
        "seed_everything": 42,
        "model": {"class_path": model if "." in model else f"tests.ddp_models.{model}", "init_args": init_args},
        "trainer": {**DDP, **flags, **trainer},
        **({"loop": loop} if loop else {}),
    }


def write_spec(directory: Path, name: str, content: dict) -> Path:
    path = directory / f"{name}.yaml"
    path.write_text(yaml.safe_dump(content, sort_keys=False), encoding="utf-8")
    return path


def render(spec_path: Path) -> Path:
    script = spec_path.with_suffix(".py")
    text, _ = render_spec(spec_path, script)
    script.write_text(text, encoding="utf-8")
    return script


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TORCHRUN = [sys.executable, "-m", "torch.distributed.run"]


class Launch:
    """A command started in the background; its output goes to a file, its end time is recorded."""

    def __init__(self, name: str, command: list[str], directory: Path, env: dict[str, str]):
        self.log = directory / f"{name}.log"
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=self.log.open("w"), stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        self.ended: float | None = None

    def poll(self) -> bool:
        if self.ended is None and self.process.poll() is not None:
            self.ended = time.time()
        return self.ended is not None

    @property
    def output(self) -> str:
        return self.log.read_text(encoding="utf-8", errors="replace")

    @property
    def returncode(self) -> int:
        return self.process.returncode


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    directory = tmp_path_factory.mktemp("ddp")
    specs = {name: write_spec(directory, name, spec(*args)) for name, args in SPECS.items()}
    for name, (model, init_args, flags) in MANUAL_SPECS.items():
        specs[name] = write_spec(directory, name, spec(init_args, flags, model))
    scripts = {name: render(path) for name, path in specs.items()}
    side_jobs = {}
    for side in ("lightning", "loopgen"):
        folder = directory / f"{side}_specs"
        folder.mkdir()
        side_jobs[side] = [
            write_spec(folder, job, file_spec(job, directory / side / job, directory / side / "files"))
            for job in FILE_JOBS
        ] + [write_spec(folder, job, more_spec(job, directory / side / job)) for job in MORE_JOBS]
    side_jobs["loopgen"] = [render(path) for path in side_jobs["loopgen"]]
    failing = render(write_spec(directory, "failing", spec({"fail_at": 2}, {"max_epochs": 1})))
    env = {**env_with_root(), "OMP_NUM_THREADS": "1", **LOGGER_ENVIRONMENT}
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    runner = str(ROOT / "tests" / "ddp_runner.py")
    nodes_port = free_port()
    launches = {
        "lightning": Launch(
            "lightning",
            [*TORCHRUN, "--standalone", "--nproc_per_node=2", runner, "lightning", str(directory / "lightning"),
             *map(str, [*specs.values(), *side_jobs["lightning"]])],
            directory, env,
        ),
        "loopgen": Launch(
            "loopgen",
            [*TORCHRUN, "--standalone", "--nproc_per_node=2", runner, "loopgen", str(directory / "loopgen"),
             *map(str, [*scripts.values(), *side_jobs["loopgen"]])],
            directory, env,
        ),
        "failing": Launch(
            "failing",
            [*TORCHRUN, "--standalone", "--nproc_per_node=2", str(failing)],
            directory, {**env, "DDP_SAVE": str(directory)},
        ),
        "no_torchrun": Launch("no_torchrun", [sys.executable, str(failing)], directory, env),
    }  # fmt: skip
    nodes = directory / "nodes"
    nodes.mkdir()
    for rank in (0, 1):
        command = [*TORCHRUN, "--nnodes=2", "--nproc_per_node=1", f"--node_rank={rank}", "--master_addr=127.0.0.1",
                   f"--master_port={nodes_port}", str(scripts["shuffled_dropout"])]  # fmt: skip
        launches[f"node{rank}"] = Launch(f"node{rank}", command, directory, {**env, "DDP_SAVE": str(nodes)})
    wait_for(launches, time.monotonic() + LAUNCH_TIMEOUT, "the DDP launches")
    return {"directory": directory, "launches": launches, "scripts": scripts}


def wait_for(launches: dict[str, Launch], deadline: float, what: str) -> None:
    """Until every launch has ended; past `deadline`, the ones still running are killed and the test fails."""
    # every launch polled each time (all() would stop at the first running one): each end time is its own
    while sum(not launch.poll() for launch in launches.values()):
        if time.monotonic() > deadline:
            for launch in launches.values():
                if not launch.poll():
                    launch.process.kill()
            pytest.fail(f"{what} did not end in time:\n" + "\n".join(launch.output for launch in launches.values()))
        time.sleep(0.2)


def weights(directory: Path) -> list[dict]:
    import torch

    return [torch.load(directory / f"rank{rank}.pt") for rank in (0, 1)]


def assert_equal(a: dict, b: dict) -> None:
    import torch

    assert a.keys() == b.keys()
    different = [name for name in a if not torch.equal(a[name], b[name])]
    assert not different, f"different: {different}"


@pytest.mark.parametrize("name", [*SPECS, *MANUAL_SPECS])
def test_weights_equal_lightnings_ddp(runs: dict, name: str) -> None:
    launches = runs["launches"]
    for side in ("lightning", "loopgen"):
        assert launches[side].returncode == 0, launches[side].output
    ours = weights(runs["directory"] / "loopgen" / name)
    theirs = weights(runs["directory"] / "lightning" / name)
    assert_equal(ours[0], ours[1])  # the processes hold the same model
    assert_equal(ours[0], theirs[0])


@pytest.mark.parametrize("name", SPECS)
def test_trainer_attributes_equal_lightnings_ddp(runs: dict, name: str) -> None:
    """What each process's trainer says of the processes and the devices (tests/ddp_models.py's DDPNet records it
    at the training's end)."""
    for rank in (0, 1):
        ours, theirs = (runs["directory"] / side / name / f"rank{rank}.json" for side in ("loopgen", "lightning"))
        seen = json.loads(ours.read_text())
        assert seen == json.loads(theirs.read_text())
        assert seen["distributed_sampler_kwargs"] == {"num_replicas": 2, "rank": rank}


def test_sync_batchnorm_converts_the_layers_for_fit_as_lightning(runs: dict) -> None:
    for rank in (0, 1):
        ours, theirs = (runs["directory"] / side / "sync_batchnorm" / f"rank{rank}.layers.json" for side in
                        ("loopgen", "lightning"))  # fmt: skip
        seen = json.loads(ours.read_text())
        assert seen == json.loads(theirs.read_text())
        assert seen["train_start"][1] == "SyncBatchNorm" and seen["fit_end"][1] == "_BatchNormXd"


def test_two_nodes_of_one_process_train_as_one_node_of_two(runs: dict) -> None:
    launches = runs["launches"]
    for node in ("node0", "node1"):
        assert launches[node].returncode == 0, launches[node].output
    ours = weights(runs["directory"] / "nodes")
    assert_equal(ours[0], ours[1])
    assert_equal(ours[0], weights(runs["directory"] / "lightning" / "shuffled_dropout")[0])
    # rank 0 alone prints the summary and the last line
    output = launches["node0"].output + launches["node1"].output
    assert output.count("Total params") == 1 and output.count("Training stopped after") == 1


def test_rank_zero_prints_alone(runs: dict) -> None:
    output = runs["launches"]["loopgen"].output
    jobs = len(SPECS) + len(MANUAL_SPECS) + len(FILE_JOBS) + len(MORE_JOBS)
    assert output.count("Total params") == jobs
    assert output.count("Training stopped after") == jobs
    assert output.count("Checkpoints: ") == len(FILE_JOBS) + 3  # and mlflow, wandb, time_interval
    assert output.count("Logs: ") == len(FILE_JOBS) + 5  # and mlflow, wandb and the profilers' CSV loggers
    assert output.count("FIT Profiler Report") == 1  # profiler_printed: local rank 0 prints its report
    # the bar of rank 0 alone: epochs 0-2, 3-4 (resumed), 0-4 (its postfix shows train_loss, synced)
    assert [output.count(f"Epoch {epoch}: 100%") for epoch in range(5)] == [2, 2, 2, 2, 2], output
    assert "Training stopped after 3 epochs" in output  # EarlyStopping stopped both processes


def test_checkpoints_and_logs_equal_lightnings_ddp(runs: dict) -> None:
    from tests.harness import checkpoint_facts, log_facts

    launches = runs["launches"]
    for side in ("lightning", "loopgen"):
        assert launches[side].returncode == 0, launches[side].output
    # `resumed` is not compared: Lightning's resume from a checkpoint written at validation's end misses the
    # plateau step that followed it, the script's resumes exactly (test_resuming_a_ddp_checkpoint_...)
    for job in ("files", "uninterrupted"):
        ours, theirs = runs["directory"] / "loopgen" / job, runs["directory"] / "lightning" / job
        facts = checkpoint_facts(ours)
        assert [fact["path"] for fact in facts] == [fact["path"] for fact in checkpoint_facts(theirs)]
        assert without_lr(facts) == without_lr(checkpoint_facts(theirs)), job
        assert len(facts) == 3, facts  # the best 2 and last.ckpt
        logs = log_facts(ours)
        assert logs == log_facts(theirs), job
        assert {"path": "lightning_logs/version_0/hparams.yaml"} in [{"path": fact["path"]} for fact in logs]
        assert_equal(*weights(ours))
        assert_equal(weights(ours)[0], weights(theirs)[0])


def test_mlflow_and_wandb_runs_equal_lightnings_ddp(runs: dict) -> None:
    """Rank 0 alone makes the run and writes to it (Lightning's rank_zero_experiment and rank_zero_only); the
    checkpoints go into rank 0's run directory on every process."""
    from tests.harness import checkpoint_facts, log_facts
    from tests.logger_files import run_ids, with_ids_replaced

    for side in ("lightning", "loopgen"):
        assert runs["launches"][side].returncode == 0, runs["launches"][side].output
    for job in ("mlflow", "wandb"):
        ours, theirs = runs["directory"] / "loopgen" / job, runs["directory"] / "lightning" / job

        def facts(directory: Path) -> tuple:
            ids = run_ids(directory)
            return (with_ids_replaced(log_facts(directory), ids),
                    with_ids_replaced(without_lr(checkpoint_facts(directory)), ids))  # fmt: skip

        logs, checkpoints = facts(ours)
        assert (logs, checkpoints) == facts(theirs), job
        assert len(checkpoints) == 3, checkpoints  # the best 2 and last.ckpt, in the one run's directory
        if job == "mlflow":
            [store] = logs
            [experiment] = [e for e in store["experiments"] if e["name"] == "lightning_logs"]
            [run] = experiment["runs"]  # one run: rank 1 made none
            assert run["metrics"]["val_loss"] and run["params"]
        else:
            [run] = logs  # one offline run
            assert run["history"] and run["exit_code"] == 0
        assert_equal(*weights(ours))
        assert_equal(weights(ours)[0], weights(theirs)[0])


def profiler_rows(path: Path) -> dict[str, int]:
    """A SimpleProfiler report's actions and their numbers of calls (its Total row left out)."""
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.split("|")]
        if len(cells) == 7 and cells[3].isdigit() and cells[1] != "Total":
            rows[cells[1]] = int(cells[3])
    return rows


def test_each_process_writes_its_profiler_report_as_lightning(runs: dict) -> None:
    """One report per process, fit-FILENAME-LOCALRANK.txt, the advanced and PyTorch profilers' headers naming
    the rank, the actions under DDPStrategy's names; the advanced profiler's .prof files and the PyTorch trace
    named by the rank too."""
    for side in ("lightning", "loopgen"):
        assert runs["launches"][side].returncode == 0, runs["launches"][side].output
    folder = Path("lightning_logs") / "version_0"
    for job, name in (("profiler_simple", "report"), ("profiler_advanced", "adv"), ("profiler_pytorch", "pt")):
        ours, theirs = (runs["directory"] / side / job / folder for side in ("loopgen", "lightning"))
        reports = sorted(path.name for path in ours.glob("fit-*.txt"))
        assert (
            reports == sorted(path.name for path in theirs.glob("fit-*.txt")) == [f"fit-{name}-{r}.txt" for r in (0, 1)]
        )
        for rank in (0, 1):
            report = (ours / f"fit-{name}-{rank}.txt").read_text(encoding="utf-8")
            headers = [line for line in report.splitlines() if line.startswith("Profile stats for: ")]
            if job == "profiler_simple":
                # the script times the loop's own parts (and the hooks it calls) under Lightning's names
                rows, lightning = profiler_rows(ours / f"fit-{name}-{rank}.txt"), profiler_rows(theirs / reports[rank])
                strategy = {action: calls for action, calls in rows.items() if action.startswith("[Strategy]")}
                assert set(strategy) == {f"[Strategy]DDPStrategy.{step}" for step in
                                         ("training_step", "validation_step", "backward")}  # fmt: skip
                shared = rows.keys() & lightning.keys()
                assert set(strategy) <= shared and {action: rows[action] for action in shared} == {
                    action: lightning[action] for action in shared
                }
            elif job == "profiler_advanced":
                assert headers and all(header.endswith(f" rank: {rank}") for header in headers)
                assert f"Profile stats for: [Strategy]DDPStrategy.training_step rank: {rank}" in headers
                stats = {path.name for path in ours.glob(f"fit-adv-{rank}-*.prof")}
                assert f"fit-adv-{rank}-[Strategy]DDPStrategy.training_step.prof" in stats
                assert {p for p in stats if "Strategy" in p} <= {p.name for p in theirs.glob(f"fit-adv-{rank}-*.prof")}
            else:
                assert headers == [f"Profile stats for: records rank: {rank}"]
                assert list(ours.glob(f"fit-pt-{rank}-[[]Strategy]DDPStrategy.*.pt.trace.json"))
                assert list(theirs.glob(f"fit-pt-{rank}-[[]Strategy]DDPStrategy.*.pt.trace.json"))
    for job in PROFILERS:  # and the training is Lightning's
        ours = weights(runs["directory"] / "loopgen" / job)
        assert_equal(*ours)
        assert_equal(ours[0], weights(runs["directory"] / "lightning" / job)[0])


def test_a_time_triggered_checkpoint_follows_rank_zeros_clock(runs: dict) -> None:
    """Rank 1 starts 4 s late: at the first batch only rank 0's clock has passed train_time_interval (2 s). Both
    processes take rank 0's decision (Lightning broadcasts it): one checkpoint, after step 1, and no hang."""
    from tests.harness import checkpoint_facts

    for side in ("lightning", "loopgen"):
        assert runs["launches"][side].returncode == 0, runs["launches"][side].output
    ours, theirs = runs["directory"] / "loopgen" / "time_interval", runs["directory"] / "lightning" / "time_interval"
    facts = checkpoint_facts(ours)
    assert [fact["path"] for fact in facts] == ["checkpoints/epoch=0-step=1.ckpt"]
    assert facts == checkpoint_facts(theirs)
    assert_equal(*weights(ours))
    assert_equal(weights(ours)[0], weights(theirs)[0])


def without_lr(facts: list[dict]) -> list[dict]:
    """The checkpoints' facts without the optimizers' learning rates: a file decided at validation's end holds
    the learning rate after the epoch's plateau step in loopgen's scripts, before it in Lightning's (the same
    on one device: the optimizers' state is taken when the file is written, at the epoch's end)."""
    for fact in facts:
        for state in fact.get("optimizer_states", []):
            for group in state["param_groups"]:
                group.pop("lr")
    return facts


def test_resuming_a_ddp_checkpoint_trains_as_without_a_break(runs: dict) -> None:
    ours = runs["directory"] / "loopgen"
    assert_equal(weights(ours / "resumed")[0], weights(ours / "uninterrupted")[0])
    assert_equal(weights(ours / "resumed")[1], weights(runs["directory"] / "lightning" / "uninterrupted")[0])


def test_a_rank_that_raises_ends_every_process(runs: dict) -> None:
    launch = runs["launches"]["failing"]
    assert launch.returncode != 0
    assert "RuntimeError: rank 1 fails on purpose" in launch.output
    failed_at = float((runs["directory"] / "failed_at").read_text())
    assert launch.ended - failed_at < 45, f"{launch.ended - failed_at:.1f} s after the error"
    assert not (runs["directory"] / "rank0.pt").exists()  # rank 0 did not finish training


def test_without_torchrun_the_script_says_how_to_launch_it(runs: dict) -> None:
    launch = runs["launches"]["no_torchrun"]
    assert launch.returncode == 2
    assert "launch it with `torchrun --nproc_per_node=2 failing.py`" in launch.output


# --- render time


def problems(tmp_path: Path, content: dict) -> list[str]:
    path = write_spec(tmp_path, "spec", content)
    with pytest.raises(LoopgenError) as error:
        render_spec(path, tmp_path / "train.py")
    return [str(problem) for problem in error.value.problems]


@pytest.mark.parametrize(
    ("trainer", "expected"),
    [
        ({"strategy": "single_device", "devices": 2}, "devices: 2 needs `strategy: ddp`"),
        ({"strategy": "single_device", "num_nodes": 2}, "num_nodes: 2 needs `strategy: ddp`"),
        ({"plugins": ["AsyncCheckpointIO"], "enable_checkpointing": True},
         "AsyncCheckpointIO with ddp is not supported by loopgen"),
        ({"plugins": ["LightningEnvironment"]}, ("LightningEnvironment with ddp is not supported by loopgen"
         " (Lightning starts the other processes itself under it")),
        ({"sync_batchnorm": True}, "sync_batchnorm with strategy ddp is not supported by loopgen (torch's SyncBatchNorm"),
        ({"precision": "64"}, ("precision 64 with strategy ddp is not supported by loopgen (the DDP script does not"
         " make the model and its batches float64")),
        ({"overfit_batches": 2}, "overfit_batches with strategy ddp"),
        ({"devices": [1, 2]}, ("[1, 2] is not supported by loopgen (each process uses the device of its local"
         " rank, so the script cannot pick particular devices); give a device count and choose the GPUs with"
         " CUDA_VISIBLE_DEVICES")),
        ({"strategy": {"class_path": "DDPStrategy", "init_args": {"start_method": "spawn"}}},
         "DDPStrategy is not supported by loopgen (with start_method: the script builds DistributedDataParallel"),
        ({"strategy": {"class_path": "FSDPStrategy"}}, ("FSDPStrategy with accelerator: cpu is not supported by"
         " loopgen (FullyShardedDataParallel runs on CUDA only")),
        ({"strategy": {"class_path": "DeepSpeedStrategy"}}, ("DeepSpeedStrategy is not supported by loopgen (of"
         " Lightning's strategy classes")),
        ({"strategy": {"class_path": "DDPStrategy", "init_args": {"process_group_backend": "nccl"}}},
         "process_group_backend: nccl needs CUDA"),
    ],
)  # fmt: skip
def test_what_ddp_cannot_serve_is_refused(tmp_path: Path, trainer: dict, expected: str) -> None:
    found = problems(tmp_path, spec({}, {"max_epochs": 1}, **trainer))
    assert any(expected in problem for problem in found), found


def test_manual_optimization_under_ddp_prepares_each_backwards_all_reduce(tmp_path: Path) -> None:
    model, init_args, flags = MANUAL_SPECS["manual_gan"]
    text, _ = render_spec(write_spec(tmp_path, "spec", spec(init_args, flags, model)), tmp_path / "train.py")
    for line in ('output = ddp_model("training_step", batch, batch_idx)', "prepare_all_reduce(ddp_model, loss)",
                 "ddp_model.reducer.prepare_for_backward([loss])", "ddp_model.module.register_forward_hook("):  # fmt: skip
        assert line in text
    model, init_args, flags = MANUAL_SPECS["manual_accumulate"]
    text, _ = render_spec(write_spec(tmp_path, "spec", spec(init_args, flags, model)), tmp_path / "train.py")
    assert "ddp_model.reducer.prepare_for_backward([])" in text


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ({"class_path": "DDPStrategy", "init_args": {"static_graph": True}},
         "DDPStrategy(static_graph=True) with manual optimization"),
        ("horovod", ("manual optimization (self.automatic_optimization = False) with strategy horovod is not"
         " supported by loopgen (the horovod script steps the optimizer itself")),
    ],
)  # fmt: skip
def test_manual_optimization_under_what_is_not_ddp_is_refused(tmp_path: Path, strategy, expected: str) -> None:
    found = problems(tmp_path, spec({}, {"max_epochs": 1}, "tests.ddp_models.DDPManualGAN", strategy=strategy))
    assert any(expected in problem for problem in found), found


def test_ddp_needs_a_seed(tmp_path: Path) -> None:
    found = problems(tmp_path, {**spec({}, {"max_epochs": 1}), "seed_everything": True})
    assert any("each process would choose its own seed" in problem for problem in found), found
    found = problems(tmp_path, {**spec({}, {"max_epochs": 1}), "seed_everything": False})
    refusal = "seed_everything: false with strategy ddp is not supported by loopgen (the DDP script seeds"
    assert any(refusal in problem and problem.endswith("; give a number") for problem in found), found


def test_a_ddp_strategy_entry_gives_ddp_its_arguments(tmp_path: Path) -> None:
    strategy = {
        "class_path": "lightning.pytorch.strategies.DDPStrategy",
        "init_args": {"find_unused_parameters": True, "static_graph": True, "gradient_as_bucket_view": True,
                      "timeout": "0:05:00", "process_group_backend": "gloo"},
    }  # fmt: skip
    path = write_spec(tmp_path, "spec", spec({}, {"max_epochs": 1}, strategy=strategy, num_nodes=2, devices=1))
    text, _ = render_spec(path, tmp_path / "train.py")
    for line in ("find_unused_parameters=True,", "static_graph=True,", "gradient_as_bucket_view=True,",
                 "TIMEOUT = 300.0", 'backend = "gloo"', "timeout=timedelta(seconds=TIMEOUT)", "NUM_NODES = 2",
                 "--nnodes=2 --nproc_per_node=1"):  # fmt: skip
        assert line in text
    path = write_spec(tmp_path, "spec", spec({}, {"max_epochs": 1}, strategy="ddp_find_unused_parameters_true"))
    assert "find_unused_parameters=True," in render_spec(path, tmp_path / "train.py")[0]


@pytest.mark.parametrize("follows_1_9_5", [False, True])
def test_strategy_auto_on_several_nodes_is_ddp(tmp_path: Path, follows_1_9_5: bool) -> None:
    """Lightning's accelerator connector picks DDP for num_nodes > 1 without a strategy, in 2.x and in 1.9.5 (whose
    one-node choice, ddp_spawn, is refused: test_bad_specs)."""
    flags = {"max_epochs": 1, "terminate_on_nan": follows_1_9_5}
    path = write_spec(tmp_path, "spec", spec({}, flags, strategy="auto", num_nodes=2, devices=1))
    content = yaml.safe_load(path.read_text())
    del content["trainer"]["strategy"]
    path.write_text(yaml.safe_dump(content))
    text, _ = render_spec(path, tmp_path / "train.py")
    assert "NUM_NODES = 2" in text and "ddp_model = DistributedDataParallel(" in text


def test_accumulation_skips_the_all_reduce_on_batches_that_do_not_step(tmp_path: Path) -> None:
    path = write_spec(tmp_path, "spec", spec(*SPECS["accumulate_clip"]))
    text, _ = render_spec(path, tmp_path / "train.py")
    assert "with nullcontext() if should_step else ddp_model.no_sync():" in text
    path = write_spec(tmp_path, "spec", spec(*SPECS["plain"]))
    assert "no_sync" not in render_spec(path, tmp_path / "train.py")[0]


def test_loopgen_run_launches_torchrun(tmp_path: Path) -> None:
    from loopgen.cli import _launcher

    path = write_spec(tmp_path, "spec", spec(*SPECS["plain"]))
    assert _launcher(path)[1:] == ["-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2"]
    single = {**spec(*SPECS["plain"]), "trainer": {"accelerator": "cpu", "max_epochs": 1, **OFF}}
    assert _launcher(write_spec(tmp_path, "single", single)) == [sys.executable]


def test_without_ddp_nothing_of_it_is_in_the_script() -> None:
    for golden in (ROOT / "generated_examples").glob("*.py"):
        if golden.stem.startswith(("ddp", "model_parallel")):
            continue
        text = golden.read_text(encoding="utf-8")
        for word in ("torch.distributed", "DistributedDataParallel", "DistributedSampler", "is_global_zero =", "RANK"):
            assert word not in text, (golden.name, word)


@pytest.mark.parametrize("filename", ["report", "a{b}_", "x/y:z"])
def test_profiler_file_names_are_lightnings_for_each_rank(tmp_path: Path, filename: str) -> None:
    """The f-strings of a DDP script's profiler files, evaluated for local rank 1, give the names Lightning's
    profilers give when set up with local_rank=1 (its _prepare_filename)."""
    import re

    from pytorch_lightning.profilers import AdvancedProfiler, PyTorchProfiler, SimpleProfiler

    def script(profiler: dict) -> str:
        path = write_spec(tmp_path, "spec", spec({}, {"max_epochs": 1, "profiler": profiler}))
        return render_spec(path, tmp_path / "train.py")[0]

    def value(pattern: str, text: str, **names) -> str:
        found = re.search(pattern, text)
        assert found, pattern
        return eval(found.group(1), {}, names)  # an f-string literal of the script

    ddp_step = "[Strategy]DDPStrategy.training_step"
    simple = SimpleProfiler(filename=filename)
    simple.setup("fit", local_rank=1)
    text = script({"class_path": "SimpleProfiler", "init_args": {"filename": filename}})
    rank_1 = type("P", (), {"rank": 1})
    assert value(r"os\.path\.join\(self\.directory, (f\".*?\")\)", text, self=rank_1) == simple._prepare_filename()
    assert "SimpleProfiler(default_root_dir, rank=local_rank)" in text
    advanced = AdvancedProfiler(filename=filename, dump_stats=True)
    advanced.setup("fit", local_rank=1)
    text = script({"class_path": "AdvancedProfiler", "init_args": {"filename": filename, "dump_stats": True}})
    prefix = value(r'"_",\s*(f".*?")\s*\+\s*action', text, self=type("P", (), {"rank": 1}))
    name = re.sub(r"_+", "_", re.sub(r"[\\/:*?\"<>|\n\r\t]", "_", prefix + ddp_step)).strip() + ".prof"
    assert name == advanced._prepare_filename(action_name=ddp_step, extension=".prof")
    pytorch = PyTorchProfiler(filename=filename, export_to_chrome=True)
    pytorch.setup("fit", local_rank=1)
    text = script({"class_path": "PyTorchProfiler", "init_args": {"filename": filename, "export_to_chrome": True}})
    trace = value(r"tensorboard_trace_handler\(\s*self\.directory,\s*(f\".*?\")", text, self=type("P", (), {"rank": 1}))
    assert trace == pytorch._prepare_filename(action_name=ddp_step, extension="")
