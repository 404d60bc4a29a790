"""The render cache: a second render of an unchanged spec skips the pipeline; any change to the spec or to a
user source file it was made from renders again; a broken entry is ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from loopgen import pipeline
from tests.helpers import write_spec

MODEL = (
    "import torch\nclass M(torch.nn.Module):\n    def training_step(self, batch, batch_idx):\n"
    "        return batch.sum()\n    def configure_optimizers(self):\n"
    "        return torch.optim.SGD(self.parameters(), lr=0.1)\n    def train_dataloader(self):\n"
    "        return [torch.ones(1)]\n"
)


@pytest.fixture
def project(tmp_path, monkeypatch) -> Path:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "models.py").write_text(MODEL)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOOPGEN_CACHE_DIR", str(tmp_path / "cache"))
    write_spec(tmp_path, {"model": "pkg.models.M", "trainer": {"max_epochs": 3, "logger": False}})
    return tmp_path


def renders_from_scratch(spec: Path) -> bool:
    """Render `spec`; True when the pipeline ran (the cache missed)."""
    calls = []
    import loopgen.plan

    original = loopgen.plan.make_plan

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    loopgen.plan.make_plan = counting
    try:
        pipeline.render_spec(spec)
    finally:
        loopgen.plan.make_plan = original
    return bool(calls)


def test_second_render_is_cached(project):
    spec = project / "spec.yaml"
    assert renders_from_scratch(spec)
    assert not renders_from_scratch(spec)
    _, notices = pipeline.render_spec(spec)
    assert notices  # the notices come back from the cache too


def test_changed_source_or_spec_renders_again(project):
    spec = project / "spec.yaml"
    assert renders_from_scratch(spec)
    (project / "pkg" / "models.py").write_text(MODEL + "    def on_train_start(self):\n        pass\n")
    assert renders_from_scratch(spec)
    assert "model.on_train_start()" in pipeline.render_spec(spec)[0]
    write_spec(project, {"model": "pkg.models.M", "trainer": {"max_epochs": 4, "logger": False}})
    assert renders_from_scratch(spec)


def test_broken_entry_is_ignored_and_cache_can_be_off(project, monkeypatch):
    spec = project / "spec.yaml"
    text, _ = pipeline.render_spec(spec)
    for entry in (project / "cache").glob("*.json"):
        entry.write_text("{not json")
    assert pipeline.render_spec(spec)[0] == text
    monkeypatch.setenv("LOOPGEN_NO_CACHE", "1")
    assert renders_from_scratch(spec) and renders_from_scratch(spec)


def test_black_configuration_is_part_of_the_key(project):
    """Changing [tool.black], or rendering into another project, never returns a script formatted for another
    configuration; going back to a configuration finds its entry again."""
    spec = project / "spec.yaml"
    assert renders_from_scratch(spec)
    default = pipeline.render_spec(spec)[0]
    (project / "pyproject.toml").write_text("[tool.black]\nline-length = 40\n")
    assert renders_from_scratch(spec)
    narrow = pipeline.render_spec(spec)[0]
    assert narrow != default
    (project / "pyproject.toml").write_text("[tool.black]\nline-length = 40\nskip-magic-trailing-comma = true\n")
    assert renders_from_scratch(spec)
    (project / "other").mkdir()
    (project / "other" / "pyproject.toml").write_text("[tool.black]\n")
    assert pipeline.render_spec(spec, project / "other" / "train.py")[0] == default  # not the one for 40 columns
    (project / "pyproject.toml").unlink()
    assert not renders_from_scratch(spec)
    assert pipeline.render_spec(spec)[0] == default
