"""What runs when training raises, against Lightning 2.6.6's `_call_and_handle_interrupt`: the trainer's status
becomes "interrupted", each callback's `on_exception` runs with the error (Lightning's order), then the datamodule's,
an MLflow run ends FAILED, and the error goes on; after a KeyboardInterrupt both say so and exit with status 1.
A script with nothing to run then has no try statement at all."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from tests.harness import env_with_root
from tests.helpers import code_of, render

pytest.importorskip("pytorch_lightning")
pytest.importorskip("mlflow")

pytestmark = pytest.mark.slow

PROJECT = """
import json

import pytorch_lightning as pl
import torch
from torch.utils.data import DataLoader, TensorDataset


def record(*event):
    with open("events.jsonl", "a", encoding="utf-8") as file:
        file.write(json.dumps(event) + "\\n")


class Net(pl.LightningModule):
    def __init__(self, fail_at: int = 5, error: str = "ValueError"):
        super().__init__()
        self.save_hyperparameters()
        self.layer = torch.nn.Linear(4, 1)

    def training_step(self, batch, batch_idx):
        if self.global_step == self.hparams.fail_at:
            raise {"ValueError": ValueError, "KeyboardInterrupt": KeyboardInterrupt}[self.hparams.error](
                f"at batch {batch_idx}"
            )
        x, y = batch
        loss = torch.nn.functional.mse_loss(self.layer(x), y)
        self.log("loss", loss)
        return loss

    def on_exception(self, exception):  # not a LightningModule hook: Lightning never calls it
        record("model.on_exception")

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Data(pl.LightningDataModule):
    def train_dataloader(self):
        g = torch.Generator().manual_seed(0)
        return DataLoader(TensorDataset(torch.randn(32, 4, generator=g), torch.randn(32, 1, generator=g)), batch_size=4)

    def on_exception(self, exception):
        record("data.on_exception", type(exception).__name__, str(exception))


class Recorder(pl.Callback):
    def __init__(self, name):
        self.name = name

    def on_train_epoch_start(self, trainer, pl_module):
        record(self.name, "on_train_epoch_start", trainer.current_epoch)

    def on_exception(self, trainer, pl_module, exception):
        record(self.name, "on_exception", type(exception).__name__, str(exception), trainer.global_step,
               trainer.interrupted, trainer.state.status, pl_module.layer.weight.tolist())


class Quiet(pl.Callback):
    def on_train_epoch_start(self, trainer, pl_module):
        record("quiet", "on_train_epoch_start")
