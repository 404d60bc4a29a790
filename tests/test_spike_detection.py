"""Lightning's SpikeDetection, beyond the parity case that never spikes (`spike_detection_*` in tests/parity): a
loss that spikes stops both Lightning's Trainer and the script with TrainingSpikeException at the same batch, after
the same checkpoints, with the same batches in the same skip file; a resume from a checkpoint that holds its state
stops with a clear error (Lightning's fails to load that state); and what is refused at render time."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from loopgen.errors import LoopgenError
from tests.harness import checkpoint_facts, env_with_root
from tests.helpers import render

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow

RUN = textwrap.dedent("""
    import json, os, sys, yaml
    from pathlib import Path
    from tests.harness import checkpoint_facts
    from tests.parity import runner

    side, spec_path, out = sys.argv[1:]
    spec = yaml.safe_load(Path(spec_path).read_text())
    directory = Path(out).parent
    try:
        if side == "lightning":
            os.chdir(directory)
            runner.run_lightning(spec)
        else:
            runner.run_loopgen(spec, directory)
        raised = None
    except Exception as error:
        raised = [type(error).__name__, str(error)]
    Path(out).write_text(json.dumps({"raised": raised}))
    """)


def spec(**spike_args) -> dict:
    return {
        "seed_everything": 3,
        "model": {"class_path": "tests.parity.models.SpikingModel", "init_args": {"spike_at": 13}},
        "trainer": {
            "max_epochs": 3,
            "logger": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [
                {"class_path": "SpikeDetection", "init_args": spike_args},
                {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_top_k": -1,
                                                                "every_n_train_steps": 4}},
            ],
        },
    }  # fmt: skip


def run_side(side: str, spec_dict: dict, directory: Path) -> dict:
    directory.mkdir(parents=True)
    spec_path = directory / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(spec_dict), encoding="utf-8")
    out = directory / "out.json"
    result = subprocess.run(
        [sys.executable, "-c", RUN, side, str(spec_path), str(out)],
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(out.read_text())


@pytest.mark.parametrize("path", [None, "spikes"])
def test_a_spike_stops_training_as_lightnings_does(tmp_path: Path, path: str | None) -> None:
    """Batch 3 of epoch 1 (global step 13, ten batches an epoch) spikes: batches 2 and 3 are written to the skip
    file (in default_root_dir, or in the directory given), after the checkpoints of steps 4, 8 and 12."""
    args = {} if path is None else {"exclude_batches_path": path}
    found = {}
    for side in ("lightning", "loopgen"):
        directory = tmp_path / side
        found[side] = run_side(side, spec(**args), directory)
        skip_file = directory / (path or ".") / "skip_batches.json"
        found[side]["skipped"] = json.loads(skip_file.read_text()) if skip_file.exists() else None
        # (SpikeDetection's state names its file, in each side's directory)
        found[side]["checkpoints"] = json.loads(json.dumps(checkpoint_facts(directory)).replace(str(directory), "."))
    assert found["loopgen"]["raised"] == ["TrainingSpikeException", "Training spike detected in batch 3"]
    assert found["loopgen"]["skipped"] == [2, 3]
    assert [fact["path"] for fact in found["loopgen"]["checkpoints"]] == [
        "ck/epoch=0-step=4.ckpt", "ck/epoch=0-step=8.ckpt", "ck/epoch=1-step=12.ckpt"
    ]  # fmt: skip
    assert found["loopgen"] == found["lightning"]


def test_without_a_spike_the_run_ends_and_its_state_stops_a_resume(tmp_path: Path) -> None:
    """With rtol 20 the tenfold loss is no spike (it is not 20 means off the mean): training ends. Resuming from
    its last checkpoint stops at once, naming the skip file, instead of training on with an empty running mean."""
    plain = spec(rtol=20.0)
    directory = tmp_path / "loopgen"
    assert run_side("loopgen", plain, directory)["raised"] is None
    last = max((directory / "ck").glob("*.ckpt"))
    state = torch.load(last, weights_only=False)["callbacks"]["SpikeDetection"]
    assert state["bad_batches"] == [] and state["bad_batches_path"] == str(directory / "skip_batches.json")
    script = directory / "train.py"
    script.write_text(render(plain, tmp_path), encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script), "--ckpt-path", str(last)],
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
        cwd=directory,
    )
    assert result.returncode != 0
    assert "This checkpoint holds SpikeDetection's state, which cannot be restored" in result.stderr


@pytest.mark.parametrize(
    "callbacks, trainer, message",
    [
        (
            [{"class_path": "SpikeDetection", "init_args": {"exclude_batches_path": "skip.json"}}],
            {},
            "is not supported by loopgen (at a spike Lightning makes the file's directory",
        ),
        (
            [{"class_path": "SpikeDetection"}, {"class_path": "lightning.pytorch.callbacks.SpikeDetection"}],
            {},
            "a second SpikeDetection callback (pytorch_lightning.callbacks.SpikeDetection) is not supported",
        ),
        (
            [{"class_path": "SpikeDetection"}],
            {"terminate_on_nan": True},
            "SpikeDetection in a spec that follows Lightning 1.9.5 is not supported by loopgen",
        ),
        ([{"class_path": "SpikeDetection", "init_args": {"mode": "up"}}], {}, "expected one of min, max"),
        ([{"class_path": "SpikeDetection", "init_args": {"window": 0}}], {}, "expected an integer >= 1"),
    ],
)
def test_what_cannot_run_is_refused_at_render_time(tmp_path: Path, callbacks: list, trainer: dict, message: str):
    spec_dict = {"model": {"class_path": "tests.parity.models.MLP"}, "trainer": {**trainer, "callbacks": callbacks}}
    with pytest.raises(LoopgenError) as excinfo:
        render(spec_dict, tmp_path)
    assert message in str(excinfo.value)
