"""`loop.compile`: torch.compile's arguments for the module, checked as the spec is read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from loopgen.errors import did_you_mean, got

# loop.compile's arguments (torch.compile's): what each takes, and its description for an error
COMPILE_OPTIONS = {
    "backend": (lambda v: isinstance(v, str) and bool(v), "a backend's name (inductor, aot_eager, eager, ...)"),
    "mode": (
        lambda v: v in ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs"),
        "default, reduce-overhead, max-autotune or max-autotune-no-cudagraphs",
    ),
    "fullgraph": (lambda v: isinstance(v, bool), "true or false"),
    "dynamic": (lambda v: isinstance(v, bool), "true, false or null"),
}


def compile_options(key: tuple, value: Any, problem: Callable[[tuple, str], None]) -> dict[str, Any] | None:
    """loop.compile: false or null (not compiled), true (torch.compile's defaults), or a mapping of torch.compile's
    arguments (backend, mode, fullgraph, dynamic); each problem is reported through `problem(key, message)`."""
    if value is None or value is False:
        return None
    if value is True:
        return {}
    if not isinstance(value, dict):
        problem(key, f"expected true, false or a mapping of torch.compile's arguments, {got(value)}")
        return None
    options: dict[str, Any] = {}
    for name, raw in value.items():
        check = COMPILE_OPTIONS.get(str(name))
        if check is None:
            problem((*key, name), f"unknown argument of torch.compile{did_you_mean(str(name), COMPILE_OPTIONS)}")
        elif raw is not None and not check[0](raw):
            problem((*key, name), f"expected {check[1]}, {got(raw)}")
        elif raw is not None:
            options[str(name)] = raw
    return options
