"""When configure_optimizers' source does not show its schedulers and only a ReduceLROnPlateau would read what the
module logs, the script decides when it runs: no plateau scheduler came back, and `self.log` stays the no-op it is
when nothing reads the values (the script's general path otherwise collected every value at every step). Both
runs train as Lightning's (tests/parity/test_parity.py, scheduler_chosen_at_run_time_*)."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from tests.helpers import ROOT, render

pytest.importorskip("torch")

SPEC = {
    "seed_everything": 1,
    "model": {"class_path": "tests.parity.models.SchedulerChoiceModel"},
    "trainer": {
        "max_epochs": 1,
        "limit_train_batches": 2,
        "limit_val_batches": 1,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
    },
}


@pytest.mark.parametrize(("plateau", "collected"), [(False, False), (True, True)])
def test_the_logged_values_are_collected_only_when_a_plateau_scheduler_came_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, plateau: bool, collected: bool
) -> None:
    spec = {**SPEC, "model": {**SPEC["model"], "init_args": {"plateau": plateau}}}
    script = tmp_path / "train.py"
    script.write_text(render(spec, tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.setattr("sys.argv", [str(script)])
    model = runpy.run_path(str(script), run_name="rendered")["main"]()
    assert (model.log.__name__ != "ignore_logged") == collected
