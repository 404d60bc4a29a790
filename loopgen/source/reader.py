"""Stage 2: read the user's classes with the standard library's `ast` -> `ClassFacts`. Never imports user code."""

from __future__ import annotations

import ast
import difflib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loopgen.errors import LoopgenError, Problem
from loopgen.source.callbacks import read_callbacks
from loopgen.source.facts import ClassFacts, OptimizersFacts
from loopgen.source.fixed import Fixed, fixed_values
from loopgen.source.lines import first_reads, imports_torchmetrics, line_of, source_matches
from loopgen.source.loaders import returns_a_loader, returns_several
from loopgen.source.optimizers import read_optimizers
from loopgen.source.signatures import Signature
from loopgen.source.syntax import (
    FUNCTIONS,
    Binding,
    Function,
    Source,
    binding_statements,
    calls_any,
    dotted_name,
    parameters_of,
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

_LIGHTNING_PACKAGES = ("pytorch_lightning", "lightning")


# packages found on sys.path that are never read as the user's code: loopgen knows their classes by name
_NOT_USER_CODE = frozenset({"torch", "pytorch_lightning", "lightning", "lightning_fabric", "torchmetrics"})


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
        tree = ast.parse(module.file.read_bytes(), str(module.file))
        defined: list[str] = []  # a def, a name assigned a lambda or a function defined before
        for node in tree.body:
            if isinstance(node, FUNCTIONS):
                defined.append(node.name)
            elif isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                value = node.value
                if isinstance(value, ast.Lambda) or isinstance(value, ast.Name) and value.id in defined:
                    defined.append(node.targets[0].id)
        if name in defined:
            return
        binding = _bindings(module).get(name)
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
) -> ClassFacts:
    """What the source of `class_path` and of its bases in the user's code says; `where` is the spec key (on
    YAML `line`).

    `callback`: the class is used as a callback (its hooks get `(trainer, pl_module, ...)`), whatever its bases.
    `init_args`: what the spec passes the class; configure_optimizers is read as it runs with them
    (loopgen/source/fixed.py).
    """
    reader = _Reader(roots, where, line)
    cls = reader.find(class_path)
    found = list(reader.ancestry(cls))
    outside = [name for name in found if isinstance(name, str)]
    writer = any(_is_lightning(name, "BasePredictionWriter") for name in outside)
    is_callback = writer or any(_is_lightning(name, "Callback") for name in outside)
    methods: dict[str, tuple[str, ...]] = {}
    uses_log = saves_hparams = False
    logs_in: set[str] = set()
    hparams_logger: bool | None = False
    attributes: set[str] = set()
    class_attributes: set[str] = set()
    trainer_reads: set[str] | None = set()
    module_reads: set[str] = set()
    scheduler = lbfgs = log_dicts = prog_bar = False
    optimizers: OptimizersFacts | None = None
    optimizers_unknown = ""
    automatic = AutomaticOptimization()
    experiment_in = ""  # the first line of a method that reads a logger's experiment
    configured: tuple | str | None = None
    val_loaders_listed_at = ""
    val_loader_built = False
    for ancestor in reversed(_linearize([c for c in found if isinstance(c, _Class)])):
        automatic.walk(ancestor.node.body)  # bases first: the subclass's assignment wins
    fixed = _fixed(found, init_args) if init_args is not None else None
    lineage = _linearize([c for c in found if isinstance(c, _Class)])
    named = _attribute_names(lineage)
    for ancestor in lineage:
        class_attributes |= ancestor.assigned()
        source = ancestor.module.source
        for fn in ancestor.methods():
            me = self_name(fn)
            first = fn.name not in methods
            methods.setdefault(fn.name, parameters_of(fn, skip_first=me is not None))
            if not first and fn.name not in named:
                continue  # overridden, and never reached (`super().name(...)`): what it reads never runs
            if me is not None and calls_any(fn, {f"{me}.log", f"{me}.log_dict"}):
                uses_log = True
                logs_in.add(fn.name)
            saves_hparams = saves_hparams or (me is not None and calls_any(fn, {f"{me}.save_hyperparameters"}))
            if me is not None:
                hparams_logger = logs_hparams(fn, me, hparams_logger)
            words = Words(me, source)
            words.walk(fn.body)
            attributes |= words.attributes
            use = TrainerUse(*trainer_names(fn, me, callback or is_callback))
            use.walk(fn.body)
            module_reads |= use.module_reads
            # the project's functions the module is handed to (`helper(self, ...)`) read its trainer and log too
            passed = reader.passed_module(fn, ancestor.module, {name for name in (me, use.module) if name})
            if passed.logs:
                uses_log = True
                logs_in.add(fn.name)
            escapes = use.escapes or passed.escapes
            trainer_reads = None if trainer_reads is None or escapes else trainer_reads | use.reads | passed.reads
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
    return ClassFacts(
        class_path=class_path,
        file=cls.module.file,
        root=cls.module.root,
        is_lightning_module=any(_is_lightning(name, "LightningModule") for name in outside),
        is_lightning_callback=is_callback,
        is_prediction_writer=writer,
        lightning_bases=tuple(
            dict.fromkeys(name.rpartition(".")[2] for name in outside if name.split(".")[0] in _LIGHTNING_PACKAGES)
        ),
        methods=methods,
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
        module_reads=frozenset(module_reads),
        optimizers=optimizers,
        optimizers_unknown=optimizers_unknown,
        manual_optimization=None if automatic.value is None else not automatic.value,
        trainer_read_at=first_reads(trainer_reads or set(), [cls.module.file, *reader.files_read]),
        defined_at=first_reads(set(methods), [cls.module.file, *reader.files_read], "def "),
        sources=tuple(reader.files_read),
        init=init_signature(found),
        imports_torchmetrics=any(imports_torchmetrics(file) for file in reader.files_read),
        mentions_iterable_dataset=any(source_matches(file, r"\bIterableDataset\b") for file in reader.files_read),
        experiment_read_at=line_of(experiment_in, [cls.module.file, *reader.files_read]),
        configured_callbacks=configured,
        val_loaders_listed_at=val_loaders_listed_at,
        val_loader_built=val_loader_built,
    )


