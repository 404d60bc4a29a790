"""Stage 2: read the user's classes with libcst -> `ClassFacts`. Never imports user code."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import libcst as cst

from loopgen.errors import LoopgenError, Problem
from loopgen.signatures import Signature

_LIGHTNING_PACKAGES = ("pytorch_lightning", "lightning")
# packages found on sys.path that are never read as the user's code: loopgen knows their classes by name
_NOT_USER_CODE = frozenset({"torch", "pytorch_lightning", "lightning", "lightning_fabric", "torchmetrics"})


@dataclass(frozen=True)
class ClassFacts:
    class_path: str  # as given in the spec
    file: Path  # the source file the class is defined in
    root: Path  # the sys.path root the module was found under (the script must run with it importable)
    is_lightning_module: bool  # a base is pytorch_lightning's / lightning's LightningModule
    is_lightning_callback: bool  # a base is Lightning's Callback
    # methods defined by the class or its bases in the user's code (not Lightning's),
    # each with its parameter names after `self` (keyword-only included; *args/**kwargs as "*args"/"**kwargs")
    methods: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    uses_log: bool = False  # the class body calls self.log(...) or self.log_dict(...)
    saves_hyperparameters: bool = False  # ... calls self.save_hyperparameters(...)
    # ... for the loggers too: its `logger` argument (True unless a literal False; None when not a literal)
    hyperparameters_to_loggers: bool | None = False
    sources: tuple[Path, ...] = ()  # every user file read to learn these facts
    attributes_read: frozenset[str] = frozenset()  # every `self.X` the methods mention
    class_attributes: frozenset[str] = frozenset()  # the names the class bodies assign
    mentions_scheduler: bool = False  # configure_optimizers mentions an LR scheduler (name or "lr_scheduler" key)
    mentions_lbfgs: bool = False  # configure_optimizers mentions LBFGS (a closure optimizer)
    returns_log_dicts: bool = False  # a step or epoch-end hook mentions the seed's "log" / "progress_bar" keys
    # a `.log(...)` / `.log_dict(...)` call may pass prog_bar=True, or a step hook mentions the seed's "progress_bar"
    logs_to_progress_bar: bool = False
    # what the methods read from the trainer (`self.trainer.X` in a module; the `trainer` parameter or
    # `pl_module.trainer.X` in a callback); None: the trainer itself is passed on or stored, so anything may be read
    trainer_reads: frozenset[str] | None = frozenset()
    module_reads: frozenset[str] = frozenset()  # a callback's `pl_module.X` attributes
    optimizers: OptimizersFacts | None = None  # configure_optimizers' return, when its source shows it
    optimizers_unknown: str = ""  # why its source does not show it (with configure_optimizers defined)
    init: Signature | None = None  # what its constructor takes (None: the source does not show it)
    imports_torchmetrics: bool = False  # a file it was read from imports torchmetrics (Metric objects may be logged)
    # `self.automatic_optimization = False` (or a class attribute / property saying so): manual optimization;
    # None: it is assigned something else than a literal True / False
    manual_optimization: bool | None = False
    # where each trainer attribute is first read: "file:line" (for render-time errors)
    trainer_read_at: Mapping[str, str] = field(default_factory=dict, compare=False)
    defined_at: Mapping[str, str] = field(default_factory=dict, compare=False)  # "file:line" of each method's `def`
    mentions_iterable_dataset: bool = False  # ... names IterableDataset (its loaders may have no length)
    # "file:line" of the first method reading a logger's `experiment` (`logger.experiment`, `loggers[i].experiment`)
    experiment_read_at: str = field(default="", compare=False)

    def defines(self, hook: str) -> bool:
        return hook in self.methods


@dataclass(frozen=True)
class SchedulerFacts:
    """One LR scheduler in configure_optimizers' return, as its source writes it."""

    cls: str  # the class it constructs (the last part of the dotted name: "StepLR")
    optimizer: int | None  # the index of the optimizer it is built on, when the source shows which
    config: Mapping[str, Any] | None = None  # the keys of its {"scheduler": ...} dict (literals); None: given bare
    name: str | None = None  # its dict's "name" (what LearningRateMonitor logs it as)
    name_known: bool = True  # False: a "name" whose value the source does not show


@dataclass(frozen=True)
class OptimizersFacts:
    """What configure_optimizers returns, read from its one return statement (Lightning's forms)."""

    form: str  # "optimizer" | "optimizers" (a list or tuple) | "lists" ([optimizers], [schedulers]) | "dict" | "dicts"
    optimizers: tuple[str, ...]  # the class of each optimizer, in order
    schedulers: tuple[SchedulerFacts, ...] = ()
    monitor: str | None = None  # the dict form's top-level "monitor" (for a bare ReduceLROnPlateau)
    frequencies: tuple[int, ...] | None = None  # the dicts' "frequency" values, when each dict has one


