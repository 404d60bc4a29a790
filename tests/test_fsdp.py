"""FSDPStrategy (FSDP1), which Lightning and torch run on CUDA only. Not run on a GPU here: the script for CUDA
runs against recording stand-ins (tests/standins/fake_fsdp.py: fake CUDA, the process group on gloo, a recording
FullyShardedDataParallel that runs the module as it is with one process). The calls and their order are checked
against Lightning's FSDPStrategy (pytorch_lightning/strategies/fsdp.py), the training and the checkpoints against
one DDP process's, which one process must match; on the CPU the spec is refused with Lightning's error."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.harness import checkpoint_facts
from tests.helpers import ROOT, env_with_root, render, write_spec

PROBE = "tests.standins.fsdp_models.FSDPProbe"
FSDP = {"class_path": "FSDPStrategy", "init_args": {}}
TRAINER = {"accelerator": "cuda", "max_epochs": 2, "logger": False, "enable_progress_bar": False,
           "enable_model_summary": False}  # fmt: skip


def spec(trainer: dict, model: str | dict = PROBE) -> dict:
    return {"seed_everything": 0, "model": model, "trainer": {**TRAINER, **trainer}}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def run(directory: Path, spec_: dict, *arguments: str, stand_in: str = "fake_fsdp") -> tuple[list, dict]:
    """Render `spec_` in `directory` and run its script there against the stand-ins (one process with torchrun's
    environment): the calls it made, in order, and the module's final weights."""
    directory.mkdir(parents=True, exist_ok=True)
    script = directory / "train.py"
    script.write_text(render(write_spec(directory, spec_), directory), encoding="utf-8")
    ranks = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "1", "MASTER_ADDR": "127.0.0.1"}
    env = {**env_with_root(ROOT / "tests" / "standins"), **ranks, "MASTER_PORT": str(free_port())}
    command = [sys.executable, "-m", f"tests.standins.{stand_in}", str(script), "calls.json", "weights.pt"]
    result = subprocess.run([*command, "--", *arguments], cwd=directory, env=env, capture_output=True, text=True,
                            timeout=180)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    calls = json.loads((directory / "calls.json").read_text())
    return calls, torch.load(directory / "weights.pt")


def assert_equal_weights(ours: dict, theirs: dict) -> None:
    assert list(ours) == list(theirs)
    for name, tensor in ours.items():
        assert torch.equal(tensor, theirs[name]), name


def positions(calls: list, *wanted: tuple) -> list[int]:
    """Where each of `wanted` (a call's first elements) is first made."""
    found = []
    for call in wanted:
        found.append(next(i for i, made in enumerate(calls) if tuple(made[: len(call)]) == call))
    return found


WRAPPED = {"strategy": {"class_path": "FSDPStrategy", "init_args": {
    "auto_wrap_policy": ["torch.nn.Linear"], "activation_checkpointing_policy": ["torch.nn.Linear"]}}}  # fmt: skip
# the reference: one process of DistributedDataParallel on the CPU, which reads the data as every distributed
# strategy does (a DistributedSampler, shuffled for training) and trains as one FullyShardedDataParallel process
DDP = {"accelerator": "cpu", "strategy": "ddp"}
CHECKPOINTS = {"callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"every_n_train_steps": 5,
                                                                            "save_top_k": -1}}]}  # fmt: skip


