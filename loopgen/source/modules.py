"""The user's modules: found under the roots as Python finds them, each parsed once, and a dotted name followed
across them to what it names at run time with Lightning installed (a module's own names: loopgen/source/names.py).

`pl.LightningModule` in a module that has `from proj.compat import pl`, where proj/compat.py binds `pl` in a
`try:` / `except ImportError:`, is Lightning's LightningModule; `compat.pl.LightningModule`, `L.pytorch.X`,
re-exports from a package's `__init__` and star imports are followed the same way. A name whose values under a
condition loopgen cannot decide differ in what matters (a class of the project, or which of Lightning's classes;
`lightning.pytorch.X` and `pytorch_lightning.X` are the same) is refused, naming the file and the line.
"""

from __future__ import annotations

import ast
import difflib
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path

from loopgen.errors import LoopgenError, Problem
from loopgen.source.fingerprints import LIGHTNING_PACKAGES, NOT_USER_PACKAGES, user_module
from loopgen.source.names import Bound, Scope, module_scope, qualify
from loopgen.source.roots import installed
from loopgen.source.syntax import FUNCTIONS, Function, Source, class_methods

# packages found on sys.path that are never read as the user's code (nor is the standard library): loopgen knows
# their classes by name
NOT_USER_CODE = frozenset(NOT_USER_PACKAGES)

# what imports where the script runs whatever the roots hold: Lightning, what Lightning and torch depend on
_INSTALLED = NOT_USER_CODE | {"lightning_utilities", "fsspec", "packaging", "typing_extensions", "yaml", "tqdm"}

# the public classes of Lightning's packages, which `from pytorch_lightning import *` (or of its callbacks) brings
_LIGHTNING_EXPORTS = frozenset(
    {"LightningModule", "LightningDataModule", "Trainer", "Callback", "BackboneFinetuning", "BaseFinetuning"}
    | {"BasePredictionWriter", "BatchSizeFinder", "Checkpoint", "DeviceStatsMonitor", "EarlyStopping"}
    | {"GradientAccumulationScheduler", "LambdaCallback", "LearningRateFinder", "LearningRateMonitor"}
    | {"ModelCheckpoint", "ModelPruning", "ModelSummary", "OnExceptionCheckpoint", "ProgressBar"}
    | {"RichModelSummary", "RichProgressBar", "StochasticWeightAveraging", "SpikeDetection", "ThroughputMonitor"}
    | {"Timer", "TQDMProgressBar", "EMAWeightAveraging", "WeightAveraging"}
)


@dataclass(frozen=True, eq=False)
class Module:
    name: str  # dotted module name
    root: Path
    file: Path
    statements: list[ast.stmt]  # its top-level statements
    source: Source

    @property
    def package(self) -> str:
        return self.name if self.file.name == "__init__.py" else self.name.rpartition(".")[0]


@dataclass(frozen=True, eq=False)
class Class:
    module: Module
    node: ast.ClassDef

    def methods(self) -> Iterator[Function]:
        """The methods defined in the class body, the last definition of a name first (the one Python keeps)."""
        return reversed(class_methods(self.node))

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


# what a dotted name refers to: a class of the user's code, a function of it (module, def), the dotted name of
# something outside it ("lightning.pytorch.LightningModule", "builtins.object"), or None: nothing loopgen follows
Found = Class | tuple[Module, Function] | str | None


@dataclass(frozen=True)
class _Candidate:
    """One thing a name may refer to, and the binding that makes it one of several (for the message)."""

    found: Found
    file: Path | None = None
    bound: Bound | None = None


