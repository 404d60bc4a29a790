"""The whole pipeline, one stage after another: spec -> facts -> plan -> script text."""

from __future__ import annotations

from pathlib import Path

from loopgen.inspect import default_roots, inspect_class
from loopgen.plan import make_plan
from loopgen.render import render
from loopgen.spec import load_spec


def render_spec(spec_path: Path, script_name: str = "train.py") -> tuple[str, tuple[str, ...]]:
    """The script for the spec at `spec_path`, and the notices to show the user."""
    spec = load_spec(spec_path)
    roots = default_roots(spec_path)
    model = inspect_class(spec.model.class_path, roots, where="model.class_path")
    data = inspect_class(spec.data.class_path, roots, where="data.class_path") if spec.data else None
    callbacks = tuple(
        inspect_class(ref.class_path, roots, where=f"trainer.callbacks[{i}].class_path")
        for i, ref in enumerate(spec.trainer.callbacks)
    )
    plan = make_plan(spec, model, data, callbacks, script_name)
    return render(plan), spec.notices + plan.notices


def project_root(spec_path: Path) -> Path:
    """The directory the model's module was found under: where the script must run from (or have on its path)."""
    spec = load_spec(spec_path)
    return inspect_class(spec.model.class_path, default_roots(spec_path), where="model.class_path").root