SHARDED = {"strategy": {"class_path": "FSDPStrategy", "init_args": {"state_dict_type": "sharded"}}}
LATE = {"class_path": PROBE, "init_args": {"late": True}}
# the specs the tests render, by name (tests/lint_sweep.py lints their scripts too)
SPECS = {
    "full": spec({**CHECKPOINTS, **WRAPPED}),
    "sharded": spec({**CHECKPOINTS, **SHARDED}),
    "late": spec({"strategy": FSDP}, LATE),
    "offload_bf16": spec({"strategy": "fsdp_cpu_offload", "precision": "bf16-mixed"}),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict:
    """The shared runs: one DDP process; FSDP with full checkpoints; FSDP with sharded ones; each resumed from its
    step-5 checkpoint."""
    base = tmp_path_factory.mktemp("fsdp")
    found = {"directory": base}
    found["ddp"] = run(base / "ddp", spec({**DDP, **CHECKPOINTS}), stand_in="fake_cuda")
    found["full"] = run(base / "full", SPECS["full"])
    found["sharded"] = run(base / "sharded", SPECS["sharded"])
    for name, flags in (("full", WRAPPED), ("sharded", SHARDED)):
        step5 = base / name / "checkpoints" / "epoch=0-step=5.ckpt"
        found[f"{name}_resumed"] = run(base / f"{name}_resumed", spec(flags), "--ckpt-path", str(step5))
    return found


def test_the_module_is_wrapped_after_configure_model_and_before_the_optimizer_is_made(runs: dict) -> None:
    """Lightning's order: the process group (nccl on CUDA), configure_model inside enable_wrap,
    FullyShardedDataParallel around the module with FSDPStrategy's arguments (the device by index, the precision's
    MixedPrecision, use_orig_params), activation checkpointing after the wrapping, then configure_optimizers."""
    calls, _ = runs["full"]
    arguments = {
        "auto_wrap_policy": ["Linear"],
        "cpu_offload": False,
        "device_id": 0,
        "mixed_precision": ["torch.float32"] * 3,
        "sharding_strategy": "FULL_SHARD",
        "use_orig_params": True,
    }
    order = positions(
        calls,
        ("init_process_group", "nccl"),
        ("configure_model",),
        ("FullyShardedDataParallel", "FSDPProbe", arguments),
        ("apply_activation_checkpointing", "FullyShardedDataParallel", ["Linear"]),
        ("configure_optimizers",),
        ("training_step",),
    )
    assert order == sorted(order)
    assert [call for call in calls if call[0] == "FullyShardedDataParallel"] == [calls[order[2]]]


def test_every_step_runs_through_the_wrapper_s_forward(runs: dict) -> None:
    """Lightning's forward redirection: each training and validation step is the wrapper's forward, so that it
    gathers the shards around it."""
    calls, _ = runs["full"]
    steps = [i for i, call in enumerate(calls) if call[0] in ("training_step", "validation_step")]
    assert len(steps) == 2 * 6 + 2 * 6 + 2  # two epochs of 6 batches, validated, and the sanity check
    assert all(calls[i - 1] == ["fsdp.forward"] for i in steps)


def test_one_process_trains_as_one_ddp_process(runs: dict) -> None:
    """With one process the shards are whole: the weights and the full checkpoints are one DDP process's,
    the optimizer's state keyed by the parameters' positions (FSDPStrategy's rekey)."""
    assert_equal_weights(runs["full"][1], runs["ddp"][1])
    base = runs["directory"]
    ours, theirs = checkpoint_facts(base / "full"), checkpoint_facts(base / "ddp")
    assert [fact["path"] for fact in ours] == ["checkpoints/epoch=0-step=5.ckpt", "checkpoints/epoch=1-step=10.ckpt"]
    assert ours == theirs


def test_a_full_checkpoint_is_gathered_on_the_first_process_in_fsdp_s_context(runs: dict) -> None:
    """Each save: the weights and the optimizer's state in FULL_STATE_DICT with rank0_only and CPU offload, the
    state re-keyed by position."""
    calls, _ = runs["full"]
    context = ["state_dict_type", "FULL_STATE_DICT", ["FullStateDictConfig", "FullOptimStateDictConfig"], True, True]
    first = calls.index(context)
    assert calls[first : first + 6] == [
        context, ["state_dict_type.exit"],
        context, ["optim_state_dict"], ["rekey_optim_state_dict", "PARAM_ID"], ["state_dict_type.exit"],
    ]  # fmt: skip
    assert calls.count(context) == 2 * 2


def test_a_sharded_checkpoint_is_a_directory_of_shards_and_meta(runs: dict) -> None:
    """state_dict_type "sharded": each checkpoint a directory (torch.distributed.checkpoint's files and meta.pt),
    the shards under "model" and "optimizer_0" as FSDPStrategy writes them; training is unchanged."""
    import torch.distributed.checkpoint as dcp

    assert_equal_weights(runs["sharded"][1], runs["ddp"][1])
    folder = runs["directory"] / "sharded" / "checkpoints" / "epoch=1-step=10.ckpt"
    assert folder.is_dir() and (folder / "meta.pt").is_file() and (folder / ".metadata").is_file()
    stored = dcp.FileSystemReader(str(folder)).read_metadata().state_dict_metadata
    assert sorted({key.split(".")[0] for key in stored}) == ["model", "optimizer_0"]
    meta = torch.load(folder / "meta.pt", weights_only=False)
    assert "state_dict" not in meta and "optimizer_states" not in meta and meta["global_step"] == 10
    calls, _ = runs["sharded"]
    context = ["state_dict_type", "SHARDED_STATE_DICT", ["ShardedStateDictConfig", "ShardedOptimStateDictConfig"],
               True, None]  # fmt: skip
    assert calls.count(context) == 2 * 2
    assert ["rekey_optim_state_dict", "PARAM_ID"] not in calls


@pytest.mark.parametrize("kind", ["full", "sharded"])
def test_resuming_from_either_kind_of_checkpoint_trains_as_the_uninterrupted_run(runs: dict, kind: str) -> None:
    """--ckpt-path at step 5 (mid-epoch): the weights and the optimizer's state loaded in FSDP's context (the full
    state on every process, rank0_only off; or the shards), as Lightning's FSDPStrategy.load_checkpoint."""
    calls, weights = runs[f"{kind}_resumed"]
    assert_equal_weights(weights, runs["ddp"][1])
    if kind == "full":
        context = ["state_dict_type", "FULL_STATE_DICT", ["FullStateDictConfig", "FullOptimStateDictConfig"],
                   True, False]  # fmt: skip
        expected = [context, ["state_dict_type.exit"], context, ["rekey_optim_state_dict", "PARAM_NAME"],
                    ["optim_state_dict_to_load"], ["state_dict_type.exit"]]  # fmt: skip
    else:
        context = ["state_dict_type", "SHARDED_STATE_DICT",
                   ["ShardedStateDictConfig", "ShardedOptimStateDictConfig"], True, None]  # fmt: skip
        loaded = ["load_sharded_optimizer_state_dict", "optimizer_0", ["net.0.bias", "net.0.weight", "net.2.bias",
                                                                       "net.2.weight"]]  # fmt: skip
        expected = [context, loaded, ["state_dict_type.exit"], context, ["state_dict_type.exit"], context,
                    ["optim_state_dict_to_load"], ["state_dict_type.exit"]]  # fmt: skip
    first = calls.index(expected[0])
    assert calls[first : first + len(expected)] == expected
    assert calls.index(["optim_state_dict_to_load"]) < calls.index(["training_step"])


def test_a_sharded_checkpoint_consolidates_into_lightning_s_file(runs: dict) -> None:
    """--consolidate: the directory as one file, "model" renamed "state_dict" and the optimizer's shards the list
    "optimizer_states" (Lightning's consolidate_checkpoint utility), as the full checkpoint holds them."""
    directory = runs["directory"] / "sharded"
    folder = directory / "checkpoints" / "epoch=0-step=5.ckpt"
    env = env_with_root(ROOT / "tests" / "standins")
    result = subprocess.run([sys.executable, "train.py", "--consolidate", str(folder)], cwd=directory, env=env,
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    ours = torch.load(f"{folder}.consolidated", weights_only=False)
    theirs = torch.load(runs["directory"] / "ddp" / "checkpoints" / "epoch=0-step=5.ckpt", weights_only=False)
    assert_equal_weights(ours["state_dict"], theirs["state_dict"])
    assert "model" not in ours and ours["global_step"] == 5
    state = ours["optimizer_states"][0]["state"]
    assert sorted(state) == ["net.0.bias", "net.0.weight", "net.2.bias", "net.2.weight"]  # by name, as FSDP's
    momentum = {name: state[name]["momentum_buffer"] for name in state}
    for index, name in enumerate(["net.0.weight", "net.0.bias", "net.2.weight", "net.2.bias"]):
        assert torch.equal(momentum[name], theirs["optimizer_states"][0]["state"][index]["momentum_buffer"])


def test_layers_configure_model_wraps_itself_are_not_wrapped_again(tmp_path: Path) -> None:
    """configure_model's wrap() makes a FullyShardedDataParallel (FSDPStrategy's enable_wrap, with the strategy's
    arguments): the module is then not wrapped as a whole, and its steps run as they are; it trains as on one
    device."""
    calls, weights = run(tmp_path / "fsdp", SPECS["late"])
    wrapped = [call for call in calls if call[0] == "FullyShardedDataParallel"]
    assert [call[1] for call in wrapped] == ["Linear"]
    assert wrapped[0][2]["device_id"] == 0 and wrapped[0][2]["sharding_strategy"] == "FULL_SHARD"
    first = calls.index(["training_step"])
    assert calls[first - 1] != ["fsdp.forward"] and calls[first + 1] == ["fsdp.forward"]
    _, reference = run(tmp_path / "ddp", spec(DDP, LATE), stand_in="fake_cuda")
    assert_equal_weights(weights, reference)


def test_fsdp_cpu_offload_and_bf16_mixed_give_their_arguments_and_autocast(tmp_path: Path) -> None:
    """fsdp_cpu_offload (Lightning's registry name): FSDPStrategy's defaults, the parameters offloaded to the CPU;
    bf16-mixed gathers and reduces in bfloat16 (FSDPPrecision's MixedPrecision) and autocasts the steps with
    torch's cached casts (FSDPPrecision's torch.autocast)."""
    calls, _ = run(tmp_path, SPECS["offload_bf16"])
    (wrapped,) = [call for call in calls if call[0] == "FullyShardedDataParallel"]
    assert wrapped[2]["cpu_offload"] is True and wrapped[2]["mixed_precision"] == ["torch.bfloat16"] * 3
    assert "auto_wrap_policy" not in wrapped[2]
    first = calls.index(["training_step"])
    assert calls[first - 2 : first] == [["autocast.enter", "cuda", "torch.bfloat16", True], ["fsdp.forward"]]
    assert ["module.to", "cuda"] not in calls  # FullyShardedDataParallel moves the module (device_id)


def test_the_sharding_strategy_is_passed_by_name(tmp_path: Path) -> None:
    flags = {"strategy": {"class_path": "lightning.pytorch.strategies.FSDPStrategy",
                          "init_args": {"sharding_strategy": "shard_grad_op"}}}  # fmt: skip
    text = render(write_spec(tmp_path, spec(flags)), tmp_path)
    assert "sharding_strategy=ShardingStrategy.SHARD_GRAD_OP," in text
    assert "strategy=FSDPStrategy (SHARD_GRAD_OP) over 1 x 1 processes" in text


REFUSED = [
    ({"accelerator": "cpu", "strategy": "fsdp"},
     "The strategy `fsdp` requires a GPU accelerator, but received `accelerator='cpu'`"),
    ({"strategy": FSDP, "gradient_clip_val": 1.0}, "gradient_clip_algorithm='norm'` is currently not supported"),
    ({"strategy": FSDP, "precision": "16-mixed"}, "precision 16-mixed with FSDPStrategy is not supported"),
    ({"strategy": {"class_path": "FSDPStrategy", "init_args": {"sharding_strategy": "HYBRID_SHARD"}}},
     "sharding_strategy HYBRID_SHARD needs an auto_wrap_policy"),
    ({"strategy": {"class_path": "FSDPStrategy", "init_args": {"sharding_strategy": "ZERO3"}}},
     "sharding_strategy: expected one of FULL_SHARD"),
    ({"strategy": {"class_path": "FSDPStrategy", "init_args": {"auto_wrap_policy": ["torch.nn.NoSuchLayer"]}}},
     "torch.nn.NoSuchLayer is not a torch.nn.Module class torch has"),
    ({"strategy": {"class_path": "FSDPStrategy", "init_args": {"auto_wrap_policy": ["tests.standins.Missing"]}}},
     "Missing"),
    ({"strategy": {"class_path": "FSDPStrategy", "init_args": {"limit_all_gathers": True}}},
     "with limit_all_gathers: the script builds FullyShardedDataParallel"),
    ({"strategy": FSDP, "callbacks": [{"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.1}}]},
     "works on a full copy of the module"),
]  # fmt: skip


@pytest.mark.parametrize(("flags", "message"), REFUSED, ids=[message[:40] for _, message in REFUSED])
def test_what_the_fsdp_script_does_not_serve_is_refused(tmp_path: Path, flags: dict, message: str) -> None:
    from loopgen.errors import LoopgenError

    with pytest.raises(LoopgenError) as error:
        render(write_spec(tmp_path, spec(flags)), tmp_path)
    assert message in str(error.value)


def test_compiling_under_fsdp_is_refused(tmp_path: Path) -> None:
    from loopgen.errors import LoopgenError

    with pytest.raises(LoopgenError, match="loop.compile with FSDPStrategy is not supported"):
        render(write_spec(tmp_path, {**spec({"strategy": FSDP}), "loop": {"compile": True}}), tmp_path)


def test_loopgen_run_launches_fsdp_with_torchrun(tmp_path: Path) -> None:
    from loopgen.cli import _launcher

    path = write_spec(tmp_path, spec({"strategy": "fsdp", "devices": 2}))
    assert _launcher(path)[-2:] == ["--standalone", "--nproc_per_node=2"]
    assert os.path.basename(_launcher(path)[0]).startswith("python")
