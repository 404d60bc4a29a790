"""Stage 4: Plan -> script text. Jinja templates, then black, then a compile check.

User values reach the code only through the `literal` filter (the repr of plain
data, checked to read back as the same value) and names only through `ident`.

Templates write every block of code at column 0. There is one way to indent: an
expression `{{ ... }}` whose value spans several lines (a macro's block of code)
is indented to the column where the expression stands, so a block is placed by
calling its macro at the right place inside the enclosing code. An expression
that renders nothing leaves no line behind.
"""

from __future__ import annotations

import ast
import hashlib
import keyword
import math
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from loopgen.errors import LoopgenError, Problem
from loopgen.formatting import DEFAULTS, BlackConfig, format_script
from loopgen.plan import Plan
from loopgen.plan.header import SCRIPT_SHA256_PLACEHOLDER
from loopgen.plan.objects import Construct, Name
from loopgen.script_names import MARKER as IMPORTS_MARKER
from loopgen.script_names import import_block, object_names, with_object_names

_PLAIN = (type(None), bool, int, float, str)


def template_dir() -> Path:
    """templates/ ships inside the package in a wheel, and sits beside it in the source tree."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "train.py.j2").is_file():
            return candidate
    raise LoopgenError("loopgen's templates are missing from the installation")


def literal(value: Any) -> str:
    """The Python source of a plain value (None, bool, int, float, str, and lists/tuples/dicts of them): an
    expression of literals that evaluates to the value exactly (an infinite or NaN float as `float("inf")`)."""
    _check_plain(value)
    text = _source(value)
    if not _same(_evaluate(text), value):
        raise LoopgenError(f"value {text} cannot be written into the script exactly")
    return text


_NON_FINITE = {"inf": 'float("inf")', "-inf": 'float("-inf")', "nan": 'float("nan")'}


def _source(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[repr(value)]
    if isinstance(value, list):
        return "[" + ", ".join(_source(item) for item in value) + "]"
    if isinstance(value, tuple):
        return "(" + "".join(f"{_source(item)}, " for item in value).rstrip(" ") + ")"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_source(k)}: {_source(v)}" for k, v in value.items()) + "}"
    return repr(value)


def _evaluate(text: str) -> Any:
    """The value of a `literal` text: literals only, and float() of the three non-finite spellings."""
    tree = ast.parse(text, mode="eval")
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and not (
            isinstance(node.func, ast.Name)
            and node.func.id == "float"
            and len(node.args) == 1
            and not node.keywords
            and isinstance(node.args[0], ast.Constant)
            and node.args[0].value in ("inf", "-inf", "nan")
        ):
            raise LoopgenError(f"value {text} cannot be written into the script exactly")
    return eval(compile(tree, "<literal>", "eval"), {"__builtins__": {"float": float}})  # checked above


def _same(a: Any, b: Any) -> bool:
    """Equal, with NaN equal to NaN and types compared (True is not 1, 1.0 is not 1)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return a == b


def _check_plain(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 13287:
        raise LoopgenError("an integer of more than 4000 digits cannot be written into the script")
    if isinstance(value, _PLAIN):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_plain(item)
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, (str, int)) or isinstance(key, bool):
                raise LoopgenError(f"dictionary key {key!r} cannot be written into the script")
            _check_plain(item)
        return
    raise LoopgenError(f"value of type {type(value).__name__} cannot be written into the script")


def ident(name: Any) -> str:
    """A Python identifier, unchanged, or an error."""
    if not isinstance(name, str) or not name.isidentifier() or keyword.iskeyword(name):
        raise LoopgenError(f"{name!r} is not a valid Python name")
    return name


def kwargs(args: dict[str, Any]) -> str:
    """`name=value, ...` for keyword arguments (values: plain, or objects the script builds, see `argument`)."""
    return ", ".join(f"{ident(k)}={argument(v)}" for k, v in args.items())


