"""Lightning's ThroughputMonitor in fit: the script and Lightning 2.6.6 train the same module with the same
ThroughputMonitor and CSVLogger, and write the same rows: the same names at the same steps and epochs, the same
counts of batches, samples and items, and a time or rate wherever Lightning writes one (their values are the
clocks', which differ from run to run). What the script does not serve is refused at render time."""

from __future__ import annotations

import csv
import re
from pathlib import Path
from typing import Any

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import render, run_parity_side

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

FUNCTIONS = "tests.parity.throughput"


def spec(model: str = "FlopsModel", monitor: dict | None = None, **trainer: Any) -> dict:
    entry = {"class_path": "ThroughputMonitor", "init_args": {"batch_size_fn": f"{FUNCTIONS}.batch_size"}}
    entry.update(monitor or {})
    return {
        "seed_everything": 3,
        "model": {"class_path": f"tests.parity.{'throughput' if model == 'FlopsModel' else 'models'}.{model}"},
        "trainer": {
            "max_epochs": 2,
            "accelerator": "cpu",
            "log_every_n_steps": 2,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": "logs"}},
            "callbacks": [entry],
            **trainer,
        },
    }


def rows(directory: Path) -> list[dict[str, str]]:
    files = list(directory.glob("logs/**/metrics.csv"))
    if not files:
        return []
    with files[0].open(newline="") as file:
        return list(csv.DictReader(file))


def clocked(name: str) -> bool:
    return name.endswith(("time", "per_sec"))


def comparable(row: dict[str, str]) -> dict[str, str]:
    """A row with each time and rate replaced by whether it is there and positive."""
    return {name: (value and str(float(value) > 0)) if clocked(name) else value for name, value in row.items()}


CASES = {
    # window 3, "|", items and flops: every rate; steps every 2 batches
    "rates": spec(
        monitor={
            "init_args": {"batch_size_fn": f"{FUNCTIONS}.batch_size", "length_fn": f"{FUNCTIONS}.features"},
            "dict_kwargs": {"window_size": 3, "separator": "|"},
        }
    ),
    # two validations an epoch, written after the batches that stepped (3 to a step)
    "accumulating": spec(
        monitor={"dict_kwargs": {"window_size": 2}}, val_check_interval=0.5, accumulate_grad_batches=3
    ),
    # the default window (no rates), a module without flops_per_batch, a function under a second name, and
    # EarlyStopping's stop (the loggers are due when it stops)
    "stopping": spec(
        "CheckpointModel",
        monitor={"init_args": {"batch_size_fn": f"{FUNCTIONS}.count_samples"}},
        max_epochs=6,
        log_every_n_steps=3,
    ),
}
CASES["stopping"]["trainer"]["callbacks"].append(
    {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 0}}
)


# a module that reads trainer.logged_metrics
LOGGED = spec("LoggingModel", monitor={"dict_kwargs": {"window_size": 2}}, max_epochs=3)


@pytest.mark.parametrize("name", list(CASES))
def test_the_rows_written_are_lightnings(tmp_path: Path, name: str) -> None:
    case, errors = CASES[name], {}
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, case, tmp_path / side)
        assert result.returncode == 0, result.stderr[-3000:]
        errors[side] = result.stderr
    theirs, ours = rows(tmp_path / "lightning"), rows(tmp_path / "loopgen")
    assert theirs and list(ours[0]) == list(theirs[0])
    assert [comparable(row) for row in ours] == [comparable(row) for row in theirs]
    written = {key for row in ours for key, value in row.items() if value}
    separator = "|" if name == "rates" else "/"
    expected = {f"train{separator}samples", f"validate{separator}batches"}
    if name == "rates":
        expected |= {"train|lengths", "train|device|items_per_sec", "validate|device|flops_per_sec"}
    assert expected <= written, written
    if name == "stopping":
        assert not any(clocked(key) and "per_sec" in key for key in written)  # the window of 100 never fills
        warned = "you need to define a `flops_per_batch` attribute or property in CheckpointModel"
        assert all(warned in errors[side] for side in errors)


