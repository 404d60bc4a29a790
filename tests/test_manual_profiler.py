"""The profiler with manual optimization (`self.automatic_optimization = False`), against pytorch_lightning.Trainer
with the same SimpleProfiler: Lightning times each step the module makes through its optimizers as an
`optimizer_step` action (inside the training step's), with the hooks called inside it as actions of their own.
Every action the script records is one of Lightning's, called as many times (the script has no actions for the
hooks nobody defines, nor for Lightning's own loops; `train_dataloader_iter` / `val_dataloader_iter` are its own).

    pytest tests/test_manual_profiler.py -p no:xdist
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.helpers import ROOT, env_with_root, render, write_spec

pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

STOP = {"class_path": "tests.parity.callbacks.StopRequest", "init_args": {}}
CASES = {
    # two optimizers toggled, two steps a batch; the model's on_before_optimizer_step runs inside each step
    "gan": ("tests.parity.manual_models.ManualGAN", {"max_epochs": 2, "callbacks": [STOP]}),
    # accumulation by hand: a step every third batch, clip_gradients, validation twice an epoch
    "accumulate": ("tests.parity.manual_models.ManualAccumulateClip", {"max_epochs": 2, "val_check_interval": 0.5}),
}
OWN_ACTIONS = {"train_dataloader_iter", "val_dataloader_iter"}

LIGHTNING = """
import sys
import pytorch_lightning as pl
import yaml
from pytorch_lightning.profilers import SimpleProfiler
from tests.harness import callback_entry, instantiate

for path in sys.argv[1:]:
    spec = yaml.safe_load(open(path))
    pl.seed_everything(spec["seed_everything"], workers=True)  # as LightningCLI seeds
    flags = dict(spec["trainer"])
    flags["profiler"] = SimpleProfiler(**flags["profiler"]["init_args"])
    flags["callbacks"] = [instantiate(callback_entry(entry)) for entry in flags.get("callbacks") or []]
    pl.Trainer(**flags).fit(instantiate(spec["model"]))
"""


def spec(model: str, flags: dict, directory: Path) -> dict:
    profiler = {"class_path": "SimpleProfiler", "init_args": {"dirpath": str(directory), "filename": "perf",
                                                               "extended": True}}  # fmt: skip
    trainer = {"accelerator": "cpu", "logger": False, "enable_checkpointing": False, "enable_progress_bar": False,
               "enable_model_summary": False, "profiler": profiler, **flags}  # fmt: skip
    return {"seed_everything": 42, "model": {"class_path": model}, "trainer": trainer}


def calls(report: Path) -> dict[str, int]:
    """Action -> number of calls, from the rows of SimpleProfiler's extended table."""
    rows = {}
    for line in report.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[2].isdigit() and cells[0] != "Total":
            rows[cells[0]] = int(cells[2])
    return rows


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, dict]]:
    """Each case trained by Lightning (one interpreter for all) and by its script (one for all)."""
    root = tmp_path_factory.mktemp("manual_profiler")
    lightning_specs, scripts = [], []
    for name, (model, flags) in CASES.items():
        lightning_specs.append(write_spec(root, spec(model, flags, root / "lightning" / name), f"{name}_pl.yaml"))
        script = root / f"{name}.py"
        spec_path = write_spec(root, spec(model, flags, root / "script" / name), f"{name}.yaml")
        script.write_text(render(spec_path, script_name=script.name), encoding="utf-8")
        scripts.append(str(script))
    env = {**env_with_root(), "OMP_NUM_THREADS": "1"}
    run_scripts = f"import runpy\nfor script in {scripts!r}:\n    runpy.run_path(script, run_name='__main__')"
    for code, args in ((textwrap.dedent(LIGHTNING), lightning_specs), (run_scripts, [])):
        result = subprocess.run(
            [sys.executable, "-c", code, *map(str, args)], cwd=ROOT, env=env, capture_output=True, text=True,
            timeout=600,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr[-4000:]
    return {
        name: (calls(root / "lightning" / name / "fit-perf.txt"), calls(root / "script" / name / "fit-perf.txt"))
        for name in CASES
    }


@pytest.mark.parametrize("name", list(CASES))
def test_manual_steps_are_profiled_as_lightning_profiles_them(reports: dict, name: str) -> None:
    lightning, script = reports[name]
    ours = {action: count for action, count in script.items() if action not in OWN_ACTIONS}
    assert ours == {action: lightning[action] for action in ours if action in lightning}, (ours, lightning)
    # the steps the module made, each an action, and the training steps they run in
    assert script["optimizer_step"] == lightning["optimizer_step"] > 0
    assert script["[Strategy]SingleDeviceStrategy.training_step"] == lightning["run_training_batch"]
    if name == "gan":  # two steps a batch, each calling the model's hook inside it
        assert script["optimizer_step"] == 2 * lightning["run_training_batch"]
        assert script["[LightningModule]ManualGAN.on_before_optimizer_step"] == script["optimizer_step"]
