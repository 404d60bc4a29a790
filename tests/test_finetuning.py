"""A user's BaseFinetuning subclass, and Lightning's BackboneFinetuning (the script's own class), resume as under
Lightning: the optimizer groups finetune_function added come back from the checkpoint (the base's load_state_dict,
then on_fit_start, before the optimizer's state), and training goes on with them (BackboneFinetuning's rate from
the one it kept). Both sides resume from the same checkpoint, which Lightning's Trainer wrote; the
uninterrupted runs are compared by the parity cases `finetuning_*` (tests/parity/test_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import train_parity_side

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow


# the callback, its name in the checkpoint, and the parameters of the groups it keeps (the first optimizer's)
FINETUNERS = {
    "subclass": (
        {"class_path": "tests.parity.callbacks.FreezeUnfreeze", "init_args": {"unfreeze_at_epoch": 1}},
        "FreezeUnfreeze",
        [2, 4],  # the head; the backbone's Linear and BatchNorm
    ),
    "backbone_finetuning": (
        {"class_path": "BackboneFinetuning", "init_args": {"unfreeze_backbone_at_epoch": 1}},
        "BackboneFinetuning",
        [4, 2],  # the head and the BatchNorm it kept trainable; the backbone's Linear
    ),
}


def spec(finetuner: dict, max_epochs: int, ckpt_path: str | None = None) -> dict:
    return {
        "seed_everything": 42,
        "model": {"class_path": "tests.parity.models.BackboneModel"},
        "trainer": {
            "max_epochs": max_epochs,
            "callbacks": [
                finetuner,
                {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_last": True}},
            ],
        },
        **({"ckpt_path": ckpt_path} if ckpt_path else {}),
    }


@pytest.mark.parametrize("finetuner", list(FINETUNERS))
def test_a_resumed_finetuning_run_trains_as_lightnings(finetuner: str, tmp_path: Path) -> None:
    entry, key, sizes = FINETUNERS[finetuner]
    train_parity_side("lightning", spec(entry, max_epochs=2), tmp_path / "first")
    last = tmp_path / "first" / "ck" / "last.ckpt"
    saved = torch.load(last, weights_only=False)
    # the backbone was added at epoch 1: two groups, kept by the callback's state under its name
    assert len(saved["optimizer_states"][0]["param_groups"]) == 2
    groups = saved["callbacks"][key]["internal_optimizer_metadata"][0]
    assert [len(group["params"]) for group in groups] == sizes

    theirs = train_parity_side("lightning", spec(entry, max_epochs=4, ckpt_path=str(last)), tmp_path / "lightning")
    ours = train_parity_side("loopgen", spec(entry, max_epochs=4, ckpt_path=str(last)), tmp_path / "loopgen")
    assert ours["records"]["events"] == theirs["records"]["events"]
    different = [key for key, value in theirs["state_dict"].items() if not torch.equal(value, ours["state_dict"][key])]
    assert not different
    assert ours["checkpoints"] == theirs["checkpoints"]
