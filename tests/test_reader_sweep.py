"""tests/reader_sweep.py, the run over other projects' sources (docs/testing.md), on this repository's examples:
it finds their LightningModules, and each ends in a script or a refusal."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT
from tests.reader_sweep import main, module_classes, render_one


def test_the_sweep_finds_the_examples_modules_and_renders_them(tmp_path: Path, capsys) -> None:
    found = {name for _, _, name in module_classes(ROOT / "examples")}
    assert {"LitClassifier", "LitGAN", "GAN", "SequenceRNN"} <= found
    assert main([str(ROOT / "examples")]) == 0
    assert " internal" not in capsys.readouterr().out


def test_an_internal_error_is_reported_as_one(tmp_path: Path, monkeypatch) -> None:
    import loopgen.plan

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(loopgen.plan, "make_plan", broken)
    (root, module, name), *_ = module_classes(ROOT / "examples")
    outcome, detail = render_one(root, f"{module}.{name}", tmp_path)
    assert outcome == "internal" and "KeyError: 'a bug'" in detail
