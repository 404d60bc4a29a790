"""The objects the script builds (model, data, callbacks, their object arguments) and the seed."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from loopgen.plan.fsdp import policy_classes
from loopgen.plan.objects import (
    Built,
    Callback,
    Construct,
    Import,
    Name,
    check_unique_names,
    construct_of,
    constructs_in,
    referenced,
    references_in,
)
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import ClassRef, Spec


@dataclass(frozen=True)
class Build:
    """What main() constructs: the user's model, data and callbacks."""

    model: Construct
    data: Construct | None
    callbacks: tuple[Callback, ...]
    imports: tuple[Import, ...]
    seed: int | None  # seed_everything as an int
    seed_at_run_time: bool  # seed_everything: true
    seeds: bool  # one of the two
    deterministic: bool
    benchmark: bool | None
    sets_benchmark: bool
    # the object arguments (nested class_path entries) built before each owner, by the owner's script variable
    # ("model", "data", a callback's var), in LightningCLI's order; the owner's Construct names them (`Name`)
    objects: Mapping[str, tuple[Built, ...]] = field(default_factory=dict)
    # the user's callbacks the script builds and never uses: none of their hooks runs in this spec (found once the
    # script is rendered: loopgen/render/names.py)
    idle: frozenset[str] = frozenset()

    def objects_of(self, var: str) -> tuple[Built, ...]:
        return self.objects.get(var, ())


def resolve_build(
    spec: Spec,
    callbacks: tuple[Callback, ...],
    model: ClassFacts,
    data: ClassFacts | None,
    callback_facts: tuple[ClassFacts | None, ...],
    objects: Mapping[str, ClassFacts | None],
) -> Build:
    """The objects the script builds: the model, the data, the callbacks (each with its object arguments taken out,
    see `take_out_objects`), the classes it imports from the user's code, and the seed."""
    script_callbacks = tuple(cb for cb in callbacks if cb.kind != "summary")  # the script's function prints one
    owners = {"model": construct_of(spec.model), "data": construct_of(spec.data) if spec.data else None}
    owners.update((cb.var, cb.construct) for cb in script_callbacks)
    owners = with_references(spec, owners, model, data, callback_facts, objects)
    built, constructs = take_out_objects(spec, owners, model, data, callback_facts, objects)
    nested = [c for var in owners for b in built.get(var, ()) for c in constructs_in(b.value)]
    by_module: dict[str, list[str]] = {}
    for c in (*owners.values(), *nested):
        if c is None or c.from_torch or not c.module:  # torch's, or the script's own class
            continue
        if c.cls not in by_module.setdefault(c.module, []):
            by_module[c.module].append(c.cls)
    for ref in references_in(list(owners.values())):  # the objects given by import path: the user's by name
        if not ref.from_torch and ref.name not in by_module.setdefault(ref.module, []):
            by_module[ref.module].append(ref.name)
    for ref in (spec.optimizer, spec.lr_scheduler):  # LightningCLI's entries may name the project's own classes
        c = construct_of(ref) if ref is not None else None
        if c is not None and not c.from_torch and c.module and c.cls not in by_module.setdefault(c.module, []):
            by_module[c.module].append(c.cls)
    for path in (path for paths in policy_classes(spec).values() for path in paths):
        module, _, cls = path.rpartition(".")
        if not path.startswith("torch.") and cls not in by_module.setdefault(module, []):
            by_module[module].append(cls)  # FSDPStrategy's layer classes from the user's code
    if nested:
        refs = spec.trainer.callbacks
        user_refs = [r for r, f in zip(refs, callback_facts) if f]
        nested_refs = [ClassRef(f"{c.module}.{c.cls}") for c in nested if c.module]
        check_unique_names([spec.model] + ([spec.data] if spec.data else []) + user_refs + nested_refs)
    seed = spec.seed_everything if not isinstance(spec.seed_everything, bool) else None
    t = spec.trainer
    return Build(
        model=constructs["model"],
        data=constructs["data"],
        callbacks=tuple(
            cb if constructs[cb.var] is cb.construct else Callback(**{**vars(cb), "construct": constructs[cb.var]})
            for cb in script_callbacks
        ),
        imports=tuple(Import(module, tuple(sorted(names))) for module, names in sorted(by_module.items())),
        objects=built,
        seed=seed,
        seed_at_run_time=spec.seed_everything is True,
        seeds=seed is not None or spec.seed_everything is True,
        deterministic=t.deterministic is True,
        benchmark=t.benchmark,
        sets_benchmark=t.benchmark is not None,
    )