@pytest.mark.parametrize("logger", [False, "zero"], ids=["no-logger", "log-every-0"])
def test_without_writing_the_functions_still_run_and_raise_as_lightnings(tmp_path: Path, logger: Any) -> None:
    """Nothing is written, but each batch is counted: a function that counts no samples raises Lightning's error."""
    trainer = {"logger": False} if logger is False else {"log_every_n_steps": 0}
    case = spec(monitor={"init_args": {"batch_size_fn": f"{FUNCTIONS}.no_samples"}}, **trainer)
    message = "ValueError: Expected samples (0) to be greater or equal than batches (1)"
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, case, tmp_path / side)
        assert result.returncode != 0 and message in result.stderr, result.stderr[-3000:]
    text = render(case, tmp_path)
    monitor = text.split("class ThroughputMonitor")[1].split("\n\n\n")[0]
    assert "self.loggers" not in monitor and "def log(" not in monitor


@pytest.mark.parametrize(
    ("monitor", "trainer", "message"),
    [
        ({"init_args": {}}, {}, "ThroughputMonitor without batch_size_fn is not supported by loopgen"),
        (
            {"init_args": {"batch_size_fn": "batch_size"}},
            {},
            "expected the import path of a function, as package.module.function, got batch_size",
        ),
        (
            {"init_args": {"batch_size_fn": f"{FUNCTIONS}.batch_sise"}},
            {},
            (
                "defines no function 'batch_sise'; it defines batch_size, features, count_samples, no_samples;"
                f" did you mean '{FUNCTIONS}.batch_size'?"
            ),
        ),
        (
            {"init_args": {"batch_size_fn": "tests.parity.throughput_fns.batch_size"}},
            {},
            "cannot find module 'tests.parity.throughput_fns' of the function",
        ),
        ({"dict_kwargs": {"window_size": 1}}, {}, "window_size (line"),
        ({}, {"strategy": "ddp", "devices": 2}, "ThroughputMonitor with the ddp engine is not supported by loopgen"),
        ({}, {"accelerator": "gpu"}, "ThroughputMonitor with accelerator cuda and tests.parity.throughput.FlopsModel"),
        ({}, {"track_grad_norm": 2}, "ThroughputMonitor in a spec that follows Lightning 1.9.5 is not supported"),
        ({}, {"accelerator": "tpu", "devices": 1}, "ThroughputMonitor with accelerator tpu is not supported"),
    ],
    ids=["no-function", "not-a-path", "misspelt", "no-module", "window", "ddp", "gpu-flops", "lightning-1.9.5", "tpu"],
)
def test_what_is_refused(tmp_path: Path, monitor: dict, trainer: dict, message: str) -> None:
    case = spec(**trainer)
    case["trainer"]["callbacks"][0].update(monitor)
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)


def test_a_second_monitor_several_val_loaders_and_evaluation_are_refused(tmp_path: Path) -> None:
    case = spec()
    case["trainer"]["callbacks"] *= 2
    with pytest.raises(LoopgenError, match="a second ThroughputMonitor is not supported by loopgen"):
        render(case, tmp_path)
    with pytest.raises(LoopgenError, match="val_dataloader returning several loaders with a ThroughputMonitor"):
        render(spec("TwoValidationLoadersModel"), tmp_path)
    with pytest.raises(LoopgenError, match=re.escape("not written for a ThroughputMonitor (Lightning's also counts")):
        render({**spec(), "loop": {"subcommands": ["fit", "validate"]}}, tmp_path)


def test_its_rows_reach_trainer_logged_metrics_as_lightnings(tmp_path: Path) -> None:
    """A module that reads trainer.logged_metrics (at each epoch's start) sees the monitor's rows there too."""
    case, events = LOGGED, {}
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, case, tmp_path / side)
        assert result.returncode == 0, result.stderr[-3000:]
        recorded = torch.load(tmp_path / side / "out.pt", weights_only=False)["records"]["events"]
        events[side] = [
            (epoch, {name: value > 0 if clocked(name) else value for name, value in values.items()})
            for kind, epoch, values in recorded
            if kind == "logged"
        ]
    assert events["loopgen"] == events["lightning"]
    assert "train/device/samples_per_sec" in events["loopgen"][-1][1]
