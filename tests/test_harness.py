"""tests/harness.py: the spec reading that both Lightning reference runners share."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.harness import (
    ROOT,
    Case,
    SpecError,
    callback_entry,
    case_ids,
    checkpoint_facts,
    cli_configure_optimizers,
    env_with_root,
    in_directory,
    instantiate,
    lightning_callback,
)

torch = pytest.importorskip("torch")


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layer = torch.nn.Linear(2, 1)


SGD = {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.1}}


def test_imports_no_framework() -> None:
    """Both venvs' Pythons import it: nothing heavier than the standard library at module level."""
    code = (
        "import sys, tests.harness; print(sorted({'torch', 'pytorch_lightning', 'loopgen', 'yaml'} & set(sys.modules)))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env_with_root(), capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


def test_instantiate() -> None:
    optimizer = instantiate(SGD, Net().parameters())
    assert isinstance(optimizer, torch.optim.SGD) and optimizer.param_groups[0]["lr"] == 0.1
    assert isinstance(instantiate("tests.test_harness.Net"), Net)
    with pytest.raises(SpecError, match="dotted"):
        instantiate("Net")
    with pytest.raises(SpecError, match="class_path"):
        instantiate({"init_args": {}})


def test_plateau_monitor_is_the_config_key_not_an_argument() -> None:
    model = Net()
    plateau = {"class_path": "torch.optim.lr_scheduler.ReduceLROnPlateau", "init_args": {"monitor": "val_loss"}}
    cli_configure_optimizers(model, {"optimizer": SGD, "lr_scheduler": plateau})
    config = model.configure_optimizers()
    assert isinstance(config["lr_scheduler"]["scheduler"], torch.optim.lr_scheduler.ReduceLROnPlateau)
    assert config["lr_scheduler"]["monitor"] == "val_loss"
    assert list(config["optimizer"].param_groups[0]["params"]) == list(model.parameters())


def test_other_schedulers_and_no_scheduler() -> None:
    model = Net()
    step = {"class_path": "torch.optim.lr_scheduler.StepLR", "init_args": {"step_size": 2}}
    cli_configure_optimizers(model, {"optimizer": SGD, "lr_scheduler": step})
    [optimizer], [scheduler] = model.configure_optimizers()
    assert isinstance(scheduler, torch.optim.lr_scheduler.StepLR) and scheduler.optimizer is optimizer
    cli_configure_optimizers(model, {"optimizer": SGD})
    assert isinstance(model.configure_optimizers(), torch.optim.SGD)


def test_without_optimizer_the_model_keeps_its_own() -> None:
    model = Net()
    cli_configure_optimizers(model, {})
    assert "configure_optimizers" not in vars(model)
    with pytest.raises(SpecError, match="lr_scheduler without optimizer"):
        cli_configure_optimizers(model, {"lr_scheduler": "torch.optim.lr_scheduler.StepLR"})


def test_case_ids_refuse_repeats() -> None:
    assert case_ids([Case("a", {}), Case("b", {})]) == ["a", "b"]
    with pytest.raises(ValueError, match="'a'"):
        case_ids([Case("a", {}), Case("b", {}), Case("a", {})])


def test_lightning_callback_spellings() -> None:
    for spelling in (
        "ModelCheckpoint",
        "pytorch_lightning.callbacks.ModelCheckpoint",
        "lightning.pytorch.callbacks.ModelCheckpoint",
        "pytorch_lightning.callbacks.model_checkpoint.ModelCheckpoint",
    ):
        assert lightning_callback(spelling) == "ModelCheckpoint"
        assert callback_entry(spelling) == {"class_path": "pytorch_lightning.callbacks.ModelCheckpoint"}
    assert lightning_callback("lightning.pytorch.callbacks.early_stopping.EarlyStopping") == "EarlyStopping"
    assert lightning_callback("my.callbacks.ModelCheckpoint") is None
    assert lightning_callback("pytorch_lightning.callbacks.LearningRateMonitor") == "LearningRateMonitor"
    assert lightning_callback("pytorch_lightning.callbacks.LearningRateFinder") is None
    assert lightning_callback("lightning.pytorch.callbacks.stochastic_weight_avg.StochasticWeightAveraging") == (
        "StochasticWeightAveraging"
    )
    mine = {"class_path": "tests.parity.callbacks.StopRequest", "init_args": {"at_step": 2}}
    assert callback_entry(mine) == mine


def test_in_directory(tmp_path) -> None:
    """default_root_dir is the directory; a ModelCheckpoint's relative dirpath goes under it, an absolute one stays."""
    callbacks = [
        {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "best", "monitor": "val_loss"}},
        {"class_path": "lightning.pytorch.callbacks.ModelCheckpoint", "init_args": {"dirpath": "/elsewhere"}},
        "pytorch_lightning.callbacks.ModelCheckpoint",
        {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss"}},
    ]
    spec = {"model": "m.M", "trainer": {"max_epochs": 1, "callbacks": callbacks}}
    moved = in_directory(spec, tmp_path)
    assert moved["trainer"]["default_root_dir"] == str(tmp_path)
    assert [c.get("init_args") for c in moved["trainer"]["callbacks"]] == [
        {"dirpath": str(tmp_path / "best"), "monitor": "val_loss"},
        {"dirpath": "/elsewhere"},
        {},
        {"monitor": "val_loss"},
    ]
    assert spec["trainer"]["callbacks"][0]["init_args"]["dirpath"] == "best"  # the spec itself is left as it was
    assert in_directory({"model": "m.M"}, tmp_path)["trainer"] == {"default_root_dir": str(tmp_path)}


def test_checkpoint_facts(tmp_path) -> None:
    """Files sorted, links named, paths in ModelCheckpoint's state relative, the version and the script's own key
    left out, `loops` compared by name only, a file that does not load reported."""
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    best = str(folder / "epoch=1.ckpt")
    state = {
        "best_model_path": best,
        "best_k_models": {best: torch.tensor(0.5)},
        "last_model_path": str(folder / "last.ckpt"),
        "dirpath": str(folder),
        "kth_value": torch.tensor(float("inf")),
    }
    checkpoint = {
        "epoch": 1,
        "global_step": 20,
        "pytorch-lightning_version": "2.6.6",
        "loopgen": {"rng": 1},
        "loops": {"fit_loop": {}},
        "state_dict": {"w": torch.tensor([1.0, 2.0])},
        "callbacks": {"ModelCheckpoint{}": state, "EarlyStopping{}": {"wait_count": 1}},
    }
    torch.save(checkpoint, best)
    os.symlink("epoch=1.ckpt", folder / "last.ckpt")
    (tmp_path / "broken.ckpt").write_bytes(b"not a checkpoint")
    broken, first, last = checkpoint_facts(tmp_path)
    assert broken["path"] == "broken.ckpt" and broken["unreadable"]
    assert (first["path"], first["link"], last["path"], last["link"]) == (
        "checkpoints/epoch=1.ckpt",
        None,
        "checkpoints/last.ckpt",
        "epoch=1.ckpt",
    )
    assert first["keys"] == ["callbacks", "epoch", "global_step", "loops", "state_dict"]
    assert "loops" not in first and first["epoch"] == 1
    assert first["state_dict"] == {"w": ("tensor", "torch.float32", [2], [1.0, 2.0])}
    assert first["callbacks"] == {
        "ModelCheckpoint{}": {
            "best_model_path": "checkpoints/epoch=1.ckpt",
            "best_k_models": {"checkpoints/epoch=1.ckpt": ("tensor", "torch.float32", [], 0.5)},
            "last_model_path": "checkpoints/last.ckpt",
            "dirpath": "checkpoints",
            "kth_value": ("tensor", "torch.float32", [], float("inf")),
        },
        "EarlyStopping{}": {"wait_count": 1},
    }
    assert {k: v for k, v in last.items() if k not in ("path", "link")} == {
        k: v for k, v in first.items() if k not in ("path", "link")
    }
