"""The names a rendered script uses: its import block, and the variables of the objects it builds.

Imports are registered where the code uses them (as torch.fx's code generator registers its globals): the
templates write the body only, and the import block at the top of the module is computed from the names the body
reads but does not define at module level, found with `symtable` (Python's own scoping). Each such name comes from
one row of `IMPORTS`; a name the body reads that is neither defined, a builtin, nor in the table is a template's
mistake and an error. Imports a function writes in its own body (a conditional `import`) stay where they are.

The variables of the object arguments the plan builds before their owner (`plan.Built.var`) must not take a name
the script binds otherwise: `object_names` says which to rename (an `_` appended) after a render, and
`with_object_names` gives the plan that the renderer renders again.
"""

from __future__ import annotations

import ast
import builtins
import symtable
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from loopgen.errors import LoopgenError
from loopgen.plan import Plan
from loopgen.plan.objects import Built, Construct, Name

# Where the template writes the import block: one line, replaced by the block computed from the body.
MARKER = "# the imports the script uses (loopgen/render/names.py)"


@dataclass(frozen=True)
class Line:
    """One import statement of the header: `import module [as name]` or `from module import names`."""

    module: str
    names: tuple[str, ...] = ()  # from module import names (each `name` or `name as alias`); () for `import`
    alias: str | None = None  # import module as alias

    def binds(self) -> tuple[str, ...]:
        """The names the statement binds, each once."""
        if not self.names:
            return (self.alias or self.module.split(".")[0],)
        return tuple(name.split(" as ")[-1] for name in self.names)

    def text(self, used: set[str]) -> str | None:
        """The statement with only the names in `used`; None when it binds none of them."""
        if not self.names:
            if self.binds()[0] not in used:
                return None
            return f"import {self.module} as {self.alias}" if self.alias else f"import {self.module}"
        names = [name for name in self.names if name.split(" as ")[-1] in used]
        return f"from {self.module} import {', '.join(names)}" if names else None