class Modules:
    """Finds and parses user modules under `roots`; each file is parsed at most once. `where` (the spec's key, on
    YAML `line`) is what the errors are about."""

    def __init__(self, roots: Sequence[Path], where: str, line: int | None = None):
        self.roots = list(roots)
        self.where = where
        self.line = line
        self._modules: dict[str, Module | None] = {}
        self._files: dict[Path, tuple[list[ast.stmt], Source]] = {}
        self._scopes: dict[tuple[Path, ast.stmt | None], Scope] = {}
        self._binding: set[Path] = set()  # the modules whose names are being read (an import cycle stops there)
        self._found: dict[str, bool] = {}

    @property
    def files_read(self) -> list[Path]:
        return list(self._files)

    @property
    def statements_read(self) -> list[list[ast.stmt]]:
        """The top-level statements of each file read."""
        return [statements for statements, _ in self._files.values()]

    def _lookup_in(self, module: Module, expr: str, stop: ast.stmt | None, functions: bool = False) -> Found:
        """What the dotted expression `expr` refers to in `module` just before the statement `stop` (a function
        only with `functions`; else None for one)."""
        found = self._decide(self._in_scope(module, self._scope(module, stop), expr, frozenset(), False), expr)
        return found if functions or not isinstance(found, tuple) else None

    def _lookup(self, dotted: str) -> Found:
        """What a fully qualified name refers to (a function as None)."""
        found = self._decide(self._candidates(dotted, frozenset()), dotted)
        return None if isinstance(found, tuple) else found

    def _candidates(self, dotted: str, seen: frozenset[str]) -> list[_Candidate]:
        """What `dotted` may refer to: looked up in the longest start of it that is a module of the project."""
        if dotted in seen:
            return [_Candidate(None)]  # imported in a circle: Python fails to import it
        parts = dotted.split(".")
        for i in range(len(parts) - 1, 0, -1):
            module = self._module(".".join(parts[:i]))
            if module is not None:
                return self._in_scope(module, self._scope(module), ".".join(parts[i:]), seen | {dotted}, True)
        return [_Candidate(dotted)]  # outside the user's code

    def _in_scope(self, module: Module, scope: Scope, expr: str, seen: frozenset[str], attribute: bool):
        """What `expr` may refer to in `module`'s names (`attribute`: read as the module's attribute, where no
        builtin is found)."""
        head = expr.partition(".")[0]
        if head not in scope.names:
            starred = self._from_stars(scope, expr, seen)
            if starred or attribute:
                return starred or [_Candidate(None, module.file)]
        out: list[_Candidate] = []
        for bound in qualify(scope.names, expr) or (Bound(None, 0),):
            if isinstance(bound.value, str):
                for found in self._candidates(bound.value, seen):
                    conditional = found.bound is not None and found.bound.condition is not None
                    out.append(found if conditional else replace(found, file=module.file, bound=bound))
            elif isinstance(bound.value, ast.ClassDef):
                out.append(_Candidate(Class(module, bound.value), module.file, bound))
            elif isinstance(bound.value, FUNCTIONS):
                out.append(_Candidate((module, bound.value), module.file, bound))
            else:
                out.append(_Candidate(None, module.file, bound))
        return out

    def _from_stars(self, scope: Scope, expr: str, seen: frozenset[str]) -> list[_Candidate]:
        """What `expr` may be when a `from m import *` binds its first name: the last such module of the project
        that binds it, else a Lightning package for Lightning's public classes, else another module outside."""
        head = expr.partition(".")[0]
        outside: list[_Candidate] = []
        for star in reversed(scope.stars):
            module = self._module(star)
            if module is not None:
                if f"*{star}" in seen or module.file in self._binding:
                    continue
                inner = self._scope(module)
                if head in inner.names or self._from_stars(inner, expr, seen | {f"*{star}"}):
                    return self._in_scope(module, inner, expr, seen | {f"*{star}"}, True)
            elif star.partition(".")[0] in LIGHTNING_PACKAGES:
                if head in _LIGHTNING_EXPORTS:
                    return [_Candidate(f"{star}.{expr}")]
            elif not outside and head not in _LIGHTNING_EXPORTS:
                outside = [_Candidate(f"{star}.{expr}")]
        return outside

    def _decide(self, candidates: list[_Candidate], expr: str) -> Found:
        """The one thing the candidates refer to; a LoopgenError naming the file and line when they differ in what
        matters (which class of the project, which of Lightning's classes, which other class)."""
        if len({_identity(candidate.found) for candidate in candidates}) <= 1:
            return candidates[0].found if candidates else None
        shown = dict.fromkeys(
            f"{_shown(c.found)} (line {c.bound.line})" if c.bound and c.bound.line else _shown(c.found)
            for c in candidates
        )
        first = next((c for c in candidates if c.bound is not None and c.bound.condition is not None), candidates[0])
        at = first.bound.condition if first.bound is not None else None
        reading = f" (reading it for {self.where})" if self.where else ""
        raise LoopgenError(
            Problem(
                str(first.file or self.where),
                f"'{expr}' is {' or '.join(shown)}, as a condition loopgen cannot decide goes (it reads the source; "
                "nothing runs): it cannot tell which the code gets at run time. Bind it one way, or in a `try:` / "
                f"`except ImportError:` or `if TYPE_CHECKING:` / `else:`, whose branch it can tell{reading}",
                at,
            )
        )

    def _scope(self, module: Module, stop: ast.stmt | None = None) -> Scope:
        """`module`'s names at its end, or just before the statement `stop`."""
        key = (module.file, stop)
        if key not in self._scopes:
            self._binding.add(module.file)
            try:
                scope = module_scope(module.name, module.package, module.statements, self._importable, stop)
            except RecursionError:  # nesting Python's parser took but this reading cannot follow
                raise self._syntax_error(module.file, "too deeply nested for loopgen to read", None) from None
            finally:
                self._binding.discard(module.file)
            self._scopes[key] = scope
        return self._scopes[key]

    def _importable(self, module_name: str, name: str | None) -> bool:
        """Whether `from module_name import name` (`import module_name`: name None) succeeds where the script runs:
        Lightning, torch and the standard library do; a module of the project or installed where loopgen renders
        (a name of a project's module: when it binds it, or it is a submodule)."""
        top = module_name.partition(".")[0]
        if top in _INSTALLED or top in sys.stdlib_module_names:
            return True
        if not self._exists(module_name):
            return False
        module = self._module(module_name) if name is not None else None
        if module is None or installed(module.root) or module.file in self._binding:
            return True
        scope = self._scope(module)
        return (
            name in scope.names
            or bool(scope.stars)
            or "__getattr__" in scope.names
            or self._exists(f"{module_name}.{name}")
        )

    def _exists(self, name: str) -> bool:
        """Whether a root holds the module or package `name` (a .py file, a directory, a compiled module)."""
        if name not in self._found:
            places = (root.joinpath(*name.split(".")) for root in self.roots)
            self._found[name] = any(
                base.is_dir() or any(base.with_name(base.name + s).is_file() for s in (".py", *EXTENSION_SUFFIXES))
                for base in places
            )
        return self._found[name]

    def _module(self, name: str) -> Module | None:
        """The module `name` from the first root that has it as a package or a .py file."""
        if name not in self._modules:
            self._modules[name] = None
            outside = not user_module(name)  # torch's, Lightning's, the standard library's: known by name
            for root in self.roots if name and not outside else ():
                base = root.joinpath(*name.split("."))
                file = next((f for f in (base / "__init__.py", base.parent / f"{base.name}.py") if f.is_file()), None)
                if file is not None:
                    self._modules[name] = Module(name, root, file, *self._parse(file))
                    break
        return self._modules[name]

    def _parse(self, file: Path) -> tuple[list[ast.stmt], Source]:
        """The top-level statements of `file` and its text, parsed once."""
        if file not in self._files:
            source = file.read_bytes()
            try:
                tree = ast.parse(source, str(file))  # parses only; nothing runs
            except SyntaxError as e:
                raise self._syntax_error(file, e.msg, e.lineno) from None
            except ValueError as e:  # a null byte
                raise self._syntax_error(file, str(e), None) from None
            except (RecursionError, MemoryError):  # Python's own compiler fails on it too
                raise self._syntax_error(file, "too deeply nested for Python's parser", None) from None
            self._files[file] = tree.body, Source(source)
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

    def _classes(self, module: Module) -> list[str]:
        """The names of the classes `module` defines."""
        names = self._scope(module).names
        return sorted(name for name, bounds in names.items() if any(isinstance(b.value, ast.ClassDef) for b in bounds))

    def _unfollowed_base(self, cls: Class, base: ast.expr) -> LoopgenError:
        """The error for a base class the source does not show (a call, a name bound to a value loopgen does not
        follow, a module of the project that is not there)."""
        reading = f" (reading it for {self.where})" if self.where else ""
        return LoopgenError(
            Problem(
                str(cls.module.file),
                f"cannot tell which class the base `{cls.module.source.code(base)}` of {cls.node.name} is (loopgen "
                "reads the source; nothing runs), so neither whether it is Lightning's nor which hooks it has: name a "
                f"class imported from a package or defined in the project{reading}",
                base.lineno,
            )
        )

    def _syntax_error(self, file: Path, message: str, line: int | None) -> LoopgenError:
        """Python's own message and line."""
        reading = f" (reading it for {self.where})" if self.where else ""
        return LoopgenError(Problem(str(file), f"syntax error: {message}{reading}", line))

    def _error(self, message: str) -> LoopgenError:
        return LoopgenError(Problem(self.where, message, self.line))


def _identity(found: Found) -> object:
    """What matters of what a name refers to: the class or function of the project; for a class outside, whether
    it is Lightning's, and its name."""
    if isinstance(found, Class):
        return found.node
    if isinstance(found, tuple):
        return found[1]
    if isinstance(found, str):
        return found.partition(".")[0] in LIGHTNING_PACKAGES, found.rpartition(".")[2]
    return None


def _shown(found: Found) -> str:
    if isinstance(found, Class):
        return f"{found.module.name}.{found.node.name}"
    if isinstance(found, tuple):
        return f"{found[0].name}.{found[1].name}"
    return found if isinstance(found, str) else "a value loopgen does not follow"
