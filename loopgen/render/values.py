"""User values and names as Python source: the only way they reach a script (the templates' filters)."""

from __future__ import annotations

import ast
import keyword
import math
from typing import Any

from loopgen.errors import LoopgenError
from loopgen.plan.objects import Construct, Name, Reference

_PLAIN = (type(None), bool, int, float, str)


def literal(value: Any) -> str:
    """The Python source of a plain value (None, bool, int, float, str, and lists/tuples/dicts of them): an
    expression of literals that evaluates to the value exactly (an infinite or NaN float as `float("inf")`)."""
    _check_plain(value)
    text = _source(value)
    if not _same(_evaluate(text), value):
        raise LoopgenError(f"value {text} cannot be written into the script exactly")
    return text


def text(value: str, width: int = 72) -> str:
    """A long string as adjacent literals of at most about `width` characters, one a line, split after spaces:
    Python joins them into the value, and each line stays within black's line length."""
    if not isinstance(value, str):
        raise LoopgenError(f"{value!r} is not a string")
    parts = [""]
    for word in value.split(" "):
        if parts[-1] and len(parts[-1]) + len(word) > width:
            parts.append("")
        parts[-1] += word + " "
    parts[-1] = parts[-1][:-1]
    return "\n".join(literal(part) for part in parts)


_NON_FINITE = {"inf": 'float("inf")', "-inf": 'float("-inf")', "nan": 'float("nan")'}


def _source(value: Any) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return _NON_FINITE[repr(value)]
    if isinstance(value, list):
        return "[" + ", ".join(_source(item) for item in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(_source(item) for item in value) + ("," if len(value) == 1 else "") + ")"
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


def fstring(texts: list[str], *names: str) -> str:
    """An f-string: the plain texts (their braces escaped) with the value of each name (a variable or an
    attribute, `self.rank`) between them, as `texts[0]{names[0]}texts[1]...`; checked to read back so."""
    if len(texts) != len(names) + 1:
        raise LoopgenError(f"an f-string of {len(texts)} texts needs {len(texts) - 1} names, not {len(names)}")
    for name in names:
        for part in name.split("."):
            ident(part)
    escaped = [text.replace("{", "{{").replace("}", "}}") for text in texts]
    source = "f" + literal("".join(text + "{" + name + "}" for text, name in zip(escaped, names)) + escaped[-1])
    expected: list[Any] = []
    for i, text in enumerate(texts):
        if text:
            expected.append(text)
        if i < len(names):
            expected.append(names[i])
    tree = ast.parse(source, mode="eval").body
    found = [
        value.value if isinstance(value, ast.Constant) else ast.unparse(value.value)
        for value in (tree.values if isinstance(tree, ast.JoinedStr) else [])
        if isinstance(value, ast.Constant) or (isinstance(value, ast.FormattedValue) and value.format_spec is None)
    ]
    if found != expected or not isinstance(tree, ast.JoinedStr) or len(tree.values) != len(expected):
        raise LoopgenError(f"{source} cannot be written into the script as an f-string of {texts} and {names}")
    return source


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
    if isinstance(value, Reference):
        return value.ref
    if not _holds_code(value):
        return literal(value)
    if isinstance(value, (list, tuple)):
        items = ", ".join(argument(item) for item in value)
        return f"[{items}]" if isinstance(value, list) else f"({items}{',' if len(value) == 1 else ''})"
    return "{" + ", ".join(f"{literal(key)}: {argument(item)}" for key, item in value.items()) + "}"


def _holds_code(value: Any) -> bool:
    if isinstance(value, (Construct, Name, Reference)):
        return True
    if isinstance(value, (list, tuple)):
        return any(_holds_code(item) for item in value)
    if isinstance(value, dict):
        return any(_holds_code(item) for item in value.values())
    return False
