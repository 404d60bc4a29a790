"""Stage 2: read the user's classes with the standard library's `ast` -> `ClassFacts`. Never imports user code."""

from __future__ import annotations

import ast
import difflib
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

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
        automatic.walk(ancestor.node.body)  # bases first: the subclass's assignment wins
    for ancestor in _linearize([c for c in found if isinstance(c, _Class)]):
        class_attributes |= ancestor.assigned()
        source = ancestor.module.source
        for fn in ancestor.methods():
            me = _self_name(fn)
            first = fn.name not in methods
            methods.setdefault(fn.name, _params(fn, skip_first=me is not None))
            uses_log = uses_log or (me is not None and _calls(fn, {f"{me}.log", f"{me}.log_dict"}))
            saves_hparams = saves_hparams or (me is not None and _calls(fn, {f"{me}.save_hyperparameters"}))
            if me is not None:
                hparams_logger = _hparams_logger(fn, me, hparams_logger)
            words = _Words(me, source)
            words.walk(fn.body)
            attributes |= words.attributes
            use = _TrainerUse(*_trainer_names(fn, me, callback or is_callback))
            use.walk(fn.body)
            module_reads |= use.module_reads
            trainer_reads = None if trainer_reads is None or use.escapes else trainer_reads | use.reads
            prog_bar = prog_bar or _logs_to_progress_bar(fn)
            if not experiment_in:
                code = source.lines(fn)
                experiment_in = next((text.strip() for text in code if _EXPERIMENT_READ.search(text)), "")
            if first and fn.name in _LOG_DICT_HOOKS:
                log_dicts = log_dicts or bool(words.strings & {"log", "progress_bar"})
                prog_bar = prog_bar or "progress_bar" in words.strings
            if first and fn.name == "configure_optimizers":
                scheduler = any("sched" in w.lower() or w.endswith("LR") or "LROn" in w for w in words.words)
                lbfgs = "LBFGS" in words.words
                read = read_optimizers(fn, source)
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


def _signature(fn: _Function, skip: int) -> Signature | None:
    if fn.decorator_list:
        return None
    p = fn.args
    positional = [*p.posonlyargs, *p.args]
    defaulted = {id(param) for param in positional[len(positional) - len(p.defaults) :]}
    defaulted |= {id(param) for param, default in zip(p.kwonlyargs, p.kw_defaults) if default is not None}
    positional_only = p.posonlyargs[skip:]
    rest = p.args[max(0, skip - len(p.posonlyargs)) :]
    keyword = [*rest, *p.kwonlyargs]
    return Signature(
        names=tuple(param.arg for param in keyword),
        required=tuple(param.arg for param in [*positional_only, *keyword] if id(param) not in defaulted),
        var_keyword=p.kwarg is not None,
        positional_only=tuple(param.arg for param in positional_only),
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


_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)
_Function = ast.FunctionDef | ast.AsyncFunctionDef

# A module-level name: a class defined there, the dotted name it was imported as, or unknown.
_Binding = str | ast.ClassDef | None


