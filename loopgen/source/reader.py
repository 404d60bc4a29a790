"""Stage 2: read the user's classes with the standard library's `ast` -> `ClassFacts`. Never imports user code."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from loopgen.errors import LoopgenError
from loopgen.source.callbacks import read_callbacks
from loopgen.source.facts import ClassFacts, OptimizersFacts
from loopgen.source.fingerprints import read_objects
from loopgen.source.fixed import Fixed, fixed_values
from loopgen.source.lines import first_reads, imports_torchmetrics, line_of
from loopgen.source.loaders import returns_a_loader, returns_several, uses_iterable_dataset, uses_name
from loopgen.source.modules import LIGHTNING_PACKAGES, Class, Module, Modules
from loopgen.source.names import class_expression
from loopgen.source.optimizers import read_optimizers
from loopgen.source.signatures import Signature
from loopgen.source.syntax import (
    FUNCTIONS,
    Function,
    calls_any,
    defaulted_parameters,
    dotted_name,
    parameters_of,
    reachable,
    self_name,
)
from loopgen.source.uses import (
    EXPERIMENT_READ,
    LOG_DICT_HOOKS,
    AutomaticOptimization,
    Handed,
    TrainerUse,
    Words,
    handed_module,
    logs_hparams,
    logs_to_bar,
    trainer_names,
)


def find_class_source(
    class_path: str, roots: Sequence[Path], *, where: str = "", line: int | None = None
) -> tuple[Path, Path]:
    """(root, file) of the module under `roots` that defines the class `class_path` names."""
    cls = _Reader(roots, where, line).find(class_path)
    return cls.module.root, cls.module.file


def find_function(path: str, roots: Sequence[Path], *, where: str, line: int | None = None) -> None:
    """Check that `path` (package.module.function) names a function the user's code defines at module level (a
    `def`, or a name assigned a lambda or such a function), or imports from another of its modules: a LoopgenError
    when not."""
    reader = _Reader(roots, where, line)
    seen: set[str] = set()
    while path not in seen:
        seen.add(path)
        module_name, _, name = path.rpartition(".")
        module = reader._module(module_name)
        if module is None:
            raise reader._error(f"cannot find module '{module_name}' of the function '{path}' in the project")
        defined: list[str] = []  # a def, a name assigned a lambda or a function defined before
        for node in module.statements:
            if isinstance(node, FUNCTIONS):
                defined.append(node.name)
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                value = node.value
                if isinstance(value, ast.Lambda) or isinstance(value, ast.Name) and value.id in defined:
                    defined.append(node.targets[0].id)
        if name in defined:
            return
        binding = next((b.value for b in reversed(reader._scope(module).names.get(name, ()))), None)
        if not isinstance(binding, str):
            close = difflib.get_close_matches(name, defined, n=1)
            hint = _hint(f"{module_name}.{close[0]}" if close else None)
            listing = ", ".join(defined) if defined else "no functions"
            raise reader._error(
                f"module '{module_name}' ({module.file}) defines no function '{name}'; it defines {listing}{hint}"
            )
        path = binding
    raise reader._error(f"'{path}' is imported in a circle")


def inspect_class(
    class_path: str,
    roots: Sequence[Path],
    *,
    where: str,
    callback: bool = False,
    line: int | None = None,
    init_args: Mapping[str, Any] | None = None,
    holders: tuple[str, ...] = (),
) -> ClassFacts:
    """What the source of `class_path` and of its bases in the user's code says; `where` is the spec key (on
    YAML `line`).

    `callback`: the class is used as a callback (its hooks get `(trainer, pl_module, ...)`), whatever its bases.
    `init_args`: what the spec passes the class; configure_optimizers is read as it runs with them
    (loopgen/source/fixed.py). `holders`: the classes that hold this one as a child LightningModule.
    """
    reader = _Reader(roots, where, line)
    cls = reader.find(class_path)
    found = list(reader.ancestry(cls))
    outside = [name for name in found if isinstance(name, str)]
    writer = any(_is_lightning(name, "BasePredictionWriter") for name in outside)
    is_callback = writer or any(_is_lightning(name, "Callback") for name in outside)
    methods: dict[str, tuple[str, ...]] = {}
    defaults: dict[str, tuple[str, ...]] = {}
    uses_log = saves_hparams = False
    logs_in: set[str] = set()
    hparams_logger: bool | None = False
    attributes: set[str] = set()
    class_attributes: set[str] = set()
    trainer_reads: set[str] | None = set()
    trainer_named: set[str] = set()  # read by name, whatever else the trainer is passed to
    module_reads: set[str] = set()
    scheduler = lbfgs = log_dicts = prog_bar = False
    optimizers: OptimizersFacts | None = None
    optimizers_unknown = ""
    automatic = AutomaticOptimization()
    experiment_in = ""  # the first line of a method that reads a logger's experiment
    configured: tuple | str | None = None
    val_loaders_listed_at = ""
    val_loader_built = False
    for ancestor in reversed(_linearize([c for c in found if isinstance(c, Class)])):
        automatic.walk(ancestor.node.body)  # bases first: the subclass's assignment wins
    fixed = _fixed(found, init_args) if init_args is not None else None
    lineage = _linearize([c for c in found if isinstance(c, Class)])
    named = _attribute_names(lineage)
    for ancestor in lineage:
        class_attributes |= ancestor.assigned()
        source = ancestor.module.source
        for fn in ancestor.methods():
            me = self_name(fn)
            first = fn.name not in methods
            methods.setdefault(fn.name, parameters_of(fn, skip_first=me is not None))
            defaults.setdefault(fn.name, defaulted_parameters(fn))
            if not first and fn.name not in named:
                continue  # overridden, and never reached (`super().name(...)`): what it reads never runs
            if me is not None and calls_any(fn, {f"{me}.log", f"{me}.log_dict"}):
                uses_log = True
                logs_in.add(fn.name)
            saves_hparams = saves_hparams or (me is not None and calls_any(fn, {f"{me}.save_hyperparameters"}))
            if me is not None:
                hparams_logger = logs_hparams(fn, me, hparams_logger)
            words = Words(me, source)
            words.walk(reachable(fn.body))
            attributes |= words.attributes
            use = TrainerUse(*trainer_names(fn, me, callback or is_callback))
            use.walk(reachable(fn.body))  # a read after a return never runs
            module_reads |= use.module_reads
            # the project's functions the module is handed to (`helper(self, ...)`) read its trainer and log too
            passed = reader.passed_module(fn, ancestor.module, {name for name in (me, use.module) if name})
            if passed.logs:
                uses_log = True
                logs_in.add(fn.name)
            attributes |= passed.attributes
            escapes = use.escapes or passed.escapes
            trainer_reads = None if trainer_reads is None or escapes else trainer_reads | use.reads | passed.reads
            trainer_named |= use.reads | passed.reads
            prog_bar = prog_bar or logs_to_bar(fn)
            if not experiment_in:
                code = source.lines(fn)
                experiment_in = next((text.strip() for text in code if EXPERIMENT_READ.search(text)), "")
            if first and fn.name in LOG_DICT_HOOKS:
                log_dicts = log_dicts or bool(words.strings & {"log", "progress_bar"})
                prog_bar = prog_bar or "progress_bar" in words.strings
            if first and fn.name == "configure_optimizers":
                scheduler = any("sched" in w.lower() or w.endswith("LR") or "LROn" in w for w in words.words)
                lbfgs = "LBFGS" in words.words
                read = read_optimizers(fn, source, fixed)
                optimizers, optimizers_unknown = (read, "") if isinstance(read, OptimizersFacts) else (None, read)
            if first and fn.name == "val_dataloader" and (line := returns_several(fn)) is not None:
                val_loaders_listed_at = f"{ancestor.module.file}:{line}"
            if first and fn.name == "val_dataloader":
                val_loader_built = returns_a_loader(fn)
            if first and fn.name == "configure_callbacks":
                module = ancestor.module
                configured = read_callbacks(
                    fn,
                    me,
                    lambda name, module=module: _class_path(reader._lookup_in(module, name, None)),
                    lambda line, module=module: f"{module.file}:{line}",
                )
    # the child LightningModules the module holds (`self.online = OnlineClassifier()`): Lightning's trainer setter
    # gives each the trainer, so what they read of it counts as the module's
    children = [] if callback or is_callback else _child_modules(reader, lineage)
    children = [(name, path) for name, path in children if path not in (*holders, class_path)]  # no cycles
    child_facts = [
        inspect_class(path, roots, where=where, line=line, holders=(*holders, class_path)) for _, path in children
    ]
    child_files = [file for child in child_facts for file in child.sources]
    for child in child_facts:
        trainer_reads = (
            None if trainer_reads is None or child.trainer_reads is None else trainer_reads | child.trainer_reads
        )
        trainer_named |= child.trainer_named
        attributes |= child.attributes_read & MODULE_TRAINER_NAMES
    read_nodes = [*(c.node for c in lineage), *_function_nodes(reader.functions_read)]
    return ClassFacts(
        class_path=class_path,
        file=cls.module.file,
        root=cls.module.root,
        is_lightning_module=any(_is_lightning(name, "LightningModule") for name in outside),
        is_lightning_callback=is_callback,
        is_prediction_writer=writer,
        lightning_bases=tuple(
            dict.fromkeys(name.rpartition(".")[2] for name in outside if name.split(".")[0] in LIGHTNING_PACKAGES)
        ),
        methods=methods,
        defaults=defaults,
        uses_log=uses_log,
        logs_in=frozenset(logs_in),
        saves_hyperparameters=saves_hparams,
        hyperparameters_to_loggers=hparams_logger,
        attributes_read=frozenset(attributes),
        class_attributes=frozenset(class_attributes),
        mentions_scheduler=scheduler,
        mentions_lbfgs=lbfgs,
        returns_log_dicts=log_dicts,
        logs_to_progress_bar=prog_bar,
        trainer_reads=None if trainer_reads is None else frozenset(trainer_reads),
        trainer_named=frozenset(trainer_named),
        module_reads=frozenset(module_reads),
        optimizers=optimizers,
        optimizers_unknown=optimizers_unknown,
        manual_optimization=None if automatic.value is None else not automatic.value,
        trainer_read_at=first_reads(trainer_named, [cls.module.file, *reader.files_read, *child_files]),
        defined_at=first_reads(set(methods), [cls.module.file, *reader.files_read], "def "),
        sources=tuple(dict.fromkeys([*reader.files_read, *child_files])),
        child_modules=tuple(
            path
            for (name, _), child in zip(children, child_facts)
            for path in (name, *(f"{name}.{inner}" for inner in child.child_modules))
        ),
        init=init_signature(found),
        imports_torchmetrics=any(imports_torchmetrics(file) for file in reader.files_read),
        mentions_iterable_dataset=uses_iterable_dataset(reader.statements_read, read_nodes),
        mentions_num_workers=uses_name(reader.statements_read, read_nodes, "num_workers"),
        mentions_sampler=any(
            uses_name(reader.statements_read, read_nodes, name) for name in ("sampler", "batch_sampler")
        ),
        experiment_read_at=line_of(experiment_in, [cls.module.file, *reader.files_read]),
        configured_callbacks=configured,
        val_loaders_listed_at=val_loaders_listed_at,
        val_loader_built=val_loader_built,
        read=read_objects(
            (m.name, m.file.relative_to(m.root).as_posix(), m.source.raw, m.statements, name)
            for m, name in dict.fromkeys([*((c.module, c.node.name) for c in lineage), *reader.functions_read])
        )
        + tuple(item for child in child_facts for item in child.read),
    )


# what a child LightningModule reads of the trainer through Lightning's own code (its counters, loggers, print...)
MODULE_TRAINER_NAMES = frozenset(
    {"current_epoch", "global_step", "logger", "loggers", "print", "all_gather", "global_rank", "local_rank"}
)


def _child_modules(reader: _Reader, lineage: Sequence[Class]) -> list[tuple[str, str]]:
    """The attributes the classes' __init__ set to a LightningModule of the project built there (`self.x =
    Child(...)`), each with the child's class path: Lightning's trainer setter, which fit calls before the setup
    hooks, reaches these (a LightningModule held in a list or a ModuleList, or made later, is not reached, in
    Lightning either)."""
    found: dict[str, str] = {}
    for ancestor in lineage:
        for fn in (fn for fn in ancestor.methods() if fn.name == "__init__"):
            me = self_name(fn)
            for node in ast.walk(fn):
                target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
                target = node.target if isinstance(node, ast.AnnAssign) else target
                value = getattr(node, "value", None)
                if not (
                    isinstance(target, ast.Attribute)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == me
                    and isinstance(value, ast.Call)
                ):
                    continue
                callee = dotted_name(value.func)
                child = reader._lookup_in(ancestor.module, callee, None) if callee else None
                if isinstance(child, Class) and _is_lightning_module(reader, child):
                    found.setdefault(target.attr, f"{child.module.name}.{child.node.name}")
    return list(found.items())


def _is_lightning_module(reader: _Reader, cls: Class) -> bool:
    try:
        return any(isinstance(name, str) and _is_lightning(name, "LightningModule") for name in reader.ancestry(cls))
    except LoopgenError:  # a base the source does not show: not followed (its class is not read)
        return False


def _attribute_names(classes: Sequence[Class]) -> set[str]:
    """Every attribute name the classes' methods read (`super().training_step`, `self.step`, `Base.step`): a
    method a subclass overrides still runs only when one of them names it."""
    return {
        node.attr for cls in classes for fn in cls.methods() for node in ast.walk(fn) if isinstance(node, ast.Attribute)
    }


def _fixed(found: Sequence[Class | str], init_args: Mapping[str, Any]) -> Fixed:
    """The values the spec's init_args fix in the class's source (loopgen/source/fixed.py): read from the
    `__init__` it gets, when that is in the user's code."""
    classes = _linearize([c for c in found if isinstance(c, Class)])
    for cls in classes:
        init = next((fn for fn in cls.methods() if fn.name == "__init__"), None)
        if cls.node.decorator_list or "__init__" in cls.assigned():
            return Fixed()
        if init is not None:
            signature = _signature(init, 1)
            if signature is None:
                return Fixed()
            return fixed_values(init, [c.node for c in classes], init_args, signature.defaults or {})
    return Fixed()


def _class_path(found: Class | str | None) -> str | None:
    """The dotted path of a class found by the reader: where a user class is defined, or the name outside."""
    if isinstance(found, Class):
        return f"{found.module.name}.{found.node.name}"
    return found


def class_lineage(class_path: str, roots: Sequence[Path]) -> tuple[str, ...]:
    """The class `class_path` names and its bases, each as the dotted path where it is defined (a user class's
    module and name; the name outside the user's code); () when the class is not found."""
    reader = _Reader(roots, "")
    try:
        return tuple(dict.fromkeys(_class_path(found) or "" for found in reader.ancestry(reader.find(class_path))))
    except LoopgenError:
        return ()


# bases outside the user's code whose constructors take no arguments (torch.nn.Module's takes none by name)
_NO_ARGUMENT_BASES = {
    "torch": ("Module",),
    "pytorch_lightning": ("LightningModule", "LightningDataModule", "Callback"),
    "lightning": ("LightningModule", "LightningDataModule", "Callback"),
    "typing": ("Generic", "Protocol"),
    "abc": ("ABC",),
}


def _function_nodes(functions: Sequence[tuple[Module, str]]) -> list[ast.AST]:
    """The definitions of the project's functions the reader followed (each a top-level function of its module)."""
    return [
        node
        for module, name in functions
        for node in module.statements
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name
    ]


def init_signature(found: Sequence[Class | str], skip: int = 1) -> Signature | None:
    """The `__init__` a class gets (its own, else the first of its bases' in method resolution order), read
    from the source: its parameters after the first `skip` (self); None when the source does not show it (a
    decorated class such as a dataclass, an `__init__` assigned, a base outside the user's code whose
    constructor is not known to take no arguments)."""
    classes = _linearize([c for c in found if isinstance(c, Class)])
    for cls in classes:
        if cls.node.decorator_list or "__init__" in cls.assigned() or "__new__" in {f.name for f in cls.methods()}:
            return None
        init = next((fn for fn in cls.methods() if fn.name == "__init__"), None)
        if init is not None:
            return _signature(init, skip)
    outside = [name for name in found if isinstance(name, str)]
    for name in outside:
        top, last = name.split(".")[0], name.rpartition(".")[2]
        if last not in _NO_ARGUMENT_BASES.get(top, ()) and name not in ("object", "builtins.object"):
            return None
    return Signature(names=())


def _signature(fn: Function, skip: int) -> Signature | None:
    if fn.decorator_list:
        return None
    p = fn.args
    positional = [*p.posonlyargs, *p.args]
    defaulted = {id(param) for param in positional[len(positional) - len(p.defaults) :]}
    defaulted |= {id(param) for param, default in zip(p.kwonlyargs, p.kw_defaults) if default is not None}
    positional_only = p.posonlyargs[skip:]
    rest = p.args[max(0, skip - len(p.posonlyargs)) :]
    keyword = [*rest, *p.kwonlyargs]
    given = [*zip(positional[len(positional) - len(p.defaults) :], p.defaults), *zip(p.kwonlyargs, p.kw_defaults)]
    defaults = {}
    for param, default in given:
        if default is None:  # a keyword-only parameter without a default
            continue
        try:
            defaults[param.arg] = ast.literal_eval(default)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
    return Signature(
        names=tuple(param.arg for param in keyword),
        required=tuple(param.arg for param in [*positional_only, *keyword] if id(param) not in defaulted),
        var_keyword=p.kwarg is not None,
        positional_only=tuple(param.arg for param in positional_only),
        defaults={name: value for name, value in defaults.items() if any(name == k.arg for k in keyword)},
        imported=tuple(param.arg for param in keyword if _names_an_import(param.annotation)),
    )


def _names_an_import(annotation: ast.expr | None) -> bool:
    """A parameter's annotation under which jsonargparse takes a string as an import path: Callable, or a class
    (`type`, `Type[...]`), and not also str."""
    if annotation is None:
        return False
    text = ast.unparse(annotation)
    kinds = re.findall(r"\b(?:Callable|[Tt]ype)\b", text)
    return bool(kinds) and not re.search(r"\bstr\b", text)


class _Reader(Modules):
    """Finds the user's classes and their bases, and the project's functions the module is handed to."""

    def __init__(self, roots: Sequence[Path], where: str, line: int | None = None):
        super().__init__(roots, where, line)
        self.functions_read: list[tuple[Module, str]] = []  # the project's functions followed (passed_module)

    def find(self, class_path: str) -> Class:
        """The user class `class_path` names, following re-exports; a LoopgenError when there is none."""
        module_name, _, name = class_path.rpartition(".")
        if not all(part.isidentifier() for part in class_path.split(".")) or not module_name:
            raise self._error(f"'{class_path}' is not a class path of the form 'package.module.ClassName'")
        module = self._module(module_name)
        if module is None:
            roots = ", ".join(str(root) for root in self.roots[:4]) + (", ..." if len(self.roots) > 4 else "")
            close = self._close_module(module_name)
            hint = _hint(f"{close}.{name}" if close else None)
            raise self._error(f"cannot find module '{module_name}' of '{class_path}' (searched {roots}){hint}")
        found = self._lookup(class_path)
        if isinstance(found, Class):
            return found
        if isinstance(found, str):
            raise self._error(
                f"'{class_path}' is imported from '{found.rpartition('.')[0]}', which is not under the "
                "project roots; name a class defined in your own code"
            )
        submodule = self._module(class_path)
        if submodule is not None:
            raise self._error(
                f"'{class_path}' is a module, not a class; it defines {_listing(self._classes(submodule))}"
            )
        defined = self._classes(module)
        close = difflib.get_close_matches(name, defined or list(self._scope(module).names), n=1)
        hint = _hint(f"{module_name}.{close[0]}" if close else None)
        raise self._error(
            f"module '{module_name}' ({module.file}) defines no class '{name}'; it defines {_listing(defined)}{hint}"
        )

    def ancestry(self, cls: Class, below: tuple[ast.ClassDef, ...] = ()) -> Iterator[Class | str]:
        """`cls`, then depth-first and left to right its bases: user classes, or dotted names outside the roots;
        a LoopgenError for a base the source does not show."""
        yield cls
        for base in cls.node.bases:
            expr = class_expression(base) if not isinstance(base, ast.Starred) else None
            found = self._lookup_in(cls.module, expr, stop=cls.node) if expr else None
            if isinstance(found, Class) and found.node not in (*below, cls.node):
                yield from self.ancestry(found, (*below, cls.node))
            elif isinstance(found, str):
                yield found
            elif found is None:
                raise self._unfollowed_base(cls, base)

    def passed_module(self, fn: Function, module: Module, names: set[str]) -> Handed:
        """What the project's functions that `fn` (in `module`) hands the module to (one of `names`) do with it
        (loopgen.source.uses.handed_module)."""

        def find(where: Module, callee: str) -> tuple[Module, Function | ast.ClassDef, str] | None:
            found = self._function(where, callee)
            if found is not None:
                self.functions_read.append((found[0], found[1].name))
            return None if found is None else (found[0], found[1], f"{found[0].file}:{found[1].name}")

        return handed_module(fn, module, names, find)

    def _function(self, module: Module, callee: str) -> tuple[Module, Function | ast.ClassDef] | None:
        """The module-level function `callee` names in `module` (defined there, or imported from the project), or
        the project's class it names (the module handed to its constructor)."""
        found = self._lookup_in(module, callee, None, functions=True)
        if isinstance(found, Class):
            return found.module, found.node
        return found if isinstance(found, tuple) else None


def _linearize(classes: list[Class]) -> list[Class]:
    """Method resolution order from a depth-first walk: keep each class's last occurrence."""
    kept: list[Class] = []
    for cls in reversed(classes):
        if all(cls.node is not k.node for k in kept):
            kept.append(cls)
    return kept[::-1]


def _is_lightning(name: str, cls: str) -> bool:
    parts = name.split(".")
    return parts[0] in LIGHTNING_PACKAGES and parts[-1] == cls


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "no classes"


def _hint(suggestion: str | None) -> str:
    return f"; did you mean '{suggestion}'?" if suggestion else ""