def _attribute_names(classes: Sequence[_Class]) -> set[str]:
    """Every attribute name the classes' methods read (`super().training_step`, `self.step`, `Base.step`): a
    method a subclass overrides still runs only when one of them names it."""
    return {
        node.attr for cls in classes for fn in cls.methods() for node in ast.walk(fn) if isinstance(node, ast.Attribute)
    }


def _fixed(found: Sequence[_Class | str], init_args: Mapping[str, Any]) -> Fixed:
    """The values the spec's init_args fix in the class's source (loopgen/source/fixed.py): read from the
    `__init__` it gets, when that is in the user's code."""
    classes = _linearize([c for c in found if isinstance(c, _Class)])
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


def _class_path(found: _Class | str | None) -> str | None:
    """The dotted path of a class found by the reader: where a user class is defined, or the name outside."""
    if isinstance(found, _Class):
        return f"{found.module.name}.{found.node.name}"
    return found


def class_lineage(class_path: str, roots: Sequence[Path]) -> tuple[str, ...]:
    """The class `class_path` names and its bases, each as the dotted path where it is defined (a user class's
    module and name; the name outside the user's code); () when the class is not found."""
    reader = _Reader(roots, "")
    try:
        cls = reader.find(class_path)
    except LoopgenError:
        return ()
    return tuple(dict.fromkeys(_class_path(found) or "" for found in reader.ancestry(cls)))


# bases outside the user's code whose constructors take no arguments (torch.nn.Module's takes none by name)
_NO_ARGUMENT_BASES = {
    "torch": ("Module",),
    "pytorch_lightning": ("LightningModule", "LightningDataModule", "Callback"),
    "lightning": ("LightningModule", "LightningDataModule", "Callback"),
}


def init_signature(found: Sequence[_Class | str], skip: int = 1) -> Signature | None:
    """The `__init__` a class gets (its own, else the first of its bases' in method resolution order), read
    from the source: its parameters after the first `skip` (self); None when the source does not show it (a
    decorated class such as a dataclass, an `__init__` assigned, a base outside the user's code whose
    constructor is not known to take no arguments)."""
    classes = _linearize([c for c in found if isinstance(c, _Class)])
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
    )


@dataclass(frozen=True, eq=False)
class _Module:
    name: str  # dotted module name
    root: Path
    file: Path
    statements: list[ast.stmt]  # the module-level statements that bind names, in source order
    source: Source

    @property
    def package(self) -> str:
        return self.name if self.file.name == "__init__.py" else self.name.rpartition(".")[0]


@dataclass(frozen=True, eq=False)
class _Class:
    module: _Module
    node: ast.ClassDef

    def methods(self) -> Iterator[Function]:
        """The methods defined in the class body, the last definition of a name first (the one Python keeps)."""
        return (s for s in reversed(self.node.body) if isinstance(s, FUNCTIONS))

    def assigned(self) -> set[str]:
        """The names the class body assigns (class attributes: `name = ...`, `name: type = ...`)."""
        names = set()
        for statement in self.node.body:
            if isinstance(statement, ast.Assign):
                targets = statement.targets
            elif isinstance(statement, ast.AnnAssign) and statement.value is not None:
                targets = [statement.target]
            else:
                continue
            names |= {target.id for target in targets if isinstance(target, ast.Name)}
        return names


