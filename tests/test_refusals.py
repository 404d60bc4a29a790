"""Every refusal the flag table can give says why loopgen does not serve the value and what to use instead:
"<value> is not supported by loopgen (<why>); <instead>". The walk tries, for each flag and each argument of
Lightning's callbacks, profilers and loggers whose support is not total, every value its kind names and a set of
samples of each kind, and collects what the support predicate says; plus the callback, logger and profiler
classes loopgen refuses."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from loopgen.spec.flags import CALLBACK_ARGS, FLAGS, LOGGER_ARGS, PROFILER_ARGS, Flag
from loopgen.spec.kinds import FlagError, implemented
from loopgen.spec.support import (
    LIGHTNING_PROFILERS,
    OTHER_LIGHTNING_CALLBACKS,
    callback_support,
    logger_support,
    profiler_support,
)

REASONED = re.compile(r"not supported by loopgen \((?P<why>.+)\); (?P<instead>.+)")

SAMPLES: tuple[Any, ...] = (
    True, False, 0, 1, 2, -1, 0.5, 3.5, "", "x", "skip.json", "00:01:00:00", "all", {"hours": 1}, [1, 3], ["my.Plugin"],
    {"class_path": "my.Thing"}, {"class_path": "FSDPStrategy"},
    {"class_path": "DDPStrategy", "init_args": {"start_method": "spawn"}},
)  # fmt: skip


def named_values(schema: Any) -> Iterator[Any]:
    """The values a JSON Schema fragment names (enum members, consts), at any depth."""
    if isinstance(schema, dict):
        yield from schema.get("enum", ())
        if "const" in schema:
            yield schema["const"]
        for value in schema.values():
            yield from named_values(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from named_values(item)


def refusals_of(where: str, flag: Flag) -> list[tuple[str, Any, str]]:
    found = []
    for raw in (*named_values(flag.kind.schema), *SAMPLES):
        try:
            value = flag.parse(raw)
        except (FlagError, TypeError, ValueError, AttributeError):
            continue
        if value is None:
            continue
        reason = flag.support(value)
        if reason:
            found.append((where, raw, reason))
    return found


def table_refusals() -> list[tuple[str, Any, str]]:
    tables = [("trainer", FLAGS)]
    for prefix, args in (("callbacks", CALLBACK_ARGS), ("profiler", PROFILER_ARGS), ("logger", LOGGER_ARGS)):
        tables += [(f"{prefix}.{name}", flags) for name, flags in args.items()]
    found = []
    for prefix, flags in tables:
        for flag in flags:
            if flag.support is not implemented:
                found += refusals_of(f"{prefix}.{flag.name}", flag)
    return found


def class_refusals() -> list[tuple[str, Any, str]]:
    callbacks = [*OTHER_LIGHTNING_CALLBACKS, "NotOneOfLightnings"]
    found = [("callbacks", name, callback_support(f"pytorch_lightning.callbacks.{name}")) for name in callbacks]
    found.append(("logger", "my.Logger", logger_support("my.Logger")))
    for name in (*LIGHTNING_PROFILERS, "my.Timer"):
        found.append(("profiler", name, profiler_support(name)))
    return [(where, value, reason) for where, value, reason in found if reason]


REFUSALS = table_refusals() + class_refusals()


def test_the_walk_reaches_every_partly_supported_flag() -> None:
    walked = {where for where, _, _ in REFUSALS}
    tables = [("trainer", FLAGS)]
    for prefix, args in (("callbacks", CALLBACK_ARGS), ("profiler", PROFILER_ARGS), ("logger", LOGGER_ARGS)):
        tables += [(f"{prefix}.{name}", flags) for name, flags in args.items()]
    partial = {f"{prefix}.{flag.name}" for prefix, flags in tables for flag in flags if flag.support is not implemented}
    assert partial - walked == set()
    assert len(REFUSALS) > 60


@pytest.mark.parametrize(("where", "value", "reason"), REFUSALS, ids=[f"{w}={v}" for w, v, _ in REFUSALS])
def test_each_refusal_says_why_and_what_instead(where: str, value: Any, reason: str) -> None:
    reasoned = REASONED.fullmatch(reason)
    assert reasoned, reason
    assert len(reasoned["why"].split()) >= 5, reason
    assert len(reasoned["instead"].split()) >= 2, reason
