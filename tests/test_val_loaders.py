"""Several val loaders in fit, beyond the parity cases (tests/parity/test_parity.py, val_loaders_two; the
corpus's dom_nemo_multi_validation and tut_glue_mnli_two_val_loaders): what the script refuses at render time,
and Lightning's error for a validation_step without dataloader_idx."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from loopgen.errors import LoopgenError
from tests.helpers import env_with_root, render

torch = pytest.importorskip("torch")


def spec(model: str, **trainer: Any) -> dict:
    return {
        "seed_everything": 1,
        "model": {"class_path": f"tests.parity.models.{model}"},
        "trainer": {"max_epochs": 1, "logger": False, "enable_checkpointing": False, "enable_progress_bar": False,
                    "enable_model_summary": False, **trainer},
    }  # fmt: skip


@pytest.mark.parametrize(
    ("trainer", "what"),
    [
        ({"strategy": "ddp", "devices": 2, "accelerator": "cpu"}, "with the ddp engine"),
        ({"profiler": "simple"}, "with a profiler"),
        ({"track_grad_norm": 2}, "with a spec that follows Lightning 1.9.5"),
    ],
    ids=["ddp", "profiler", "lightning-1.9.5"],
)
def test_what_the_script_does_not_serve_with_several_val_loaders_is_refused(
    tmp_path: Path, trainer: dict, what: str
) -> None:
    with pytest.raises(LoopgenError) as raised:
        render(spec("TwoValidationLoadersModel", **trainer), tmp_path)
    assert f"val_dataloader returning several loaders {what} is not supported by loopgen" in str(raised.value)


def test_several_val_loaders_need_dataloader_idx_as_in_lightning(tmp_path: Path) -> None:
    import pytorch_lightning as pl

    from tests.parity.models import TwoValidationLoadersNoIndexModel

    trainer = pl.Trainer(max_epochs=1, logger=False, enable_checkpointing=False, enable_progress_bar=False,
                         enable_model_summary=False, default_root_dir=tmp_path)  # fmt: skip
    with pytest.raises(RuntimeError) as lightnings:
        trainer.fit(TwoValidationLoadersNoIndexModel())
    (tmp_path / "train.py").write_text(render(spec("TwoValidationLoadersNoIndexModel"), tmp_path))
    ours = subprocess.run([sys.executable, "train.py"], cwd=tmp_path, env=env_with_root(), capture_output=True,
                          text=True, timeout=300)  # fmt: skip
    assert ours.returncode != 0
    assert f"RuntimeError: {lightnings.value}" in ours.stderr