def find_class_source(
    class_path: str, roots: Sequence[Path], *, where: str = "", line: int | None = None
) -> tuple[Path, Path]:
    """(root, file) of the module under `roots` that defines the class `class_path` names."""
    cls = _Reader(roots, where, line).find(class_path)
    return cls.module.root, cls.module.file


def inspect_class(
    class_path: str, roots: Sequence[Path], *, where: str, callback: bool = False, line: int | None = None
) -> ClassFacts:
    """What the source of `class_path` and of its bases in the user's code says; `where` is the spec key (on
    YAML `line`).

    `callback`: the class is used as a callback (its hooks get `(trainer, pl_module, ...)`), whatever its bases.
    """
    reader = _Reader(roots, where, line)
    cls = reader.find(class_path)
    found = list(reader.ancestry(cls))
    outside = [name for name in found if isinstance(name, str)]
    is_callback = any(_is_lightning(name, "Callback") for name in outside)
    methods: dict[str, tuple[str, ...]] = {}
    uses_log = saves_hparams = False
    hparams_logger: bool | None = False
    attributes: set[str] = set()
    class_attributes: set[str] = set()
    trainer_reads: set[str] | None = set()
    module_reads: set[str] = set()
    scheduler = lbfgs = log_dicts = prog_bar = False
    optimizers: OptimizersFacts | None = None
    optimizers_unknown = ""
    automatic = _AutomaticOptimization()
    experiment_in = ""  # the first line of a method that reads a logger's experiment
    for ancestor in reversed(_linearize([c for c in found if isinstance(c, _Class)])):
        ancestor.node.body.visit(automatic)  # bases first: the subclass's assignment wins
    for ancestor in _linearize([c for c in found if isinstance(c, _Class)]):
        class_attributes |= ancestor.assigned()
        for fn in ancestor.methods():
            me = _self_name(fn)
            first = fn.name.value not in methods
            methods.setdefault(fn.name.value, _params(fn, skip_first=me is not None))
            uses_log = uses_log or (me is not None and _calls(fn, {f"{me}.log", f"{me}.log_dict"}))
            saves_hparams = saves_hparams or (me is not None and _calls(fn, {f"{me}.save_hyperparameters"}))
            if me is not None:
                hparams_logger = _hparams_logger(fn, me, hparams_logger)
            words = _Words(me)
            fn.body.visit(words)
            attributes |= words.attributes
            use = _TrainerUse(*_trainer_names(fn, me, callback or is_callback))
            fn.body.visit(use)
            module_reads |= use.module_reads
            trainer_reads = None if trainer_reads is None or use.escapes else trainer_reads | use.reads
            prog_bar = prog_bar or _logs_to_progress_bar(fn)
            if not experiment_in:
                code = cst.Module([]).code_for_node(fn).splitlines()
                experiment_in = next((text.strip() for text in code if _EXPERIMENT_READ.search(text)), "")
            if first and fn.name.value in _LOG_DICT_HOOKS:
                log_dicts = log_dicts or bool(words.strings & {"log", "progress_bar"})
                prog_bar = prog_bar or "progress_bar" in words.strings
            if first and fn.name.value == "configure_optimizers":
                scheduler = any("sched" in w.lower() or w.endswith("LR") or "LROn" in w for w in words.words)
                lbfgs = "LBFGS" in words.words
                read = read_optimizers(fn)
                optimizers, optimizers_unknown = (read, "") if isinstance(read, OptimizersFacts) else (None, read)
    return ClassFacts(
        class_path=class_path,
        file=cls.module.file,
        root=cls.module.root,
        is_lightning_module=any(_is_lightning(name, "LightningModule") for name in outside),
        is_lightning_callback=is_callback,
        methods=methods,
        uses_log=uses_log,
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
        trainer_read_at=_first_reads(trainer_reads or set(), [cls.module.file, *reader.files_read]),
        defined_at=_first_reads(set(methods), [cls.module.file, *reader.files_read], "def "),
        sources=tuple(reader.files_read),
        init=init_signature(found),
        imports_torchmetrics=any(_imports_torchmetrics(file) for file in reader.files_read),
        mentions_iterable_dataset=any(_source_matches(file, r"\bIterableDataset\b") for file in reader.files_read),
        experiment_read_at=_line_of(experiment_in, [cls.module.file, *reader.files_read]),
    )


