"""The whole pipeline, one stage after another: spec -> facts -> plan -> script text.

The stages are imported when a render needs them: a render found in the cache imports none of them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from loopgen import cache
from loopgen.errors import LoopgenError, Problem
from loopgen.render.formatting import find_config
from loopgen.source.roots import default_roots
from loopgen.spec.sources import Sources

if TYPE_CHECKING:
    from loopgen.source.facts import ClassFacts
    from loopgen.spec.model import Spec


def render_spec(spec_path: Path | Sources, output: Path | str = "train.py") -> tuple[str, tuple[str, ...]]:
    """The script for the spec at `spec_path`, and the notices to show the user.

    `output` is where the script is to be written: its name is the one the script gives for itself, and the
    black configuration of the project it is in formats the script (a bare name: the current directory's).
    """
    text, notices, _ = render_spec_sources(spec_path, output)
    return text, notices


def render_spec_sources(
    spec: Path | Sources, output: Path | str = "train.py"
) -> tuple[str, tuple[str, ...], tuple[Path, ...]]:
    """`render_spec`, and every user source file the script was made from (the spec's files too)."""
    output = Path(output)
    script_name = output.name
    black_config = find_config(output.absolute().parent)
    sources = Sources.of(spec)
    sources.check()
    spec_path = sources.path
    roots = default_roots(spec_path)
    try:
        key = sources.key() + ([] if sources.single else [repr(sources.recorded(output.absolute().parent))])
    except LoopgenError:
        key = None  # an unreadable file: load_spec reports it
    entry = cache.entry_path(key, script_name, roots, black_config.key()) if key is not None else None
    cached = cache.load(entry)
    if cached is not None:
        cache.keep_script(cached[0])
        return cached

    from loopgen.plan import make_plan
    from loopgen.render.script import render
    from loopgen.spec.load import load_spec

    spec = with_configured_callbacks(load_spec(sources, output.absolute().parent), roots)
    model, data, callbacks, problems = read_classes(spec, roots)
    objects = inspect_objects(spec, roots)
    try:
        plan = make_plan(spec, model, data, callbacks, script_name, objects=objects)
    except LoopgenError as error:
        found = problems + [_with_line(problem, spec) for problem in error.problems]
        raise LoopgenError(sorted(found, key=lambda p: p.line or 0)) from None
    if problems:
        raise LoopgenError(problems)
    text, notices = render(plan, black_config), spec.notices + plan.notices
    sources = {
        file for facts in (model, data, *callbacks, *objects.values()) if facts is not None for file in facts.sources
    }
    cache.store(entry, text, notices, sources)
    cache.keep_script(text)
    return text, notices, tuple(sorted(sources))


def with_configured_callbacks(spec: Any, roots: list[Path]) -> Any:
    """The spec with the callbacks its model's configure_callbacks returns merged in (loopgen.spec.configured);
    unchanged when the model is not found (read_classes reports it) or returns none."""
    from loopgen.errors import LoopgenError
    from loopgen.plan.common import follows_1_9_5
    from loopgen.source.reader import class_lineage, inspect_class
    from loopgen.spec.configured import with_configured_callbacks as merged
    from loopgen.spec.load import callback_entry

    try:
        model = inspect_class(spec.model.class_path, roots, where="model.class_path")
    except LoopgenError:
        return spec
    return merged(spec, model, callback_entry, lambda path: class_lineage(path, roots), follows_1_9_5(spec, model))


def read_classes(spec: Any, roots: list[Path]) -> tuple[Any, Any, tuple[Any, ...], list[Any]]:
    """The facts of the spec's model, data and callbacks, and every problem with their init_args (all of them,
    each with its key and YAML line, sorted by line). A LoopgenError with all of them when a class cannot be read
    (not found, a syntax error in its source, a base loopgen cannot tell): there is no plan without it."""
    from loopgen.errors import LoopgenError
    from loopgen.source.reader import find_function, inspect_class
    from loopgen.source.signatures import check_arguments, torch_signature
    from loopgen.spec.support import lightning_callback

    problems = []
    unread = []  # the keys of the classes that could not be read

    def facts(ref: Any, key: str, callback: bool = False, optional: bool = False) -> Any:
        """The facts of the class `ref` names (the spec's `key`), after checking its init_args (an optional
        class: an optimizer or scheduler, whose first argument the script passes); the model's
        configure_optimizers is read as it runs with the spec's init_args."""
        try:
            found = inspect_class(
                ref.class_path,
                roots,
                where=f"{key}.class_path",
                callback=callback,
                line=spec.line(f"{key}.class_path"),
                init_args=ref.init_args if key == "model" else None,
            )
        except LoopgenError as error:
            if optional and any("cannot find module" in p.message for p in error.problems):
                return None  # a package loopgen cannot read: its arguments are checked when the script runs
            problems.extend(error.problems)
            unread.append(key)
            return None
        signature = found.init
        if signature is not None and optional:
            signature = _passed_first(signature)
        if signature is not None:
            problems.extend(check_arguments(_args_key(spec, key), ref.name, ref.init_args, signature, spec.line))
        nested(_args_key(spec, key), ref.init_args)
        return found

    def nested(key: str, args: Any) -> None:
        """Check the init_args of each object given as an argument (`{class_path, init_args}`) whose class is
        in the user's code; a class loopgen cannot read is left to the script."""
        from collections.abc import Mapping

        from loopgen.spec.model import ObjectSpec

        for name, value in args.items() if isinstance(args, Mapping) else ():
            if not isinstance(value, ObjectSpec):
                continue
            inner = {**value.init_args, **value.dict_kwargs}
            at = f"{key}.{name}"
            try:
                found = inspect_class(
                    value.class_path, roots, where=f"{at}.class_path", line=spec.line(f"{at}.class_path")
                )
            except LoopgenError:
                continue  # not the user's code (or not found): the object's own check reports it
            if found.init is not None:
                problems.extend(check_arguments(f"{at}.init_args", value.name, inner, found.init, spec.line))
            nested(f"{at}.init_args", value.init_args)

    model = facts(spec.model, "model")
    data = facts(spec.data, "data") if spec.data else None
    callbacks = tuple(
        (
            None  # Lightning's ModelCheckpoint / EarlyStopping: the script has its own
            if lightning_callback(ref.class_path)
            else facts(ref, ref.where or f"trainer.callbacks[{i}]", callback=True)
        )
        for i, ref in enumerate(spec.trainer.callbacks)
    )
    for i, ref in enumerate(spec.trainer.callbacks):
        if lightning_callback(ref.class_path) == "pytorch_lightning.callbacks.ThroughputMonitor":
            for name in ("batch_size_fn", "length_fn"):
                if isinstance(path := ref.init_args.get(name), str):
                    key = f"{_args_key(spec, ref.where or f'trainer.callbacks[{i}]')}.{name}"
                    try:
                        find_function(path, roots, where=key, line=spec.line(key))
                    except LoopgenError as error:
                        problems.extend(error.problems)
    problems.extend(check_policy_classes(spec, roots))
    for kind in ("optimizer", "lr_scheduler"):
        ref = getattr(spec, kind)
        if ref is None:
            continue
        signature = torch_signature(ref.class_path, kind)
        if isinstance(signature, str):
            problems.append(Problem(f"{kind}.class_path", signature, spec.line(f"{kind}.class_path")))
        elif signature is not None:
            problems.extend(check_arguments(_args_key(spec, kind), ref.name, ref.init_args, signature, spec.line))
        else:
            facts(ref, kind, optional=True)
    problems.sort(key=lambda p: p.line or 0)
    if unread or any(p.where.endswith("class_path") for p in problems):
        raise LoopgenError(problems)
    return model, data, callbacks, problems


def check_policy_classes(spec: Any, roots: list[Path]) -> list[Problem]:
    """FSDPStrategy's auto_wrap_policy and activation_checkpointing_policy name layer classes the script imports:
    torch's must be torch.nn.Module subclasses torch has, the user's must be defined in the project."""
    import importlib
    import importlib.util

    from loopgen.errors import LoopgenError
    from loopgen.plan.fsdp import policy_classes
    from loopgen.source.reader import find_class_source

    problems = []
    where, line = "trainer.strategy", spec.line("trainer.strategy")
    for key, paths in policy_classes(spec).items():
        for path in paths:
            if path.startswith("torch."):
                if importlib.util.find_spec("torch") is None:
                    continue  # rendered where torch is not installed: the script's own import checks it
                import torch

                module, _, name = path.rpartition(".")
                try:
                    found = getattr(importlib.import_module(module), name, None)
                except ImportError:
                    found = None
                if not (isinstance(found, type) and issubclass(found, torch.nn.Module)):
                    problems.append(Problem(where, f"{key}: {path} is not a torch.nn.Module class torch has", line))
                continue
            try:
                find_class_source(path, roots, where=f"{where} ({key})", line=line)
            except LoopgenError as error:
                problems.extend(error.problems)
    return problems


def _with_line(problem: Problem, spec: Any) -> Problem:
    """`problem` with the YAML line of the key it names, when it has none and the spec has that key."""
    if problem.line is not None or problem.where not in spec.lines:
        return problem
    return Problem(problem.where, problem.message, spec.lines[problem.where])


def _args_key(spec: Any, key: str) -> str:
    """Where the spec writes `key`'s arguments: init_args (or dict_kwargs, when only that is there)."""
    if f"{key}.init_args" not in spec.lines and f"{key}.dict_kwargs" in spec.lines:
        return f"{key}.dict_kwargs"
    return f"{key}.init_args"


def _passed_first(signature: Any) -> Any:
    """`signature` less its first parameter (an optimizer's params, a scheduler's optimizer: the script's)."""
    import dataclasses

    first = (*signature.positional_only, *signature.names)[:1]
    if not first:
        return None  # it takes no parameters object: only *args could; not checked
    name = first[0]
    return dataclasses.replace(
        signature,
        names=tuple(n for n in signature.names if n != name),
        required=tuple(n for n in signature.required if n != name),
        positional_only=tuple(n for n in signature.positional_only if n != name),
        fixed={name: "the script passes it"},
    )


def project_root(spec: Path | Sources) -> Path:
    """The directory the model's module was found under: where the script must run from (or have on its path)."""
    from loopgen.source.reader import inspect_class
    from loopgen.spec.load import load_spec

    sources = Sources.of(spec)
    found = load_spec(sources)
    return inspect_class(found.model.class_path, default_roots(sources.path), where="model.class_path").root


def inspect_objects(spec: Spec, roots: list[Path]) -> dict[str, ClassFacts | None]:
    """The facts of each class that the spec's init_args give objects of (nested class_path entries), by class
    path: None for a class outside the project (torch's, a library's), which the script imports as it is; a class
    the project's own packages should define but do not is an error, as for the model."""
    from loopgen.errors import LoopgenError, Problem
    from loopgen.source.reader import inspect_class
    from loopgen.source.roots import installed
    from loopgen.spec.model import objects_in

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
        ours = any((root / top).is_dir() or (root / f"{top}.py").is_file() for root in roots if not installed(root))
        try:
            found[obj.class_path] = inspect_class(obj.class_path, roots, where=where) if ours else None
        except LoopgenError as error:
            # at the YAML line of the object; a problem in a source file keeps its own line
            problems += [Problem(p.where, p.message, obj.line) if p.where == where else p for p in error.problems]
            found[obj.class_path] = None
    if problems:
        raise LoopgenError(problems)
    return found
