"""The model summary printed at the start of fit."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem
from loopgen.plan.data import Data
from loopgen.plan.objects import Callback, Construct, is_lightning, numbered_name
from loopgen.plan.precision import Device, Precision
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import ClassRef, Spec


@dataclass(frozen=True)
class Summary:
    """Lightning's ModelSummary table, printed at on_fit_start by each ModelSummary: the default one
    (enable_model_summary) or the spec's entries. The hooks hold them (kind "summary"), in Lightning's order."""

    enabled: bool  # some ModelSummary prints (max_depth 0 prints nothing)
    children: bool  # some lists the top-level submodules only (max_depth 1)
    children_only: bool  # ... and none goes deeper
    takes_depth: bool  # the summary function needs max_depth (to list deeper, or to count FLOPs)
    example_input: bool  # the model's source mentions example_input_array: a forward pass gives sizes and FLOPs
    takes_device: bool  # ... which reads `device` (the batch's transfer, or autocast's device type)
    takes_data: bool  # ... and the data module, whose batch-transfer hooks it calls
    precision_bits: int  # the bits per parameter of the size estimate (Lightning's table: 32 for mixed precision)
    unsupported_precision: str | None  # ... which Lightning warns about, naming the trainer's precision
    rich: bool = False  # RichModelSummary entries: the table and the totals drawn with rich


# Lightning's ModelSummary: the bits per parameter of its size estimate, by the trainer's precision
SUMMARY_PRECISION_BITS = {"32": 32, "64": 64, "bf16-true": 16, "16-true": 16}


def is_summary(ref: ClassRef) -> bool:
    """Lightning's ModelSummary or RichModelSummary."""
    return is_lightning(ref, "ModelSummary") or is_lightning(ref, "RichModelSummary")


def resolve_summary(
    spec: Spec,
    model: ClassFacts,
    data: Data,
    device: Device,
    precision: Precision,
    problems: list[Problem],
) -> tuple[Summary, tuple[Callback, ...]]:
    """The ModelSummary callbacks: the spec's entries (ModelSummary, or RichModelSummary, which draws the same table
    with rich), else the default one when enable_model_summary is true (Lightning's callback connector; Lightning
    picks RichModelSummary when rich is installed, the script the plain table: it does not depend on what is
    installed)."""
    t = spec.trainer
    given = [ref for ref in t.callbacks if is_summary(ref)]
    rich = any(is_lightning(ref, "RichModelSummary") for ref in given)
    if rich and not all(is_lightning(ref, "RichModelSummary") for ref in given):
        message = refusal(
            "a ModelSummary with a RichModelSummary",
            "the script prints every summary of a run one way, with rich or without",
            "keep one kind",
        )
        problems.append(flag_problem(spec, "callbacks", message))
    depths = [ref.init_args["max_depth"] for ref in given] or ([1] if t.enable_model_summary else [])
    summaries = tuple(
        Callback(
            construct=Construct("", "RichModelSummary" if rich else "ModelSummary", {"max_depth": depth}),
            var=numbered_name("model_summary", i, len(depths)),
            hooks=frozenset({"on_fit_start"}) if depth else frozenset(),  # max_depth 0 prints nothing
            kind="summary",
        )
        for i, depth in enumerate(depths)
    )
    bits = SUMMARY_PRECISION_BITS.get(precision.name)
    printing = [depth for depth in depths if depth]
    example_input = bool(printing) and (
        "example_input_array" in model.attributes_read or model.defines("example_input_array")
    )
    # the example's forward pass moves the batch as a training batch moves (data.j2's transfer: to the device
    # unless DataParallel scatters it, by the transfer hook where one is called), and autocasts to the type of the
    # device chosen when the script starts
    summary = Summary(
        enabled=bool(printing),
        children=1 in printing,
        children_only=bool(printing) and set(printing) == {1},
        takes_depth=set(printing) != {1} or example_input,
        example_input=example_input,
        takes_device=example_input and (device.moves_batches or (precision.autocast and device.auto)),
        takes_data=example_input and data.data_transfers,
        precision_bits=bits or 32,
        unsupported_precision=None if bits else precision.name,
        rich=rich and bool(printing),
    )
    return summary, summaries