class _Reader:
    """Finds and parses user modules under `roots`; each file is parsed at most once."""

    def __init__(self, roots: Sequence[Path], where: str, line: int | None = None):
        self.roots = list(roots)
        self.where = where
        self.line = line
        self._modules: dict[str, _Module | None] = {}
        self._files: dict[Path, tuple[list[ast.stmt], Source]] = {}

    @property
    def files_read(self) -> list[Path]:
        return list(self._files)

    def find(self, class_path: str) -> _Class:
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
        if isinstance(found, _Class):
            return found
        if isinstance(found, str):
            raise self._error(
                f"'{class_path}' is imported from '{found.rpartition('.')[0]}', which is not under the "
                "project roots; name a class defined in your own code"
            )
        submodule = self._module(class_path)
        if submodule is not None:
            raise self._error(f"'{class_path}' is a module, not a class; it defines {_listing(_classes(submodule))}")
        defined = _classes(module)
        close = difflib.get_close_matches(name, defined or list(_bindings(module)), n=1)
        hint = _hint(f"{module_name}.{close[0]}" if close else None)
        raise self._error(
            f"module '{module_name}' ({module.file}) defines no class '{name}'; it defines {_listing(defined)}{hint}"
        )

    def ancestry(self, cls: _Class, below: tuple[ast.ClassDef, ...] = ()) -> Iterator[_Class | str]:
        """`cls`, then depth-first and left to right its bases: user classes, or dotted names outside the roots."""
        yield cls
        for base in cls.node.bases:
            expr = dotted_name(base) if not isinstance(base, ast.Starred) else None
            found = self._lookup_in(cls.module, expr, stop=cls.node) if expr else None
            if isinstance(found, _Class) and found.node not in (*below, cls.node):
                yield from self.ancestry(found, (*below, cls.node))
            elif isinstance(found, str):
                yield found

    def passed_module(self, fn: Function, module: _Module, names: set[str]) -> Handed:
        """What the project's functions that `fn` (in `module`) hands the module to (one of `names`) do with it
        (loopgen.source.uses.handed_module)."""

        def find(where: _Module, callee: str) -> tuple[_Module, Function, str] | None:
            found = self._function(where, callee)
            return None if found is None else (found[0], found[1], f"{found[0].file}:{found[1].name}")

        return handed_module(fn, module, names, find)

    def _function(self, module: _Module, callee: str) -> tuple[_Module, Function] | None:
        """The module-level function `callee` names in `module` (defined there, or imported from the project)."""
        if "." not in callee:
            defined = [s for s in module.statements if isinstance(s, FUNCTIONS) and s.name == callee]
            if defined:
                return module, defined[-1]
        target = _qualify(_bindings(module), callee)
        if not target:
            return None
        module_name, _, name = target.rpartition(".")
        other = self._module(module_name) if module_name else None
        if other is None or other is module:
            return None
        defined = [s for s in other.statements if isinstance(s, FUNCTIONS) and s.name == name]
        return (other, defined[-1]) if defined else None

    def _lookup_in(self, module: _Module, expr: str, stop: ast.ClassDef | None) -> _Class | str | None:
        """What the dotted expression `expr` refers to in `module` just before the statement `stop`."""
        target = _qualify(_bindings(module, stop), expr)
        if isinstance(target, ast.ClassDef):
            return _Class(module, target)
        return self._lookup(target) if target else None

    def _lookup(self, dotted: str, seen: frozenset[str] = frozenset()) -> _Class | str | None:
        """The class a fully qualified name refers to: a user class, the name itself when its module
        is not under the roots, or None when it cannot be resolved."""
        module_name, _, name = dotted.rpartition(".")
        module = self._module(module_name)
        if module is None:
            return dotted
        if dotted in seen:
            return None
        binding = _bindings(module).get(name)
        if isinstance(binding, ast.ClassDef):
            return _Class(module, binding)
        if isinstance(binding, str):
            return self._lookup(binding, seen | {dotted})
        stars = (self._lookup(f"{star}.{name}", seen | {dotted}) for star in reversed(_stars(module)))
        return next((found for found in stars if isinstance(found, _Class)), None)

    def _module(self, name: str) -> _Module | None:
        """The module `name` from the first root that has it as a package or a .py file."""
        if name not in self._modules:
            self._modules[name] = None
            outside = name.partition(".")[0] in _NOT_USER_CODE  # their classes are known by name
            for root in self.roots if name and not outside else ():
                base = root.joinpath(*name.split("."))
                file = next((f for f in (base / "__init__.py", base.parent / f"{base.name}.py") if f.is_file()), None)
                if file is not None:
                    self._modules[name] = _Module(name, root, file, *self._parse(file))
                    break
        return self._modules[name]

    def _parse(self, file: Path) -> tuple[list[ast.stmt], Source]:
        """The name-binding statements of `file` and its text, parsed once."""
        if file not in self._files:
            source = file.read_bytes()
            try:
                tree = ast.parse(source, str(file))  # parses only; nothing runs
            except SyntaxError as e:
                raise self._syntax_error(file, e.msg, e.lineno) from None
            except ValueError as e:  # a null byte
                raise self._syntax_error(file, str(e), None) from None
            statements: list[ast.stmt] = []
            binding_statements(tree.body, statements)
            self._files[file] = statements, Source(source)
        return self._files[file]

    def _close_module(self, module_name: str) -> str:
        """The closest existing module path to `module_name`, correcting its first missing part; else ""."""
        parts = module_name.split(".")
        dirs = [root for root in self.roots if root.is_dir()]
        for i, part in enumerate(parts):
            children = {p.stem if p.suffix == ".py" else p.name for d in dirs for p in d.iterdir()}
            if part not in children:
                close = difflib.get_close_matches(part, [c for c in children if c.isidentifier()], n=1)
                return ".".join([*parts[:i], *close, *parts[i + 1 :]]) if close else ""
            dirs = [d / part for d in dirs if (d / part).is_dir()]
        return ""

    def _syntax_error(self, file: Path, message: str, line: int | None) -> LoopgenError:
        """Python's own message and line."""
        reading = f" (reading it for {self.where})" if self.where else ""
        return LoopgenError(Problem(str(file), f"syntax error: {message}{reading}", line))

    def _error(self, message: str) -> LoopgenError:
        return LoopgenError(Problem(self.where, message, self.line))


