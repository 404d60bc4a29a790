"""Lightning's OnExceptionCheckpoint: when fit raises, the run as it stood is saved to dirpath/filename.ckpt, and
the file holds what Lightning's holds (the weights, the optimizer's and the scheduler's states, the callbacks'
states, the epoch and step; Lightning's loop counters compared by name). The script does not resume from it (no
point of the run resumes from exactly), and a fit that ends without an error removes the file, as Lightning's
teardown does."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from tests.harness import checkpoint_facts
from tests.helpers import run_parity_side

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


def test_the_file_written_when_fit_raises_is_lightnings(tmp_path: Path) -> None:
    case = spec(raise_at=13)  # epoch 1's fourth batch: after a validation and a saved checkpoint
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, case, tmp_path / side)
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
        run_parity_side(side, first, tmp_path / side)
        (tmp_path / side / "out.pt").unlink(missing_ok=True)
    bare = run_parity_side("loopgen", spec(raise_at=-1), tmp_path / "loopgen")
    assert bare.returncode != 0
    assert "on_exception.ckpt: written when a run raised (OnExceptionCheckpoint" in bare.stderr, bare.stderr[-2000:]
    assert "pass --ckpt-path with a file ModelCheckpoint wrote before the error" in bare.stderr
    # both resume from Lightning's file (the script's own resumes exactly, with the random state Lightning's lacks)
    shutil.copy(tmp_path / "lightning" / "ck" / "last.ckpt", tmp_path / "loopgen" / "ck" / "last.ckpt")
    outputs = {}
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, {**spec(raise_at=-1), "ckpt_path": "ck/last.ckpt"}, tmp_path / side)
        assert result.returncode == 0, result.stderr[-3000:]
        assert not (tmp_path / side / "crashed" / "on_exception.ckpt").exists(), side
        outputs[side] = torch.load(tmp_path / side / "out.pt", weights_only=False)
    theirs, ours = outputs["lightning"]["state_dict"], outputs["loopgen"]["state_dict"]
    assert all(torch.equal(value, ours[key]) for key, value in theirs.items())


def saving_on_exception(raise_at: int, trainer: dict | None = None, **checkpoint) -> dict:
    """Two ModelCheckpoints, one saving on exception (with last.ckpt), one not: only the first writes when fit raises."""
    case = spec(raise_at=raise_at, **(trainer or {}))
    case["trainer"]["callbacks"] = [
        {
            "class_path": "ModelCheckpoint",
            "init_args": {
                "dirpath": "ck",
                "monitor": "val_loss",
                "save_last": True,
                "save_on_exception": True,
                **checkpoint,
            },
        },
        {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "every", "every_n_train_steps": 5}},
    ]
    return case


@pytest.mark.parametrize(
    ("raise_at", "checkpoint", "files"),
    [
        # in an accumulation window (3 batches a step): the step count, the weights only
        (
            13,
            {"save_weights_only": True, "trainer": {"accumulate_grad_batches": 3}},
            ["epoch=0-step=4.ckpt", "epoch=1-step=5.ckpt", "last.ckpt"],
        ),
        # epoch 1's fourth batch: the run's state in the file's own name, and in last.ckpt, beside epoch 0's file
        (13, {}, ["epoch=0-step=10.ckpt", "epoch=1-step=13.ckpt", "last.ckpt"]),
        # a name taken by epoch 0's file is overwritten (Lightning's name has no version); no last.ckpt to update
        (13, {"filename": "crash", "save_last": False, "save_top_k": -1}, ["crash.ckpt"]),
        # right after the epoch-end save at step 10 (nothing new to save), and before any step (nothing to save)
        (10, {}, ["epoch=0-step=10.ckpt", "last.ckpt"]),
        (0, {}, []),
    ],
    ids=["accumulating", "mid-epoch", "fixed-name", "just-saved", "first-batch"],
)
def test_model_checkpoint_saves_on_exception_as_lightnings(
    tmp_path: Path, raise_at: int, checkpoint: dict, files: list[str]
) -> None:
    case = saving_on_exception(raise_at, **checkpoint)
    outputs = {}
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, case, tmp_path / side)
        assert result.returncode != 0 and f"RuntimeError: batch {raise_at} of the run" in result.stderr, result.stderr[
            -3000:
        ]
        outputs[side] = result.stdout
    for directory in ("ck", "every"):
        theirs = checkpoint_facts(tmp_path / "lightning" / directory)
        ours = checkpoint_facts(tmp_path / "loopgen" / directory)
        assert ours == theirs, directory
    assert sorted(fact["path"] for fact in checkpoint_facts(tmp_path / "loopgen" / "ck")) == files
    if files and raise_at == 13:
        raised = tmp_path / "loopgen" / "ck" / (files[1] if len(files) > 1 else files[0])
        named = re.search(r"step=(\d+)", raised.name)
        assert torch.load(raised, weights_only=False)["global_step"] == (int(named[1]) if named else 13)
        said = f"An RuntimeError was raised with message: batch 13 of the run, saved checkpoint to {raised.resolve()}"
        assert said in outputs["loopgen"]
    else:
        assert "was raised with message" not in outputs["loopgen"]


def test_a_file_saved_on_exception_is_not_resumed_from(tmp_path: Path) -> None:
    """last.ckpt, written when fit raised, holds a point in the middle of a batch: the next fit resuming from "last"
    stops before training and says why."""
    assert run_parity_side("loopgen", saving_on_exception(13), tmp_path).returncode != 0
    again = run_parity_side("loopgen", {**saving_on_exception(-1), "ckpt_path": "last"}, tmp_path)
    assert again.returncode != 0
    assert (
        "last.ckpt: written when a run raised (OnExceptionCheckpoint, or ModelCheckpoint's" in again.stderr
    ), again.stderr[-2000:]


@pytest.mark.parametrize(
    ("entry", "trainer", "message"),
    [
        ({}, {}, "OnExceptionCheckpoint without dirpath is not supported by loopgen"),
        ({"dirpath": "crashed"}, {"strategy": "ddp", "devices": 2}, "with the ddp engine is not supported by loopgen"),
        ({"dirpath": "crashed"}, {"fast_dev_run": True}, "with fast_dev_run is not supported by loopgen"),
        ({"dirpath": "crashed"}, {"enable_checkpointing": False}, "the callbacks have a ModelCheckpoint"),
        ({"dirpath": "crashed", "filename": ""}, {}, "The filename cannot be empty"),
        (None, {"strategy": "ddp", "devices": 2}, "save_on_exception=true with the ddp engine is not supported"),
    ],
    ids=["no-dirpath", "ddp", "fast-dev-run", "checkpointing-off", "empty-filename", "saving-ddp"],
)
def test_what_is_refused(tmp_path: Path, entry: dict, trainer: dict, message: str) -> None:
    from loopgen.errors import LoopgenError
    from tests.helpers import render

    case = spec(raise_at=-1, accelerator="cpu", **trainer)
    case["trainer"]["callbacks"] = [
        (
            {"class_path": "OnExceptionCheckpoint", "init_args": entry}
            if entry is not None
            else {"class_path": "ModelCheckpoint", "init_args": {"save_on_exception": True}}
        )
    ]
    with pytest.raises(LoopgenError, match=re.escape(message)):
        render(case, tmp_path)


def test_a_model_checkpoint_subclass_saves_on_exception_as_lightnings(tmp_path: Path) -> None:
    """A user's ModelCheckpoint subclass (on the script's base) given save_on_exception: the files Lightning's
    base writes when fit raises, written at once."""
    case = spec(raise_at=13, enable_checkpointing=True)  # (the runner's default is off unless it sees ModelCheckpoint)
    init = {"dirpath": "ck", "monitor": "val_loss", "save_last": True, "save_on_exception": True}
    case["trainer"]["callbacks"] = [{"class_path": "tests.parity.callbacks.RecordsBest", "init_args": init}]
    outputs = {}
    for side in ("lightning", "loopgen"):
        result = run_parity_side(side, case, tmp_path / side)
        assert result.returncode != 0 and "RuntimeError: batch 13 of the run" in result.stderr, result.stderr[-3000:]
        outputs[side] = result.stdout
    ours = checkpoint_facts(tmp_path / "loopgen" / "ck")
    assert ours == checkpoint_facts(tmp_path / "lightning" / "ck")
    assert [fact["path"] for fact in ours] == ["epoch=0-step=10.ckpt", "epoch=1-step=13.ckpt", "last.ckpt"]
    raised = (tmp_path / "loopgen" / "ck" / "epoch=1-step=13.ckpt").resolve()
    assert f"An RuntimeError was raised with message: batch 13 of the run, saved checkpoint to {raised}" in (
        outputs["loopgen"]
    )
