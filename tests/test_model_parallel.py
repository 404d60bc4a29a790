"""strategy ModelParallelStrategy: the module shards itself in configure_model (FSDP2's fully_shard, tensor
parallelism's parallelize_module) on the device mesh, real multi-process runs on CPU with gloo against Lightning's
ModelParallelStrategy on the same specs.

As in tests/test_ddp.py the processes start together in one fixture: one torchrun launch of 2 processes for
Lightning's runs of every spec in turn (tests/ddp_runner.py), one for loopgen's scripts, and one rendered script
as 2 nodes x 1 process. The weights compared are the full ones, gathered from the shards on rank 0
(tests/ddp_models.py's ShardedNet). The modules import Lightning through the project's compat module (`try:` /
`except ImportError:`, tests/parity/compat.py), as libraries that support both package names do: each case is also
the parity case of that (a reader that missed it took them for plain nn.Modules, and every process died setting the
read-only device_mesh).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

import tests.test_ddp as ddp
from loopgen.errors import LoopgenError
from tests.harness import ROOT, env_with_root

FSDP2 = {"class_path": "ModelParallelStrategy", "init_args": {"data_parallel_size": 2, "tensor_parallel_size": 1}}
TENSOR_PARALLEL = {"class_path": "lightning.pytorch.strategies.ModelParallelStrategy", "init_args": {}}
MODEL = "ShardedNet"
# name: (the model's init args, the flags); each case shuffles its data and drops out at 0.3 unless it says
SPECS = {
    # FSDP2 over 2 data-parallel processes (each its share of the data), accumulation and clipping; the first
    # layer's activations recomputed in the backward pass (activation checkpointing)
    "fsdp_accumulate_clip": (
        {"dropout": 0.3, "activation_checkpointing": True},
        {"strategy": FSDP2, "max_epochs": 2, "accumulate_grad_batches": 3, "gradient_clip_val": 0.5},
    ),
    # "auto" sizes: data_parallel 1 (the nodes) x tensor_parallel 2 (the devices): both processes read every batch;
    # tensor parallelism (column-wise then row-wise) under FSDP2, ReduceOnPlateau on a value logged with sync_dist
    "tensor_parallel_plateau": (
        {"dropout": 0.3, "tensor_parallel": True, "plateau": True, "log_train": True},
        {"strategy": TENSOR_PARALLEL, "max_epochs": 3, "gradient_clip_val": 0.5},
    ),
    "tensor_parallel_bf16_mixed": (
        {"dropout": 0.0, "tensor_parallel": True},
        {"strategy": TENSOR_PARALLEL, "max_epochs": 2, "precision": "bf16-mixed", "accumulate_grad_batches": 2},
    ),
    # each sharded layer compiled in configure_model (torch.compile's aot_eager backend)
    "fsdp_compiled": ({"dropout": 0.3, "compiled": True}, {"strategy": FSDP2, "max_epochs": 2}),
    # manual optimization: gradients accumulated by hand, clipped by self.clip_gradients, a scheduler stepped
    "fsdp_manual": ({}, {"strategy": FSDP2, "max_epochs": 3}, "ShardedManual"),
    "fsdp_bf16_true_early_stopping": (
        {"plateau": True},
        {
            "strategy": FSDP2,
            "max_epochs": 6,
            "precision": "bf16-true",
            "callbacks": [
                {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 1, "min_delta": 0.02}}
            ],
        },
    ),
}
LOGGED = "fsdp_logged"  # a CSVLogger and the progress bar, files compared with Lightning's
# checkpoints, each job in both formats (save_distributed_checkpoint true: "sharded", false: "full"): `files` trains
# 3 epochs, keeping the best 2 by val_loss and last; `resumed` resumes from its last.ckpt to 5 epochs, as
# `uninterrupted` trains without a break; `mid` saves every 4 steps (mid-epoch), `mid_resumed` resumes from step 8
FORMATS = {"sharded": True, "full": False}
FILE_JOBS = ("files", "resumed", "uninterrupted")
MID_JOBS = ("mid", "mid_resumed")
# after both sides' runs: the script resumes from Lightning's files (`from_lightning`), and from its own sharded
# last.ckpt consolidated into one file (`from_consolidated`)
LATER_JOBS = ("from_lightning", "from_consolidated")
LAST = Path("lightning_logs") / "version_0" / "checkpoints" / "last.ckpt"
VALIDATED = "validated"  # each side validates Lightning's `files` last.ckpt (the script in the later launch)
EXAMPLE = "model_parallel_cpu"  # examples/model_parallel_cpu.yaml
COMPILED = "compiled_full"  # a torch.compile wrapper made in configure_model, full checkpoints


def compiled_spec(root: Path) -> dict:
    strategy = {**FSDP2, "init_args": {**FSDP2["init_args"], "save_distributed_checkpoint": False}}
    flags = {"strategy": strategy, "max_epochs": 2, "default_root_dir": str(root), "enable_checkpointing": True}
    return ddp.spec({"dropout": 0.3}, flags, "ShardedCompiledNet")


def checkpoint_spec(job: str, sharded: bool, root: Path, side_root: Path) -> dict:
    """The spec of a checkpoint job whose files go under `root`; `side_root`: where this side's (or, for
    from_lightning, Lightning's) jobs of the same format put theirs."""
    strategy = {**FSDP2, "init_args": {**FSDP2["init_args"], "save_distributed_checkpoint": sharded}}
    if job.startswith("mid"):
        checkpoint = {"every_n_train_steps": 4, "save_top_k": -1}
    else:
        checkpoint = {"monitor": "val_loss", "save_top_k": 2, "save_last": True, "filename": "{epoch}-{val_loss:.3f}"}
    flags = {
        "strategy": strategy,
        "max_epochs": 3 if job in ("files", "mid", "mid_resumed") else 5,
        "log_every_n_steps": 2,
        "default_root_dir": str(root),
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": str(root)}},
        "enable_checkpointing": True,
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": checkpoint}],
    }
    content = ddp.spec({"dropout": 0.3 if job.startswith("mid") else 0.0, "plateau": True, "log_train": True},
                       flags, MODEL)  # fmt: skip
    if job in ("resumed", "from_lightning"):
        content["ckpt_path"] = str(side_root / "files" / LAST)
    elif job == "from_consolidated":
        content["ckpt_path"] = f"{side_root / 'files' / LAST}.consolidated"
    elif job == "mid_resumed":
        content["ckpt_path"] = str(side_root / "mid" / LAST.parent / "epoch=1-step=8.ckpt")
    return content