def argument(value: Any) -> str:
    """The Python source of an argument value: a plain value, a script variable (plan.Name), an object to build
    (plan.Construct: `Class(args)`), or a list / mapping holding those."""
    if isinstance(value, Name):
        return ident(value.name)
    if isinstance(value, Construct):
        return f"{value.ref}({kwargs(dict(value.args))})"
    if not _holds_code(value):
        return literal(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join(argument(item) for item in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    return "{" + ", ".join(f"{literal(key)}: {argument(item)}" for key, item in value.items()) + "}"


def _holds_code(value: Any) -> bool:
    if isinstance(value, (Construct, Name)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_code(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_code(item) for item in value.values())
    return False


# Around the value of an expression that spans several lines: see `_place_blocks`.
_BLOCK_START, _BLOCK_END = "\x02", "\x03"


def _mark_blocks(value: Any) -> str:
    """Jinja's `finalize`: every expression's value; a block of several lines is marked for `_place_blocks`."""
    text = str(value)
    if "\n" not in text:
        return text
    text = text.strip("\n")
    return f"{_BLOCK_START}{text}{_BLOCK_END}" if text.strip() else ""


def _place_blocks(text: str) -> str:
    """Indent the lines of each marked block to the column where its expression stands (blocks nest)."""
    out: list[str] = []
    line_length = 0
    columns: list[int] = []  # the start column of each block being copied, innermost last
    for char in text:
        if char == _BLOCK_START:
            columns.append(line_length)
        elif char == _BLOCK_END:
            columns.pop()
        elif char == "\n":
            indent = columns[-1] if columns else 0
            out.append("\n" + " " * indent)
            line_length = indent
        else:
            out.append(char)
            line_length += 1
    return "".join(out)


def _bytecode_cache() -> jinja2.BytecodeCache | None:
    """The templates, compiled once into the cache's directory (each keyed by its source's checksum), even with
    the cache of scripts off: compiling them is most of a cold render's time."""
    from loopgen.cache import templates_dir

    directory = templates_dir()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None  # the cache never makes a render fail
    if not os.access(directory, os.W_OK):
        return None
    return jinja2.FileSystemBytecodeCache(str(directory))


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        autoescape=False,
        finalize=_mark_blocks,
        bytecode_cache=_bytecode_cache(),
    )
    env.filters.update(literal=literal, ident=ident, kwargs=kwargs, argument=argument)
    return env


def render(plan: Plan, black_config: BlackConfig = DEFAULTS) -> str:
    """The script for `plan`, formatted as `black_config` says, and verified."""
    text = _render_names(plan)
    text = format_source(_section_spacing(text), black_config)
    verify(text, plan)
    return stamp(text)


def _render_names(plan: Plan) -> str:
    """The script's text, its import block computed from the names its code uses, and the variables of the objects
    built as arguments renamed (rendered again) where they would take a name the script binds otherwise."""
    template = _environment().get_template("train.py.j2")
    for _ in range(3):
        text = import_block(_place_blocks(template.render(plan=plan, script_imports=IMPORTS_MARKER)))
        renamed = object_names(text, plan)
        if not renamed:
            return text
        plan = with_object_names(plan, renamed)
    raise LoopgenError(f"the variables {', '.join(sorted(renamed))} take names the script binds otherwise")


def stamp(text: str) -> str:
    """The script with its own sha256 in its header (of its text with the placeholder there)."""
    line = f"script sha256: {SCRIPT_SHA256_PLACEHOLDER}\n"
    if line not in text:
        return text
    return text.replace(line, f"script sha256: {hashlib.sha256(text.encode()).hexdigest()}\n", 1)


def _section_spacing(text: str) -> str:
    """Blank lines inside functions come from one rule, not from the templates' branches:
    one before each full-line comment (a section header) that follows code. Module-level
    spacing is left to black. A line of spaces only (an expression that rendered nothing) goes."""
    kept: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            if line == "" and (not kept or not kept[-1].startswith(" ")):
                kept.append(line)
            continue
        if line.startswith(" ") and stripped.startswith("#") and kept:
            previous = kept[-1].strip()
            if previous and not previous.startswith("#") and not previous.endswith(":"):
                kept.append("")
        kept.append(line)
    return "\n".join(kept)


def format_source(text: str, black_config: BlackConfig = DEFAULTS) -> str:
    """Black, configured as the project the script is written into (see loopgen/formatting.py)."""
    return format_script(text, black_config)


ALLOWED_IMPORTS = frozenset({"torch"})


def verify(text: str, plan: Plan) -> None:
    """The script compiles and imports only the standard library, torch, the user's modules and the packages the
    spec asks for."""
    tree = ast.parse(text)
    compile(tree, "<generated>", "exec")
    user = {imp.module.split(".")[0] for imp in plan.build.imports}
    if plan.precision.apex:
        user.add("apex")  # asked for by the spec (amp_backend: apex)
    if plan.distributed.horovod:
        user.add("horovod")  # asked for by the spec (strategy: horovod)
    if plan.distributed.xla:
        user.add("torch_xla")  # asked for by the spec (accelerator: tpu)
    user |= plan.logging.kinds & {"mlflow", "wandb"}  # ... (its loggers; TensorBoard's writer is torch's)
    if plan.progress.kind in ("tqdm", "rich"):
        user.add(plan.progress.kind)  # asked for by the spec (a TQDMProgressBar or RichProgressBar callback)
    if plan.metrics.torchmetrics:
        user.add("torchmetrics")  # the user's module imports it (its Metric objects are logged)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top not in ALLOWED_IMPORTS and top not in user and top not in sys.stdlib_module_names:
                raise LoopgenError(Problem("", f"the script would import {name!r}, which loopgen does not allow"))
