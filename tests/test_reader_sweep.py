"""tests/reader_sweep.py, the run over other projects' sources (docs/testing.md), on this repository's examples:
it finds their LightningModules, and each ends in a script or a refusal."""

from __future__ import annotations

from pathlib import Path

from tests.helpers import ROOT
from tests.reader_sweep import main, module_classes, render_one


def test_the_sweep_finds_the_examples_modules_and_renders_them(tmp_path: Path, capsys) -> None:
    found = {(name, kind) for _, _, name, kind in module_classes(ROOT / "examples")}
    assert {("LitClassifier", "model"), ("LitGAN", "model"), ("GAN", "model"), ("SequenceRNN", "model")} <= found
    assert {("ClassificationDataModule", "data"), ("StopWhenAccurate", "callback")} <= found  # and the others
    assert main([str(ROOT / "examples")]) == 0
    out = capsys.readouterr().out
    assert "1 repositories, " in out and ", 0 internal" in out


def test_an_internal_error_is_reported_as_one(tmp_path: Path, monkeypatch) -> None:
    import loopgen.plan

    def broken(*args, **kwargs):
        raise KeyError("a bug")

    monkeypatch.setattr(loopgen.plan, "make_plan", broken)
    (root, module, name, kind), *_ = module_classes(ROOT / "examples")
    outcome, detail = render_one(root, f"{module}.{name}", tmp_path, kind)
    assert outcome == "internal" and "KeyError: 'a bug'" in detail


def test_a_script_that_fails_the_render_s_own_checks_is_an_internal_error(tmp_path: Path, monkeypatch) -> None:
    """A LoopgenError of the render's checks of its own output (a name the script reads and never binds) is a bug
    in loopgen, not a refusal of the user's code."""
    import loopgen.render.script
    from loopgen.errors import LoopgenError

    def unbound(*args, **kwargs):
        raise LoopgenError("the script reads 'training_modes', which it neither defines nor imports")

    monkeypatch.setattr(loopgen.render.script, "render", unbound)
    (root, module, name, kind), *_ = module_classes(ROOT / "examples")
    outcome, detail = render_one(root, f"{module}.{name}", tmp_path, kind)
    assert outcome == "internal" and "training_modes" in detail


def test_every_class_reads_each_module_and_class_and_counts_internal_errors(monkeypatch, capsys) -> None:
    from loopgen.source.reader import _Reader

    assert main(["--every-class", str(ROOT / "examples")]) == 0
    assert ", 0 refused, 0 internal" in capsys.readouterr().out

    def broken(self, cls, below=()):
        raise KeyError("a bug")

    monkeypatch.setattr(_Reader, "ancestry", broken)
    assert main(["--every-class", str(ROOT / "examples")]) == 1
    assert "KeyError: 'a bug'" in capsys.readouterr().out
