"""A resumed run's Timer goes on from the training time in the checkpoint, as Lightning's does: it stops sooner, or
at once (at fit's start) when the time was used up before. Both sides resume from the same checkpoint, which
Lightning's Trainer wrote. ClockModel's clock is the work done (a training step is a second), so the stops are
the same batch on both sides; the uninterrupted runs are the parity cases `timer_*` and `max_time_*`
(tests/parity/test_parity.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import train_parity_side

torch = pytest.importorskip("torch")
pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow


def spec(max_time: dict, ckpt_path: str | None = None) -> dict:
    return {
        "seed_everything": 42,
        "model": {"class_path": "tests.parity.models.ClockModel"},
        "trainer": {
            "max_epochs": 4,
            "max_time": max_time,
            "num_sanity_val_steps": 0,  # Lightning 2.6.6 sanity-checks a run resumed at an epoch's end
            "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_last": True}}],
        },
        **({"ckpt_path": ckpt_path} if ckpt_path else {}),
    }


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Lightning's last.ckpt of a run that max_time stopped in epoch 1, saved at that epoch's end: 14.5 seconds of
    training in it (12 steps and two validations of 5 batches)."""
    directory = tmp_path_factory.mktemp("timer") / "first"
    train_parity_side("lightning", spec({"seconds": 13}), directory)
    last = directory / "ck" / "last.ckpt"
    saved = torch.load(last, weights_only=False)
    assert saved["global_step"] == 12
    assert saved["callbacks"]["Timer"]["time_elapsed"]["train"] == 14.5
    return last


@pytest.mark.parametrize(
    "seconds, steps",
    [
        (20, 6),  # 5.5 seconds left: 6 more steps (no validation on the way)
        (10, 0),  # the time was up before: stopped at fit's start, the fit loop skipped (on_train_end too)
    ],
)
def test_a_resumed_timer_counts_the_time_before(checkpoint: Path, tmp_path: Path, seconds: int, steps: int) -> None:
    case = spec({"seconds": seconds}, ckpt_path=str(checkpoint))
    theirs = train_parity_side("lightning", case, tmp_path / "lightning")
    ours = train_parity_side("loopgen", case, tmp_path / "loopgen")
    final = theirs["records"]["final"]
    assert (final["global_step"] if steps else final) == (12 + steps if steps else None)
    assert ours["records"] == theirs["records"]
    different = [key for key, value in theirs["state_dict"].items() if not torch.equal(value, ours["state_dict"][key])]
    assert not different
    assert ours["checkpoints"] == theirs["checkpoints"]


def test_under_ddp_rank_zeros_clock_decides(tmp_path: Path) -> None:
    """Lightning's Timer broadcasts rank 0's decision: the DDP script takes it (each process's clock would stop
    some processes and not others, which then wait for them forever); one process has nothing to broadcast."""
    from tests.helpers import render

    flags = {"max_epochs": 2, "max_time": {"minutes": 30}}
    ddp = render(dict(spec({"minutes": 30}), trainer={**flags, "strategy": "ddp", "devices": 2}), tmp_path)
    single = render(dict(spec({"minutes": 30}), trainer=flags), tmp_path)
    compile(ddp, "train.py", "exec")
    assert "should_stop = from_rank_zero(should_stop)" in ddp
    assert "from_rank_zero" not in single
    assert "should_stop = self.train_time() >= 1800.0" in single