# ---------------------------------------------------------------------------
# what the constructor takes

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
        if cls.node.decorators or "__init__" in cls.assigned() or "__new__" in {f.name.value for f in cls.methods()}:
            return None
        init = next((fn for fn in cls.methods() if fn.name.value == "__init__"), None)
        if init is not None:
            return _signature(init, skip)
    outside = [name for name in found if isinstance(name, str)]
    for name in outside:
        top, last = name.split(".")[0], name.rpartition(".")[2]
        if last not in _NO_ARGUMENT_BASES.get(top, ()) and name not in ("object", "builtins.object"):
            return None
    return Signature(names=())


def _signature(fn: cst.FunctionDef, skip: int) -> Signature | None:
    if fn.decorators:
        return None
    p = fn.params
    positional_only = [param for param in p.posonly_params][skip:]
    rest = [param for param in p.params][max(0, skip - len(p.posonly_params)) :]
    keyword = [*rest, *p.kwonly_params]
    return Signature(
        names=tuple(param.name.value for param in keyword),
        required=tuple(param.name.value for param in [*positional_only, *keyword] if param.default is None),
        var_keyword=p.star_kwarg is not None,
        positional_only=tuple(param.name.value for param in positional_only),
    )


def _imports_torchmetrics(file: Path) -> bool:
    """Whether the module's source has an `import torchmetrics...` or `from torchmetrics... import` statement."""
    return _source_matches(file, r"^[ \t]*(?:import|from)[ \t]+torchmetrics\b")


def _source_matches(file: Path, pattern: str) -> bool:
    try:
        source = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return re.search(pattern, source, re.MULTILINE) is not None


def _line_of(text: str, files: Sequence[Path]) -> str:
    """'file:line' of the first line of `files` that is `text` (stripped); "" when `text` is empty."""
    for file in dict.fromkeys(files) if text else ():
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, line in enumerate(lines, 1):
            if line.strip() == text:
                return f"{file}:{number}"
    return ""


def _first_reads(names: set[str], files: Sequence[Path], prefix: str = r"trainer\.") -> dict[str, str]:
    """'file:line' of the first `trainer.X` (`prefix` then X) in `files`, for each X of `names`."""
    found: dict[str, str] = {}
    if not names:
        return found
    pattern = re.compile(prefix + "(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b")
    for file in dict.fromkeys(files):
        try:
            lines = file.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for number, text in enumerate(lines, 1):
            for match in pattern.finditer(text):
                found.setdefault(match.group(1), f"{file}:{number}")
    return found


# A module-level name: a class defined there, the dotted name it was imported as, or unknown.
_Binding = str | cst.ClassDef | None


@dataclass(frozen=True, eq=False)
class _Module:
    name: str  # dotted module name
    root: Path
    file: Path
    statements: list[cst.CSTNode]  # the module-level statements that bind names, in source order

    @property
    def package(self) -> str:
        return self.name if self.file.name == "__init__.py" else self.name.rpartition(".")[0]


@dataclass(frozen=True, eq=False)
class _Class:
    module: _Module
    node: cst.ClassDef

    def methods(self) -> Iterator[cst.FunctionDef]:
        """The methods defined in the class body, the last definition of a name first (the one Python keeps)."""
        return (s for s in reversed(self.node.body.body) if isinstance(s, cst.FunctionDef))

    def assigned(self) -> set[str]:
        """The names the class body assigns (class attributes: `name = ...`, `name: type = ...`)."""
        names = set()
        for line in self.node.body.body:
            for statement in line.body if isinstance(line, cst.SimpleStatementLine) else ():
                if isinstance(statement, cst.Assign):
                    targets = [target.target for target in statement.targets]
                elif isinstance(statement, cst.AnnAssign) and statement.value is not None:
                    targets = [statement.target]
                else:
                    continue
                names |= {target.value for target in targets if isinstance(target, cst.Name)}
        return names


