"""Trainer(plugins=[AsyncCheckpointIO]): the script writes each checkpoint from one background thread, as
Lightning's AsyncCheckpointIO does, from a copy of its tensors taken when it is saved, and every file is on disk
when fit ends; with TorchCheckpointIO (or none) the training thread writes them. The files themselves equal
Lightning's (tests/parity/test_parity.py, ckpt_async_io_*)."""

from __future__ import annotations

import os
import runpy
import sys
import threading
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import ROOT, render


def spec(plugins: list) -> dict:
    checkpoint = {
        "class_path": "ModelCheckpoint",
        "init_args": {"save_top_k": 2, "monitor": "step", "mode": "max", "every_n_train_steps": 2},
    }
    return {
        "seed_everything": 1,
        "model": {"class_path": "tests.parity.models.MLP"},
        "trainer": {"accelerator": "cpu", "max_epochs": 2, "logger": False, "enable_progress_bar": False,
                    "enable_model_summary": False, "callbacks": [checkpoint], "plugins": plugins},
    }  # fmt: skip


def train(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plugins: list) -> list[tuple[str, int]]:
    """Train with torch.save slowed down (the writes lag behind the training); return each save's thread and the
    global step in the saved file."""
    script = tmp_path / "train.py"
    script.write_text(render(spec(plugins), tmp_path))
    saves = []
    save = torch.save

    def slow_save(checkpoint, file, *args, **kwargs):
        time.sleep(0.05)
        saves.append((threading.current_thread().name, checkpoint["global_step"]))
        save(checkpoint, file, *args, **kwargs)

    monkeypatch.setattr(torch, "save", slow_save)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [str(script)])
    monkeypatch.syspath_prepend(str(ROOT))
    runpy.run_path(str(script), run_name="not_main")["main"]()
    return saves


def test_async_checkpoint_io_writes_in_a_background_thread_and_waits_at_fits_end(tmp_path, monkeypatch) -> None:
    saves = train(tmp_path, monkeypatch, ["AsyncCheckpointIO"])
    assert saves and all(thread != "MainThread" for thread, _ in saves)
    assert [step for _, step in saves] == sorted(step for _, step in saves)  # in order, each its own moment
    kept = sorted(os.listdir(tmp_path / "checkpoints"))
    assert kept == [f"epoch=1-step={steps}.ckpt" for steps in (saves[-2][1], saves[-1][1])]
    for name in kept:  # complete files, each with the step of its name
        content = torch.load(tmp_path / "checkpoints" / name, weights_only=True)
        assert name.endswith(f"step={content['global_step']}.ckpt")


def test_torch_checkpoint_io_writes_in_the_training_thread(tmp_path, monkeypatch) -> None:
    saves = train(tmp_path, monkeypatch, ["TorchCheckpointIO"])
    assert saves and all(thread == "MainThread" for thread, _ in saves)