def validate_spec(sharded: bool, root: Path) -> dict:
    """The `files` job's spec with the validate subcommand, its files under `root`."""
    content = checkpoint_spec("files", sharded, root, root)
    content["loop"] = {"subcommands": ["fit", "validate"]}
    return content


def case_spec(init_args: dict, flags: dict, model: str = MODEL) -> dict:
    return ddp.spec(init_args, flags, model)


def logged_spec(root: Path) -> dict:
    flags = {
        "strategy": FSDP2,
        "max_epochs": 2,
        "log_every_n_steps": 2,
        "default_root_dir": str(root),
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": str(root)}},
        "enable_progress_bar": True,
    }
    return ddp.spec({"plateau": True, "log_train": True}, flags, MODEL)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    directory = tmp_path_factory.mktemp("model_parallel")
    specs = {name: ddp.write_spec(directory, name, case_spec(*args)) for name, args in SPECS.items()}
    scripts = {name: ddp.render(path) for name, path in specs.items()}
    logged = {}
    for side in ("lightning", "loopgen"):
        folder = directory / f"{side}_specs"
        folder.mkdir()
        logged[side] = ddp.write_spec(folder, LOGGED, logged_spec(directory / side / LOGGED))
    logged["loopgen"] = ddp.render(logged["loopgen"])
    jobs: dict[str, list[Path]] = {"lightning": [], "loopgen": [], "later": [], "validated": []}
    for form, sharded in FORMATS.items():
        for side in ("lightning", "loopgen"):
            folder = directory / f"{side}_{form}"
            folder.mkdir()
            root = directory / side / form
            names = FILE_JOBS if side == "lightning" else FILE_JOBS + MID_JOBS
            jobs[side] += [
                ddp.write_spec(folder, f"{form}_{job}", checkpoint_spec(job, sharded, root / job, root))
                for job in names
            ]
        lightning_last = directory / "lightning" / form / "files" / LAST
        validated = {**validate_spec(sharded, directory / "lightning" / form / VALIDATED), "command": "validate",
                     "ckpt_path": str(lightning_last)}  # fmt: skip
        jobs["lightning"].append(ddp.write_spec(directory / f"lightning_{form}", f"{form}_{VALIDATED}", validated))
        content = validate_spec(sharded, directory / "loopgen" / form / VALIDATED)
        script = ddp.render(ddp.write_spec(directory / f"loopgen_{form}", f"{form}_{VALIDATED}", content))
        script.with_suffix(".args").write_text(f"validate\n--ckpt-path\n{lightning_last}\n", encoding="utf-8")
        jobs["validated"].append(script)
        for job in LATER_JOBS if sharded else LATER_JOBS[:1]:  # a full checkpoint is one file already
            side_root = directory / ("lightning" if job == "from_lightning" else "loopgen") / form
            content = checkpoint_spec(job, sharded, directory / "loopgen" / form / job, side_root)
            jobs["later"].append(ddp.write_spec(directory / f"loopgen_{form}", f"{form}_{job}", content))
    example = yaml.safe_load((ROOT / "examples" / f"{EXAMPLE}.yaml").read_text(encoding="utf-8"))
    for side in ("lightning", "loopgen"):  # the example, with a CSV log in the test's directory to compare
        example["trainer"]["logger"] = {
            "class_path": "CSVLogger",
            "init_args": {"save_dir": str(directory / side / EXAMPLE)},
        }
        jobs[side].append(ddp.write_spec(directory / f"{side}_specs", EXAMPLE, example))
    for side in ("lightning", "loopgen"):
        jobs[side].append(
            ddp.write_spec(directory / f"{side}_specs", COMPILED, compiled_spec(directory / side / COMPILED))
        )
    jobs["loopgen"] = [ddp.render(path) for path in jobs["loopgen"]]
    jobs["later"] = [ddp.render(path) for path in jobs["later"]]
    # the first spec on 2 nodes of 1 process each: "auto" would make the mesh 2 x 1 there too
    nodes_spec = case_spec(*SPECS["fsdp_accumulate_clip"])
    nodes_spec["trainer"] = {**nodes_spec["trainer"], "devices": 1, "num_nodes": 2}
    nodes_script = ddp.render(ddp.write_spec(directory, "nodes", nodes_spec))
    env = {**env_with_root(), "OMP_NUM_THREADS": "1"}
    env.pop("RANK", None)
    env.pop("WORLD_SIZE", None)
    runner = str(ROOT / "tests" / "ddp_runner.py")
    launches = {
        side: ddp.Launch(
            side,
            [*ddp.TORCHRUN, "--standalone", "--nproc_per_node=2", runner, side, str(directory / side),
             *map(str, [*(specs if side == "lightning" else scripts).values(), logged[side], *jobs[side]])],
            directory, env,
        )
        for side in ("lightning", "loopgen")
    }  # fmt: skip
    nodes, port = directory / "nodes_out", ddp.free_port()
    nodes.mkdir()
    for rank in (0, 1):
        command = [*ddp.TORCHRUN, "--nnodes=2", "--nproc_per_node=1", f"--node_rank={rank}",
                   "--master_addr=127.0.0.1", f"--master_port={port}", str(nodes_script)]  # fmt: skip
        launches[f"node{rank}"] = ddp.Launch(f"node{rank}", command, directory, {**env, "DDP_SAVE": str(nodes)})
    deadline = time.monotonic() + ddp.LAUNCH_TIMEOUT
    ddp.wait_for(launches, deadline, "the launches")
    # the sharded last.ckpt as one file, by the script's --consolidate (without torchrun), then the later jobs
    sharded_files = next(path for path in jobs["loopgen"] if path.stem == "sharded_files")
    last = directory / "loopgen" / "sharded" / "files" / LAST
    consolidated = subprocess.run([sys.executable, str(sharded_files), "--consolidate", str(last)], cwd=ROOT,
                                  env=env, capture_output=True, text=True)  # fmt: skip
    later = [str(path) for path in [*jobs["later"], *jobs["validated"]]]
    launches["later"] = ddp.Launch(
        "later", [*ddp.TORCHRUN, "--standalone", "--nproc_per_node=2", runner, "loopgen", str(directory / "later"),
                  *later], directory, env,
    )  # fmt: skip
    ddp.wait_for(launches, deadline, "the launches")
    return {"directory": directory, "launches": launches, "scripts": scripts, "consolidated": consolidated}