class _Reader:
    """Finds and parses user modules under `roots`; each file is parsed at most once."""

    def __init__(self, roots: Sequence[Path], where: str, line: int | None = None):
        self.roots = list(roots)
        self.where = where
        self.line = line
        self._modules: dict[str, _Module | None] = {}
        self._files: dict[Path, list[cst.CSTNode]] = {}

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

    def ancestry(self, cls: _Class, below: tuple[cst.ClassDef, ...] = ()) -> Iterator[_Class | str]:
        """`cls`, then depth-first and left to right its bases: user classes, or dotted names outside the roots."""
        yield cls
        for base in cls.node.bases:
            expr = _dotted(base.value) if not base.star else None
            found = self._lookup_in(cls.module, expr, stop=cls.node) if expr else None
            if isinstance(found, _Class) and found.node not in (*below, cls.node):
                yield from self.ancestry(found, (*below, cls.node))
            elif isinstance(found, str):
                yield found

    def _lookup_in(self, module: _Module, expr: str, stop: cst.ClassDef | None) -> _Class | str | None:
        """What the dotted expression `expr` refers to in `module` just before the statement `stop`."""
        target = _qualify(_bindings(module, stop), expr)
        if isinstance(target, cst.ClassDef):
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
        if isinstance(binding, cst.ClassDef):
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
                    self._modules[name] = _Module(name, root, file, self._parse(file))
                    break
        return self._modules[name]

    def _parse(self, file: Path) -> list[cst.CSTNode]:
        """The name-binding statements of `file`, parsed once."""
        if file not in self._files:
            source = file.read_bytes()
            try:
                tree = cst.parse_module(source)
            except cst.ParserSyntaxError as e:
                raise self._syntax_error(file, source, e) from None
            collector = _BindingStatements()
            tree.visit(collector)
            self._files[file] = collector.statements
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

    def _syntax_error(self, file: Path, source: bytes, error: cst.ParserSyntaxError) -> LoopgenError:
        """Python's own message and line (libcst's line numbers can be off); libcst's if Python accepts it."""
        try:
            ast.parse(source, str(file))  # parses only; nothing runs
            message, line = error.message, error.raw_line
        except SyntaxError as e:
            message, line = e.msg, e.lineno
        reading = f" (reading it for {self.where})" if self.where else ""
        return LoopgenError(Problem(str(file), f"syntax error: {message}{reading}", line))

    def _error(self, message: str) -> LoopgenError:
        return LoopgenError(Problem(self.where, message, self.line))


class _BindingStatements(cst.CSTVisitor):
    """Collects module-level imports, assignments and class statements (also inside if/try/with blocks)."""

    def __init__(self) -> None:
        super().__init__()
        self.statements: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.Import, cst.ImportFrom, cst.Assign, cst.ClassDef)):
            self.statements.append(node)
            return False
        return not isinstance(node, (cst.FunctionDef, cst.BaseExpression))


class _CallFinder(cst.CSTVisitor):
    def __init__(self, names: set[str]) -> None:
        super().__init__()
        self.names = names
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        self.found = self.found or _dotted(node.func) in self.names


class _HparamsCalls(cst.CSTVisitor):
    """The `logger` argument of each `me.save_hyperparameters(...)` call: True (absent or literal True), False,
    or None (not a literal)."""

    def __init__(self, me: str) -> None:
        super().__init__()
        self.me = me
        self.loggers: list[bool | None] = []

    def visit_Call(self, node: cst.Call) -> None:
        if _dotted(node.func) != f"{self.me}.save_hyperparameters":
            return
        value: bool | None = True
        for arg in node.args:
            if arg.keyword is not None and arg.keyword.value == "logger":
                literal = arg.value.value if isinstance(arg.value, cst.Name) else None
                value = {"True": True, "False": False}.get(literal)  # type: ignore[arg-type]
            elif arg.star:
                value = None  # **kwargs may hold it
        self.loggers.append(value)


# prog_bar's position: LightningModule.log(name, value, prog_bar, ...), log_dict(dictionary, prog_bar, ...)
_PROG_BAR_POSITION = {"log": 2, "log_dict": 1}


class _ProgressBarLogs(cst.CSTVisitor):
    """Whether a `X.log(...)` / `X.log_dict(...)` call (self.log, pl_module.log) may pass prog_bar=True: its
    `prog_bar` argument (by keyword, or the position Lightning gives it) is there and not the literal False, or
    *args / **kwargs may hold it."""

    def __init__(self) -> None:
        super().__init__()
        self.found = False

    def visit_Call(self, node: cst.Call) -> None:
        if not isinstance(node.func, cst.Attribute) or node.func.attr.value not in _PROG_BAR_POSITION:
            return
        positional = [arg for arg in node.args if arg.keyword is None and not arg.star]
        values = [arg.value for arg in node.args if arg.keyword is not None and arg.keyword.value == "prog_bar"]
        if len(positional) > _PROG_BAR_POSITION[node.func.attr.value]:
            values.append(positional[_PROG_BAR_POSITION[node.func.attr.value]].value)
        starred = any(arg.star for arg in node.args)
        literal_false = [isinstance(value, cst.Name) and value.value == "False" for value in values]
        self.found = self.found or starred or not all(literal_false)