def with_references(
    spec: Spec,
    owners: Mapping[str, Construct | None],
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts | None, ...],
    objects: Mapping[str, ClassFacts | None],
) -> dict[str, Construct | None]:
    """The owners (and the objects among their arguments, to any depth) with the strings given for parameters
    typed as a function or class replaced by the objects they name, as jsonargparse imports them."""
    facts_by_var = _facts_by_var(spec, model, data, callbacks)

    def resolve(value: Any, facts: ClassFacts | None = None) -> Any:
        if isinstance(value, Construct):
            facts = facts if facts is not None else objects.get(f"{value.module}.{value.cls}")
            imported = facts.init.imported if facts is not None and facts.init is not None else ()
            value = referenced(value, imported)
            return replace(value, args={name: resolve(item) for name, item in value.args.items()})
        if isinstance(value, list):
            return [resolve(item) for item in value]
        if isinstance(value, dict):
            return {key: resolve(item) for key, item in value.items()}
        return value

    return {var: resolve(c, facts_by_var.get(var)) if c is not None else None for var, c in owners.items()}


def _facts_by_var(
    spec: Spec, model: ClassFacts, data: ClassFacts | None, callbacks: tuple[ClassFacts | None, ...]
) -> dict[str, ClassFacts | None]:
    """The facts of the model, the data and the user's callbacks by their script variables (as resolve_user_code
    names them)."""
    refs = spec.trainer.callbacks
    facts_by_var: dict[str, ClassFacts | None] = {"model": model, "data": data}
    for i, facts in enumerate(callbacks):
        facts_by_var[f"callback_{i}" if len(refs) > 1 else "callback"] = facts
    return facts_by_var


def take_out_objects(
    spec: Spec,
    owners: Mapping[str, Construct | None],
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts | None, ...],
    objects: Mapping[str, ClassFacts | None],
) -> tuple[dict[str, tuple[Built, ...]], dict[str, Construct | None]]:
    """The object arguments of the model, the data and the user's callbacks taken out, each built before its
    owner in LightningCLI's order: (the objects built before each owner, each owner's construct with those
    arguments replaced by their variables).

    jsonargparse instantiates a class's object arguments before the class, in the order of the parameters of its
    `__init__` (each one's own arguments first, to any depth), and a list's items in order. The script builds each
    argument that holds an object (an object, or a list / mapping of them) as a variable `<owner>_<argument>`
    before the owner, in that order: the owner's `__init__` parameters as its source gives them, the spec's order
    for arguments it does not name (`**kwargs`). Deeper objects are written inline, which Python evaluates
    argument by argument: their arguments are written in the order of their class's `__init__` parameters when
    its source is in the project (`objects`), else in the spec's order.
    """
    facts_by_var = _facts_by_var(spec, model, data, callbacks)
    built_by_owner: dict[str, tuple[Built, ...]] = {}
    constructs: dict[str, Construct | None] = dict(owners)
    for var, construct in owners.items():
        if construct is None or not constructs_in(list(construct.args.values())):
            continue
        facts = facts_by_var.get(var)
        params = facts.methods.get("__init__", ()) if facts is not None else ()
        order = [name for name in params if name in construct.args]
        order += [name for name in construct.args if name not in order]
        built = []
        args = dict(construct.args)
        for name in order:
            if not constructs_in(args[name]):
                continue
            target = f"{var}_{name}"  # renamed by the renderer if the script binds the name otherwise
            built.append(Built(target, _in_init_order(args[name], objects)))
            args[name] = Name(target)
        built_by_owner[var] = tuple(built)
        constructs[var] = Construct(**{**vars(construct), "args": args})
    return built_by_owner, constructs


def _in_init_order(value: Any, objects: Mapping[str, ClassFacts | None]) -> Any:
    """An argument value with the arguments of each object in it in the order of its class's `__init__`
    parameters (where `objects` has its facts): the order Python evaluates them in, and jsonargparse builds them."""
    if isinstance(value, Construct):
        facts = objects.get(f"{value.module}.{value.cls}")
        params = facts.methods.get("__init__", ()) if facts is not None else ()
        order = [name for name in params if name in value.args] + [n for n in value.args if n not in params]
        return replace(value, args={name: _in_init_order(value.args[name], objects) for name in order})
    if isinstance(value, list):
        return [_in_init_order(item, objects) for item in value]
    if isinstance(value, dict):
        return {key: _in_init_order(item, objects) for key, item in value.items()}
    return value