def full_weights(directory: Path) -> dict:
    import torch

    return torch.load(directory / "rank0.pt")


def ended(runs: dict, *names: str) -> None:
    for name in names:
        assert runs["launches"][name].returncode == 0, runs["launches"][name].output


@pytest.mark.parametrize("name", [*SPECS, LOGGED])
def test_weights_equal_lightnings_model_parallel(runs: dict, name: str) -> None:
    ended(runs, "lightning", "loopgen")
    ours, theirs = (full_weights(runs["directory"] / side / name) for side in ("loopgen", "lightning"))
    ddp.assert_equal(ours, theirs)
    seen = json.loads((runs["directory"] / "loopgen" / name / "rank0.json").read_text())
    assert seen == json.loads((runs["directory"] / "lightning" / name / "rank0.json").read_text())


def test_the_mesh_and_the_samplers_shares_are_lightnings(runs: dict) -> None:
    """data_parallel_size 2: each process its half of the data; "auto" on one node: one data-parallel group of two
    tensor-parallel processes, both reading every batch."""
    ended(runs, "loopgen")
    seen = {name: json.loads((runs["directory"] / "loopgen" / name / "rank0.json").read_text()) for name in SPECS}
    assert seen["fsdp_accumulate_clip"]["mesh"] == [2, 1]
    assert seen["fsdp_accumulate_clip"]["distributed_sampler_kwargs"] == {"num_replicas": 2, "rank": 0}
    assert seen["tensor_parallel_plateau"]["mesh"] == [1, 2]
    assert seen["tensor_parallel_plateau"]["distributed_sampler_kwargs"] == {"num_replicas": 1, "rank": 0}
    # 45 samples a process in batches of 8 (6 batches), 2 epochs, a step every 3 batches
    assert seen["fsdp_accumulate_clip"]["global_step"] == 4
    assert seen["fsdp_bf16_true_early_stopping"]["global_step"] < 6 * 6  # EarlyStopping stopped both processes


