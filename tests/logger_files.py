"""What TensorBoard, MLflow and W&B runs left on disk, read back with each tool's own reader, as plain Python that
compares with == across two directories (tests/harness.py, log_facts, uses these for the parity cases).

- TensorBoard: a folder of event files, through tensorboard's EventAccumulator: the scalars (tag: [(step, value)]),
  the hparams plugin's data (without its start time) and the graph's nodes.
- MLflow: a local file store (a folder with .trash), through MlflowClient: each experiment and its runs (status,
  name, tags, params, each metric's history as [(step, value)]), and the store's files.
- W&B: an offline run's transaction log (run-ID.wandb: LevelDB's log format, one protobuf `Record` of wandb's own
  per entry), read record by record: the run (project, name), its config, its metric definitions, its history
  rows, its final summary and its exit code.

Run ids and times differ from run to run: `run_ids` finds them under a directory, `with_ids_replaced` puts
stable names in their place (in these facts and in checkpoint facts alike).
"""

from __future__ import annotations

import json
import os
import re
import struct
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

# what differs between two runs of the same training: wall times, and where the process was started from
HISTORY_TIMES = ("_runtime", "_timestamp")
MLFLOW_SOURCE_TAGS = "mlflow.source."  # the entry point's file and its git commit: the two sides differ
GENERATED_RUN_NAME = re.compile(r"[a-z]+-[a-z]+-\d+")  # MLflow's name for a run without one, drawn at random


# ---------------------------------------------------------------------------------------------------------------
# TensorBoard


def tensorboard_facts(folder: Path) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams.plugin_data_pb2 import HParamsPluginData

    accumulator = EventAccumulator(str(folder), size_guidance={"scalars": 0, "tensors": 0, "graph": 0})
    accumulator.Reload()
    tags = accumulator.Tags()
    scalars = {
        tag: [(event.step, event.value) for event in accumulator.Scalars(tag)] for tag in sorted(tags["scalars"])
    }
    hparams = {}
    try:
        contents = accumulator.PluginTagToContent("hparams")
    except KeyError:
        contents = {}
    for tag, content in sorted(contents.items()):
        data = MessageToDict(HParamsPluginData.FromString(content))
        data.get("sessionStartInfo", {}).pop("startTimeSecs", None)
        hparams[tag] = data
    graph = None
    if tags["graph"]:
        graph = [(node.name, node.op, list(node.input)) for node in accumulator.Graph().node]
    return {
        "event_files": len(list(folder.glob("events.out.tfevents.*"))),
        "scalars": scalars,
        "hparams": hparams,
        "graph": graph,
    }


# ---------------------------------------------------------------------------------------------------------------
# MLflow


def mlflow_facts(store: Path) -> dict[str, Any]:
    files = sorted(
        path.relative_to(store).as_posix()
        for path in store.rglob("*")
        if path.is_file() and not (path.parent.name == "tags" and path.name.startswith(MLFLOW_SOURCE_TAGS))
    )
    os.environ.setdefault("MLFLOW_ALLOW_FILE_STORE", "true")  # MLflow 3 refuses file stores without it
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(f"file:{store}")
    experiments = []
    for experiment in sorted(client.search_experiments(view_type=ViewType.ALL), key=lambda e: e.name):
        runs = []
        found = client.search_runs([experiment.experiment_id], run_view_type=ViewType.ALL)
        for run in sorted(found, key=lambda r: r.info.start_time):
            info, data = run.info, run.data
            tags = {key: value for key, value in sorted(data.tags.items()) if not key.startswith(MLFLOW_SOURCE_TAGS)}
            history = {
                key: [(m.step, m.value) for m in client.get_metric_history(info.run_id, key)] for key in data.metrics
            }
            runs.append(
                {
                    "run_id": info.run_id,
                    "run_name": _generated(info.run_name),
                    "status": info.status,
                    "lifecycle_stage": info.lifecycle_stage,
                    "tags": {
                        key: _generated(value) if key == "mlflow.runName" else value for key, value in tags.items()
                    },
                    "params": dict(sorted(data.params.items())),
                    "metrics": dict(sorted(history.items())),
                }
            )
        experiments.append(
            {
                "experiment_id": experiment.experiment_id,
                "name": experiment.name,
                "lifecycle_stage": experiment.lifecycle_stage,
                "artifact_location": experiment.artifact_location,
                "runs": runs,
            }
        )
    return {"experiments": experiments, "files": files}


def _generated(name: str | None) -> str | None:
    return "<generated name>" if name is not None and GENERATED_RUN_NAME.fullmatch(name) else name


# ---------------------------------------------------------------------------------------------------------------
# W&B

HEADER = struct.Struct("<4sHB")  # ":W&B", 0xBEE1, version 0
CHUNK = struct.Struct("<IHB")  # checksum, length, type (1: full, 2: first, 3: middle, 4: last)
BLOCK = 32768


