"""accelerator: tpu with checkpoints, loggers (CSV, TensorBoard), the progress bar and EarlyStopping, against the
recording torch_xla stand-in (tests/standins/torch_xla; torch_xla cannot run here, and none of this has run on real
TPUs). The script does what Lightning 2.6.6's TPU strategies do:

- one device (SingleDeviceXLAStrategy): the files as on the CPU, each checkpoint's tensors copied to the CPU by
  XLACheckpointIO (`xm._maybe_convert_to_cpu`) before torch.save; its files equal those of
  pytorch_lightning.Trainer on the CPU for the same spec (Lightning's TPU strategies cannot run here either);
- several devices (XLAStrategy): every process makes each checkpoint, runs its pending graph (`xm.mark_step`),
  process 0 alone writes it on the CPU, and all wait (`xm.rendezvous("Trainer.save_checkpoint")`); the loggers'
  version and ModelCheckpoint's directory are process 0's (`xm.collective_broadcast` of their pickles, as
  XLAStrategy.broadcast); whether a file exists is process 0's answer and whether a checkpoint is among the best
  is the processes' joint decision (reduce_boolean_decision: `xm.mesh_reduce`), as is EarlyStopping's; only
  process 0 logs and draws the bar. Played as ordinal 1, the script writes and draws nothing and makes the same
  collective calls as ordinal 0, in the same order (a mismatch would hang real TPUs).
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import torch

from tests.harness import checkpoint_facts, in_directory, log_facts
from tests.helpers import ROOT, env_with_root, render, write_spec

SPEC = {
    "seed_everything": 0,
    "model": {"class_path": "tests.standins.xla_models.XlaProbe"},
    "trainer": {
        "accelerator": "tpu",
        "max_epochs": 3,
        "enable_model_summary": False,
        "enable_progress_bar": True,
        "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": "logs"}},
        "callbacks": [
            {"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "save_top_k": 1, "save_last": True}},
            {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 1}},
        ],
    },
}
COLLECTIVES = ("xm.mesh_reduce", "xm.rendezvous", "xm.collective_broadcast")


def spec_with(**flags) -> dict:
    return {**SPEC, "trainer": {**SPEC["trainer"], **flags}}


def render_tpu(directory: Path, spec: dict) -> None:
    """Render `spec` into `directory` (its files go there), as train.py."""
    directory.mkdir(parents=True)
    (directory / "train.py").write_text(render(in_directory(spec, directory), directory))


def run_tpu(directory: Path, world_size: int, ordinal: int = 0) -> dict:
    """Run the script rendered in `directory` there against the stand-in, as ordinal `ordinal` of `world_size`."""
    script = directory / "train.py"
    out, weights = directory / "calls.json", directory / "weights.pt"
    command = [sys.executable, "-m", "tests.standins.fake_xla", str(script), str(out), str(weights)]
    result = subprocess.run(
        [*command, str(world_size), str(ordinal)],
        cwd=directory,
        env=env_with_root(ROOT / "tests" / "standins"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return {
        "calls": [tuple(c) for c in json.loads(out.read_text())],
        "weights": torch.load(weights),
        "text": script.read_text(),
        "output": result.stdout + result.stderr,
    }


def run_lightning(directory: Path, spec: dict) -> dict:
    """pytorch_lightning.Trainer on the CPU for `spec` (tests/parity/runner.py): its out.pt."""
    directory.mkdir(parents=True)
    spec = {**spec, "trainer": {**spec["trainer"], "accelerator": "cpu"}}
    spec_file = write_spec(directory, spec)
    command = [sys.executable, "-m", "tests.parity.runner", "lightning", str(spec_file), str(directory / "out.pt")]
    result = subprocess.run(command, cwd=ROOT, env=env_with_root(), capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    return torch.load(directory / "out.pt", weights_only=False)


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The four runs, at the same time: one device and Lightning's CPU run of the same spec; two devices played as
    ordinal 0 and as ordinal 1."""
    root = tmp_path_factory.mktemp("xla_files")
    for name, devices in (("one", 1), ("zero", 2), ("first", 2)):
        render_tpu(root / name, spec_with(devices=devices))  # here: black is not imported by threads at once
    jobs = {
        "one": lambda: run_tpu(root / "one", 1),
        "lightning": lambda: run_lightning(root / "lightning", spec_with(devices=1)),
        "zero": lambda: run_tpu(root / "zero", 2, 0),
        "first": lambda: run_tpu(root / "first", 2, 1),
    }
    with ThreadPoolExecutor(len(jobs)) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        results = {name: future.result() for name, future in futures.items()}
    return {**results, "root": root}


def test_one_device_writes_lightnings_files_on_the_cpu(runs: dict) -> None:
    one, theirs, directory = runs["one"], runs["lightning"], runs["root"] / "one"
    with contextlib.chdir(directory):  # the runner's facts are read there: the relative paths in the files
        facts, logs = checkpoint_facts(directory), log_facts(directory)
    assert [fact["path"] for fact in facts] == [fact["path"] for fact in theirs["checkpoints"]]
    assert len(facts) == 2, facts  # the best and last.ckpt
    assert facts == theirs["checkpoints"]
    assert logs == theirs["logs"]
    assert all(torch.equal(one["weights"][k], theirs["state_dict"][k]) for k in theirs["state_dict"])
    # XLACheckpointIO: each file's tensors copied to the CPU (synced) before torch.save; SingleDeviceXLAStrategy
    # neither runs the graph first nor waits for other processes
    calls = one["calls"]
    saves = [i for i, c in enumerate(calls) if c == ("xm._maybe_convert_to_cpu", True)]
    assert len(saves) >= len(facts)  # ModelCheckpoint replaces the best and last files as the run goes
    assert calls.count(("xm.mark_step",)) == calls.count(("optimizer.step",))
    assert not [c for c in calls if c[0] in COLLECTIVES]
    for name in ("xm.rendezvous", "collective_broadcast", "mesh_reduce", "xr.", "any_process"):
        assert name not in one["text"]
    assert "Epoch 2: 100%" in one["output"]


