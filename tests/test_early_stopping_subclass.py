"""A user's EarlyStopping subclass resumes as under Lightning: its state (the base's count, best score and reason,
and the subclass's own field) comes back from a checkpoint Lightning's Trainer wrote, through the subclass's
load_state_dict and super()'s, and the run stops where Lightning's resumed run stops. The uninterrupted runs are
compared by the parity cases `early_stop_subclass_*` (tests/parity/test_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import train_parity_side

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

KEY = "WarmupEarlyStopping{'monitor': 'val_loss', 'mode': 'min'}"


def spec(max_epochs: int, ckpt_path: str | None = None) -> dict:
    stopper = {
        "class_path": "tests.parity.callbacks.WarmupEarlyStopping",
        "init_args": {"warmup": 1, "monitor": "val_loss", "patience": 3, "min_delta": 0.06},
    }
    return {
        "seed_everything": 42,
        "model": {"class_path": "tests.parity.models.CheckpointModel"},
        "trainer": {
            "max_epochs": max_epochs,
            "logger": False,
            "enable_progress_bar": False,
            "callbacks": [
                stopper,
                {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_last": True}},
            ],
        },
        **({"ckpt_path": ckpt_path} if ckpt_path else {}),
    }


def test_a_resumed_early_stopping_subclass_stops_as_lightnings(tmp_path: Path) -> None:
    train_parity_side("lightning", spec(max_epochs=5), tmp_path / "first")
    last = tmp_path / "first" / "ck" / "last.ckpt"
    saved = torch.load(last, weights_only=False)["callbacks"][KEY]
    # the file carries a count under way (epochs 3 and 4 did not improve on epoch 2's best by min_delta) and the
    # subclass's own field; the resumed runs stop at the next epoch that does not improve, by that count
    assert saved["wait_count"] == 2 and saved["warmup"] == 1 and torch.isfinite(saved["best_score"])

    theirs = train_parity_side("lightning", spec(max_epochs=20, ckpt_path=str(last)), tmp_path / "lightning")
    ours = train_parity_side("loopgen", spec(max_epochs=20, ckpt_path=str(last)), tmp_path / "loopgen")
    assert ours["records"]["events"] == theirs["records"]["events"]  # each check's count and best score
    assert ours["records"]["final"] == theirs["records"]["final"]
    assert theirs["records"]["final"]["current_epoch"] == 6
    different = [key for key, value in theirs["state_dict"].items() if not torch.equal(value, ours["state_dict"][key])]
    assert not different
    assert ours["checkpoints"] == theirs["checkpoints"]