"""

LIGHTNING = textwrap.dedent("""
    import sys, yaml
    from pathlib import Path
    from tests.parity import runner

    runner.run_lightning(yaml.safe_load(Path(sys.argv[1]).read_text()))
    """)


def spec(error: str = "ValueError", logger: bool = True) -> dict:
    callbacks = [
        {"class_path": "exproj.Recorder", "init_args": {"name": "first"}},
        {"class_path": "exproj.Quiet"},
        {"class_path": "exproj.Recorder", "init_args": {"name": "second"}},
    ]
    mlflow = {"class_path": "MLFlowLogger", "init_args": {"tracking_uri": "file:./mlruns"}}
    return {
        "seed_everything": 1,
        "model": {"class_path": "exproj.Net", "init_args": {"fail_at": 11, "error": error}},
        "data": {"class_path": "exproj.Data"},
        "trainer": {
            "max_epochs": 3,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "enable_checkpointing": False,
            "logger": mlflow if logger else False,
            "callbacks": callbacks,
        },
    }


def run_side(side: str, case: dict, directory: Path) -> dict:
    directory.mkdir(parents=True)
    (directory / "exproj.py").write_text(PROJECT, encoding="utf-8")
    spec_path = directory / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(case), encoding="utf-8")
    env = {**env_with_root(), "MLFLOW_ALLOW_FILE_STORE": "true"}
    env["PYTHONPATH"] = os.pathsep.join([str(directory), env.get("PYTHONPATH", "")])
    if side == "lightning":
        command = [sys.executable, "-c", LIGHTNING, str(spec_path)]
    else:
        script = directory / "train.py"
        script.write_text(render(spec_path, directory), encoding="utf-8")
        command = [sys.executable, str(script)]
    result = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, timeout=300)
    events = directory / "events.jsonl"
    statuses = [line.split()[1] for meta in directory.glob("mlruns/*/*/meta.yaml")
                for line in meta.read_text().splitlines() if line.startswith("status:")]  # fmt: skip
    return {
        "status": result.returncode,
        "output": result.stdout + result.stderr,
        "events": [json.loads(line) for line in events.read_text().splitlines()] if events.exists() else [],
        "mlflow": statuses,
    }


def test_an_error_runs_the_callbacks_then_the_datamodule_and_fails_the_mlflow_run(tmp_path: Path) -> None:
    lightning, script = (run_side(side, spec(), tmp_path / side) for side in ("lightning", "loopgen"))
    assert script["events"] == lightning["events"]
    calls = [e[0] for e in script["events"] if e[0] == "data.on_exception" or e[1:2] == ["on_exception"]]
    assert calls == ["first", "second", "data.on_exception"]
    assert script["events"][-3][2:7] == ["ValueError", "at batch 3", 11, True, "interrupted"]
    assert script["mlflow"] == lightning["mlflow"] == ["4"]  # RunStatus.FAILED
    for side in (lightning, script):
        assert side["status"] == 1
        assert "ValueError: at batch 3" in side["output"]


def test_a_keyboard_interrupt_shuts_down_and_exits_with_status_1(tmp_path: Path) -> None:
    case = spec("KeyboardInterrupt", logger=False)
    lightning, script = (run_side(side, case, tmp_path / side) for side in ("lightning", "loopgen"))
    assert script["events"] == lightning["events"]
    assert [e[2] for e in script["events"] if e[1:2] == ["on_exception"]] == ["KeyboardInterrupt"] * 2
    for side in (lightning, script):
        assert side["status"] == 1
        assert "Detected KeyboardInterrupt, attempting graceful shutdown ..." in side["output"]
        assert "Traceback" not in side["output"]


def test_a_script_with_nothing_to_run_on_an_error_has_no_try(tmp_path: Path) -> None:
    case = spec(logger=False)
    case["trainer"]["callbacks"] = [{"class_path": "exproj.Quiet"}]
    project = PROJECT.replace(
        'def on_exception(self, exception):\n        record("data.',
        'def other(self, exception):\n        record("data.',
    )
    assert project != PROJECT
    (tmp_path / "exproj.py").write_text(project, encoding="utf-8")
    spec_path = tmp_path / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(case), encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        text = render(spec_path, tmp_path)
    finally:
        sys.path.remove(str(tmp_path))
    assert "try:" not in text.split("def main():")[1].split("\ndef ")[0]
    assert "on_exception" not in code_of(text)


def test_a_spec_that_follows_1_9_5_calls_no_datamodule_hook_and_says_1_9_5s_words(tmp_path: Path) -> None:
    """Lightning 1.9.5 calls the callbacks' on_exception and finalizes the loggers, but its datamodule has no
    on_exception, and its KeyboardInterrupt warning is worded differently."""
    case = spec(logger=False)
    case["trainer"]["terminate_on_nan"] = True  # only 1.9.5 has it
    (tmp_path / "exproj.py").write_text(PROJECT, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        old, new = (render(case | {"trainer": {**case["trainer"], **flags}}, tmp_path)
                    for flags in ({}, {"terminate_on_nan": False}))  # fmt: skip
    finally:
        sys.path.remove(str(tmp_path))
    assert "data.on_exception(exception)" in new
    assert "data.on_exception" not in old
    assert old.count(".on_exception(trainer, model, exception)") == new.count(
        ".on_exception(trainer, model, exception)"
    )
    assert 'print("Detected KeyboardInterrupt, attempting graceful shutdown...")' in old
    assert 'print("\\nDetected KeyboardInterrupt, attempting graceful shutdown ...")' in new