def _logs_to_progress_bar(fn: cst.FunctionDef) -> bool:
    finder = _ProgressBarLogs()
    fn.body.visit(finder)
    return finder.found


def _hparams_logger(fn: cst.FunctionDef, me: str, so_far: bool | None) -> bool | None:
    """Whether the hyperparameters go to the loggers, after the save_hyperparameters calls of `fn` (None: one
    call's `logger` argument is not a literal)."""
    calls = _HparamsCalls(me)
    fn.body.visit(calls)
    for value in calls.loggers:
        if value is None or so_far is None:
            so_far = None
        else:
            so_far = so_far or value
    return so_far


_LOG_DICT_HOOKS = frozenset(
    {"training_step", "training_step_end", "validation_step", "training_epoch_end", "validation_epoch_end"}
)


_EXPERIMENT_READ = re.compile(r"\blogger\.experiment\b|\bloggers\[[^\]]*\]\.experiment\b")


class _Words(cst.CSTVisitor):
    """The names, attribute names and string literals of a method body, and the `me.X` attributes."""

    def __init__(self, me: str | None) -> None:
        super().__init__()
        self.me = me
        self.words: set[str] = set()
        self.strings: set[str] = set()
        self.attributes: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.words.add(node.value)

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        self.words.add(node.value.strip("\"'"))
        self.strings.add(node.value.strip("\"'"))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self.words.add(node.attr.value)
        if isinstance(node.value, cst.Name) and node.value.value == self.me:
            self.attributes.add(node.attr.value)


