"""The JSON Schema (draft 2020-12) of a spec, for `loopgen schema` and editors.

`spec_schema`: the whole spec's schema: each trainer flag's `Kind` fragment
with its doc and default (flags.py), the other keys, and `$defs` (`class_ref`,
which kinds.py's `CLASS_REF_SCHEMA` refers to: a `class_path` + `init_args`
entry, or a bare class path).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopgen.spec.flags import ALIASES, FLAGS
from loopgen.spec.kinds import CLASS_REF_SCHEMA
from loopgen.spec.model import MAX_SEED

_DOTTED_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$"


def _nullable(schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"anyOf": [{"type": "null"}, dict(schema)]}


def _class_ref() -> dict[str, Any]:
    """A bare dotted class path, or a `class_path` + `init_args` (+ jsonargparse's `dict_kwargs`) mapping."""
    plain_object = {"type": "object", "propertyNames": {"pattern": r"^[A-Za-z_][A-Za-z0-9_]*$"}}
    return {
        "anyOf": [
            {"type": "string", "pattern": _DOTTED_PATTERN},
            {
                "type": "object",
                "required": ["class_path"],
                "additionalProperties": False,
                "properties": {
                    "class_path": {"type": "string", "pattern": _DOTTED_PATTERN},
                    "init_args": _nullable(plain_object),
                    "dict_kwargs": _nullable(plain_object),
                },
            },
        ]
    }


def spec_schema() -> dict[str, Any]:
    """A JSON Schema (draft 2020-12) of the spec, built from the flag table (for `loopgen schema`, editors)."""

    trainer: dict[str, Any] = {}
    for flag in FLAGS:
        default = list(flag.default) if isinstance(flag.default, tuple) else flag.default
        trainer[flag.name] = {"description": flag.doc, "default": default, **_nullable(flag.kind.schema)}
    for alias in ALIASES:
        trainer[alias.name] = {"description": alias.doc, "deprecated": True, **_nullable(alias.kind.schema)}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "loopgen spec",
        "description": "A LightningCLI `fit` config (plus loopgen's `loop:`) that loopgen renders to a training script.",
        "type": "object",
        "required": ["model"],
        "additionalProperties": False,
        "properties": {
            "seed_everything": {
                "description": "an int seed; true: seed chosen at run time; false: do not seed",
                "default": True,
                "anyOf": [
                    {"type": "null"},
                    {"type": "boolean"},
                    {"type": "integer", "minimum": 0, "maximum": MAX_SEED},
                ],
            },
            "model": {"description": "the model class (a torch.nn.Module with Lightning's hooks)", **CLASS_REF_SCHEMA},
            "data": {
                "description": "the data class; null: the model's own *_dataloader hooks",
                **_nullable(CLASS_REF_SCHEMA),
            },
            "trainer": {"type": ["object", "null"], "additionalProperties": False, "properties": trainer},
            "optimizer": {"description": "null: the model's configure_optimizers", **_nullable(CLASS_REF_SCHEMA)},
            "lr_scheduler": {"description": "used with `optimizer:`", **_nullable(CLASS_REF_SCHEMA)},
            "loop": {
                "description": "loopgen-only: facts Lightning finds at run time that shape the code",
                "type": ["object", "null"],
                "additionalProperties": False,
                "properties": {
                    "optimizer_frequencies": _nullable(
                        {"type": "array", "items": {"type": "integer", "minimum": 1}, "minItems": 1}
                    ),
                    "lr_schedulers": {
                        "description": "configure_optimizers returns LR schedulers (null: read from its source)",
                        "type": ["boolean", "null"],
                    },
                    "subcommands": {
                        "description": "the script's subcommands (null: fit, with validate, test and predict when the"
                        " module has a test_step or a predict_step)",
                        "type": ["array", "null"],
                        "items": {"enum": ["fit", "validate", "test", "predict"]},
                        "uniqueItems": True,
                    },
                    "compile": {
                        "description": "compile the module as Lightning fits a torch.compile(model) it is given: true"
                        " (torch's defaults) or torch.compile's arguments",
                        "anyOf": [
                            {"type": ["boolean", "null"]},
                            {
                                "type": "object",
                                "additionalProperties": False,
                                "properties": {
                                    "backend": {"type": ["string", "null"]},
                                    "mode": {
                                        "enum": [
                                            None,
                                            "default",
                                            "reduce-overhead",
                                            "max-autotune",
                                            "max-autotune-no-cudagraphs",
                                        ]
                                    },
                                    "fullgraph": {"type": ["boolean", "null"]},
                                    "dynamic": {"type": ["boolean", "null"]},
                                },
                            },
                        ],
                    },
                },
            },
            "ckpt_path": {"description": "the checkpoint to resume from by default", "type": ["string", "null"]},
            "weights_only": {
                "description": "how a checkpoint is loaded: null or true, tensors and plain data only (torch.load's"
                " weights_only); false, any pickle (trust the file)",
                "type": ["boolean", "null"],
            },
        },
        "$defs": {"class_ref": _class_ref()},
    }
