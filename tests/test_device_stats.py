"""Lightning's DeviceStatsMonitor, beyond the parity cases (`device_stats_*` in tests/parity, the DDP `files` run)
and the CUDA stand-in (tests/test_standins.py): with `cpu_stats: false` on a CPU it reads and writes nothing, and
the script does not import psutil."""

from __future__ import annotations

import csv
import runpy
from pathlib import Path

import pytest

from tests.helpers import ROOT, render

pytest.importorskip("torch")


def spec(cpu_stats: bool | None, directory: Path) -> dict:
    return {
        "seed_everything": 1,
        "model": {"class_path": "tests.parity.models.LoggingModel"},
        "trainer": {
            "max_epochs": 1,
            "limit_train_batches": 3,
            "limit_val_batches": 2,
            "log_every_n_steps": 1,
            "logger": {"class_path": "CSVLogger", "init_args": {"save_dir": str(directory / "logs")}},
            "enable_checkpointing": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [{"class_path": "DeviceStatsMonitor", "init_args": {"cpu_stats": cpu_stats}}],
        },
    }


@pytest.mark.parametrize(("cpu_stats", "written"), [(False, False), (None, True)])
def test_cpu_stats_false_on_a_cpu_reads_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpu_stats: bool | None, written: bool
) -> None:
    script = tmp_path / "train.py"
    script.write_text(render(spec(cpu_stats, tmp_path), tmp_path))
    assert ("\nimport psutil\n" in script.read_text()) == written
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr("sys.argv", [str(script)])
    runpy.run_path(str(script), run_name="rendered")["main"]()
    with open(next((tmp_path / "logs").rglob("metrics.csv")), newline="") as file:
        columns = next(csv.reader(file))
    assert any(column.startswith("DeviceStatsMonitor.on_train_batch_start/") for column in columns) == written