# The standard library's first, then the others (torch and the packages the spec asks for), in the order the
# script writes them; a `from` line's names in alphabetical order.
STANDARD = (
    Line("argparse"),
    Line("ast"),
    Line("copy"),
    Line("cProfile"),
    Line("csv"),
    Line("enum"),
    Line("functools"),
    Line("glob"),
    Line("hashlib"),
    Line("importlib.util"),
    Line("io"),
    Line("json"),
    Line("math"),
    Line("os"),
    Line("pickle"),
    Line("pstats"),
    Line("random"),
    Line("re"),
    Line("shutil"),
    Line("signal"),
    Line("socket"),
    Line("subprocess"),
    Line("sys"),
    Line("time"),
    Line("types"),
    Line("warnings"),
    Line("collections", ("defaultdict",)),
    Line("collections.abc", ("Iterable", "Mapping", "MutableMapping", "Sequence")),
    Line("concurrent.futures", ("ThreadPoolExecutor",)),
    Line("contextlib", ("contextmanager", "nullcontext")),
    Line("dataclasses", ("asdict", "dataclass", "field", "fields", "is_dataclass")),
    Line("datetime", ("timedelta",)),
    Line("itertools", ("accumulate",)),
    Line("pathlib", ("Path",)),
    Line("types", ("SimpleNamespace",)),
)
OTHERS = (
    Line("mlflow"),
    Line("psutil"),
    Line("torch"),
    Line("torchmetrics"),
    Line("torch.distributed", alias="dist"),
    Line("torch.nn.utils.prune", alias="prune"),
    Line("horovod.torch", alias="hvd"),
    Line("torch_xla.core.xla_model", alias="xm"),
    Line("torch_xla.distributed.parallel_loader", alias="pl"),
    Line("torch_xla.distributed.xla_multiprocessing", alias="xmp"),
    Line("torch_xla.runtime", alias="xr"),
    Line("wandb"),
    Line("apex", ("amp",)),
    Line("mlflow.entities", ("Metric", "Param")),
    Line("mlflow.tracking", ("MlflowClient",)),
    Line("mlflow.tracking.context.registry", ("resolve_tags",)),
    Line("rich", ("get_console", "reconfigure")),
    Line("rich.live", ("_RefreshThread as RichRefreshThread",)),
    Line("rich.progress", ("BarColumn", "Progress", "ProgressColumn", "Task", "TaskID", "TextColumn")),
    Line("rich.progress_bar", ("ProgressBar as RichBar",)),
    Line("rich.table", ("Column", "Table")),
    Line("rich.text", ("Text",)),
    Line("torch.distributed.checkpoint", alias="dcp"),
    Line(
        "torch.distributed.algorithms._checkpoint.checkpoint_wrapper",
        ("CheckpointWrapper", "apply_activation_checkpointing", "checkpoint_wrapper"),
    ),
    Line("torch.distributed.checkpoint.format_utils", ("dcp_to_torch_save",)),
    Line("torch.distributed.checkpoint.optimizer", ("load_sharded_optimizer_state_dict",)),
    Line(
        "torch.distributed.checkpoint.state_dict",
        (
            "StateDictOptions",
            "get_model_state_dict",
            "get_optimizer_state_dict",
            "set_model_state_dict",
            "set_optimizer_state_dict",
        ),
    ),
    Line("torch.distributed.device_mesh", ("init_device_mesh",)),
    Line(
        "torch.distributed.fsdp",
        (
            "CPUOffload",
            "FullOptimStateDictConfig",
            "FullStateDictConfig",
            "FullyShardedDataParallel",
            "MixedPrecision",
            "OptimStateKeyType",
            "ShardedOptimStateDictConfig",
            "ShardedStateDictConfig",
            "ShardingStrategy",
            "StateDictType",
        ),
    ),
    Line("torch.distributed.fsdp.wrap", ("ModuleWrapPolicy", "enable_wrap")),
    Line("torch.nn.parallel", ("DistributedDataParallel",)),
    Line("torch.utils.data", ("DataLoader", "DistributedSampler", "RandomSampler", "SequentialSampler")),
    Line("torch.utils.flop_counter", ("FlopCounterMode",)),
    Line("torch.utils.tensorboard", ("SummaryWriter",)),
    Line("torch.utils.tensorboard.summary", ("hparams as hparams_summaries",)),
    Line("tqdm", ("tqdm",)),
)
IMPORTS: Mapping[str, Line] = {name: line for line in STANDARD + OTHERS for name in line.binds()}

# Names every module has without defining them.
_MODULE_NAMES = frozenset(dir(builtins)) | {"__file__", "__name__", "__doc__", "__spec__", "__builtins__"}


def import_block(text: str) -> str:
    """`text` (a rendered script whose header has the `MARKER` line) with the import block in that line's place:
    the standard library's lines, a blank line, the others', a blank line."""
    used = free_names(text)
    unknown = sorted(used - IMPORTS.keys())
    if unknown:
        names = ", ".join(map(repr, unknown))
        raise LoopgenError(f"the script reads {names}, which it neither defines nor imports (script_names.IMPORTS)")
    standard = [line for line in (entry.text(used) for entry in STANDARD) if line is not None]
    others = [line for line in (entry.text(used) for entry in OTHERS) if line is not None]
    block = "".join(f"{line}\n" for line in standard) + "\n" + "".join(f"{line}\n" for line in others) + "\n"
    if text.count(f"\n{MARKER}\n") != 1:
        raise LoopgenError("the script's template has no place for its imports")
    return text.replace(f"\n{MARKER}\n", f"\n{block}", 1)