class _Source:
    """A file's text, for what `ast` does not keep: the code of a node as written (with the parentheses around
    it) and its string literals as written (quotes and prefix included, each part of an implicit concatenation
    on its own)."""

    def __init__(self, source: bytes) -> None:
        self._source = source
        self._lines: list[str] = []
        self._data = b""
        self._starts: list[int] = []

    def _load(self) -> None:
        from importlib.util import decode_source  # the file's encoding, universal newlines (as ast reads it)

        self._lines = [f"{line}\n" for line in decode_source(self._source).split("\n")]
        lines = [line.encode() for line in self._lines]
        self._data = b"".join(lines)  # UTF-8: ast's column offsets count its bytes
        self._starts = [0]
        for line in lines:
            self._starts.append(self._starts[-1] + len(line))

    def _offset(self, line: int, column: int) -> int:
        return self._starts[line - 1] + column

    def lines(self, node: ast.stmt) -> list[str]:
        """The lines of the statement `node` as written, its decorators included."""
        if not self._starts:
            self._load()
        first = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", ()))])
        return [line.rstrip("\n") for line in self._lines[first - 1 : node.end_lineno]]

    def code(self, node: ast.expr, within: ast.stmt | None = None) -> str:
        """The source text of `node`; with the statement `within` it is in, with the parentheses written
        around it."""
        if not self._starts:
            self._load()
        start = self._offset(node.lineno, node.col_offset)
        end = self._offset(node.end_lineno, node.end_col_offset)  # type: ignore[arg-type]
        if within is not None:
            tokens = self._tokens(within)
            first = next((i for i, t in enumerate(tokens) if t[0] == start), None)
            last = next((i for i, t in enumerate(tokens) if t[1] == end), None)
            while first and last is not None and last + 1 < len(tokens):
                if tokens[first - 1][2] != "(" or tokens[last + 1][2] != ")":
                    break
                first, last = first - 1, last + 1
                start, end = tokens[first][0], tokens[last][1]
        return self._data[start:end].decode()

    def _tokens(self, statement: ast.stmt) -> list[tuple[int, int, str]]:
        """(start, end, text) of the tokens of `statement`, without comments and line breaks."""
        import io
        import tokenize

        first = statement.lineno - 1
        lines = self._lines[first : statement.end_lineno]
        tokens = []
        skip = (tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT)
        try:
            read = list(tokenize.generate_tokens(io.StringIO("".join(lines)).readline))
        except (tokenize.TokenError, SyntaxError):  # not expected of code Python parsed: no parentheses then
            return []
        for token in read:
            if token.type not in skip and token.string:
                (row, column), (end_row, end_column) = token.start, token.end
                start = self._offset(first + row, len(lines[row - 1][:column].encode()))
                tokens.append(
                    (start, self._offset(first + end_row, len(lines[end_row - 1][:end_column].encode())), token.string)
                )
        return tokens

    def strings(self, node: ast.expr) -> list[str]:
        """The plain (not formatted) string literals of a str / bytes constant or an f-string, as written."""
        import io
        import tokenize

        code = self.code(node)
        try:
            tokens = list(tokenize.generate_tokens(io.StringIO(f"({code}\n)").readline))
        except (tokenize.TokenError, SyntaxError):  # not expected of code Python parsed: read it as one literal
            return [code]
        written = (t.string for t in tokens if t.type == tokenize.STRING)
        return [s for s in written if "f" not in s[: s.find(s[-1])].lower()]


class _Visitor:
    """Walks statements depth first in source order: `visit_<Node>` before a node's children (False: not into
    them), and `name(text, attribute)` for each identifier `ast` keeps as text (a parameter, a function's name,
    an imported name, True / False / None), `attribute`: a keyword argument's name or a later part of a dotted
    import."""

    def walk(self, statements: Sequence[ast.AST]) -> None:
        for statement in statements:
            self.visit(statement)

    def visit(self, node: ast.AST) -> None:
        method = getattr(self, f"visit_{type(node).__name__}", None)
        if method is not None and method(node) is False:
            return
        for text, attribute in _identifiers(node):
            self.name(text, attribute)
        for child in ast.iter_child_nodes(node):
            self.visit(child)

    def name(self, text: str, attribute: bool) -> None:
        pass


def _identifiers(node: ast.AST) -> list[tuple[str, bool]]:
    if isinstance(node, ast.arg):
        return [(node.arg, False)]
    if isinstance(node, (*_FUNCTIONS, ast.ClassDef)):
        return [(node.name, False)]
    if isinstance(node, ast.Constant):
        return [(str(node.value), False)] if node.value is None or isinstance(node.value, bool) else []
    if isinstance(node, ast.keyword):
        return [(node.arg, True)] if node.arg else []
    if isinstance(node, ast.alias):
        parts = [] if node.name == "*" else _dotted_parts(node.name)
        return [*parts, *([(node.asname, False)] if node.asname else [])]
    if isinstance(node, ast.ImportFrom):
        return _dotted_parts(node.module) if node.module else []
    if isinstance(node, (ast.Global, ast.Nonlocal)):
        return [(name, False) for name in node.names]
    if isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)):
        return [(node.name, False)] if node.name else []
    if isinstance(node, ast.MatchMapping):
        return [(node.rest, False)] if node.rest else []
    if isinstance(node, ast.MatchClass):
        return [(name, False) for name in node.kwd_attrs]
    name = getattr(node, "name", None)  # a type parameter (Python 3.12)
    return [(name, False)] if isinstance(name, str) and not isinstance(node, ast.stmt) else []


