"""Trainer(plugins=...): Lightning's plugin classes, which of them loopgen serves, and how the accelerator
connector reads them against the other flags (a precision plugin instead of `precision:`, TorchSyncBatchNorm as
`sync_batchnorm`, one plugin of each kind).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loopgen.errors import got
from loopgen.spec.kinds import CLASS_REF_SCHEMA, FlagError, Kind, refused

# Lightning's plugins (Trainer(plugins=...)) by class name, each with its kind (Lightning allows one of each) and
# the init_args it takes: name -> (kind, {arg: default}). 1.9.5's precision plugin names are read as 2.x's.
PLUGIN_CLASSES: Mapping[str, tuple[str, Mapping[str, Any]]] = {
    "Precision": ("Precision", {}),
    "PrecisionPlugin": ("Precision", {}),
    "MixedPrecision": ("Precision", {"precision": None, "device": None, "scaler": None}),
    "MixedPrecisionPlugin": ("Precision", {"precision": None, "device": None, "scaler": None}),
    "HalfPrecision": ("Precision", {"precision": "16-true"}),
    "DoublePrecision": ("Precision", {}),
    "DoublePrecisionPlugin": ("Precision", {}),
    "TorchCheckpointIO": ("CheckpointIO", {}),
    "AsyncCheckpointIO": ("CheckpointIO", {"checkpoint_io": None}),
    "LightningEnvironment": ("ClusterEnvironment", {}),
    "TorchElasticEnvironment": ("ClusterEnvironment", {}),
    "SLURMEnvironment": ("ClusterEnvironment", {"auto_requeue": True, "requeue_signal": None}),
    "LSFEnvironment": ("ClusterEnvironment", {}),
    "KubeflowEnvironment": ("ClusterEnvironment", {}),
    "TorchSyncBatchNorm": ("LayerSync", {}),
}
# Lightning's plugins that are not served, and why
PLUGINS_REFUSED: Mapping[str, tuple[str, str]] = {
    "XLACheckpointIO": ("the XLA scripts save through torch_xla themselves", "leave it out"),
    "BitsandbytesPrecision": (
        (
            "bitsandbytes replaces the model's Linear layers with its quantized ones (CUDA only); the script does not"
            " make that conversion"
        ),
        "use bf16-true or 16-true",
    ),
    "TransformerEnginePrecision": (
        (
            "NVIDIA's Transformer Engine replaces the Linear and LayerNorm layers with its FP8 ones (CUDA only); the"
            " script does not make that conversion"
        ),
        "use bf16-mixed or bf16-true",
    ),
    "FSDPPrecision": ("the FSDP script sets its precision from `precision:`", "set `precision:`"),
    "DeepSpeedPrecision": ("the script has no DeepSpeed engine", "set `precision:`"),
    "XLAPrecision": ("the XLA scripts set their precision from `precision:`", "set `precision:`"),
    "MPIEnvironment": (
        "the processes would be started by mpirun; the script's are started by torchrun, srun, jsrun or a PyTorchJob",
        "use TorchElasticEnvironment (torchrun's)",
    ),
    "XLAEnvironment": ("the XLA scripts read torch_xla's runtime themselves", "leave it out"),
}
_PLUGIN_PACKAGES = ("pytorch_lightning.plugins", "lightning.pytorch.plugins", "lightning_fabric.plugins",
                    "lightning.fabric.plugins")  # fmt: skip


def cluster_environment(plugins: tuple[dict[str, Any], ...] | None) -> dict[str, Any] | None:
    """The cluster environment plugin among Trainer(plugins=[...]), or None: Lightning detects it."""
    return next((p for p in plugins or () if PLUGIN_CLASSES.get(p["class_path"], ("",))[0] == "ClusterEnvironment"),
                None)  # fmt: skip


def plugins_kind() -> Kind:
    """One plugin entry or a list of them: a class path (string) or {class_path, init_args}, normalised to a tuple
    of {"class_path": Lightning's class name, "init_args": {...}}; a class that is not Lightning's keeps its path
    (refused by `plugins_support`)."""

    def entry(raw: Any, at: tuple) -> dict[str, Any]:
        if isinstance(raw, str):
            raw = {"class_path": raw}
        if (
            not isinstance(raw, dict)
            or not isinstance(raw.get("class_path"), str)
            or set(raw) - {"class_path", "init_args"}
        ):
            shown = f"got a mapping of {', '.join(map(str, raw))}" if isinstance(raw, dict) else got(raw)
            raise FlagError(f"expected a plugin class path or {{class_path, init_args}}, {shown}", at)
        init_args = raw.get("init_args") or {}
        if not isinstance(init_args, dict):
            raise FlagError(f"expected a mapping of init_args, {got(init_args)}", (*at, "init_args"))
        module, _, name = raw["class_path"].rpartition(".")
        lightning = name in PLUGIN_CLASSES or name in PLUGINS_REFUSED
        if lightning and (not module or module.startswith(_PLUGIN_PACKAGES)):
            return {"class_path": name, "init_args": dict(init_args)}
        return {"class_path": raw["class_path"], "init_args": dict(init_args)}

    def parse(raw: Any) -> tuple[dict[str, Any], ...]:
        entries = raw if isinstance(raw, list) else [raw]
        return tuple(entry(item, (index,) if isinstance(raw, list) else ()) for index, item in enumerate(entries))

    return Kind(parse, {"anyOf": [CLASS_REF_SCHEMA, {"type": "array", "items": CLASS_REF_SCHEMA}]})


def plugins_support(value: tuple[dict[str, Any], ...] | None) -> str | None:
    """Whether loopgen serves each plugin entry (the rules between a plugin and the other flags: load.py)."""
    for plugin in value or ():
        name, args = plugin["class_path"], plugin["init_args"]
        if name in PLUGINS_REFUSED:
            why, instead = PLUGINS_REFUSED[name]
            return refused(f"{name}: {why}", instead)
        if name not in PLUGIN_CLASSES:
            return refused(
                f"{name}: a plugin of the project's own replaces a part of Lightning's Trainer (its precision, cluster"
                " environment, checkpoint IO or layer sync), which the script does not have",
                "use Lightning's plugins, or `precision:` / `sync_batchnorm:`",
            )
        known = PLUGIN_CLASSES[name][1]
        unknown = [key for key in args if key not in known]
        if unknown:
            return refused(f"{name} takes no {unknown[0]}", f"remove {unknown[0]}")
        if args.get("checkpoint_io") is not None:
            return refused(f"{name} around a checkpoint IO of its own: the script writes with torch.save",
                           "leave checkpoint_io null")  # fmt: skip
        if args.get("scaler") is not None:
            return refused(f"{name} with a scaler of its own: the script makes float16's GradScaler itself",
                           "leave scaler null")  # fmt: skip
        if args.get("requeue_signal") is not None:
            return refused(
                f"{name} with a requeue_signal: the script requeues on SIGUSR1, Lightning's default", "leave it null"
            )
    return None


def _precision_of(name: str, args: Mapping[str, Any], accelerator: str) -> str:
    """The `precision:` value a precision plugin stands for, or "!" and why it cannot."""
    if name in ("Precision", "PrecisionPlugin"):
        return "32"
    if name in ("DoublePrecision", "DoublePrecisionPlugin"):
        return "64"
    if name == "HalfPrecision":
        precision = args.get("precision", "16-true")
        if precision not in ("bf16-true", "16-true"):
            return f"!HalfPrecision(precision={precision!r}): expected 'bf16-true' or '16-true'"
        return precision
    precision = {"16": "16-mixed", 16: "16-mixed", "bf16": "bf16-mixed"}.get(
        args.get("precision"), args.get("precision")
    )
    device = args.get("device")
    if precision not in ("16-mixed", "bf16-mixed"):
        return f"!{name}(precision={args.get('precision')!r}): Precision must be '16-mixed' or 'bf16-mixed'."
    if not isinstance(device, str):
        return f'!{name}(precision={precision!r}) needs its device: "cpu" or "cuda"'
    if accelerator not in ("cpu", "cuda"):
        return (f"!{name}(device={device!r}) with accelerator {accelerator}: the plugin fixes autocast's device,"
                " which the script decides from the accelerator; set accelerator: cpu or cuda")  # fmt: skip
    if device.split(":")[0] != accelerator:
        return (f"!{name}(device={device!r}) with accelerator {accelerator}: autocast on another device than the"
                " model's casts nothing; give the accelerator's device")  # fmt: skip
    if precision == "16-mixed" and accelerator == "cpu":
        return (f"!{name}(precision='16-mixed', device='cpu'): float16 autocast on the CPU with a GradScaler (the"
                " plugin is not turned into bf16-mixed, as the flag is) is not written; use bf16-mixed")  # fmt: skip
    return precision


def read_plugins(values: dict[str, Any], given: set[str]) -> list[str]:
    """Trainer(plugins=...) as Lightning's accelerator connector reads it, into `values`: one plugin of each kind, a
    precision plugin instead of `precision:` (which it sets), TorchSyncBatchNorm as sync_batchnorm. The cluster
    environment and the checkpoint IO stay in the flag, for the plan. Returns Lightning's errors."""
    problems = []
    kinds = [PLUGIN_CLASSES[p["class_path"]][0] for p in values["plugins"] if p["class_path"] in PLUGIN_CLASSES]
    repeated = [kind for kind in dict.fromkeys(kinds) if kinds.count(kind) > 1]
    if repeated:
        problems.append(f"Received multiple values for {', '.join(repeated)} flags in `plugins`. Expected one value"
                        " for each type at most.")  # fmt: skip
    for plugin in values["plugins"]:
        name, args = plugin["class_path"], plugin["init_args"]
        kind = PLUGIN_CLASSES.get(name, ("",))[0]
        if kind == "LayerSync":
            values["sync_batchnorm"] = True
        if kind != "Precision":
            continue
        if "precision" in given:
            problems.append(f"Received both `precision={values['precision']}` and `plugins={name}(...)`. Choose one.")
            continue
        precision = _precision_of(name, args, values["accelerator"])
        if precision.startswith("!"):
            problems.append(precision[1:])
        else:
            values["precision"] = precision
    return problems
