"""tests/harness.py: the spec reading that both Lightning reference runners share."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.harness import ROOT, Case, SpecError, case_ids, cli_configure_optimizers, env_with_root, instantiate

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