def _dotted_parts(name: str) -> list[tuple[str, bool]]:
    return [(part, i > 0) for i, part in enumerate(name.split("."))]


def _literal_name(node: ast.AST | None) -> str | None:
    """The text of a name, True, False or None; else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Constant) and (node.value is None or isinstance(node.value, bool)):
        return str(node.value)
    return None


def _arguments(call: ast.Call) -> list[tuple[str | None, str, ast.expr]]:
    """(keyword, star: "" / "*" / "**", value) of each argument of `call`, in source order."""
    arguments = [
        *((None, "*", a.value) if isinstance(a, ast.Starred) else (None, "", a) for a in call.args),
        *((k.arg, "" if k.arg else "**", k.value) for k in call.keywords),
    ]
    nodes = [*call.args, *call.keywords]
    order = sorted(range(len(nodes)), key=lambda i: (nodes[i].lineno, nodes[i].col_offset))
    return [arguments[i] for i in order]


@dataclass(frozen=True, eq=False)
class _Module:
    name: str  # dotted module name
    root: Path
    file: Path
    statements: list[ast.stmt]  # the module-level statements that bind names, in source order
    source: _Source

    @property
    def package(self) -> str:
        return self.name if self.file.name == "__init__.py" else self.name.rpartition(".")[0]


@dataclass(frozen=True, eq=False)
class _Class:
    module: _Module
    node: ast.ClassDef

    def methods(self) -> Iterator[_Function]:
        """The methods defined in the class body, the last definition of a name first (the one Python keeps)."""
        return (s for s in reversed(self.node.body) if isinstance(s, _FUNCTIONS))

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
        self._files: dict[Path, tuple[list[ast.stmt], _Source]] = {}

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
            expr = _dotted(base) if not isinstance(base, ast.Starred) else None
            found = self._lookup_in(cls.module, expr, stop=cls.node) if expr else None
            if isinstance(found, _Class) and found.node not in (*below, cls.node):
                yield from self.ancestry(found, (*below, cls.node))
            elif isinstance(found, str):
                yield found

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

    def _parse(self, file: Path) -> tuple[list[ast.stmt], _Source]:
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
            _binding_statements(tree.body, statements)
            self._files[file] = statements, _Source(source)
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


def _binding_statements(nodes: Iterable[ast.AST], into: list[ast.stmt]) -> None:
    """Collects module-level imports, assignments and class statements (also inside if/try/with blocks)."""
    for node in nodes:
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.Assign, ast.ClassDef)):
            into.append(node)
        elif not isinstance(node, (*_FUNCTIONS, ast.expr)):
            _binding_statements(ast.iter_child_nodes(node), into)


class _CallFinder(_Visitor):
    def __init__(self, names: set[str]) -> None:
        self.names = names
        self.found = False

    def visit_Call(self, node: ast.Call) -> None:
        self.found = self.found or _dotted(node.func) in self.names


class _HparamsCalls(_Visitor):
    """The `logger` argument of each `me.save_hyperparameters(...)` call: True (absent or literal True), False,
    or None (not a literal)."""

    def __init__(self, me: str) -> None:
        self.me = me
        self.loggers: list[bool | None] = []

    def visit_Call(self, node: ast.Call) -> None:
        if _dotted(node.func) != f"{self.me}.save_hyperparameters":
            return
        value: bool | None = True
        for keyword, star, argument in _arguments(node):
            if keyword == "logger":
                value = {"True": True, "False": False}.get(_literal_name(argument) or "")
            elif star:
                value = None  # **kwargs may hold it
        self.loggers.append(value)


# prog_bar's position: LightningModule.log(name, value, prog_bar, ...), log_dict(dictionary, prog_bar, ...)
_PROG_BAR_POSITION = {"log": 2, "log_dict": 1}


class _ProgressBarLogs(_Visitor):
    """Whether a `X.log(...)` / `X.log_dict(...)` call (self.log, pl_module.log) may pass prog_bar=True: its
    `prog_bar` argument (by keyword, or the position Lightning gives it) is there and not the literal False, or
    *args / **kwargs may hold it."""

    def __init__(self) -> None:
        self.found = False

    def visit_Call(self, node: ast.Call) -> None:
        if not isinstance(node.func, ast.Attribute) or node.func.attr not in _PROG_BAR_POSITION:
            return
        positional = [arg for arg in node.args if not isinstance(arg, ast.Starred)]
        values = [k.value for k in node.keywords if k.arg == "prog_bar"]
        if len(positional) > _PROG_BAR_POSITION[node.func.attr]:
            values.append(positional[_PROG_BAR_POSITION[node.func.attr]])
        starred = any(isinstance(arg, ast.Starred) for arg in node.args) or any(k.arg is None for k in node.keywords)
        literal_false = [_literal_name(value) == "False" for value in values]
        self.found = self.found or starred or not all(literal_false)


def _logs_to_progress_bar(fn: _Function) -> bool:
    finder = _ProgressBarLogs()
    finder.walk(fn.body)
    return finder.found


def _hparams_logger(fn: _Function, me: str, so_far: bool | None) -> bool | None:
    """Whether the hyperparameters go to the loggers, after the save_hyperparameters calls of `fn` (None: one
    call's `logger` argument is not a literal)."""
    calls = _HparamsCalls(me)
    calls.walk(fn.body)
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


class _Words(_Visitor):
    """The names, attribute names and string literals of a method body, and the `me.X` attributes."""

    def __init__(self, me: str | None, source: _Source) -> None:
        self.me = me
        self.source = source
        self.words: set[str] = set()
        self.strings: set[str] = set()
        self.attributes: set[str] = set()

    def name(self, text: str, attribute: bool) -> None:
        self.words.add(text)

    def visit_Name(self, node: ast.Name) -> None:
        self.words.add(node.id)

    def visit_Constant(self, node: ast.Constant) -> None:
        if isinstance(node.value, (str, bytes)):
            self._strings(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> bool:
        self._strings(node)
        self._replacements(node)
        return False  # its own text is no string literal

    def _replacements(self, node: ast.JoinedStr) -> None:
        for value in node.values:
            if isinstance(value, ast.FormattedValue):
                self.visit(value.value)
                if isinstance(value.format_spec, ast.JoinedStr):
                    self._replacements(value.format_spec)

    def _strings(self, node: ast.expr) -> None:
        for written in self.source.strings(node):
            self.words.add(written.strip("\"'"))
            self.strings.add(written.strip("\"'"))

    def visit_Attribute(self, node: ast.Attribute) -> None:
        self.words.add(node.attr)
        if isinstance(node.value, ast.Name) and node.value.id == self.me:
            self.attributes.add(node.attr)


class _AutomaticOptimization(_Visitor):
    """The last value a class body gives `automatic_optimization`: `self.automatic_optimization = X` in a method,
    a class attribute, or a property returning X. True (Lightning's default) until one is seen; None: not a
    literal."""

    def __init__(self) -> None:
        self.value: bool | None = True

    def _set(self, node: ast.expr | None) -> None:
        self.value = {"True": True, "False": False}.get(_literal_name(node) or "")

    def visit_Assign(self, node: ast.Assign) -> None:
        for target in node.targets:
            if _is_automatic_optimization(target):
                self._set(node.value)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None and _is_automatic_optimization(node.target):
            self._set(node.value)

    def visit_FunctionDef(self, node: _Function) -> None:
        if node.name == "automatic_optimization":  # a property
            returns = _ReturnValues()
            returns.walk(node.body)
            values = {_literal_name(r) for r in returns.values}
            self.value = {"True": True, "False": False}.get(values.pop() or "") if len(values) == 1 else None

    visit_AsyncFunctionDef = visit_FunctionDef


class _ReturnValues(_Visitor):
    def __init__(self) -> None:
        self.values: list[ast.expr | None] = []

    def visit_Return(self, node: ast.Return) -> None:
        self.values.append(node.value)


def _is_automatic_optimization(target: ast.expr) -> bool:
    if isinstance(target, ast.Name):  # a class attribute
        return target.id == "automatic_optimization"
    return isinstance(target, ast.Attribute) and target.attr == "automatic_optimization"


def _bindings(module: _Module, stop: ast.ClassDef | None = None) -> dict[str, _Binding]:
    """The module-level names bound before the statement `stop` (all of them without one)."""
    names: dict[str, _Binding] = {}
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
            value = _dotted(node.value)
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


def _qualify(names: Mapping[str, _Binding], expr: str) -> _Binding:
    """Resolve the dotted expression `expr` against module-level `names`."""
    head, _, rest = expr.partition(".")
    target = names.get(head)
    if not rest or target is None:
        return target
    return f"{target}.{rest}" if isinstance(target, str) else None


def _dotted(node: ast.expr) -> str | None:
    """`a.b.c` for a name or attribute chain, else None."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        head = _dotted(node.value)
        return f"{head}.{node.attr}" if head else None
    return None


def _linearize(classes: list[_Class]) -> list[_Class]:
    """Method resolution order from a depth-first walk: keep each class's last occurrence."""
    kept: list[_Class] = []
    for cls in reversed(classes):
        if all(cls.node is not k.node for k in kept):
            kept.append(cls)
    return kept[::-1]


def _params(fn: _Function, *, skip_first: bool) -> tuple[str, ...]:
    p = fn.args
    positional = [*p.posonlyargs, *p.args][1 if skip_first else 0 :]
    names = [param.arg for param in positional]
    if p.vararg is not None:
        names.append(f"*{p.vararg.arg}")
    names += [param.arg for param in p.kwonlyargs]
    if p.kwarg is not None:
        names.append(f"**{p.kwarg.arg}")
    return tuple(names)


def _self_name(fn: _Function) -> str | None:
    """What a method calls its instance (its first parameter); None for a static method."""
    positional = [*fn.args.posonlyargs, *fn.args.args]
    static = any(_dotted(d) in ("staticmethod", "builtins.staticmethod") for d in fn.decorator_list)
    return positional[0].arg if positional and not static else None


def _calls(fn: _Function, names: set[str]) -> bool:
    """Whether the body of `fn` calls one of the dotted `names`."""
    finder = _CallFinder(names)
    finder.walk(fn.body)
    return finder.found


def _is_lightning(name: str, cls: str) -> bool:
    parts = name.split(".")
    return parts[0] in _LIGHTNING_PACKAGES and parts[-1] == cls


def _classes(module: _Module) -> list[str]:
    return sorted(name for name, b in _bindings(module).items() if isinstance(b, ast.ClassDef))


def _listing(names: list[str]) -> str:
    return ", ".join(names) if names else "no classes"


def _hint(suggestion: str | None) -> str:
    return f"; did you mean '{suggestion}'?" if suggestion else ""


# ---------------------------------------------------------------------------
# what methods read from the trainer


def _trainer_names(fn: _Function, me: str | None, is_callback: bool) -> tuple[str | None, str | None, str | None]:
    """(the instance's name, the trainer parameter's name, the module parameter's name) of a method.

    A module reaches the trainer as `self.trainer`; a callback's hooks get it as their first parameter and the
    module as their second (Lightning's `(trainer, pl_module, ...)`), and reach it as `pl_module.trainer` too.
    """
    if not is_callback:
        return me, None, None
    params = [p.arg for p in (*fn.args.posonlyargs, *fn.args.args)][1 if me else 0 :]
    trainer = params[0] if params and (params[0] == "trainer" or fn.name.startswith(("on_", "setup"))) else None
    if trainer is None and "trainer" in params:
        trainer = "trainer"
    module = params[1] if trainer is not None and len(params) > 1 else None
    return None, trainer, module


class _TrainerUse(_Visitor):
    """The `X` of every `<trainer>.X` in a method body, and whether the trainer itself is used otherwise
    (passed to a function, stored, returned, a parameter of a nested function): then any attribute may be
    read."""

    def __init__(self, me: str | None, trainer: str | None, module: str | None) -> None:
        self.me, self.trainer, self.module = me, trainer, module
        self.reads: set[str] = set()
        self.module_reads: set[str] = set()
        self.escapes = False
        self._consumed: set[int] = set()  # trainer expressions seen as the value of an attribute access

    def _is_trainer(self, node: ast.AST) -> bool:
        if isinstance(node, ast.Name):
            return node.id == self.trainer
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            owner = node.value.id
            return node.attr in ("trainer", "_trainer") and owner in (self.me, self.module) and owner is not None
        return False

    def visit(self, node: ast.AST) -> None:
        if self._is_trainer(node) and id(node) not in self._consumed:
            self.escapes = True
        super().visit(node)

    def name(self, text: str, attribute: bool) -> None:
        if not attribute and text == self.trainer:
            self.escapes = True

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if self._is_trainer(node.value):
            self.reads.add(node.attr)
            self._consumed.add(id(node.value))
        elif isinstance(node.value, ast.Name) and self.module is not None and node.value.id == self.module:
            self.module_reads.add(node.attr)

    def visit_Call(self, node: ast.Call) -> None:
        # super().hook(trainer, pl_module, ...) hands the trainer to Lightning's own (empty) hook
        func = node.func
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call) and _dotted(func.value.func) == "super":
            self._consumed.update(id(value) for _, _, value in _arguments(node))


# ---------------------------------------------------------------------------
# the shape configure_optimizers returns

_OPTIMIZER_KEYS = frozenset({"optimizer", "lr_scheduler", "monitor", "frequency"})
_SCHEDULER_KEYS = frozenset({"scheduler", "interval", "frequency", "monitor", "strict", "name", "reduce_on_plateau"})
# statements with a body of their own
_COMPOUND = tuple(
    getattr(ast, name) for name in ("If", "For", "AsyncFor", "While", "With", "AsyncWith", "Try", "TryStar", "Match")
    if hasattr(ast, name)
)  # fmt: skip


def read_optimizers(fn: _Function, source: _Source) -> OptimizersFacts | str:
    """What configure_optimizers returns, from its source: the facts, or why the source does not show them.

    The body must end in its only return statement, with plain statements before it (assignments, calls,
    nested functions); the names the return uses are followed through the assignments. Optimizers and
    schedulers must be built by calling a class (`torch.optim.SGD(...)`, `StepLR(...)`).
    """
    returns = _Returns()
    returns.walk(fn.body)
    if returns.count != 1:
        return "configure_optimizers returns from more than one place"
    names: dict[str, ast.expr] = {}
    returned: ast.expr | None = None
    for statement in fn.body:
        if isinstance(statement, (*_FUNCTIONS, ast.ClassDef)):
            continue
        if isinstance(statement, _COMPOUND):
            return "configure_optimizers' return depends on control flow (if, for, with, try)"
        if isinstance(statement, ast.Return):
            returned = statement.value
        elif isinstance(statement, ast.Assign):
            for target in statement.targets:
                if isinstance(target, ast.Name):
                    names[target.id] = statement.value
                else:
                    _forget_targets(target, names)
        elif (
            isinstance(statement, ast.AnnAssign)
            and statement.value is not None
            and isinstance(statement.target, ast.Name)
        ):
            names[statement.target.id] = statement.value
        elif isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
            _forget_targets(statement.target, names)
    if returned is None:
        return "configure_optimizers returns nothing"
    try:
        return _Shape(names, source, fn).read(returned)
    except _Unknown as unknown:
        return str(unknown)


class _Unknown(Exception):
    """The source does not show what configure_optimizers returns (the message says why)."""


class _Returns(_Visitor):
    def __init__(self) -> None:
        self.count = 0

    def visit_Return(self, node: ast.Return) -> None:
        self.count += 1

    def visit_FunctionDef(self, node: _Function) -> bool:
        return False  # a nested function's returns are its own

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> bool:
        return False


def _forget_targets(target: ast.expr, names: dict[str, ast.expr]) -> None:
    elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else []
    for node in (target, *(e.value if isinstance(e, ast.Starred) else e for e in elements)):
        if isinstance(node, ast.Name):
            names.pop(node.id, None)


def _element(node: ast.expr) -> ast.expr:
    """A list or tuple element without its star."""
    return node.value if isinstance(node, ast.Starred) else node


class _Shape:
    """Reads one return expression of configure_optimizers, following local names."""

    def __init__(self, names: Mapping[str, ast.expr], source: _Source, fn: _Function) -> None:
        self.names = names
        self.source = source
        self.fn = fn
        self.optimizer_nodes: list[ast.expr] = []

    def resolve(self, node: ast.expr, seen: frozenset[str] = frozenset()) -> ast.expr:
        while isinstance(node, ast.Name) and node.id in self.names and node.id not in seen:
            seen = seen | {node.id}
            node = self.names[node.id]
        return node

    def read(self, returned: ast.expr) -> OptimizersFacts:
        node = self.resolve(returned)
        if isinstance(node, (ast.List, ast.Tuple)):
            items = [self.resolve(e) for e in node.elts if not isinstance(e, ast.Starred)]
            if len(items) != len(node.elts):
                raise _Unknown("configure_optimizers returns a list built with *")
            if len(items) == 2 and all(isinstance(i, (ast.List, ast.Tuple)) for i in items):
                optimizers = [self.optimizer(_element(e)) for e in items[0].elts]  # type: ignore[attr-defined]
                schedulers = [self.scheduler(_element(e)) for e in items[1].elts]  # type: ignore[attr-defined]
                return OptimizersFacts("lists", tuple(optimizers), tuple(schedulers))
            if items and all(isinstance(i, ast.Dict) for i in items):
                configs = [self.optimizer_dict(item) for item in items]  # type: ignore[arg-type]
                frequencies = [config[3] for config in configs]
                return OptimizersFacts(
                    "dicts",
                    tuple(config[0] for config in configs),
                    tuple(s for index, config in enumerate(configs) for s in config[1](index)),
                    frequencies=tuple(frequencies) if all(f is not None for f in frequencies) else None,
                )
            return OptimizersFacts("optimizers", tuple(self.optimizer(item) for item in items))
        if isinstance(node, ast.Dict):
            optimizer, schedulers, monitor, frequency = self.optimizer_dict(node)
            frequencies = None if frequency is None else (frequency,)
            return OptimizersFacts("dict", (optimizer,), tuple(schedulers(0)), monitor, frequencies)
        return OptimizersFacts("optimizer", (self.optimizer(node),))

    def optimizer(self, node: ast.expr) -> str:
        node = self.resolve(node)
        cls = _class_called(node)
        if cls is None:
            raise _Unknown(f"configure_optimizers returns {self.describe(node)}, not an optimizer built in it")
        self.optimizer_nodes.append(node)
        return cls

    def optimizer_dict(self, node: ast.Dict) -> tuple[str, Any, str | None, int | None]:
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

    def scheduler(self, node: ast.expr) -> SchedulerFacts:
        node = self.resolve(node)
        if isinstance(node, ast.Dict):
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
        if cls is None or not isinstance(node, ast.Call):
            raise _Unknown(f"configure_optimizers returns {self.describe(node)}, not a scheduler built in it")
        first = next((value for keyword, _, value in _arguments(node) if keyword in (None, "optimizer")), None)
        target = self.resolve(first) if first is not None else None
        index = next((i for i, o in enumerate(self.optimizer_nodes) if o is target), None)
        return SchedulerFacts(cls, index)

    def entries(self, node: ast.Dict, known: frozenset[str], what: str) -> dict[str, ast.expr]:
        entries = {}
        for key_node, value in zip(node.keys, node.values):
            if not self.one_string(key_node):
                raise _Unknown(f"configure_optimizers returns {what} whose keys are not all written out")
            key = key_node.value  # type: ignore[union-attr]
            if key not in known:
                raise _Unknown(f"configure_optimizers returns {what} with the key {key!r}")
            entries[key] = value
        return entries

    def one_string(self, node: ast.expr | None) -> bool:
        """Whether `node` is one string literal (not several side by side, not an f-string)."""
        if not isinstance(node, ast.Constant) or not isinstance(node.value, (str, bytes)):
            return False
        return len(self.source.strings(node)) == 1

    def literal(self, node: ast.expr, key: str) -> Any:
        node = self.resolve(node)
        try:
            return ast.literal_eval(node)
        except (ValueError, SyntaxError):
            raise _Unknown(
                f'configure_optimizers sets "{key}" to {self.describe(node)}, known only at run time'
            ) from None

    def describe(self, node: ast.expr) -> str:
        code = " ".join(self.source.code(node, self.fn).split())
        return f"`{code if len(code) <= 60 else code[:57] + '...'}`"


def _class_called(node: ast.expr) -> str | None:
    """`SGD` for `torch.optim.SGD(...)`: the class a call constructs (a dotted name ending in a capital)."""
    if not isinstance(node, ast.Call):
        return None
    name = _dotted(node.func)
    last = name.rpartition(".")[2] if name else ""
    return last if last[:1].isupper() else None
