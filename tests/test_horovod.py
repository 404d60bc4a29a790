"""strategy: horovod, run for real: two processes on this machine's CPU, started by `horovodrun -np 2 -H
localhost:2` with Gloo (horovod 0.28.1, built by tests/horovod/build.sh, which .ci/setup runs).

The script's final weights are compared with Lightning 1.9.5's HorovodStrategy on the same spec (its venv, under
the same horovodrun), and with the DDP script of the same spec under torchrun. Lightning 1.9.5's Horovod scales
the learning rates by the number of processes (HorovodStrategy.setup); the DDP spec has the learning rate
doubled to match, so those two agree within float tolerance (Horovod and DDP average the gradients by different
reductions), not bit for bit.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from tests.harness import ROOT, env_with_root
from tests.helpers import render, write_spec

BIN = Path(sys.executable).parent


def horovodrun() -> str:
    found = BIN / "horovodrun"
    if not found.exists():
        pytest.skip(f"horovod is not installed in {sys.prefix}: run `bash tests/horovod/build.sh .venv`")
    check = subprocess.run([sys.executable, "-c", "import horovod.torch"], capture_output=True, text=True)
    if check.returncode:
        pytest.skip(f"horovod.torch does not import: {check.stderr.strip().splitlines()[-1]}")
    return str(found)


def venv195_python() -> Path | None:
    python = Path(os.environ.get("LOOPGEN_VENV195", ROOT / ".venv195")) / "bin" / "python"
    if not python.exists():
        return None
    check = subprocess.run([str(python), "-c", "import horovod.torch"], capture_output=True, text=True)
    return python if check.returncode == 0 else None


def spec(strategy: str, lr: float, model: str = "Net", model_args: dict | None = None, **flags) -> dict:
    return {
        "seed_everything": 7,
        "model": {"class_path": f"tests.horovod.models.{model}", "init_args": {"lr": lr, **(model_args or {})}},
        "trainer": {
            "accelerator": "cpu",
            "strategy": strategy,
            "devices": 2,
            "max_epochs": 2,
            "num_sanity_val_steps": 0,
            "logger": False,
            "enable_checkpointing": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            **flags,
        },
    }


def launch(command: list[str], cwd: Path, timeout: int = 240) -> None:
    env = {**env_with_root(), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
    result = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def run_horovod_script(tmp_path: Path, case: dict, name: str) -> dict:
    script = tmp_path / f"{name}.py"
    script.write_text(render(case, tmp_path))
    out = tmp_path / f"{name}.pt"
    run = [sys.executable, "-m", "tests.horovod.run_script", str(script), str(out)]
    launch([horovodrun(), "-np", "2", "-H", "localhost:2", *run], ROOT)
    return torch.load(out, weights_only=False)["state_dict"]


def run_ddp_script(tmp_path: Path, case: dict, name: str) -> dict:
    script = tmp_path / f"{name}.py"
    script.write_text(render(case, tmp_path))
    out = tmp_path / f"{name}.pt"
    launch([str(BIN / "torchrun"), "--nproc_per_node=2", "-m", "tests.horovod.run_script", str(script), str(out)], ROOT)
    return torch.load(out, weights_only=False)["state_dict"]


def run_lightning_195(tmp_path: Path, case: dict, name: str) -> dict:
    python = venv195_python()
    if python is None:
        pytest.skip("no Lightning 1.9.5 venv with horovod: run `bash .ci/setup --lightning-1.9.5`")
    spec_path = write_spec(tmp_path, case, f"{name}.yaml")
    out = tmp_path / f"{name}.pt"
    runner = [str(python), "-m", "tests.lightning195.runner195", str(spec_path), str(out)]
    launch([horovodrun(), "-np", "2", "-H", "localhost:2", *runner], ROOT)
    return torch.load(out, weights_only=False)["state_dict"]


def assert_close(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    for key, value in a.items():
        torch.testing.assert_close(value, b[key], rtol=1e-5, atol=1e-6, msg=key)


# (model, its init_args, trainer flags): each trained by the script and by Lightning 1.9.5, under horovodrun, in
# the two launches tests/test_horovod_files.py shares
CASES = {
    "clipping": ("Net", {}, {"gradient_clip_val": 0.05}),
    "shuffled_dropout_steplr": ("NetStepLR", {"shuffle": True, "dropout": 0.2}, {}),
    # 4 batches a process an epoch: the last ends no window (no step counted, the "step" scheduler waits), yet
    # Lightning 1.9.5 calls optimizer.step() on every batch with the gradients added up so far
    "accumulation_stepwise_lr": ("NetStepwiseLR", {}, {"accumulate_grad_batches": 3, "gradient_clip_val": 0.05}),
    # each process monitors its own val_loss (1.9.5 reduces sync_dist values only under torch.distributed); the
    # decision to stop is reduced over the processes (reduce_boolean_decision: an hvd.allreduce)
    "early_stopping": (
        "NetStepLR",
        {},
        {
            "max_epochs": 8,
            "callbacks": [
                {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 1, "min_delta": 0.05}}
            ],
        },
    ),
}


@pytest.mark.slow
def test_horovod_trains_as_ddp_with_the_learning_rate_scaled(tmp_path):
    """Lightning 1.9.5's Horovod multiplies the learning rate by the number of processes: the Horovod script
    with lr 0.05 ends where the DDP script with lr 0.1 ends (within float tolerance: Horovod and DDP average the
    gradients with different reductions). Without the scaling it would end where DDP with lr 0.05 does."""
    horovodrun()
    ours = run_horovod_script(tmp_path, spec("horovod", 0.05), "ours")
    ddp = run_ddp_script(tmp_path, spec("ddp", 0.1), "ddp")
    assert_close(ours, ddp)


def test_launched_without_horovodrun_it_says_how(tmp_path):
    horovodrun()
    script = tmp_path / "train.py"
    script.write_text(render(spec("horovod", 0.05), tmp_path))
    result = subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env_with_root(), capture_output=True,
                            text=True, timeout=120)  # fmt: skip
    assert result.returncode == 2
    assert "horovodrun -np 2 -H localhost:2 python train.py" in result.stderr


@pytest.mark.parametrize(
    "flags, message",
    [
        (
            {"num_nodes": 2},
            (
                r"trainer.num_nodes.*num_nodes > 1 with strategy horovod is not supported by loopgen \(Lightning 1.9.5"
                r" refuses it"
            ),
        ),
        ({"accelerator": "cuda", "precision": "16-mixed", "amp_backend": "apex"}, r"trainer.amp_backend.*apex"),
        ({"precision": "bf16-mixed"}, r"trainer.precision.*precision bf16-mixed with strategy horovod"),
        (
            {"precision": "bf16-true"},
            r"trainer.precision.*bf16-true with strategy horovod is not supported by loopgen \(Lightning 1.9.5 has no true half precision",
        ),
        (
            {"accumulate_grad_batches": {0: 1, 1: 2}},
            r"an accumulation schedule with strategy horovod is not supported by loopgen \(Lightning 1.9.5 refuses it",
        ),
        ({"logger": {"class_path": "MLFlowLogger"}}, r"trainer.logger.*a mlflow logger .*with strategy horovod"),
        (
            {"logger": {"class_path": "TensorBoardLogger", "init_args": {"save_dir": "logs"}}},
            r"trainer.logger.*a tensorboard logger with strategy horovod .*; use CSVLogger with horovod",
        ),
        (
            {
                "enable_checkpointing": True,
                "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"train_time_interval": "0:01:00"}}],
            },
            r"trainer.callbacks.*train_time_interval",
        ),
    ],
)
def test_what_horovod_cannot_serve_is_refused_at_render_time(tmp_path, monkeypatch, flags, message):
    from loopgen.errors import LoopgenError

    monkeypatch.chdir(ROOT)
    with pytest.raises(LoopgenError, match=message):
        render(spec("horovod", 0.05, **flags), tmp_path)


def test_the_script_names_horovodrun_and_a_single_device_script_knows_nothing_of_horovod(tmp_path, monkeypatch):
    monkeypatch.chdir(ROOT)
    text = render(spec("horovod", 0.05), tmp_path)
    assert "horovodrun -np 2 -H localhost:2 python train.py" in " ".join(text.split())
    plain = render(spec("auto", 0.05, devices=1), tmp_path)
    assert "hvd" not in plain and "horovodrun" not in plain and "import horovod" not in plain
