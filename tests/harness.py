"""What the two Lightning reference runners and their test files share.

tests/parity/runner.py trains a spec with Lightning 2.x (the main venv), tests/lightning195/runner195.py with
Lightning 1.9.5 (its own venv); tests/parity/test_parity.py and tests/test_lightning195.py list their cases
as `Case`s. Both runners read the spec as LightningCLI does: `{class_path, init_args}` entries (`instantiate`)
and the optional `optimizer:` / `lr_scheduler:` (`cli_configure_optimizers`).

Checkpointing cases run each side in its own directory (`in_directory`) and compare what the checkpoint files
left there hold (`checkpoint_facts`); tests/test_resume.py reads the same facts.

Both venvs' Pythons import this module, so it imports nothing at module level but the standard library: no
loopgen, torch or pytorch_lightning (each runner brings its own).
"""

from __future__ import annotations

import copy
import csv
import importlib
import inspect
import os
import types
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Case:
    """One case: its test id and the spec (loopgen's shape, LightningCLI's config) that both sides train."""

    id: str
    spec: dict[str, Any]


def case_ids(cases: Iterable[Case]) -> list[str]:
    """The cases' ids, for pytest.mark.parametrize(ids=...); a repeated id is an error (pytest would rename it)."""
    ids = [c.id for c in cases]
    repeated = sorted({i for i in ids if ids.count(i) > 1})
    if repeated:
        raise ValueError(f"repeated case ids: {repeated}")
    return ids


