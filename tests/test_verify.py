"""`loopgen verify`: identical on a supported spec, the first difference on a module that trains differently under
the two, exit statuses (0 identical, 1 different, 2 bad usage)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from loopgen import verify as verify_module
from loopgen.cli import main


def write_spec(tmp_path: Path, model: str, **trainer: object) -> Path:
    spec = {
        "seed_everything": 5,
        "model": {"class_path": model, "init_args": {"hidden": 8}},
        "trainer": {"max_epochs": 2, "logger": False, "enable_checkpointing": False, **trainer},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    return path


@pytest.mark.slow
def test_identical_on_a_supported_spec(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.models.MLP", val_check_interval=0.5)
    assert main(["verify", str(spec), "--steps", "12"]) == 0
    assert capsys.readouterr().out.strip() == "identical: 12 steps, 4 tensors"


@pytest.mark.slow
def test_reports_the_first_difference(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("pytorch_lightning")
    spec = write_spec(tmp_path, "tests.parity.side_models.SideDependent")
    assert main(["verify", str(spec), "--steps", "6"]) == 1
    out = capsys.readouterr().out
    assert out.startswith("different: step 4, tensor net.0.weight, max abs difference "), out
    assert "mid-epoch (steps up to 3 identical)" in out


def test_without_lightning_a_one_line_usage_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(verify_module, "lightning_package", lambda: None)
    assert main(["verify", str(write_spec(tmp_path, "tests.parity.models.MLP"))]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "pip install 'loopgen[verify]'" in err


def test_unseeded_spec_and_bad_steps_are_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, "tests.parity.models.MLP")
    data = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**data, "seed_everything": False}))
    assert main(["verify", str(spec)]) == 2
    assert "seed_everything: false" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit:
        main(["verify", str(spec), "--steps", "0"])
    assert exit.value.code == 2


def test_a_spec_that_does_not_render_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = write_spec(tmp_path, "tests.parity.models.MLP", max_epochs="two")
    assert main(["verify", str(spec)]) == 2
    assert "trainer.max_epochs" in capsys.readouterr().err
