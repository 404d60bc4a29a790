"""The device and the precision (AMP, bf16, half, double, apex)."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.common import flag_problem, follows_1_9_5, only_1_9_5
from loopgen.plan.distributed import engine_kind
from loopgen.source.facts import ClassFacts
from loopgen.spec.kinds import refusal
from loopgen.spec.model import Spec


@dataclass(frozen=True)
class Device:
    name: str  # cpu | cuda | auto
    moves: bool  # batches and the model go to a device that is not the CPU
    auto: bool  # chosen when the script starts
    # ... and the loop moves each batch there itself (under dp, DataParallel scatters it over the GPUs)
    moves_batches: bool = False


@dataclass(frozen=True)
class Precision:
    name: str  # "32" | "64" | "bf16-mixed" | "16-mixed" | "bf16-true" | "16-true"
    autocast: bool
    autocast_device: str  # "cpu" | "cuda" | "auto"
    autocast_dtype: str  # "bfloat16" | "float16" | "auto" (float16 on CUDA, bfloat16 on CPU)
    autocast_cache: bool  # torch's cached casts (1.9.5); Lightning 2.x autocasts with cache_enabled=False
    scaler: bool  # float16 AMP scales the loss
    scaler_auto: bool  # the scaler is enabled only when the script runs on CUDA
    double: bool  # precision 64 (Lightning's DoublePrecision: model.double())
    half: bool  # bf16-true / 16-true (Lightning's HalfPrecision: model.to(dtype=...)); no autocast, no scaler
    casts: bool  # 64 or half: the batches' floating tensors take `cast_dtype`, and so do new tensors in the steps
    cast_dtype: str  # "float64" | "bfloat16" | "float16" ("" when nothing is cast)
    context: bool  # the steps run inside a precision context (autocast or the cast default dtype)
    apex: bool
    amp_level: str | None
    lightning_name: str = ""  # trainer.precision: "32-true", "16-mixed", "bf16-mixed", "64-true"


def resolve_device(spec: Spec) -> Device:
    name = spec.trainer.accelerator
    moves = name != "cpu"
    return Device(name=name, moves=moves, auto=name == "auto", moves_batches=moves and engine_kind(spec) != "dp")


# bf16-true and 16-true are Lightning 2.x's HalfPrecision: the strategies and loops only 1.9.5 has cannot take them
HALF_NOT_IN_1_9_5 = "Lightning 1.9.5 has no true half precision: its values are 16, bf16, 32 and 64"


def resolve_precision(
    spec: Spec, model: ClassFacts, device: Device, problems: list[Problem], notices: list[str]
) -> Precision:
    t = spec.trainer
    apex = t.amp_backend == "apex"
    name = t.precision
    if name == "16-mixed" and device.name == "cpu" and not apex:
        name = "bf16-mixed"
        notices.append(
            "trainer.precision: 16-mixed: float16 AMP is not supported on CPU; using bf16-mixed instead, as Lightning does"
        )
    if t.amp_level is not None and not apex:  # Lightning 1.9.5's AcceleratorConnector
        problems.append(flag_problem(spec, "amp_level", "is only used with `amp_backend: apex`"))
    if apex and t.precision != "16-mixed":
        problems.append(flag_problem(spec, "amp_backend", f"apex needs `precision: 16-mixed`, not {t.precision}"))
    if apex and device.name == "cpu":
        message = refusal(
            "apex AMP on CPU",
            "apex's AMP runs on CUDA only",
            "use `amp_backend: native` (16-mixed then runs as bf16-mixed on CPU)",
        )
        problems.append(flag_problem(spec, "amp_backend", message))
    half = name in ("bf16-true", "16-true")
    if half and not apex and follows_1_9_5(spec, model):
        message = (
            f"{name} with {only_1_9_5(spec, model)[0]}, which only Lightning 1.9.5 has, is not supported"
            f" ({HALF_NOT_IN_1_9_5}): use {name[:-5]}-mixed, or drop it"
        )
        problems.append(flag_problem(spec, "precision", message))
    autocast = name in ("16-mixed", "bf16-mixed") and not apex
    if name == "bf16-mixed":
        dtype = "bfloat16"
    else:
        dtype = "auto" if device.auto else "float16"
    scaler = name == "16-mixed" and not apex
    cast_dtype = {"64": "float64", "bf16-true": "bfloat16", "16-true": "float16"}.get(name, "")
    return Precision(
        name=name,
        autocast=autocast,
        autocast_device=device.name,
        autocast_dtype=dtype,
        # 1.9.5's autocast and FSDPPrecision's keep torch's cached casts; 2.x's MixedPrecision turns them off
        autocast_cache=follows_1_9_5(spec, model) or engine_kind(spec) == "fsdp",
        scaler=scaler,
        scaler_auto=scaler and device.auto,
        double=name == "64",
        half=half,
        casts=bool(cast_dtype),
        cast_dtype=cast_dtype,
        context=autocast or bool(cast_dtype),
        apex=apex,
        amp_level=(t.amp_level or "O2") if apex else None,
        lightning_name={"32": "32-true", "64": "64-true"}.get(name, name),
    )