def test_one_device_checkpoints_hold_cpu_tensors(runs: dict) -> None:
    for path in (runs["root"] / "one").rglob("*.ckpt"):
        checkpoint = torch.load(path, weights_only=False)  # no map_location: as written
        tensors = list(checkpoint["state_dict"].values())
        tensors += [v for s in checkpoint["optimizer_states"][0]["state"].values() for v in s.values()]
        assert tensors and all(t.device.type == "cpu" for t in tensors)


def test_several_devices_save_on_process_zero_after_the_graph_and_wait(runs: dict) -> None:
    calls = runs["zero"]["calls"]
    saves = [i for i, c in enumerate(calls) if c == ("xm._maybe_convert_to_cpu", True)]
    assert saves
    for i in saves:
        # XLAStrategy.save_checkpoint: mark_step on every process, then rank 0's XLACheckpointIO; then the
        # Trainer's barrier
        assert calls[i - 1] == ("xm.mark_step",) and calls[i + 1] == ("xm.rendezvous", "Trainer.save_checkpoint")
    assert calls.count(("xm.rendezvous", "Trainer.save_checkpoint")) == len(saves)
    # the logger's version (next_version) and ModelCheckpoint's directory: process 0's, broadcast
    assert [c for c in calls if c[0] == "xm.collective_broadcast"] == [
        ("xm.collective_broadcast", 0, ["torch.float32"])
    ] * 2
    facts = checkpoint_facts(runs["root"] / "zero")
    assert [fact["path"] for fact in facts] == [
        "logs/lightning_logs/version_0/checkpoints/epoch=0-step=2.ckpt",
        "logs/lightning_logs/version_0/checkpoints/last.ckpt",
    ]
    # epoch 1 was no better: no new best, and (Lightning 2.6.6) last.ckpt follows the best files
    assert facts[1]["global_step"] == 2 and facts[1]["epoch"] == 0
    assert [fact["path"] for fact in log_facts(runs["root"] / "zero")] == [
        "logs/lightning_logs/version_0/hparams.yaml",
        "logs/lightning_logs/version_0/metrics.csv",
    ]
    assert "Epoch 1: 100%" in runs["zero"]["output"]
    assert calls[-1] == ("xm.rendezvous", "end-process")


def test_several_devices_reduce_decisions_with_mesh_reduce(runs: dict) -> None:
    calls, text = runs["zero"]["calls"], runs["zero"]["text"]
    assert 'bool(xm.mesh_reduce("reduce", decision, sum))' in text  # EarlyStopping's and file_exists' "any"
    assert 'bool(xm.mesh_reduce("reduce", decision, sum) == xr.world_size())' in text  # the top-k's "all"
    decisions = [c for i, c in enumerate(calls) if c[0] == "xm.mesh_reduce" and calls[i - 1] == ("xm.xla_device",)]
    assert decisions and all(c[1] == "reduce" and c[2] in (0.0, 1.0) for c in decisions)
    # the stand-in's processes all hold ordinal 0's values: val_loss rose after epoch 0, and patience 1 stops
    # the run after epoch 1 on every process
    assert "Training stopped after 2 epochs" in runs["zero"]["output"]
    assert "Training stopped after 2 epochs" not in runs["first"]["output"]


def test_other_processes_write_and_draw_nothing_and_make_the_same_collective_calls(runs: dict) -> None:
    first, zero = runs["first"], runs["zero"]
    directory = runs["root"] / "first"
    assert not list(directory.rglob("*.ckpt")) and not list(directory.rglob("*.csv"))
    assert not list(directory.rglob("hparams.yaml"))
    assert "Epoch 0" not in first["output"] and "Checkpoints:" not in first["output"]
    assert [c[:2] for c in first["calls"] if c[0] in COLLECTIVES] == [
        c[:2] for c in zero["calls"] if c[0] in COLLECTIVES
    ]
    assert [c for c in first["calls"] if c == ("xm._maybe_convert_to_cpu", True)] == []


def test_one_device_resumes_a_lightning_checkpoint_as_lightning(runs: dict, tmp_path: Path) -> None:
    """ckpt_path: the script on the stand-in and Lightning on the CPU each resume from the file Lightning wrote
    after epoch 1 and train to epoch 4: the same weights and files."""
    checkpoint = runs["root"] / "lightning" / "logs/lightning_logs/version_0/checkpoints/epoch=1-step=8.ckpt"
    assert checkpoint.is_file()
    callbacks = [SPEC["trainer"]["callbacks"][0]]  # ModelCheckpoint: its state comes back from the file
    spec = {**spec_with(devices=1, max_epochs=4, callbacks=callbacks), "ckpt_path": str(checkpoint)}
    render_tpu(tmp_path / "tpu", spec)
    with ThreadPoolExecutor(2) as pool:
        ours = pool.submit(run_tpu, tmp_path / "tpu", 1)
        theirs = pool.submit(run_lightning, tmp_path / "lightning", spec)
        ours, theirs = ours.result(), theirs.result()
    assert "Epoch 3: 100%" in ours["output"] and "Epoch 1: 100%" not in ours["output"]
    assert all(torch.equal(ours["weights"][k], theirs["state_dict"][k]) for k in theirs["state_dict"])
    with contextlib.chdir(tmp_path / "tpu"):
        facts = checkpoint_facts(tmp_path / "tpu")
    assert facts == theirs["checkpoints"] and facts