def test_logs_equal_lightnings_model_parallel(runs: dict) -> None:
    from tests.harness import log_facts

    ended(runs, "lightning", "loopgen")
    ours, theirs = (runs["directory"] / side / LOGGED for side in ("loopgen", "lightning"))
    logs = log_facts(ours)
    assert logs == log_facts(theirs)
    assert {"path": "lightning_logs/version_0/metrics.csv"} in [{"path": fact["path"]} for fact in logs]
    output = runs["launches"]["loopgen"].output
    jobs = len(SPECS) + 3 + len(FORMATS) * (len(FILE_JOBS) + len(MID_JOBS))  # and logged, the example, compiled
    assert output.count("Training stopped after") == jobs  # rank 0 alone prints
    assert [output.count(f"Epoch {epoch}: 100%") for epoch in range(2)] == [1, 1]  # fsdp_logged, rank 0's bar


def test_two_nodes_of_one_process_train_as_one_node_of_two(runs: dict) -> None:
    ended(runs, "node0", "node1")
    ours = full_weights(runs["directory"] / "nodes_out")
    ddp.assert_equal(ours, full_weights(runs["directory"] / "lightning" / "fsdp_accumulate_clip"))


def render_error(tmp_path: Path, content: dict) -> str:
    with pytest.raises(LoopgenError) as error:
        ddp.render(ddp.write_spec(tmp_path, "refused", content))
    return str(error.value)


