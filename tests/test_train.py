"""The rendered example scripts train: same weights as a hand-written PyTorch loop and as Lightning's Trainer."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from tests.golden import golden_path
from tests.helpers import ROOT, env_with_root, train_script

pytestmark = pytest.mark.slow


def run_reference(name: str, out) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "tests.reference_loops", name, str(out)],
        cwd=ROOT,
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return torch.load(out)


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    different = [k for k in a if not torch.equal(a[k], b[k])]
    assert not different, f"weights differ: {different}"


@pytest.mark.parametrize("name", ["classifier", "mlp_data"])
def test_example_matches_hand_written_loop(name, tmp_path):
    ours = train_script(golden_path(ROOT / "examples" / f"{name}.yaml"), tmp_path / "ours.pt")
    reference = run_reference(name, tmp_path / "reference.pt")
    assert_same_weights(ours["state_dict"], reference["state_dict"])


def test_example_training_changes_the_weights(tmp_path):
    """Guard against a vacuous comparison: the weights after training differ from the seeded initial ones."""
    ours = train_script(golden_path(ROOT / "examples" / "classifier.yaml"), tmp_path / "ours.pt")
    code = (
        "import torch; torch.manual_seed(42); from examples.models import Classifier; "
        "print(Classifier(hidden=64, lr=0.05).state_dict()['net.0.weight'].sum().item())"
    )
    initial = subprocess.run([sys.executable, "-c", code], env=env_with_root(), capture_output=True, text=True)
    assert float(initial.stdout) != ours["state_dict"]["net.0.weight"].sum().item()


LIGHTNING_RUN = textwrap.dedent("""
    import sys, warnings, torch
    warnings.filterwarnings("ignore")
    import pytorch_lightning as pl
    from examples.lightning_models import LitClassifier
    pl.seed_everything(42, verbose=False)
    model = LitClassifier(hidden=64, lr=0.05)
    trainer = pl.Trainer(accelerator="cpu", max_epochs=3, logger=False, enable_checkpointing=False,
                         enable_progress_bar=False, enable_model_summary=False)
    trainer.fit(model)
    metrics = {k: v.item() for k, v in trainer.callback_metrics.items()}
    torch.save({"state_dict": model.state_dict(), "global_step": trainer.global_step, "metrics": metrics}, sys.argv[1])
    """)


def test_lightning_module_example_matches_lightning_trainer(tmp_path):
    pytest.importorskip("pytorch_lightning")
    ours = train_script(golden_path(ROOT / "examples" / "lit_classifier.yaml"), tmp_path / "ours.pt")
    result = subprocess.run(
        [sys.executable, "-c", LIGHTNING_RUN, str(tmp_path / "pl.pt")],
        env=env_with_root(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    reference = torch.load(tmp_path / "pl.pt")
    assert_same_weights(ours["state_dict"], reference["state_dict"])
