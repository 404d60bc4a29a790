"""A ModelCheckpoint file decided inside an accumulation window (a validation after batch 5, windows of 3) is
written there, as Lightning writes it (its global_step, weights and optimizer state the decision's: the corpus
case tpl_ddpm_validation_inside_window compares the files with Lightning's), and it holds the gradients the
window has summed so far, so a run resumed from it ends as the uninterrupted run does."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import env_with_root, render

torch = pytest.importorskip("torch")

SPEC = {
    "seed_everything": 42,
    "model": {"class_path": "examples.lightning_models.LitClassifier", "init_args": {"lr": 0.05}},
    "trainer": {
        "accelerator": "cpu",
        "max_epochs": 2,
        "accumulate_grad_batches": 3,
        "val_check_interval": 5,
        "logger": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
        "callbacks": [
            {
                "class_path": "ModelCheckpoint",
                "init_args": {"dirpath": "ck", "save_top_k": -1, "save_last": True, "filename": "{epoch}-{step}"},
            }
        ],
    },
}


def run(directory: Path, *args: str) -> None:
    result = subprocess.run(
        [sys.executable, "train.py", *args],
        cwd=directory,
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]


def test_a_file_written_inside_an_accumulation_window_resumes_exactly(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(render(SPEC, tmp_path))
    run(tmp_path)
    written = tmp_path / "written"
    shutil.copytree(tmp_path / "ck", written)
    # 16 batches an epoch: validations after batches 5, 10 and 15 of each, inside windows of 3 (steps at 3, 6, ...)
    inside = torch.load(written / "epoch=0-step=1.ckpt", weights_only=False)
    assert (inside["global_step"], inside["loopgen"]["next_batch"]) == (1, 5)
    assert all(grad is not None for grad in inside["loopgen"]["window_grads"])
    at_end = torch.load(written / "last.ckpt", weights_only=False)
    for name in ("epoch=0-step=1.ckpt", "epoch=1-step=9.ckpt"):
        shutil.rmtree(tmp_path / "ck")
        run(tmp_path, "--ckpt-path", str(written / name))
        resumed = torch.load(tmp_path / "ck" / "last.ckpt", weights_only=False)
        different = [k for k, v in at_end["state_dict"].items() if not torch.equal(v, resumed["state_dict"][k])]
        assert not different, f"resumed from {name}: {different}"
