"""Lightning's StochasticWeightAveraging beyond the uninterrupted parity cases (`swa_*` in tests/parity): a run
resumed from a checkpoint Lightning wrote trains as Lightning's resumed run (SWALR comes back from the callback's
state, the module's own scheduler is not restored), whether the file was written before the swap or after it;
and what the script cannot serve with it is refused at render time, naming the entry."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import render, train_parity_side

torch = pytest.importorskip("torch")


def spec(max_epochs: int, ckpt_path: str | None = None, model: str = "BatchNormNet", **swa_args) -> dict:
    return {
        "seed_everything": 7,
        "model": {"class_path": f"tests.parity.models.{model}"},
        "trainer": {
            "max_epochs": max_epochs,
            "callbacks": [
                {"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.05, **swa_args}},
                {"class_path": "ModelCheckpoint", "init_args": {"dirpath": "ck", "save_top_k": -1}},
            ],
        },
        **({"ckpt_path": ckpt_path} if ckpt_path else {}),
    }


@pytest.mark.slow
@pytest.mark.parametrize(
    ("model", "written"), [("BatchNormNet", "epoch=2-step=30"), ("StepScheduleModel", "epoch=0-step=10")]
)
def test_a_resumed_run_trains_as_lightnings(model: str, written: str, tmp_path: Path) -> None:
    """SWA from epoch 2 (0-based 1) of 4: a file from epoch 2 holds SWALR's state and the average of two epochs (the
    module's scheduler gone); one from epoch 0 comes before the swap (the module's step scheduler in it)."""
    train_parity_side("lightning", spec(4, model=model, swa_epoch_start=2, annealing_epochs=2), tmp_path / "first")
    saved = tmp_path / "first" / "ck" / f"{written}.ckpt"
    state = torch.load(saved, weights_only=False)["callbacks"]["StochasticWeightAveraging"]
    assert (state["scheduler_state"] is None) == (written == "epoch=0-step=10")

    resumed = spec(4, str(saved), model=model, swa_epoch_start=2, annealing_epochs=2)
    theirs = train_parity_side("lightning", resumed, tmp_path / "lightning")
    ours = train_parity_side("loopgen", resumed, tmp_path / "loopgen")
    different = [key for key, value in theirs["state_dict"].items() if not torch.equal(value, ours["state_dict"][key])]
    assert not different
    assert ours["checkpoints"] == theirs["checkpoints"]
    assert ours["records"]["lrs"] == theirs["records"]["lrs"]


def refused(tmp_path: Path, **changes) -> str:
    case = spec(3)
    case["trainer"].update(changes.pop("trainer", {}))
    case.update(changes)
    with pytest.raises(LoopgenError) as raised:
        render(case, tmp_path)
    return str(raised.value)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"trainer": {"accumulate_grad_batches": {0: 1, 1: 2}}}, "with an accumulation schedule"),
        ({"trainer": {"max_steps": 20}}, "with max_steps"),
        ({"trainer": {"max_epochs": -1}}, "with max_epochs=-1"),
        ({"trainer": {"strategy": "ddp", "devices": 2, "accelerator": "cpu"}}, "with strategy ddp"),
        ({"optimizer": {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.1}}}, "the spec's optimizer:"),
        ({"model": {"class_path": "tests.parity.manual_models.ManualAccumulateClip"}}, "with manual optimization"),
    ],
)
def test_what_the_loop_cannot_serve_is_refused(tmp_path: Path, changes: dict, expected: str) -> None:
    message = refused(tmp_path, **changes)
    assert "StochasticWeightAveraging" in message and expected in message


def test_its_neighbours_and_arguments_are_refused(tmp_path: Path) -> None:
    second = {"class_path": "StochasticWeightAveraging", "init_args": {"swa_lrs": 0.1}}
    ema = {"class_path": "EMAWeightAveraging"}
    for extra, expected in ((second, "a second StochasticWeightAveraging"), (ema, "EMAWeightAveraging")):
        case = spec(3)
        case["trainer"]["callbacks"].append(extra)
        with pytest.raises(LoopgenError, match=expected):
            render(case, tmp_path)
    for args, expected in (({"swa_lrs": 1}, "expected a positive float"), ({"swa_lrs": None}, "without swa_lrs"),
                           ({"swa_epoch_start": 0}, "an integer >= 1"), ({"avg_fn": "mod.fn"}, "avg_fn"),
                           ({"annealing_strategy": "step"}, "cos")):  # fmt: skip
        case = spec(3)
        case["trainer"]["callbacks"][0]["init_args"].update(args)
        with pytest.raises(LoopgenError, match=expected):
            render(case, tmp_path)


def test_the_script_is_fit_only(tmp_path: Path) -> None:
    script = render(spec(3), tmp_path)
    assert "class StochasticWeightAveraging" in script
    assert "def evaluate(" not in script and '"validate"' not in script
