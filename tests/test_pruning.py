"""Lightning's ModelPruning, beyond the parity cases (`model_pruning_*` in tests/parity, `pruning_spike_detection` in
the DDP run): the script's class beside Lightning's on the same module for each kind of entry (the masks, the weights
the lottery ticket resets, the lines verbose prints, a checkpoint's state_dict, the module when training ends);
the class carries only what its entry needs; and what Lightning raises for is refused at render time."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import lightning_log_lines, render

torch = pytest.importorskip("torch")
pl = pytest.importorskip("pytorch_lightning")

ENTRIES = {
    "global_l1_verbose": {"pruning_fn": "l1_unstructured", "amount": 0.3, "verbose": 2},
    "global_random_count": {
        "pruning_fn": "random_unstructured",
        "amount": 40,
        "parameter_names": ["weight"],
        "verbose": 1,
    },
    "each_l1_biases_no_lottery": {
        "pruning_fn": "L1_Unstructured",  # Lightning lowers the name
        "use_global_unstructured": False,
        "parameter_names": ["bias"],
        "use_lottery_ticket_hypothesis": False,
        "amount": 0.5,
    },
    "each_l3_rows_resampled": {
        "pruning_fn": "ln_structured",
        "use_global_unstructured": False,
        "pruning_dim": 0,
        "pruning_norm": 3,
        "parameter_names": ["weight"],
        "resample_parameters": True,
        "amount": 1,
        "verbose": 2,
    },
    "each_random_columns_masks_kept": {
        "pruning_fn": "random_structured",
        "use_global_unstructured": False,
        "pruning_dim": 1,
        "parameter_names": ["weight"],
        "make_pruning_permanent": False,
        "amount": 0.25,
    },
}


def script_class(tmp_path: Path, init_args: dict):
    spec = {
        "model": {"class_path": "tests.parity.models.MLP"},
        "trainer": {"callbacks": [{"class_path": "ModelPruning", "init_args": init_args}]},
    }
    path = tmp_path / "train.py"
    path.write_text(render(spec, tmp_path), encoding="utf-8")
    return runpy.run_path(str(path), run_name="script")["ModelPruning"]


def train_a_little(model, seed: int) -> None:
    """What an epoch of training does to the weights, the same on both sides."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.add_(torch.randn(parameter.shape, generator=generator) * 0.1)


@pytest.mark.parametrize("entry", list(ENTRIES))
def test_the_script_class_prunes_as_lightnings(tmp_path: Path, entry: str, capsys) -> None:
    from tests.parity.models import MLP

    init_args = ENTRIES[entry]
    script_pruning = script_class(tmp_path, init_args)()
    lightning_pruning = pl.callbacks.ModelPruning(**init_args)
    modules = {}
    with lightning_log_lines("pytorch_lightning.callbacks.pruning") as lines:
        for side, callback in (("lightning", lightning_pruning), ("script", script_pruning)):
            torch.manual_seed(0)
            model = modules[side] = MLP()
            capsys.readouterr()
            callback.setup(None, model, stage="fit")
            for epoch in range(3):
                train_a_little(model, epoch)
                torch.manual_seed(100 + epoch)  # the random methods and reset_parameters draw from it
                callback.on_train_epoch_end(None, model)
                state = {name: value.clone() for name, value in model.state_dict().items()}
                modules[side, epoch] = state
            checkpoint = {"state_dict": model.state_dict()}
            if hasattr(callback, "on_save_checkpoint"):
                callback.on_save_checkpoint(None, model, checkpoint)
            modules[side, "checkpoint"] = checkpoint["state_dict"]
            if hasattr(callback, "on_train_end"):
                callback.on_train_end(None, model)
            modules[side, "printed"] = capsys.readouterr().out.splitlines()

    for key in (0, 1, 2, "checkpoint"):
        lightning, script = modules["lightning", key], modules["script", key]
        assert lightning.keys() == script.keys(), key
        assert all(torch.equal(lightning[name], script[name]) for name in lightning), key
    assert any(name.endswith("_mask") for name in modules["script", 2])
    lightning, script = modules["lightning"].state_dict(), modules["script"].state_dict()
    assert lightning.keys() == script.keys()
    assert all(torch.equal(lightning[name], script[name]) for name in lightning)
    permanent = init_args.get("make_pruning_permanent", True)
    assert permanent != any(name.endswith("_orig") for name in script)
    assert modules["script", "printed"] == lines
    assert bool(lines) == bool(init_args.get("verbose"))