def _bindings(module: _Module, stop: ast.ClassDef | None = None) -> dict[str, Binding]:
    """The module-level names bound before the statement `stop` (all of them without one)."""
    names: dict[str, Binding] = {}
    for node in module.statements:
        if node is stop:
            break
        if isinstance(node, ast.ClassDef):
            names[node.name] = node
        elif isinstance(node, ast.Import):
            for alias in node.names:
                top = alias.name.partition(".")[0]
                names[alias.asname or top] = alias.name if alias.asname else top
        elif isinstance(node, ast.ImportFrom) and node.names[0].name != "*":
            source = _import_source(module, node)
            for alias in node.names:
                names[alias.asname or alias.name] = source and f"{source}.{alias.name}"
        elif isinstance(node, ast.Assign):
            value = dotted_name(node.value)
            for target in node.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = _qualify(names, value) if value else None
    return names


def _stars(module: _Module) -> list[str]:
    """The modules `from X import *` reads from, in source order."""
    stars = (s for s in module.statements if isinstance(s, ast.ImportFrom) and s.names[0].name == "*")
    return [source for s in stars if (source := _import_source(module, s))]


def _import_source(module: _Module, node: ast.ImportFrom) -> str | None:
    """The absolute module name `from ... import` reads from; None for a relative import above the top package."""
    name = node.module
    level = node.level
    if not level:
        return name
    package = module.package.split(".") if module.package else []
    if level - 1 > len(package):
        return None
    return ".".join([*package[: len(package) - level + 1], *([name] if name else [])]) or None


def _qualify(names: Mapping[str, Binding], expr: str) -> Binding:
    """Resolve the dotted expression `expr` against module-level `names`."""
    head, _, rest = expr.partition(".")
    target = names.get(head)
    if not rest or target is None:
        return target
    return f"{target}.{rest}" if isinstance(target, str) else None


def _linearize(classes: list[_Class]) -> list[_Class]:
    """Method resolution order from a depth-first walk: keep each class's last occurrence."""
    kept: list[_Class] = []
    for cls in reversed(classes):
        if all(cls.node is not k.node for k in kept):
            kept.append(cls)
    return kept[::-1]


def _is_lightning(name: str, cls: str) -> bool:
    parts = name.split(".")
    return parts[0] in _LIGHTNING_PACKAGES and parts[-1] == cls


def _classes(module: _Module) -> list[str]:
    return sorted(name for name, b in _bindings(module).items() if isinstance(b, ast.ClassDef))


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "no classes"


def _hint(suggestion: str | None) -> str:
    return f"; did you mean '{suggestion}'?" if suggestion else ""