def free_names(text: str) -> set[str]:
    """The names the module reads from its global scope (at module level or in any function or class body) that
    it does not bind at module level, builtins left out."""
    top = symtable.symtable(text, "<script>", "exec")
    defined = {s.get_name() for s in top.get_symbols() if s.is_assigned() or s.is_imported() or s.is_namespace()}
    read: set[str] = {s.get_name() for s in top.get_symbols() if s.is_referenced()}
    tables = list(top.get_children())
    while tables:
        table = tables.pop()
        tables.extend(table.get_children())
        for symbol in table.get_symbols():
            if not symbol.is_global():
                continue
            if symbol.is_declared_global() and (symbol.is_assigned() or symbol.is_imported()):
                defined.add(symbol.get_name())
            if symbol.is_referenced():
                read.add(symbol.get_name())
    return read - defined - _MODULE_NAMES


# ---------------------------------------------------------------------------
# the variables of the objects built as arguments


def object_names(text: str, plan: Plan) -> dict[str, str]:
    """The object variables that take a name the script binds elsewhere (in any scope, the imports included), each
    with the name it gets instead: `_` appended until free, in the order the plan builds them."""
    variables = [built.var for owner in plan.build.objects.values() for built in owner]
    if not variables:
        return {}
    bound = _bindings(ast.parse(text))
    for var in variables:
        bound[var] -= 1  # the object's own `var = ...`
    if not any(bound[var] > 0 for var in variables):
        return {}
    taken = {name for name, count in bound.items() if count > 0}
    renamed: dict[str, str] = {}
    for var in variables:
        target = var
        while target in taken:
            target += "_"
        taken.add(target)
        if target != var:
            renamed[var] = target
    return renamed


def _bindings(tree: ast.AST) -> Counter[str]:
    """How many times the module binds each name, in any scope (a builtin it reads counts as bound)."""
    bound: Counter[str] = Counter()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load) or node.id in _MODULE_NAMES:
                bound[node.id] += 1
        elif isinstance(node, ast.arg):
            bound[node.arg] += 1
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound[node.name] += 1
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                bound[alias.asname or alias.name.split(".")[0]] += 1
        elif isinstance(node, (ast.ExceptHandler, ast.MatchAs, ast.MatchStar)) and node.name:
            bound[node.name] += 1
        elif isinstance(node, ast.MatchMapping) and node.rest:
            bound[node.rest] += 1
    return bound


def with_object_names(plan: Plan, renamed: Mapping[str, str]) -> Plan:
    """`plan` with the object variables renamed, where they are built and where their owner takes them."""

    def arg(value: Any) -> Any:
        return Name(renamed[value.name]) if isinstance(value, Name) and value.name in renamed else value

    def owner(construct: Construct | None) -> Construct | None:
        if construct is None:
            return None
        return replace(construct, args={key: arg(value) for key, value in construct.args.items()})

    build = plan.build
    return replace(
        plan,
        build=replace(
            build,
            model=owner(build.model),
            data=owner(build.data),
            callbacks=tuple(replace(cb, construct=owner(cb.construct)) for cb in build.callbacks),
            objects={
                var: tuple(Built(renamed.get(built.var, built.var), built.value) for built in objects)
                for var, objects in build.objects.items()
            },
        ),
    )


def idle_callbacks(text: str, plan: Plan) -> frozenset[str]:
    """The variables of the user's callbacks that the script assigns and never reads: no hook of theirs runs in
    this spec (validation's, with no validation), so the script builds them, as Lightning does, without a name."""
    variables = {cb.var for cb in plan.build.callbacks if cb.kind == "user"} - plan.build.idle
    if not variables:
        return plan.build.idle
    classes = {cb.var: cb.construct.ref for cb in plan.build.callbacks if cb.var in variables}
    read = set()
    functions = [n for n in ast.walk(ast.parse(text)) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    for function in functions:  # a read counts in the function that builds the callback (another's name is its own)
        nodes = list(ast.walk(function))
        built = {
            target.id
            for node in nodes
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
            for target in node.targets
            if isinstance(target, ast.Name) and ast.unparse(node.value.func) == classes.get(target.id)
        }
        read |= {n.id for n in nodes if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in built}
    return plan.build.idle | (variables - read)


def with_idle_callbacks(plan: Plan, idle: frozenset[str]) -> Plan:
    return replace(plan, build=replace(plan.build, idle=idle))
