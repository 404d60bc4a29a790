"""The whole pipeline, one stage after another: spec -> facts -> plan -> script text.

The stages are imported when a render needs them: a render found in the cache imports none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from loopgen import cache
from loopgen.formatting import find_config
from loopgen.roots import default_roots

if TYPE_CHECKING:
    from loopgen.inspect import ClassFacts
    from loopgen.spec import Spec


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
    objects = inspect_objects(spec, roots)
    plan = make_plan(spec, model, data, callbacks, script_name, objects=objects)
    text, notices = render(plan, black_config), spec.notices + plan.notices
    sources = {
        file for facts in (model, data, *callbacks, *objects.values()) if facts is not None for file in facts.sources
    }
    cache.store(entry, text, notices, sources)
    return text, notices


def project_root(spec_path: Path) -> Path:
    """The directory the model's module was found under: where the script must run from (or have on its path)."""
    from loopgen.inspect import inspect_class
    from loopgen.spec import load_spec

    spec = load_spec(spec_path)
    return inspect_class(spec.model.class_path, default_roots(spec_path), where="model.class_path").root


def inspect_objects(spec: Spec, roots: list[Path]) -> dict[str, ClassFacts | None]:
    """The facts of each class that the spec's init_args give objects of (nested class_path entries), by class
    path: None for a class outside the project (torch's, a library's), which the script imports as it is; a class
    the project's own packages should define but do not is an error, as for the model."""
    from loopgen.errors import LoopgenError, Problem
    from loopgen.inspect import inspect_class
    from loopgen.spec import objects_in

    found: dict[str, ClassFacts | None] = {}
    pending = [
        (value, where)
        for ref, where in ((spec.model, "model"), (spec.data, "data"))
        if ref is not None
        for value in objects_in(list(ref.init_args.values()))
    ] + [
        (value, f"trainer.callbacks[{i}]")
        for i, ref in enumerate(spec.trainer.callbacks)
        for value in objects_in(list(ref.init_args.values()))
    ]
    problems = []
    while pending:
        obj, where = pending.pop(0)
        pending += [(value, where) for value in objects_in(list(obj.init_args.values()))]
        if obj.class_path in found:
            continue
        top = obj.class_path.split(".")[0]
        ours = any((root / top).is_dir() or (root / f"{top}.py").is_file() for root in roots)
        try:
            found[obj.class_path] = inspect_class(obj.class_path, roots, where=where) if ours else None
        except LoopgenError as error:
            problems += [Problem(p.where, p.message, obj.line) for p in error.problems]
            found[obj.class_path] = None
    if problems:
        raise LoopgenError(problems)
    return found