def pruning_class(tmp_path: Path, init_args: dict, **trainer) -> str:
    spec = {
        "model": {"class_path": "tests.parity.models.MLP"},
        "trainer": {**trainer, "callbacks": [{"class_path": "ModelPruning", "init_args": init_args}]},
    }
    text = render(spec, tmp_path)
    start = text.index("class ModelPruning:")
    return text[start : text.index("\n\n\n", start)]


def test_the_class_carries_only_what_its_entry_needs(tmp_path: Path) -> None:
    each = pruning_class(tmp_path, ENTRIES["each_random_columns_masks_kept"])
    assert "prune.random_structured(module, name=name, amount=0.25, dim=1)" in each
    for absent in ("global_unstructured", "on_train_end", "on_save_checkpoint", "print("):
        assert absent not in each
    no_lottery = pruning_class(tmp_path, ENTRIES["each_l1_biases_no_lottery"])
    assert "reset_to_lottery_ticket" not in no_lottery and "copy.deepcopy" not in no_lottery
    assert "def on_train_epoch_end" in each and "sanity_checking" not in each
    at_validation = pruning_class(tmp_path, {"pruning_fn": "l1_unstructured", "prune_on_train_epoch_end": False})
    assert "def on_validation_epoch_end" in at_validation and "if not trainer.sanity_checking:" in at_validation
    assert "pruning_method=prune.L1Unstructured" in at_validation and "def on_train_epoch_end" not in at_validation
    # never pruning: only the masks of the module's own code are applied for good
    never = pruning_class(tmp_path, {"pruning_fn": "l1_unstructured", "apply_pruning": False})
    assert "def setup" not in never and "def on_train_end" in never


@pytest.mark.parametrize(
    "init_args, callbacks, trainer, message",
    [
        ({}, [], {}, "ModelPruning needs `pruning_fn`"),
        (
            {"pruning_fn": "ln_structured", "use_global_unstructured": False, "parameter_names": ["weight"]},
            [],
            {},
            "When requesting `structured` pruning, the `pruning_dim` should be provided.",
        ),
        (
            {
                "pruning_fn": "ln_structured",
                "use_global_unstructured": False,
                "pruning_dim": 0,
                "parameter_names": ["weight"],
            },
            [],
            {},
            "When requesting `ln_structured` pruning, the `pruning_norm` should be provided.",
        ),
        (
            {"pruning_fn": "random_structured", "pruning_dim": 0, "parameter_names": ["weight"]},
            [],
            {},
            'Only the "unstructured" PRUNING_TYPE is supported with `use_global_unstructured=True`',
        ),
        (
            {"pruning_fn": "random_structured", "use_global_unstructured": False, "pruning_dim": 0},
            [],
            {},
            "random_structured of the modules' biases is not supported by loopgen (torch's structured pruning needs",
        ),
        ({"pruning_fn": "l1_unstructured", "verbose": 3}, [], {}, "`verbose` must be any of (0, 1, 2)"),
        (
            {"pruning_fn": "l1_unstructured"},
            [{"class_path": "ModelPruning", "init_args": {"pruning_fn": "l1_unstructured"}}],
            {},
            "a second ModelPruning callback is not supported by loopgen",
        ),
        (
            {"pruning_fn": "l1_unstructured"},
            [{"class_path": "EMAWeightAveraging"}],
            {},
            "ModelPruning beside EMAWeightAveraging is not supported by loopgen",
        ),
        (
            {"pruning_fn": "l1_unstructured"},
            [],
            {"terminate_on_nan": True},
            "ModelPruning in a spec that follows Lightning 1.9.5 is not supported by loopgen",
        ),
        (
            {"pruning_fn": "l1_unstructured", "parameters_to_prune": [["model.0", "weight"]]},
            [],
            {},
            "parameters_to_prune",
        ),
        ({"pruning_fn": "l0_unstructured"}, [], {}, "expected one of ln_structured, l1_unstructured"),
        ({"pruning_fn": "l1_unstructured", "amount": 1.5}, [], {}, "expected an integer >= 0 (a count) or a float"),
        ({"pruning_fn": "l1_unstructured", "parameter_names": ["kernel"]}, [], {}, "among weight, bias"),
    ],
)
def test_what_lightning_raises_for_is_refused_at_render_time(
    tmp_path: Path, init_args: dict, callbacks: list, trainer: dict, message: str
) -> None:
    spec = {
        "model": {"class_path": "tests.parity.models.MLP"},
        "trainer": {**trainer, "callbacks": [{"class_path": "ModelPruning", "init_args": init_args}, *callbacks]},
    }
    with pytest.raises(LoopgenError) as excinfo:
        render(spec, tmp_path)
    assert message in str(excinfo.value)