def wandb_records(path: Path) -> Iterator[Any]:
    """The protobuf records of a .wandb transaction log (LevelDB's log format under W&B's header), in order."""
    from wandb.proto import wandb_internal_pb2

    data = path.read_bytes()
    ident, magic, version = HEADER.unpack_from(data)
    if (ident, magic, version) != (b":W&B", 0xBEE1, 0):
        raise ValueError(f"{path}: not a W&B transaction log (header {ident!r}, {magic:#x}, {version})")
    position, pending = HEADER.size, b""
    while position + CHUNK.size <= len(data):
        left = BLOCK - position % BLOCK
        if left < CHUNK.size:  # a block's tail too short for a chunk header is padding
            position += left
            continue
        _, length, kind = CHUNK.unpack_from(data, position)
        if length == 0 and kind == 0:
            break
        chunk = data[position + CHUNK.size : position + CHUNK.size + length]
        position += CHUNK.size + length
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def wandb_facts(path: Path) -> dict[str, Any]:
    from google.protobuf.json_format import MessageToDict

    def key(item: Any) -> str:
        return item.key or "/".join(item.nested_key)

    run: dict[str, Any] = {}
    config: dict[str, Any] = {}
    metrics, history = [], []
    summary: dict[str, Any] = {}
    exit_code = None
    for record in wandb_records(path):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            run = {"run_id": record.run.run_id, "project": record.run.project, "name": record.run.display_name}
            config.update({key(item): json.loads(item.value_json) for item in record.run.config.update})
        elif kind == "config":
            config.update({key(item): json.loads(item.value_json) for item in record.config.update})
            for item in record.config.remove:
                config.pop(key(item), None)
        elif kind == "metric":
            metrics.append(MessageToDict(record.metric))
        elif kind == "history":
            row = {key(item): json.loads(item.value_json) for item in record.history.item}
            history.append({name: value for name, value in row.items() if name not in HISTORY_TIMES})
        elif kind == "summary":
            summary.update({key(item): json.loads(item.value_json) for item in record.summary.update})
            for item in record.summary.remove:
                summary.pop(key(item), None)
        elif kind == "exit":
            exit_code = record.exit.exit_code
    config.pop("_wandb", None)
    summary = {
        name: value
        for name, value in sorted(summary.items())
        if name not in HISTORY_TIMES and name.split("/")[0] != "_wandb"
    }
    return {
        "run": run,
        "config": dict(sorted(config.items())),
        "metrics": metrics,
        "history": history,
        "summary": summary,
        "exit_code": exit_code,
    }


# ---------------------------------------------------------------------------------------------------------------
# run ids

WANDB_RUN_DIR = re.compile(r"(?:offline-)?run-(\d{8}_\d{6})-([a-z0-9]+)")


def run_ids(directory: Path | str) -> dict[str, str]:
    """The ids and times that differ from run to run under `directory` (MLflow's experiment and run ids, W&B's run
    ids and times, the directory itself), each with the stable name it gets in the facts."""
    import yaml

    directory = Path(directory)
    ids = {str(directory.resolve()): "<dir>", str(directory): "<dir>"}
    for trash in sorted(directory.rglob(".trash")):  # MLflow file stores
        store = trash.parent
        experiments = []
        for folder in store.iterdir():
            meta = folder / "meta.yaml"
            if folder.is_dir() and meta.is_file() and folder.name != "0":
                experiments.append((yaml.safe_load(meta.read_text())["name"], folder))
        for name, folder in sorted(experiments):
            ids[folder.name] = f"<experiment {name}>"
            runs = []
            for run in folder.iterdir():
                if run.is_dir() and (run / "meta.yaml").is_file():
                    runs.append((yaml.safe_load((run / "meta.yaml").read_text())["start_time"], run.name))
            for index, (_, run_id) in enumerate(sorted(runs)):
                ids[run_id] = f"<run {index} of {name}>"
    found = sorted({m.groups() for p in directory.rglob("*.wandb") if (m := WANDB_RUN_DIR.fullmatch(p.parent.name))})
    for index, (time, run_id) in enumerate(found):
        ids[time] = "<time>"
        ids[run_id] = f"<wandb run {index}>"
    return ids


def with_ids_replaced(value: Any, ids: Mapping[str, str]) -> Any:
    """`value` with every id of `ids` (longest first) replaced by its name, in strings and mapping keys."""
    if isinstance(value, str):
        for found in sorted(ids, key=len, reverse=True):
            value = value.replace(found, ids[found])
        return value
    if isinstance(value, Mapping):
        return {with_ids_replaced(k, ids): with_ids_replaced(v, ids) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(with_ids_replaced(item, ids) for item in value)
    return value