@pytest.mark.parametrize(
    ("model", "flags", "expected"),
    [
        ("DDPNet", {}, "ModelParallelStrategy with tests.ddp_models.DDPNet, which has no configure_model,"),
        (MODEL, {"precision": "64"}, "precision 64 with ModelParallelStrategy"),
        (MODEL, {"strategy": {**FSDP2, "init_args": {"data_parallel_size": 3}}},
         "data_parallel_size 3 x tensor_parallel_size 2"),
        (MODEL, {"callbacks": [{"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.01}}]},
         "StochasticWeightAveraging with ModelParallelStrategy"),
        (MODEL, {"callbacks": [{"class_path": "ModelPruning", "init_args": {"pruning_fn": "l1_unstructured"}}]},
         "ModelPruning with ModelParallelStrategy"),
        (MODEL, {"strategy": {**FSDP2, "init_args": {"cpu_offload": True}}}, "with cpu_offload: the script builds"),
        (MODEL, {"strategy": {"class_path": "FSDPStrategy"}}, "FSDPStrategy with accelerator: cpu is not supported by loopgen"),
        (MODEL, {"loop": {"compile": True}}, "loop.compile with the model_parallel engine"),
    ],
)  # fmt: skip
def test_what_model_parallel_cannot_serve_is_refused(tmp_path: Path, model: str, flags: dict, expected: str) -> None:
    assert expected in render_error(tmp_path, ddp.spec({}, {"strategy": FSDP2, **flags}, model))


def test_the_header_says_how_to_launch_it_and_loopgen_run_uses_torchrun(tmp_path: Path) -> None:
    from loopgen.cli import _launcher

    path = ddp.write_spec(tmp_path, "train", ddp.spec({}, {"strategy": FSDP2}, MODEL))
    text = ddp.render(path).read_text(encoding="utf-8")
    assert "strategy=ModelParallelStrategy over 1 x 2 processes (data_parallel 2 x tensor_parallel 1)" in " ".join(
        text.split()
    )
    assert "torchrun --nproc_per_node=2 train.py" in text
    assert "init_device_mesh(" in text and "DistributedDataParallel" not in text
    assert _launcher(path)[-1] == "--nproc_per_node=2"


def weights_of(runs: dict, side: str, job: str) -> dict:
    return full_weights(runs["directory"] / side / job)


@pytest.mark.parametrize("form", FORMATS)
def test_checkpoints_equal_lightnings_model_parallel(runs: dict, form: str) -> None:
    """The same files (a directory of shards and meta.pt, or one file), holding the same weights, optimizer
    states (gathered from the shards) and callback states as Lightning's."""
    from tests.harness import checkpoint_facts

    ended(runs, "lightning", "loopgen")
    for job in ("files", "uninterrupted"):
        ours, theirs = (runs["directory"] / side / form / job for side in ("loopgen", "lightning"))
        facts = checkpoint_facts(ours)
        assert [fact["path"] for fact in facts] == [fact["path"] for fact in checkpoint_facts(theirs)]
        assert ddp.without_lr(facts) == ddp.without_lr(checkpoint_facts(theirs)), job
        assert len(facts) == 3 and all("unreadable" not in fact for fact in facts), facts
        last = ours / LAST
        if FORMATS[form]:
            assert sorted(path.name for path in last.iterdir()) == [".metadata", "__0_0.distcp", "__1_0.distcp",
                                                                    "meta.pt"]  # fmt: skip
            assert {"state_dict", "optimizer_0"} <= set(facts[-1]["keys"])
        else:
            assert last.is_file() and "optimizer_states" in facts[-1]["keys"]
        assert not list(ours.rglob("*.tmp")) and not list(ours.rglob("*.previous"))
        ddp.assert_equal(weights_of(runs, "loopgen", f"{form}_{job}"), weights_of(runs, "lightning", f"{form}_{job}"))


@pytest.mark.parametrize("form", FORMATS)
def test_resuming_trains_as_without_a_break(runs: dict, form: str) -> None:
    """From the last file of an epoch's end, and from a file written in the middle of an epoch (dropout on)."""
    ended(runs, "loopgen")
    uninterrupted = weights_of(runs, "loopgen", f"{form}_uninterrupted")
    ddp.assert_equal(weights_of(runs, "loopgen", f"{form}_resumed"), uninterrupted)
    ddp.assert_equal(weights_of(runs, "loopgen", f"{form}_mid_resumed"), weights_of(runs, "loopgen", f"{form}_mid"))
    output = runs["launches"]["loopgen"].output
    assert output.count(f"Resuming from {runs['directory'] / 'loopgen' / form / 'mid'}") == 1  # rank 0's line


@pytest.mark.parametrize("form", FORMATS)
def test_resuming_from_lightnings_checkpoint_trains_as_lightning_resumes(runs: dict, form: str) -> None:
    ended(runs, "lightning", "later")
    ours = full_weights(runs["directory"] / "later" / f"{form}_from_lightning")
    ddp.assert_equal(ours, weights_of(runs, "lightning", f"{form}_resumed"))


def test_a_consolidated_checkpoint_loads_and_resumes(runs: dict) -> None:
    """--consolidate writes the sharded last.ckpt as one file, as Lightning's consolidate_checkpoint does: the
    full weights, meta.pt's entries, the optimizer states as a list; load_from_checkpoint reads it, and the
    script resumes from it as from the directory."""
    import torch

    from tests.ddp_models import DDPNet

    ended(runs, "loopgen", "later")
    assert runs["consolidated"].returncode == 0, runs["consolidated"].stderr
    path = runs["directory"] / "loopgen" / "sharded" / "files" / f"{LAST}.consolidated"
    checkpoint = torch.load(path, weights_only=True)
    full = torch.load(runs["directory"] / "lightning" / "full" / "files" / LAST, weights_only=True)
    ddp.assert_equal(checkpoint["state_dict"], full["state_dict"])
    assert len(checkpoint["optimizer_states"]) == 1 and "optimizer_0" not in checkpoint
    assert checkpoint["epoch"] == full["epoch"] and checkpoint["callbacks"].keys() == full["callbacks"].keys()
    ddp.assert_equal(DDPNet.load_from_checkpoint(path).state_dict(), full["state_dict"])
    resumed = full_weights(runs["directory"] / "later" / "sharded_from_consolidated")
    ddp.assert_equal(resumed, weights_of(runs, "loopgen", "sharded_resumed"))
    # the file exists now: a second run refuses to overwrite it
    script = runs["directory"] / "loopgen_sharded" / "sharded_files.py"
    again = subprocess.run([sys.executable, str(script), "--consolidate", str(path.with_suffix(""))], cwd=ROOT,
                           env=env_with_root(), capture_output=True, text=True)  # fmt: skip
    assert again.returncode == 1 and "exists; move or delete it first" in again.stderr


def test_the_example_trains_as_lightning(runs: dict) -> None:
    """examples/model_parallel_cpu.yaml, tensor parallelism under FSDP2, with a CSVLogger: the log (every step's
    loss, every epoch's validation) is Lightning's."""
    from tests.harness import log_facts

    ended(runs, "lightning", "loopgen")
    ours, theirs = (runs["directory"] / side / EXAMPLE for side in ("loopgen", "lightning"))
    logs = log_facts(ours)
    assert logs == log_facts(theirs)
    assert "lightning_logs/version_0/metrics.csv" in [fact["path"] for fact in logs]


def test_on_cuda_the_layers_are_built_on_the_cpu_and_moved_after_sharding(tmp_path: Path) -> None:
    """Not run here (no GPU): the script for CUDA builds the mesh on CUDA over nccl, each process on its device,
    and builds the layers on the CPU (ModelParallelStrategy's tensor_init_context), moved once sharded."""
    flags = {"accelerator": "cuda", "strategy": FSDP2, "enable_checkpointing": True}
    text = ddp.render(ddp.write_spec(tmp_path, "cuda", ddp.spec({}, flags, MODEL))).read_text(encoding="utf-8")
    compile(text, "cuda.py", "exec")
    body = text[text.index("def set_up(") :]  # set_up(), then build()
    order = [
        'device = torch.device("cuda", local_rank)',
        'backend = "nccl"',
        "init_device_mesh(\n        device.type,",
        "model._device_mesh = device_mesh",
        'with torch.device("cpu"):\n        model.configure_model()',
        "model.to(device)",
    ]
    positions = [body.find(piece) for piece in order]
    assert -1 not in positions and positions == sorted(positions), dict(zip(order, positions, strict=True))


@pytest.mark.parametrize("form", FORMATS)
def test_validate_from_lightning_s_checkpoint_gives_lightning_s_results(runs: dict, form: str) -> None:
    """`validate --ckpt-path` of a sharded directory or a full file Lightning wrote: the weights loaded into the
    sharded module, the validation loaders sharded over the data-parallel processes, the val_loss reduced
    (sync_dist): what Trainer.validate returns under ModelParallelStrategy."""
    ended(runs, "lightning", "later")
    name = f"{form}_{VALIDATED}"
    ours, theirs = (json.loads((runs["directory"] / side / name / "results.json").read_text())
                    for side in ("later", "lightning"))  # fmt: skip
    assert ours == theirs and list(ours[0]) == ["val_loss"]


def test_a_compiled_wrapper_s_full_checkpoint_is_lightnings(runs: dict) -> None:
    """The optimizer's full state keyed by the parameters' positions although the compiled wrapper names them
    under `_orig_mod` (Lightning aligns the names before it re-keys them)."""
    from tests.harness import checkpoint_facts

    ended(runs, "lightning", "loopgen")
    ours, theirs = (runs["directory"] / side / COMPILED for side in ("loopgen", "lightning"))
    facts = checkpoint_facts(ours)
    assert [fact["path"] for fact in facts] == ["checkpoints/epoch=1-step=12.ckpt"]
    assert facts == checkpoint_facts(theirs)
    assert list(facts[0]["optimizer_states"][0]["state"]) == [0, 1, 2, 3]
    ddp.assert_equal(weights_of(runs, "loopgen", COMPILED), weights_of(runs, "lightning", COMPILED))
