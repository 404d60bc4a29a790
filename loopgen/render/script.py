"""Stage 4: Plan -> script text. Jinja templates, then the blocks main() hands to helpers (extract.py), then the
imports the text uses (names.py), then black, then a compile check.

User values reach the code only through the `literal` filter (values.py: the repr of plain data, checked to read
back as the same value; `fstring` writes plain texts around names the same way) and names only through `ident`.

Templates write every block of code at column 0. There is one way to indent: an expression `{{ ... }}` whose value
spans several lines (a macro's block of code) is indented to the column where the expression stands, so a block is
placed by calling its macro at the right place inside the enclosing code. An expression that renders nothing leaves
no line behind.
"""

from __future__ import annotations

import ast
import hashlib
import os
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from loopgen.errors import LoopgenError, Problem
from loopgen.plan import Plan
from loopgen.plan.header import SCRIPT_SHA256_PLACEHOLDER
from loopgen.render.extract import extract_helpers
from loopgen.render.formatting import DEFAULTS, BlackConfig, format_script
from loopgen.render.names import MARKER as IMPORTS_MARKER
from loopgen.render.names import idle_callbacks, import_block, object_names, with_idle_callbacks, with_object_names
from loopgen.render.values import argument, fstring, ident, kwargs, literal, text


def template_dir() -> Path:
    """templates/ ships inside the package in a wheel, and sits beside it in the source tree."""
    package = Path(__file__).resolve().parent.parent
    for candidate in (package / "templates", package.parent / "templates"):
        if (candidate / "train.py.j2").is_file():
            return candidate
    raise LoopgenError("loopgen's templates are missing from the installation")


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
    env.filters.update(literal=literal, fstring=fstring, ident=ident, kwargs=kwargs, argument=argument, text=text)
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
    for _ in range(4):
        text = _place_blocks(template.render(plan=plan, script_imports=IMPORTS_MARKER))
        text = import_block(extract_helpers(text))
        renamed = object_names(text, plan)
        if renamed:
            plan = with_object_names(plan, renamed)
            continue
        idle = idle_callbacks(text, plan)
        if idle == plan.build.idle:
            return text
        plan = with_idle_callbacks(plan, idle)
    raise LoopgenError(f"the variables {', '.join(sorted(renamed))} take names the script binds otherwise")


def stamp(text: str) -> str:
    """The script with its own sha256 in its header (of its text with the placeholder there)."""
    line = f"script sha256: {SCRIPT_SHA256_PLACEHOLDER}\n"
    if line not in text:
        return text
    return text.replace(line, f"script sha256: {hashlib.sha256(text.encode()).hexdigest()}\n", 1)


def _section_spacing(text: str) -> str:
    """Blank lines inside functions come from one rule, not from the templates' branches:
    one before each full-line comment (a section header) that follows code (not a block's
    opening line or a docstring). Module-level spacing is left to black. A line of spaces
    only (an expression that rendered nothing) goes."""
    kept: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            if line == "" and (not kept or not kept[-1].startswith(" ")):
                kept.append(line)
            continue
        if line.startswith(" ") and stripped.startswith("#") and kept:
            previous = kept[-1].strip()
            opening = previous.endswith((":", '"""'))  # a block's opening line, a docstring's end
            if previous and not previous.startswith("#") and not opening:
                kept.append("")
        kept.append(line)
    return "\n".join(kept)


def format_source(text: str, black_config: BlackConfig = DEFAULTS) -> str:
    """Black, configured as the project the script is written into (see loopgen/render/formatting.py)."""
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
    if plan.progress.subclassed is not None:  # ... (a subclass of TQDMProgressBar or RichProgressBar)
        user.add("tqdm" if plan.progress.subclassed == "TQDMProgressBar" else "rich")
    if plan.summary.rich:
        user.add("rich")  # ... (a RichModelSummary callback)
    if plan.logging.device_stats is not None and plan.logging.device_stats.psutil:
        user.add("psutil")  # ... (a DeviceStatsMonitor that may read the CPU's figures)
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
