"""Stage 4: Plan -> script text. Jinja templates, then black, then a compile check.

User values reach the code only through the `literal` filter (the repr of plain
data, checked to read back as the same value) and names only through `ident`.
"""

from __future__ import annotations

import ast
import keyword
import math
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from loopgen.errors import LoopgenError, Problem
from loopgen.formatting import DEFAULTS, BlackConfig, format_script
from loopgen.plan import Plan

_PLAIN = (type(None), bool, int, float, str)


def template_dir() -> Path:
    """templates/ ships inside the package in a wheel, and sits beside it in the source tree."""
    here = Path(__file__).resolve().parent
    for candidate in (here / "templates", here.parent / "templates"):
        if (candidate / "train.py.j2").is_file():
            return candidate
    raise LoopgenError("loopgen's templates are missing from the installation")


def literal(value: Any) -> str:
    """The Python source of a plain value (None, bool, int, float, str, and lists/tuples/dicts of them)."""
    _check_plain(value)
    text = repr(value)
    if ast.literal_eval(text) != value:
        raise LoopgenError(f"value {text} cannot be written into the script exactly")
    return text


def _check_plain(value: Any) -> None:
    if isinstance(value, float) and not math.isfinite(value):
        raise LoopgenError(f"value {value!r} cannot be written as a Python literal")
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
    """`name=value, ...` for keyword arguments."""
    return ", ".join(f"{ident(k)}={literal(v)}" for k, v in args.items())


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(template_dir())),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
        line_statement_prefix="#%",
        autoescape=False,
    )
    env.filters.update(literal=literal, ident=ident, kwargs=kwargs)
    return env


def render(plan: Plan, black_config: BlackConfig = DEFAULTS) -> str:
    """The script for `plan`, formatted as `black_config` says, and verified."""
    text = _environment().get_template("train.py.j2").render(plan=plan)
    text = format_source(_section_spacing(text), black_config)
    verify(text, plan)
    return text


def _section_spacing(text: str) -> str:
    """Blank lines inside functions come from one rule, not from the templates' branches:
    one before each full-line comment (a section header) that follows code. Module-level
    spacing is left to black."""
    kept: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if not stripped:
            if not kept or not kept[-1].startswith(" "):
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
    """The script compiles and imports only the standard library, torch and the user's modules."""
    tree = ast.parse(text)
    compile(tree, "<generated>", "exec")
    user = {imp.module.split(".")[0] for imp in plan.imports}
    if plan.apex:
        user.add("apex")  # asked for by the spec (amp_backend: apex)
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