class _AutomaticOptimization(cst.CSTVisitor):
    """The last value a class body gives `automatic_optimization`: `self.automatic_optimization = X` in a method,
    a class attribute, or a property returning X. True (Lightning's default) until one is seen; None: not a
    literal."""

    def __init__(self) -> None:
        super().__init__()
        self.value: bool | None = True

    def _set(self, node: cst.BaseExpression | None) -> None:
        literal = node.value if isinstance(node, cst.Name) else None
        self.value = {"True": True, "False": False}.get(literal or "")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            if _is_automatic_optimization(target.target):
                self._set(node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None and _is_automatic_optimization(node.target):
            self._set(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        if node.name.value == "automatic_optimization":  # a property
            returns = _ReturnValues()
            node.body.visit(returns)
            values = {r.value if isinstance(r, cst.Name) else None for r in returns.values}
            self.value = {"True": True, "False": False}.get(values.pop() or "") if len(values) == 1 else None


class _ReturnValues(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.values: list[cst.BaseExpression | None] = []

    def visit_Return(self, node: cst.Return) -> None:
        self.values.append(node.value)


def _is_automatic_optimization(target: cst.BaseExpression) -> bool:
    if isinstance(target, cst.Name):  # a class attribute
        return target.value == "automatic_optimization"
    return isinstance(target, cst.Attribute) and target.attr.value == "automatic_optimization"


def _bindings(module: _Module, stop: cst.ClassDef | None = None) -> dict[str, _Binding]:
    """The module-level names bound before the statement `stop` (all of them without one)."""
    names: dict[str, _Binding] = {}
    for node in module.statements:
        if node is stop:
            break
        if isinstance(node, cst.ClassDef):
            names[node.name.value] = node
        elif isinstance(node, cst.Import):
            for alias in node.names:
                top = alias.evaluated_name.partition(".")[0]
                names[alias.evaluated_alias or top] = alias.evaluated_name if alias.evaluated_alias else top
        elif isinstance(node, cst.ImportFrom) and not isinstance(node.names, cst.ImportStar):
            source = _import_source(module, node)
            for alias in node.names:
                names[alias.evaluated_alias or alias.evaluated_name] = source and f"{source}.{alias.evaluated_name}"
        elif isinstance(node, cst.Assign):
            value = _dotted(node.value)
            for target in node.targets:
                if isinstance(target.target, cst.Name):
                    names[target.target.value] = _qualify(names, value) if value else None
    return names


def _stars(module: _Module) -> list[str]:
    """The modules `from X import *` reads from, in source order."""
    stars = (s for s in module.statements if isinstance(s, cst.ImportFrom) and isinstance(s.names, cst.ImportStar))
    return [source for s in stars if (source := _import_source(module, s))]


def _import_source(module: _Module, node: cst.ImportFrom) -> str | None:
    """The absolute module name `from ... import` reads from; None for a relative import above the top package."""
    name = _dotted(node.module) if node.module else None
    level = len(node.relative)
    if not level:
        return name
    package = module.package.split(".") if module.package else []
    if level - 1 > len(package):
        return None
    return ".".join([*package[: len(package) - level + 1], *([name] if name else [])]) or None


def _qualify(names: Mapping[str, _Binding], expr: str) -> _Binding:
    """Resolve the dotted expression `expr` against module-level `names`."""
    head, _, rest = expr.partition(".")
    target = names.get(head)
    if not rest or target is None:
        return target
    return f"{target}.{rest}" if isinstance(target, str) else None


def _dotted(node: cst.BaseExpression) -> str | None:
    """`a.b.c` for a name or attribute chain, else None."""
    if isinstance(node, cst.Name):
        return node.value
    if isinstance(node, cst.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr.value}" if head else None
    return None


def _linearize(classes: list[_Class]) -> list[_Class]:
    """Method resolution order from a depth-first walk: keep each class's last occurrence."""
    kept: list[_Class] = []
    for cls in reversed(classes):
        if all(cls.node is not k.node for k in kept):
            kept.append(cls)
    return kept[::-1]


def _params(fn: cst.FunctionDef, *, skip_first: bool) -> tuple[str, ...]:
    p = fn.params
    positional = [*p.posonly_params, *p.params][1 if skip_first else 0 :]
    names = [param.name.value for param in positional]
    if isinstance(p.star_arg, cst.Param):
        names.append(f"*{p.star_arg.name.value}")
    names += [param.name.value for param in p.kwonly_params]
    if p.star_kwarg is not None:
        names.append(f"**{p.star_kwarg.name.value}")
    return tuple(names)


def _self_name(fn: cst.FunctionDef) -> str | None:
    """What a method calls its instance (its first parameter); None for a static method."""
    positional = [*fn.params.posonly_params, *fn.params.params]
    static = any(_dotted(d.decorator) in ("staticmethod", "builtins.staticmethod") for d in fn.decorators)
    return positional[0].name.value if positional and not static else None


def _calls(fn: cst.FunctionDef, names: set[str]) -> bool:
    """Whether the body of `fn` calls one of the dotted `names`."""
    finder = _CallFinder(names)
    fn.body.visit(finder)
    return finder.found


def _is_lightning(name: str, cls: str) -> bool:
    parts = name.split(".")
    return parts[0] in _LIGHTNING_PACKAGES and parts[-1] == cls


def _classes(module: _Module) -> list[str]:
    return sorted(name for name, b in _bindings(module).items() if isinstance(b, cst.ClassDef))


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "no classes"


def _hint(suggestion: str | None) -> str:
    return f"; did you mean '{suggestion}'?" if suggestion else ""


# ---------------------------------------------------------------------------
# what methods read from the trainer


def _trainer_names(fn: cst.FunctionDef, me: str | None, is_callback: bool) -> tuple[str | None, str | None, str | None]:
    """(the instance's name, the trainer parameter's name, the module parameter's name) of a method.

    A module reaches the trainer as `self.trainer`; a callback's hooks get it as their first parameter and the
    module as their second (Lightning's `(trainer, pl_module, ...)`), and reach it as `pl_module.trainer` too.
    """
    if not is_callback:
        return me, None, None
    params = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)][1 if me else 0 :]
    trainer = params[0] if params and (params[0] == "trainer" or fn.name.value.startswith(("on_", "setup"))) else None
    if trainer is None and "trainer" in params:
        trainer = "trainer"
    module = params[1] if trainer is not None and len(params) > 1 else None
    return None, trainer, module


class _TrainerUse(cst.CSTVisitor):
    """The `X` of every `<trainer>.X` in a method body, and whether the trainer itself is used otherwise
    (passed to a function, stored, returned): then any attribute may be read."""

    def __init__(self, me: str | None, trainer: str | None, module: str | None) -> None:
        super().__init__()
        self.me, self.trainer, self.module = me, trainer, module
        self.reads: set[str] = set()
        self.module_reads: set[str] = set()
        self.escapes = False
        self._consumed: set[int] = set()  # trainer expressions seen as the value of an attribute access

    def _is_trainer(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Name):
            return node.value == self.trainer
        if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name):
            owner = node.value.value
            return node.attr.value in ("trainer", "_trainer") and owner in (self.me, self.module) and owner is not None
        return False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._is_trainer(node) and id(node) not in self._consumed:
            self.escapes = True
        return super().on_visit(node)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        self._consumed.add(id(node.attr))
        if self._is_trainer(node.value):
            self.reads.add(node.attr.value)
            self._consumed.add(id(node.value))
        elif isinstance(node.value, cst.Name) and self.module is not None and node.value.value == self.module:
            self.module_reads.add(node.attr.value)

    def visit_Arg(self, node: cst.Arg) -> None:
        if node.keyword is not None:
            self._consumed.add(id(node.keyword))

    def visit_Call(self, node: cst.Call) -> None:
        # super().hook(trainer, pl_module, ...) hands the trainer to Lightning's own (empty) hook
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call) and _dotted(func.value.func) == "super":
            self._consumed.update(id(arg.value) for arg in node.args)


