"""The vocabulary of the flag table: a Kind validates and normalises a raw YAML value and describes it as JSON
Schema; Support says whether loopgen serves it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loopgen.errors import did_you_mean, got

CLASS_REF_SCHEMA: Mapping[str, Any] = {"$ref": "#/$defs/class_ref"}  # the $def is in schema.py (`_class_ref`)


LIGHTNING_PACKAGES = ("pytorch_lightning.", "lightning.pytorch.", "lightning.")


class FlagError(ValueError):
    """A raw value that Lightning itself refuses.

    `at` is where below the flag's key (mapping keys as str, list indexes as
    int); the caller prefixes the flag's own key path.
    """

    def __init__(self, message: str, at: tuple[str | int, ...] = ()):
        super().__init__(message)
        self.message = message
        self.at = at


def same(a: Any, b: Any) -> bool:
    """Equality that tells 1 from 1.0 and from True (Lightning gives them different meanings)."""
    return type(a) is type(b) and a == b


def is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


Parser = Callable[[Any], Any]  # raw non-null YAML value -> normalised value; raises FlagError


Support = Callable[[Any], "str | None"]  # normalised value -> None if loopgen implements it, else `refused(...)`


def refused(why: str, instead: str) -> str:
    """The reason a value is refused, read after the value and "is": why loopgen does not serve it, and the
    nearest thing it does serve ("XLAProfiler is not supported by loopgen (it profiles XLA devices); use ...")."""
    return f"not supported by loopgen ({why}); {instead}"


def refusal(what: str, why: str, instead: str) -> str:
    """The whole refusal of `what`: "<what> is not supported by loopgen (<why>); <instead>"."""
    return f"{what} is {refused(why, instead)}"


@dataclass(frozen=True)
class Kind:
    parse: Parser
    schema: Mapping[str, Any]  # JSON Schema of the raw non-null value


def integer(minimum: int, meaning: str = "") -> Kind:
    """An int >= minimum (neither a bool nor a float)."""
    expected = f"an integer >= {minimum}" + (f" ({meaning})" if meaning else "")

    def parse(raw: Any) -> int:
        if not is_int(raw) or raw < minimum:
            raise FlagError(f"expected {expected}, {got(raw)}")
        return raw

    return Kind(parse, {"type": "integer", "minimum": minimum})


def boolean() -> Kind:
    def parse(raw: Any) -> bool:
        if not isinstance(raw, bool):
            raise FlagError(f"expected true or false, {got(raw)}")
        return raw

    return Kind(parse, {"type": "boolean"})


def string() -> Kind:
    def parse(raw: Any) -> str:
        if not isinstance(raw, str):
            raise FlagError(f"expected a string, {got(raw)}")
        return raw

    return Kind(parse, {"type": "string"})


def import_path() -> Kind:
    """A function's dotted import path, `package.module.function` (LightningCLI resolves a callable so)."""

    def parse(raw: Any) -> str:
        parts = raw.split(".") if isinstance(raw, str) else []
        if len(parts) < 2 or not all(part.isidentifier() for part in parts):
            raise FlagError(f"expected the import path of a function, as package.module.function, {got(raw)}")
        return raw

    return Kind(parse, {"type": "string", "pattern": r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)+$"})


def choice(*options: str, aliases: Mapping[str | int, str] | None = None, lower: bool = False) -> Kind:
    """One of `options`, or an alias of one (normalised to it). `lower`: case-insensitive (Lightning's strategy)."""
    aliases = dict(aliases or {})
    accepted = list(dict.fromkeys([*options, *(str(alias) for alias in aliases)]))

    def parse(raw: Any) -> str:
        if type(raw) in (str, int):
            key = raw.lower() if lower and isinstance(raw, str) else raw
            if key in aliases:
                return aliases[key]
            if key in options:
                return key
        hint = did_you_mean(raw, accepted) if isinstance(raw, str) else ""
        raise FlagError(f"expected one of {', '.join(accepted)}, {got(raw)}{hint}")

    return Kind(parse, {"enum": list(dict.fromkeys([*options, *aliases]))})


def batch_limit(*, zero: bool = True) -> Kind:
    """Lightning's `_determine_batch_limits`: a float fraction in [0, 1] or an int count.

    An integral float above 1 becomes an int, as in Lightning. `zero=False`
    (val_check_interval) refuses 0 and 0.0.
    """
    low, least = ("[", 0) if zero else ("(", 1)
    expected = f"expected a float in {low}0.0, 1.0] (a fraction) or an integer >= {least} (a count)"

    def parse(raw: Any) -> int | float:
        if not is_number(raw) or raw < 0 or (raw == 0 and not zero):
            raise FlagError(f"{expected}, {got(raw)}")
        if isinstance(raw, float) and raw > 1:
            if not raw.is_integer():
                raise FlagError(f"{expected}, {got(raw)}")
            return int(raw)
        return raw

    fraction = {"type": "number", "minimum" if zero else "exclusiveMinimum": 0, "maximum": 1}
    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": least}, fraction]})


def count_or_fraction() -> Kind:
    """A count (an int >= 0) or a fraction (a float in [0, 1]): pstats' restriction, torch's pruning amount."""

    def parse(raw: Any) -> int | float:
        if is_int(raw) and raw >= 0 or isinstance(raw, float) and 0.0 <= raw <= 1.0:
            return raw
        raise FlagError(f"expected an integer >= 0 (a count) or a float in [0.0, 1.0] (a fraction), {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "number", "minimum": 0, "maximum": 1}]})


def swa_learning_rates() -> Kind:
    """StochasticWeightAveraging's swa_lrs: a positive float, or a list of them (one per parameter group); an int
    is refused as Lightning refuses it."""

    def parse(raw: Any) -> float | tuple[float, ...]:
        if isinstance(raw, float) and raw > 0:
            return raw
        if isinstance(raw, list) and raw and all(isinstance(lr, float) and lr > 0 for lr in raw):
            return tuple(raw)
        raise FlagError(f"expected a positive float (e.g. 0.05), or a list of them, {got(raw)}")

    positive = {"type": "number", "exclusiveMinimum": 0}
    return Kind(parse, {"anyOf": [positive, {"type": "array", "items": positive, "minItems": 1}]})


def epoch_or_fraction() -> Kind:
    """StochasticWeightAveraging's swa_epoch_start: an epoch (an int >= 1) or a fraction of max_epochs (a float in
    [0, 1])."""

    def parse(raw: Any) -> int | float:
        if is_int(raw) and raw >= 1 or isinstance(raw, float) and 0.0 <= raw <= 1.0:
            return raw
        raise FlagError(f"expected an integer >= 1 (an epoch) or a float in [0.0, 1.0] (of max_epochs), {got(raw)}")

    return Kind(parse, {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "number", "minimum": 0, "maximum": 1}]})


