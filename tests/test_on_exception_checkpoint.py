"""Lightning's OnExceptionCheckpoint: when fit raises, the run as it stood is saved to dirpath/filename.ckpt, and
the file holds what Lightning's holds (the weights, the optimizer's and the scheduler's states, the callbacks'
states, the epoch and step; Lightning's loop counters compared by name). The script does not resume from it (no
point of the run resumes from exactly), and a fit that ends without an error removes the file, as Lightning's
teardown does."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.harness import checkpoint_facts
from tests.helpers import ROOT, env_with_root

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")


def spec(raise_at: int, **trainer) -> dict:
    return {
        "seed_everything": 3,
        "model": {"class_path": "tests.parity.models.RaisingModel", "init_args": {"raise_at": raise_at}},
        "trainer": {
            "max_epochs": 2,
            "logger": False,
            "enable_progress_bar": False,
            "enable_model_summary": False,
            "callbacks": [
                {"class_path": "OnExceptionCheckpoint", "init_args": {"dirpath": "crashed"}},
                {
                    "class_path": "ModelCheckpoint",
                    "init_args": {"dirpath": "ck", "monitor": "val_loss", "save_last": True},
                },
                {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 5}},
            ],
            **trainer,
        },
    }


def run(side: str, case: dict, directory: Path) -> subprocess.CompletedProcess:
    directory.mkdir(parents=True, exist_ok=True)
    spec_path = directory / "spec.yaml"
    spec_path.write_text(yaml.safe_dump(case, sort_keys=False), encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "tests.parity.runner", side, str(spec_path), str(directory / "out.pt")],
        cwd=ROOT,
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_the_file_written_when_fit_raises_is_lightnings(tmp_path: Path) -> None:
    case = spec(raise_at=13)  # epoch 1's fourth batch: after a validation and a saved checkpoint
    for side in ("lightning", "loopgen"):
        result = run(side, case, tmp_path / side)
        assert result.returncode != 0 and "RuntimeError: batch 13 of the run" in result.stderr, result.stderr[-3000:]
    theirs = checkpoint_facts(tmp_path / "lightning" / "crashed")
    ours = checkpoint_facts(tmp_path / "loopgen" / "crashed")
    assert [fact["path"] for fact in ours] == ["on_exception.ckpt"]
    assert ours == theirs
    saved = torch.load(tmp_path / "loopgen" / "crashed" / "on_exception.ckpt", weights_only=False)
    assert (saved["epoch"], saved["global_step"]) == (1, 13)


def test_the_next_fit_resumes_as_lightnings_or_says_why_it_cannot(tmp_path: Path) -> None:
    """After the crash: a fit given ModelCheckpoint's last.ckpt (Lightning's) resumes from it on both sides, trains alike, and
    removes the on-exception file when it ends. Without ckpt_path, Lightning resumes from the newest "last"
    candidate, the on-exception file, in the middle of an epoch; the script stops before training and says so."""
    first = spec(raise_at=13)
    for side in ("lightning", "loopgen"):
        run(side, first, tmp_path / side)
        (tmp_path / side / "out.pt").unlink(missing_ok=True)
    bare = run("loopgen", spec(raise_at=-1), tmp_path / "loopgen")
    assert bare.returncode != 0
    assert "on_exception.ckpt: written by OnExceptionCheckpoint when a run raised" in bare.stderr, bare.stderr[-2000:]
    assert "pass --ckpt-path with a ModelCheckpoint file (last.ckpt)" in bare.stderr
    # both resume from Lightning's file (the script's own resumes exactly, with the random state Lightning's lacks)
    shutil.copy(tmp_path / "lightning" / "ck" / "last.ckpt", tmp_path / "loopgen" / "ck" / "last.ckpt")
    outputs = {}
    for side in ("lightning", "loopgen"):
        result = run(side, {**spec(raise_at=-1), "ckpt_path": "ck/last.ckpt"}, tmp_path / side)
        assert result.returncode == 0, result.stderr[-3000:]
        assert not (tmp_path / side / "crashed" / "on_exception.ckpt").exists(), side
        outputs[side] = torch.load(tmp_path / side / "out.pt", weights_only=False)
    theirs, ours = outputs["lightning"]["state_dict"], outputs["loopgen"]["state_dict"]
    assert all(torch.equal(value, ours[key]) for key, value in theirs.items())


@pytest.mark.parametrize(
    ("entry", "trainer", "message"),
    [
        ({}, {}, "OnExceptionCheckpoint without dirpath is not supported by loopgen"),
        ({"dirpath": "crashed"}, {"strategy": "ddp", "devices": 2}, "with the ddp engine is not supported by loopgen"),
        ({"dirpath": "crashed"}, {"fast_dev_run": True}, "with fast_dev_run is not supported by loopgen"),
        ({"dirpath": "crashed"}, {"enable_checkpointing": False}, "the callbacks have a ModelCheckpoint"),
        ({"dirpath": "crashed", "filename": ""}, {}, "The filename cannot be empty"),
    ],
    ids=["no-dirpath", "ddp", "fast-dev-run", "checkpointing-off", "empty-filename"],
)
def test_what_is_refused(tmp_path: Path, entry: dict, trainer: dict, message: str) -> None:
    from loopgen.errors import LoopgenError
    from tests.helpers import render

    case = spec(raise_at=-1, accelerator="cpu", **trainer)
    case["trainer"]["callbacks"] = [{"class_path": "OnExceptionCheckpoint", "init_args": entry}]
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)