def env_with_root(*extra: Path) -> dict[str, str]:
    """os.environ with the repository root (then `extra`) in front of PYTHONPATH: for a subprocess that imports
    `tests.*` or loopgen from this checkout."""
    env = dict(os.environ)
    paths = [str(p) for p in (ROOT, *extra)]
    env["PYTHONPATH"] = os.pathsep.join(paths + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return env


class SpecError(ValueError):
    """A spec that a runner cannot train."""


def import_object(class_path: str) -> Any:
    """`package.module.Name` -> the object."""
    module_name, _, name = class_path.rpartition(".")
    if not module_name:
        raise SpecError(f"class_path {class_path!r} must be dotted: module.Class")
    return getattr(importlib.import_module(module_name), name)


def instantiate(entry: Any, *args: Any) -> Any:
    """A `{class_path, init_args, dict_kwargs}` mapping (or a bare dotted string) -> an instance; `args` come
    first, as LightningCLI passes the parameters to an optimizer and the optimizer to a scheduler.

    Objects among the init_args (nested class_path entries, to any depth, also as list items and mapping values)
    are instantiated first, as jsonargparse does: in the order of the class's `__init__` parameters (those it does
    not name after, in the entry's order), each one's own objects before it. A string given for a parameter typed
    Callable is the import path of the function. dict_kwargs are passed as they are.
    """
    if isinstance(entry, str):
        entry = {"class_path": entry}
    if not isinstance(entry, Mapping) or "class_path" not in entry:
        raise SpecError(f"expected a mapping with class_path (and init_args), got {entry!r}")
    cls = import_object(entry["class_path"])
    given = dict(entry.get("init_args") or {})
    try:
        signature = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        signature = {}
    params = list(signature)
    built = {}
    for name in [p for p in params if p in given] + [n for n in given if n not in params]:
        annotation = str(signature[name].annotation) if name in signature else ""
        # a string for a parameter typed Callable (and not str too) is an import path, as jsonargparse resolves it
        if "Callable" in annotation and "str" not in annotation and isinstance(given[name], str):
            built[name] = import_object(given[name])
            continue
        built[name] = _argument(given[name])
    init_args = {name: built[name] for name in given}  # the entry's order
    return cls(*args, **init_args, **dict(entry.get("dict_kwargs") or {}))


def lightning_plugins(plugins: Any) -> list[Any]:
    """Trainer(plugins=...) from a spec's entry or list of them (class names, {class_path, init_args}): Lightning's
    plugin objects (precision, checkpoint IO, layer sync, cluster environments)."""
    from pytorch_lightning import plugins as lightning
    from pytorch_lightning.plugins import environments

    entries = [
        {"class_path": p} if isinstance(p, str) else p for p in (plugins if isinstance(plugins, list) else [plugins])
    ]
    made = []
    for entry in entries:
        name = entry["class_path"].rpartition(".")[2]
        plugin = getattr(lightning, name, None) or getattr(environments, name)
        made.append(plugin(**entry.get("init_args", {})))
    return made


def _argument(value: Any) -> Any:
    """An init_args value with its objects instantiated (see `instantiate`)."""
    if isinstance(value, Mapping) and "class_path" in value:
        return instantiate(value)
    if isinstance(value, list):
        return [_argument(item) for item in value]
    if isinstance(value, Mapping):
        return {key: _argument(item) for key, item in value.items()}
    return value


def cli_configure_optimizers(model: Any, spec: Mapping[str, Any]) -> None:
    """What LightningCLI does with the spec's `optimizer:` / `lr_scheduler:`: replace the model's
    configure_optimizers with one that returns that optimizer (over the model's parameters) and scheduler.

    `monitor` in the scheduler's init_args is LightningCLI's key for ReduceLROnPlateau's metric, not an argument
    of the scheduler's constructor: it is taken out before the scheduler is made, and goes into the returned
    lr_scheduler config. Without `optimizer:` the model keeps its own configure_optimizers.
    """
    optimizer_entry, scheduler_entry = spec.get("optimizer"), spec.get("lr_scheduler")
    if optimizer_entry is None:
        if scheduler_entry is not None:
            raise SpecError("lr_scheduler without optimizer")
        return
    if isinstance(scheduler_entry, str):
        scheduler_entry = {"class_path": scheduler_entry}

    def configure_optimizers(self: Any) -> Any:
        import torch

        optimizer = instantiate(optimizer_entry, self.parameters())
        if scheduler_entry is None:
            return optimizer
        init_args = dict(scheduler_entry.get("init_args") or {})
        monitor = init_args.pop("monitor", None)
        scheduler = instantiate({**scheduler_entry, "init_args": init_args}, optimizer)
        if isinstance(scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
            return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": monitor}}
        return [optimizer], [scheduler]

    model.configure_optimizers = types.MethodType(configure_optimizers, model)


# ---------------------------------------------------------------------------------------------------------------
# checkpoints

# Lightning's callbacks that loopgen implements, and the submodule each is defined in
LIGHTNING_CALLBACKS = {
    "ModelCheckpoint": "model_checkpoint",
    "EarlyStopping": "early_stopping",
    "LearningRateMonitor": "lr_monitor",
    "ModelSummary": "model_summary",
    "RichModelSummary": "rich_model_summary",
    "TQDMProgressBar": "progress",
    "RichProgressBar": "progress",
    "GradientAccumulationScheduler": "gradient_accumulation_scheduler",
    "Timer": "timer",
    "BackboneFinetuning": "finetuning",
    "WeightAveraging": "weight_averaging",
    "EMAWeightAveraging": "weight_averaging",
    "DeviceStatsMonitor": "device_stats_monitor",
    "ModelPruning": "pruning",
    "SpikeDetection": "spike",
    "OnExceptionCheckpoint": "on_exception_checkpoint",
    "ThroughputMonitor": "throughput_monitor",
    "StochasticWeightAveraging": "stochastic_weight_avg",
}
CALLBACK_PACKAGES = ("pytorch_lightning.callbacks", "lightning.pytorch.callbacks")
# Keys of a checkpoint file that are not compared: Lightning's version, and the script's own state (its key's
# name starts with "loopgen")
VERSION_KEY = "pytorch-lightning_version"
SCRIPT_KEY_PREFIX = "loopgen"
# ModelCheckpoint's state entries that hold a file or directory path
CALLBACK_PATHS = ("dirpath", "best_model_path", "kth_best_model_path", "last_model_path")


def lightning_callback(class_path: str) -> str | None:
    """The name of the Lightning callback (LIGHTNING_CALLBACKS) that `class_path` names as a spec may
    spell it (the short name, pytorch_lightning.callbacks.NAME, lightning.pytorch.callbacks.NAME, or the class in
    its own submodule), else None."""
    module, _, name = class_path.rpartition(".")
    if name not in LIGHTNING_CALLBACKS:
        return None
    spellings = {"", *CALLBACK_PACKAGES, *(f"{package}.{LIGHTNING_CALLBACKS[name]}" for package in CALLBACK_PACKAGES)}
    return name if module in spellings else None


def callback_entry(entry: Any) -> dict[str, Any]:
    """A `callbacks` entry as a Lightning runner instantiates it: a {class_path, init_args} mapping, Lightning's own
    callbacks as pytorch_lightning.callbacks.NAME (LightningCLI resolves the short name; the `lightning` package
    need not be installed)."""
    entry = {"class_path": entry} if isinstance(entry, str) else dict(entry)
    name = lightning_callback(str(entry.get("class_path", "")))
    if name is not None:
        entry["class_path"] = f"pytorch_lightning.callbacks.{name}"
    return entry


LOGGERS = ("CSVLogger", "TensorBoardLogger", "MLFlowLogger", "WandbLogger")


def logger_entry(entry: Any) -> dict[str, Any]:
    """A `logger` entry as a Lightning runner instantiates it: Lightning's loggers as pytorch_lightning.loggers.NAME
    however the entry spells them."""
    entry = {"class_path": entry} if isinstance(entry, str) else dict(entry)
    module, _, name = str(entry.get("class_path", "")).rpartition(".")
    if name in LOGGERS and (not module or module.startswith(("pytorch_lightning.", "lightning.pytorch."))):
        entry["class_path"] = f"pytorch_lightning.loggers.{name}"
    return entry


def in_directory(spec: Mapping[str, Any], directory: Path | str) -> dict[str, Any]:
    """The spec with its files under `directory`: trainer.default_root_dir set to it, and every ModelCheckpoint's
    relative dirpath taken relative to it (each side of a checkpointing case writes into its own directory)."""
    spec = copy.deepcopy(dict(spec))
    trainer = spec["trainer"] = dict(spec.get("trainer") or {})
    trainer["default_root_dir"] = str(directory)
    callbacks = []
    for entry in trainer.get("callbacks") or []:
        entry = {"class_path": entry} if isinstance(entry, str) else dict(entry)
        if lightning_callback(str(entry.get("class_path", ""))) == "ModelCheckpoint":
            init_args = entry["init_args"] = dict(entry.get("init_args") or {})
            dirpath = init_args.get("dirpath")
            if dirpath is not None and not os.path.isabs(dirpath):
                init_args["dirpath"] = os.path.join(str(directory), dirpath)
        callbacks.append(entry)
    if callbacks:
        trainer["callbacks"] = callbacks
    return spec


# columns whose values are measurements of the machine (DeviceStatsMonitor's), the same on no two runs: which
# rows have one is compared, not the value
MEASURED_PREFIXES = ("DeviceStatsMonitor.",)


def _measured_masked(rows: list[list[str]]) -> list[list[str]]:
    if not rows:
        return rows
    measured = [i for i, name in enumerate(rows[0]) if name.startswith(MEASURED_PREFIXES)]
    return [rows[0]] + [
        [("<measured>" if cell and i in measured else cell) for i, cell in enumerate(row)] for row in rows[1:]
    ]


def log_facts(directory: Path | str) -> list[dict[str, Any]]:
    """What the loggers wrote under `directory`, in plain Python that compares with == across two directories: one
    entry per file or run, sorted by path (relative to `directory`): a metrics.csv as its rows (the header first,
    every cell as written), an hparams.yaml as the data it loads to, a folder of TensorBoard event files, an MLflow
    file store and a W&B offline run as tests/logger_files.py reads them back."""
    import yaml

    from tests import logger_files

    directory = Path(directory)
    facts = []
    event_folders = set()
    for path in sorted(directory.rglob("*")):
        entry: dict[str, Any] = {"path": path.relative_to(directory).as_posix()}
        if path.name == "metrics.csv":
            with open(path, newline="", encoding="utf-8") as file:
                entry["rows"] = _measured_masked(list(csv.reader(file)))
        elif path.name == "hparams.yaml":
            entry["hparams"] = yaml.load(path.read_text(encoding="utf-8"), Loader=yaml.FullLoader)
        elif path.name.startswith("events.out.tfevents.") and path.parent not in event_folders:
            event_folders.add(path.parent)
            entry["path"] = path.parent.relative_to(directory).as_posix() + "/events.out.tfevents.*"
            entry.update(logger_files.tensorboard_facts(path.parent))
        elif path.name == ".trash" and path.is_dir():
            entry["path"] = path.parent.relative_to(directory).as_posix() + " (MLflow store)"
            entry.update(logger_files.mlflow_facts(path.parent))
        elif path.suffix == ".wandb":
            entry.update(logger_files.wandb_facts(path))
        else:
            continue
        facts.append(entry)
    return facts


def checkpoint_files(directory: Path | str) -> list[Path]:
    """The *.ckpt files (symbolic links included) anywhere under `directory`, sorted."""
    return sorted(Path(directory).rglob("*.ckpt"))


def checkpoint_facts(directory: Path | str) -> list[dict[str, Any]]:
    """What the checkpoint files under `directory` hold, in plain Python that compares with == across two
    directories: one entry per file, sorted by path, with
    - `path`: relative to `directory`; `link`: the target of a symbolic link (save_last="link"), else None;
    - `keys`: the file's sorted top-level keys, without Lightning's version and the script's own key;
    - the value of every one of those keys but `loops` (Lightning's loop bookkeeping: compared by name only),
      tensors as ("tensor", dtype, shape, values) and the paths in ModelCheckpoint's state relative to
      `directory`;
    - or `unreadable`: why torch.load failed.
    """
    directory = Path(directory)
    facts = []
    for path in checkpoint_files(directory):
        entry: dict[str, Any] = {
            "path": path.relative_to(directory).as_posix(),
            "link": os.readlink(path) if path.is_symlink() else None,
        }
        try:
            checkpoint = read_checkpoint(path)
        except Exception as error:  # noqa: BLE001 - a file that does not load is a fact to compare
            entry["unreadable"] = f"{type(error).__name__}: {error}"
        else:
            entry.update(checkpoint_contents(checkpoint, directory))
        facts.append(entry)
    return facts


def read_checkpoint(path: Path) -> dict[str, Any]:
    """A checkpoint file, or a distributed checkpoint's directory (ModelParallelStrategy's: shards written by
    torch.distributed.checkpoint and meta.pt, the rest) read whole into one dict, its shards under their keys
    ("state_dict", "optimizer_0", ...)."""
    import tempfile

    import torch

    if not (path / "meta.pt").is_file():
        return torch.load(path, map_location="cpu", weights_only=False)
    from torch.distributed.checkpoint.format_utils import dcp_to_torch_save

    with tempfile.TemporaryDirectory() as folder:
        whole = Path(folder) / "whole.pt"
        dcp_to_torch_save(path, whole)
        checkpoint = torch.load(whole, map_location="cpu", weights_only=False)
    return {**checkpoint, **torch.load(path / "meta.pt", map_location="cpu", weights_only=False)}


def checkpoint_contents(checkpoint: Mapping[str, Any], directory: Path | str) -> dict[str, Any]:
    """One loaded checkpoint as `checkpoint_facts` describes it (without `path` and `link`)."""
    keys = sorted(key for key in checkpoint if key != VERSION_KEY and not str(key).startswith(SCRIPT_KEY_PREFIX))
    contents: dict[str, Any] = {"keys": keys}
    for key in keys:
        if key == "loops":
            continue
        value = checkpoint[key]
        if key == "callbacks" and isinstance(value, Mapping):
            value = {name: relative_paths(state, directory) for name, state in value.items()}
        contents[key] = plain(value)
    return contents


def relative_paths(state: Any, directory: Path | str) -> Any:
    """A ModelCheckpoint state with its paths (CALLBACK_PATHS and the keys of best_k_models) relative to
    `directory`; any other callback state as it is."""
    if not isinstance(state, Mapping) or not any(key in state for key in CALLBACK_PATHS):
        return state
    state = dict(state)
    for key in CALLBACK_PATHS:
        if state.get(key):
            state[key] = relative_path(state[key], directory)
    if isinstance(state.get("best_k_models"), Mapping):
        state["best_k_models"] = {relative_path(path, directory): v for path, v in state["best_k_models"].items()}
    return state


def relative_path(path: str | os.PathLike, directory: Path | str) -> str:
    """`path` relative to `directory`, with the symbolic links of both directories resolved (Lightning keeps a
    ModelCheckpoint's dirpath as a real path), but not the file's own (save_last="link")."""
    folder, name = os.path.split(os.fspath(path))
    return os.path.relpath(os.path.join(os.path.realpath(folder), name), os.path.realpath(directory))


def plain(value: Any) -> Any:
    """`value` as plain Python: mappings as dicts, tuples as lists, a tensor as ("tensor", dtype, shape, values)."""
    if hasattr(value, "detach") and hasattr(value, "tolist"):  # a tensor (torch is not imported here)
        return ("tensor", str(value.dtype), list(value.shape), value.detach().cpu().tolist())
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value