# ---------------------------------------------------------------------------
# the shape configure_optimizers returns

_OPTIMIZER_KEYS = frozenset({"optimizer", "lr_scheduler", "monitor", "frequency"})
_SCHEDULER_KEYS = frozenset({"scheduler", "interval", "frequency", "monitor", "strict", "name", "reduce_on_plateau"})


def read_optimizers(fn: cst.FunctionDef) -> OptimizersFacts | str:
    """What configure_optimizers returns, from its source: the facts, or why the source does not show them.

    The body must end in its only return statement, with plain statements before it (assignments, calls,
    nested functions); the names the return uses are followed through the assignments. Optimizers and
    schedulers must be built by calling a class (`torch.optim.SGD(...)`, `StepLR(...)`).
    """
    if not isinstance(fn.body, cst.IndentedBlock):
        body: list[cst.CSTNode] = [fn.body]
    else:
        body = list(fn.body.body)
    returns = _Returns()
    fn.body.visit(returns)
    if returns.count != 1:
        return "configure_optimizers returns from more than one place"
    names: dict[str, cst.BaseExpression] = {}
    returned: cst.BaseExpression | None = None
    for statement in body:
        if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
            continue
        if not isinstance(statement, (cst.SimpleStatementLine, cst.SimpleStatementSuite)):
            return "configure_optimizers' return depends on control flow (if, for, with, try)"
        for small in statement.body:
            if isinstance(small, cst.Return):
                returned = small.value
            elif isinstance(small, cst.Assign):
                for target in small.targets:
                    if isinstance(target.target, cst.Name):
                        names[target.target.value] = small.value
                    else:
                        _forget_targets(target.target, names)
            elif isinstance(small, cst.AnnAssign) and small.value is not None and isinstance(small.target, cst.Name):
                names[small.target.value] = small.value
            elif isinstance(small, (cst.AugAssign, cst.AnnAssign)):
                _forget_targets(small.target, names)
    if returned is None:
        return "configure_optimizers returns nothing"
    try:
        return _Shape(names).read(returned)
    except _Unknown as unknown:
        return str(unknown)


class _Unknown(Exception):
    """The source does not show what configure_optimizers returns (the message says why)."""


