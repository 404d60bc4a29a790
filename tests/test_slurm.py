"""Under SLURM, SIGUSR1 (the warning before the time limit) saves hpc_ckpt_N.ckpt in default_root_dir and
requeues the job with `scontrol requeue`, as Lightning's SLURMEnvironment does; the requeued job resumes from
its newest hpc checkpoint by itself and ends as the run that was never interrupted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import env_with_root, render

pytestmark = pytest.mark.slow

MODEL = '''
import torch
from torch.utils.data import DataLoader, TensorDataset


class Regression(torch.nn.Module):
    """Prints each optimizer step, so that a test knows when to signal it; saves its weights at the end."""

    def __init__(self):
        super().__init__()
        self.layer = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Dropout(0.2), torch.nn.Linear(8, 1))

    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(96, 4, generator=g), torch.randn(96, 1, generator=g))
        return DataLoader(data, batch_size=8, shuffle=True)

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self.layer(x), y)

    def on_before_optimizer_step(self, optimizer):
        print("step", flush=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.05, momentum=0.9)

    def on_train_end(self):
        torch.save(self.state_dict(), "final.pt")
'''

SCONTROL = """#!/bin/sh
echo "$@" >> "$SCONTROL_LOG"
"""


def project(tmp_path: Path, **trainer) -> tuple[Path, dict[str, str]]:
    (tmp_path / "slurmproj").mkdir()
    (tmp_path / "slurmproj" / "__init__.py").write_text("")
    (tmp_path / "slurmproj" / "models.py").write_text(textwrap.dedent(MODEL))
    spec = {
        "seed_everything": 3,
        "model": "slurmproj.models.Regression",
        "trainer": {"accelerator": "cpu", "max_epochs": 3, "logger": False, "enable_progress_bar": False,
                    "default_root_dir": "run", **trainer},
    }  # fmt: skip
    script = tmp_path / "train.py"
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        script.write_text(render(spec, tmp_path))
    finally:
        os.chdir(cwd)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "scontrol").write_text(SCONTROL)
    (bin_dir / "scontrol").chmod(0o755)
    env = env_with_root(tmp_path)
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env['PATH']}", SLURM_JOB_ID="4242", SCONTROL_LOG=str(tmp_path / "scontrol.log")
    )
    return script, env


def test_sigusr1_saves_requeues_and_the_requeued_job_resumes(tmp_path: Path) -> None:
    script, env = project(tmp_path)
    reference = tmp_path / "reference"
    reference.mkdir()
    plain = {k: v for k, v in env.items() if k != "SLURM_JOB_ID"}
    subprocess.run([sys.executable, str(script)], cwd=reference, env=plain, check=True, capture_output=True)

    work = tmp_path / "job"
    work.mkdir()
    process = subprocess.Popen([sys.executable, str(script)], cwd=work, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    steps = 0
    for line in process.stdout:
        steps += line.strip() == "step"
        if steps == 17:  # in the middle of the second epoch (12 batches an epoch)
            process.send_signal(signal.SIGUSR1)
            break
    rest = process.communicate(timeout=120)[0]
    assert process.returncode == 128 + signal.SIGUSR1, rest
    assert (work / "run" / "hpc_ckpt_1.ckpt").is_file()
    assert (tmp_path / "scontrol.log").read_text().split() == ["requeue", "4242"]
    assert not (work / "final.pt").exists()  # stopped before the end

    time.sleep(0.01)
    requeued = subprocess.run([sys.executable, str(script)], cwd=work, env=env, capture_output=True, text=True)
    assert requeued.returncode == 0, requeued.stderr[-3000:]
    assert "Resuming from" in requeued.stdout and "hpc_ckpt_1.ckpt" in requeued.stdout
    ours, theirs = torch.load(work / "final.pt"), torch.load(reference / "final.pt")
    assert all(torch.equal(ours[name], theirs[name]) for name in theirs)


def test_without_auto_requeue_sigusr1_is_not_the_scripts(tmp_path: Path) -> None:
    """plugins: [SLURMEnvironment(auto_requeue=False)]: Lightning's signal connector handles no SIGUSR1, so the
    signal ends the process as it ends any (no hpc checkpoint, no requeue)."""
    plugin = {"class_path": "lightning.pytorch.plugins.environments.SLURMEnvironment",
              "init_args": {"auto_requeue": False}}  # fmt: skip
    script, env = project(tmp_path, plugins=[plugin])
    assert "SIGUSR1" not in script.read_text()
    work = tmp_path / "job"
    work.mkdir()
    process = subprocess.Popen([sys.executable, str(script)], cwd=work, env=env, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    for line in process.stdout:
        if line.strip() == "step":
            process.send_signal(signal.SIGUSR1)
            break
    process.communicate(timeout=120)
    assert process.returncode == -signal.SIGUSR1
    assert not (work / "run").exists() and not (tmp_path / "scontrol.log").exists()