def names_among(*options: str) -> Kind:
    """A list of some of `options`, each once."""

    def parse(raw: Any) -> tuple[str, ...]:
        if not isinstance(raw, list) or any(item not in options for item in raw) or len(set(raw)) < len(raw):
            raise FlagError(f"expected a list of distinct names among {', '.join(options)}, {got(raw)}")
        return tuple(raw)

    return Kind(parse, {"type": "array", "items": {"enum": list(options)}, "uniqueItems": True})


def anything() -> Kind:
    """Any value: for Lightning arguments of which loopgen accepts only the default."""
    return Kind(lambda raw: raw, {})


def class_path_of(raw: Any, expected: str) -> str:
    if isinstance(raw, dict) and isinstance(raw.get("class_path"), str):
        return raw["class_path"]
    raise FlagError(f"expected {expected}, {got(raw)}")


def implemented(value: Any) -> str | None:
    return None


def only(*done: Any, why: str, instead: str) -> Support:
    """Implemented for the `done` values; another is refused, saying why and what to use instead."""
    reason = refused(why, instead)
    return lambda value: None if any(same(value, d) for d in done) else reason


def lightning_default(default: Any, why: str, instead: str) -> Support:
    """For the Lightning arguments that the contract does not name: only the default is accepted."""
    return only(default, why=why, instead=instead)