class _Returns(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def visit_Return(self, node: cst.Return) -> None:
        self.count += 1

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # a nested function's returns are its own

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False


def _forget_targets(target: cst.BaseExpression, names: dict[str, cst.BaseExpression]) -> None:
    for node in (target, *(e.value for e in getattr(target, "elements", ()))):
        if isinstance(node, cst.Name):
            names.pop(node.value, None)


class _Shape:
    """Reads one return expression of configure_optimizers, following local names."""

    def __init__(self, names: Mapping[str, cst.BaseExpression]) -> None:
        self.names = names
        self.optimizer_nodes: list[cst.BaseExpression] = []

    def resolve(self, node: cst.BaseExpression, seen: frozenset[str] = frozenset()) -> cst.BaseExpression:
        while isinstance(node, cst.Name) and node.value in self.names and node.value not in seen:
            seen = seen | {node.value}
            node = self.names[node.value]
        return node

    def read(self, returned: cst.BaseExpression) -> OptimizersFacts:
        node = self.resolve(returned)
        if isinstance(node, (cst.List, cst.Tuple)):
            items = [self.resolve(e.value) for e in node.elements if not isinstance(e, cst.StarredElement)]
            if len(items) != len(node.elements):
                raise _Unknown("configure_optimizers returns a list built with *")
            if len(items) == 2 and all(isinstance(i, (cst.List, cst.Tuple)) for i in items):
                optimizers = [self.optimizer(e.value) for e in items[0].elements]
                schedulers = [self.scheduler(e.value) for e in items[1].elements]
                return OptimizersFacts("lists", tuple(optimizers), tuple(schedulers))
            if items and all(isinstance(i, cst.Dict) for i in items):
                configs = [self.optimizer_dict(item) for item in items]
                frequencies = [config[3] for config in configs]
                return OptimizersFacts(
                    "dicts",
                    tuple(config[0] for config in configs),
                    tuple(s for index, config in enumerate(configs) for s in config[1](index)),
                    frequencies=tuple(frequencies) if all(f is not None for f in frequencies) else None,
                )
            return OptimizersFacts("optimizers", tuple(self.optimizer(item) for item in items))
        if isinstance(node, cst.Dict):
            optimizer, schedulers, monitor, frequency = self.optimizer_dict(node)
            frequencies = None if frequency is None else (frequency,)
            return OptimizersFacts("dict", (optimizer,), tuple(schedulers(0)), monitor, frequencies)
        return OptimizersFacts("optimizer", (self.optimizer(node),))

    def optimizer(self, node: cst.BaseExpression) -> str:
        node = self.resolve(node)
        cls = _class_called(node)
        if cls is None:
            raise _Unknown(f"configure_optimizers returns {_describe(node)}, not an optimizer built in it")
        self.optimizer_nodes.append(node)
        return cls

    def optimizer_dict(self, node: cst.Dict) -> tuple[str, Any, str | None, int | None]:
        """(optimizer class, schedulers(index) -> its SchedulerFacts, monitor, frequency) of an optimizer dict."""
        entries = self.entries(node, _OPTIMIZER_KEYS, "an optimizer dict")
        if "optimizer" not in entries:
            raise _Unknown('configure_optimizers returns a dict without an "optimizer" key')
        optimizer = self.optimizer(entries["optimizer"])
        index = len(self.optimizer_nodes) - 1
        monitor = self.literal(entries["monitor"], "monitor") if "monitor" in entries else None
        frequency = self.literal(entries["frequency"], "frequency") if "frequency" in entries else None
        scheduler = entries.get("lr_scheduler")

        def schedulers(_: int) -> list[SchedulerFacts]:
            if scheduler is None:
                return []
            facts = self.scheduler(scheduler)
            return [SchedulerFacts(facts.cls, index, facts.config, facts.name, facts.name_known)]

        return optimizer, schedulers, monitor, frequency

    def scheduler(self, node: cst.BaseExpression) -> SchedulerFacts:
        node = self.resolve(node)
        if isinstance(node, cst.Dict):
            entries = self.entries(node, _SCHEDULER_KEYS, "an lr_scheduler dict")
            if "scheduler" not in entries:
                raise _Unknown('configure_optimizers returns an lr_scheduler dict without a "scheduler" key')
            bare = self.scheduler(entries.pop("scheduler"))
            name, name_known = None, True
            if "name" in entries:  # only for logging the learning rate: not a reason to unpack at run time
                try:
                    name = self.literal(entries.pop("name"), "name")
                except _Unknown:
                    name_known = False
            config = {key: self.literal(value, key) for key, value in entries.items()}
            return SchedulerFacts(bare.cls, bare.optimizer, config, name, name_known)
        cls = _class_called(node)
        if cls is None or not isinstance(node, cst.Call):
            raise _Unknown(f"configure_optimizers returns {_describe(node)}, not a scheduler built in it")
        first = next((arg.value for arg in node.args if arg.keyword is None or arg.keyword.value == "optimizer"), None)
        target = self.resolve(first) if first is not None else None
        index = next((i for i, o in enumerate(self.optimizer_nodes) if o is target), None)
        return SchedulerFacts(cls, index)

    def entries(self, node: cst.Dict, known: frozenset[str], what: str) -> dict[str, cst.BaseExpression]:
        entries = {}
        for element in node.elements:
            if not isinstance(element, cst.DictElement) or not isinstance(element.key, cst.SimpleString):
                raise _Unknown(f"configure_optimizers returns {what} whose keys are not all written out")
            key = ast.literal_eval(element.key.value)
            if key not in known:
                raise _Unknown(f"configure_optimizers returns {what} with the key {key!r}")
            entries[key] = element.value
        return entries

    def literal(self, node: cst.BaseExpression, key: str) -> Any:
        node = self.resolve(node)
        try:
            return ast.literal_eval(cst.Module([]).code_for_node(node))
        except (ValueError, SyntaxError):
            raise _Unknown(f'configure_optimizers sets "{key}" to {_describe(node)}, known only at run time') from None


def _class_called(node: cst.BaseExpression) -> str | None:
    """`SGD` for `torch.optim.SGD(...)`: the class a call constructs (a dotted name ending in a capital)."""
    if not isinstance(node, cst.Call):
        return None
    name = _dotted(node.func)
    last = name.rpartition(".")[2] if name else ""
    return last if last[:1].isupper() else None


def _describe(node: cst.BaseExpression) -> str:
    code = cst.Module([]).code_for_node(node)
    code = " ".join(code.split())
    return f"`{code if len(code) <= 60 else code[:57] + '...'}`"
