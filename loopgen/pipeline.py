"""The whole pipeline, one stage after another: spec -> facts -> plan -> script text.

The stages are imported when a render needs them: a render found in the cache imports none of them.
"""

from __future__ import annotations

from pathlib import Path

from loopgen import cache
from loopgen.formatting import find_config
from loopgen.roots import default_roots


def render_spec(spec_path: Path, output: Path | str = "train.py") -> tuple[str, tuple[str, ...]]:
    """The script for the spec at `spec_path`, and the notices to show the user.

    `output` is where the script is to be written: its name is the one the script gives for itself, and the
    black configuration of the project it is in formats the script (a bare name: the current directory's).
    """
    output = Path(output)
    script_name = output.name
    black_config = find_config(output.absolute().parent)
    roots = default_roots(spec_path)
    entry = cache.entry_path(spec_path, script_name, roots, black_config.key())
    cached = cache.load(entry)
    if cached is not None:
        return cached

    from loopgen.flags import lightning_callback
    from loopgen.inspect import inspect_class
    from loopgen.plan import make_plan
    from loopgen.render import render
    from loopgen.spec import load_spec

    spec = load_spec(spec_path)
    model = inspect_class(spec.model.class_path, roots, where="model.class_path")
    data = inspect_class(spec.data.class_path, roots, where="data.class_path") if spec.data else None
    callbacks = tuple(
        (
            None  # Lightning's ModelCheckpoint / EarlyStopping: the script has its own
            if lightning_callback(ref.class_path)
            else inspect_class(ref.class_path, roots, where=f"trainer.callbacks[{i}].class_path", callback=True)
        )
        for i, ref in enumerate(spec.trainer.callbacks)
    )
    plan = make_plan(spec, model, data, callbacks, script_name)
    text, notices = render(plan, black_config), spec.notices + plan.notices
    sources = {file for facts in (model, data, *callbacks) if facts is not None for file in facts.sources}
    cache.store(entry, text, notices, sources)
    return text, notices


def project_root(spec_path: Path) -> Path:
    """The directory the model's module was found under: where the script must run from (or have on its path)."""
    from loopgen.inspect import inspect_class
    from loopgen.spec import load_spec

    spec = load_spec(spec_path)
    return inspect_class(spec.model.class_path, default_roots(spec_path), where="model.class_path").root
