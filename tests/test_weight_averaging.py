"""Lightning's EMAWeightAveraging resumes as under Lightning: the checkpoint holds the average as its state_dict and
the module's own weights as current_model_state; the script loads both back (the callback's on_load_checkpoint
after the module's weights, as Lightning's restore calls it) and training goes on. Both sides resume from the same
file, which Lightning's Trainer wrote; the uninterrupted runs are compared by the parity cases `*weight_averaging*`
(tests/parity/test_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import train_parity_side
from tests.test_finetuning import spec

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow


# the averaging entry in test_finetuning's spec: BackboneModel (BatchNorm buffers averaged too), last.ckpt kept
EMA = {"class_path": "EMAWeightAveraging", "init_args": {"decay": 0.8, "update_starting_at_epoch": 0}}


def test_a_resumed_averaging_run_trains_as_lightnings(tmp_path: Path) -> None:
    train_parity_side("lightning", spec(EMA, max_epochs=2), tmp_path / "first")
    last = tmp_path / "first" / "ck" / "last.ckpt"
    saved = torch.load(last, weights_only=False)
    # the average is the file's state_dict; the module's weights and the average's count are kept beside it
    assert set(saved["current_model_state"]) == set(saved["state_dict"])
    assert not torch.equal(saved["current_model_state"]["head.1.weight"], saved["state_dict"]["head.1.weight"])
    assert set(saved["averaging_state"]) == {"n_averaged"}

    theirs = train_parity_side("lightning", spec(EMA, max_epochs=4, ckpt_path=str(last)), tmp_path / "lightning")
    ours = train_parity_side("loopgen", spec(EMA, max_epochs=4, ckpt_path=str(last)), tmp_path / "loopgen")
    different = [key for key, value in theirs["state_dict"].items() if not torch.equal(value, ours["state_dict"][key])]
    assert not different
    assert ours["checkpoints"] == theirs["checkpoints"]
