"""Hypothesis strategies that draw valid specs over the flag table loopgen serves, on the zoo's models.

A drawn `Draw` is a spec in loopgen's (LightningCLI's) shape and the reference it is checked against: Lightning
2.x, or 1.9.5 when it uses a flag or a module form that only the seed era has (several optimizers with
`optimizer_idx`, frequencies, truncated BPTT, `track_grad_norm`).

Most draws are specs both sides train; a few are specs Lightning refuses or fails on (a monitored metric nobody
logs, a LearningRateMonitor without a logger, mutually exclusive checkpoint triggers, accumulation with manual
optimization): loopgen must then refuse at render time, or its script must raise where Lightning raises.
Everything trains for at most a few dozen steps of tiny models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.fuzz.code import drawn_code, module_name

ZOO = "tests.fuzz.zoo"


@dataclass(frozen=True)
class Model:
    """A zoo model and what a spec can do with it."""

    name: str
    logs: tuple[str, ...]  # the metrics it logs (what a monitor can name)
    data: str | None = None  # its DataModule, when it brings no loaders
    manual: bool = False
    seed_era: bool = False  # trains with Lightning 1.9.5 only
    tbptt: bool = False
    init: dict[str, Any] = field(default_factory=dict)  # init_args choices: name -> values


MODELS_2X = (
    Model(
        "LitRegression",
        ("train_loss", "val_loss"),
        init={"shuffle": (True, False), "batch_size": (16, 12), "num_workers": (0, 0, 2), "augment": (False, True)},
    ),
    Model("StepIntervalRegression", ("train_loss", "val_loss")),
    Model("EpochEndRegression", ("train_loss", "val_loss")),
    Model(
        "DropoutClassifier",
        ("train_loss_step", "train_loss_epoch", "val_loss", "val_acc"),
        data="ClassificationData",
        init={"scheduler": ("none", "step", "plateau"), "dropout": (0.25, 0.0), "batch_norm": (False, True)},
    ),
    Model(
        "PlateauClassifier", ("train_loss_step", "train_loss_epoch", "val_loss", "val_acc"), data="ClassificationData"
    ),
    Model(
        "OneCycleClassifier", ("train_loss_step", "train_loss_epoch", "val_loss", "val_acc"), data="ClassificationData"
    ),
    Model("SequenceRegressor", ("train_loss", "val_loss")),
    Model("ManualGAN", ("g_loss", "d_loss", "val_loss"), manual=True),
    Model("ManualAccumulation", ("train_loss", "val_loss"), manual=True, init={"accumulate": (1, 2, 3)}),
)
MODELS_195 = (
    Model("TwoOptimizerGAN", ("g_loss", "d_loss", "val_loss"), seed_era=True),
    Model("FrequencyGAN", ("g_loss", "d_loss", "val_loss"), seed_era=True),
    Model("TruncatedRegressor", ("train_loss", "val_loss"), seed_era=True, tbptt=True),
)
MISSING_METRIC = "missing_metric"


@dataclass(frozen=True)
class Draw:
    spec: dict[str, Any]
    reference: str  # "2.x" or "1.9.5"
    code: str = ""  # the source of a drawn module file (tests/fuzz/code.py) the spec names, or ""

    @property
    def model(self) -> str:
        return self.spec["model"]["class_path"].rpartition(".")[2]


def mostly(default: Any, *others: Any) -> st.SearchStrategy:
    """`default` about half the time, else one of `others`."""
    return st.one_of(st.just(default), st.sampled_from(others)) if others else st.just(default)


@st.composite
def model_entry(draw: st.DrawFn, model: Model) -> dict[str, Any]:
    init = {name: draw(st.sampled_from(values)) for name, values in model.init.items()}
    entry: dict[str, Any] = {"class_path": f"{ZOO}.{model.name}"}
    if init:
        entry["init_args"] = init
    return entry


def monitor(model: Model) -> st.SearchStrategy:
    """A metric the model logs, rarely one it never logs (Lightning then raises or warns)."""
    return st.one_of(st.sampled_from(model.logs), st.sampled_from(model.logs), st.just(MISSING_METRIC))


@st.composite
def model_checkpoint(draw: st.DrawFn, model: Model) -> dict[str, Any]:
    args: dict[str, Any] = {}
    watched = draw(st.one_of(st.none(), monitor(model)))
    if watched is not None:
        args["monitor"] = watched
        args["mode"] = draw(mostly("min", "max"))
        args["save_top_k"] = draw(mostly(1, 2, -1, 0))
    else:
        args["save_top_k"] = draw(mostly(1, -1, 0))
    trigger = draw(st.sampled_from(("every_n_epochs", "every_n_train_steps", None, None, None, None, "both")))
    if trigger in ("every_n_epochs", "both"):
        args["every_n_epochs"] = draw(st.sampled_from((2, 1)))
    if trigger in ("every_n_train_steps", "both"):  # both: Lightning refuses the pair, loopgen must too
        args["every_n_train_steps"] = draw(st.sampled_from((3, 5)))
    for name, values in {
        "save_last": (True, False, "link"),
        "save_on_train_epoch_end": (True, False),
        "save_weights_only": (True,),
        "dirpath": ("ckpts",),
        "filename": ("{epoch}-{step}", "best-{epoch:02d}"),
        "auto_insert_metric_name": (False,),
        "enable_version_counter": (False,),
    }.items():
        if draw(st.integers(0, 3)) == 0:
            args[name] = draw(st.sampled_from(values))
    # Lightning's, or a project's subclass of it (on the script's ModelCheckpointBase)
    paths = ("ModelCheckpoint", "pytorch_lightning.callbacks.ModelCheckpoint", f"{ZOO}.LateModelCheckpoint")
    return {"class_path": draw(st.sampled_from(paths)), "init_args": args}


@st.composite
def stochastic_weight_averaging(draw: st.DrawFn) -> dict[str, Any]:
    """Lightning's SWA: its start an epoch or a fraction of max_epochs, its rates one or per group."""
    args: dict[str, Any] = {"swa_lrs": draw(st.sampled_from((0.05, [0.02], 0.2)))}
    for name, values in {
        "swa_epoch_start": (1, 2, 0.5, 0.0),
        "annealing_epochs": (1, 2),
        "annealing_strategy": ("linear",),
        "device": (None,),
    }.items():
        if draw(st.integers(0, 2)) == 0:
            args[name] = draw(st.sampled_from(values))
    return {"class_path": "StochasticWeightAveraging", "init_args": args}


@st.composite
def early_stopping(draw: st.DrawFn, model: Model, subclass: bool = True) -> dict[str, Any]:
    args: dict[str, Any] = {"monitor": draw(monitor(model)), "patience": draw(mostly(3, 0, 1))}
    for name, values in {
        "mode": ("max",),
        "min_delta": (0.01, 0.5),
        "check_on_train_epoch_end": (True, False),
        "strict": (False,),
        "stopping_threshold": (0.05,),
        "divergence_threshold": (50.0,),
        "verbose": (True,),
    }.items():
        if draw(st.integers(0, 3)) == 0:
            args[name] = draw(st.sampled_from(values))
    if subclass and draw(st.integers(0, 2)) == 0:  # a project's subclass of it, on the script's base class
        return {"class_path": f"{ZOO}.WarmupStopping", "init_args": {**args, "warmup": draw(st.integers(1, 2))}}
    return {"class_path": "pytorch_lightning.callbacks.EarlyStopping", "init_args": args}


@st.composite
def lr_monitor(draw: st.DrawFn) -> dict[str, Any]:
    args: dict[str, Any] = {}
    interval = draw(mostly(None, "step", "epoch"))
    if interval is not None:
        args["logging_interval"] = interval
    if draw(st.booleans()):
        args["log_momentum"] = True
    # Lightning's, or a project's subclass of it
    class_path = "LearningRateMonitor" if draw(st.integers(0, 2)) > 0 else f"{ZOO}.PrefixedRates"
    return {"class_path": class_path, "init_args": args}


def logger_2x() -> st.SearchStrategy:
    csv = st.builds(
        lambda name, version: {"class_path": "CSVLogger", "init_args": {"save_dir": ".", "name": name, **version}},
        st.sampled_from(("lightning_logs", "runs")),
        st.sampled_from(({}, {"version": 3}, {"version": "exp"})),
    )
    tensorboard = st.just({"class_path": "TensorBoardLogger", "init_args": {"save_dir": "tb"}})
    mlflow = st.just({"class_path": "MLFlowLogger", "init_args": {"tracking_uri": "file:./mlruns"}})
    return st.one_of(st.just(False), st.just(False), st.just(True), csv, csv, tensorboard, mlflow)


@st.composite
def bounds(draw: st.DrawFn) -> dict[str, Any]:
    flags: dict[str, Any] = {"max_epochs": draw(st.integers(1, 3))}
    if draw(st.integers(0, 3)) == 0:
        flags["max_steps"] = draw(st.sampled_from((4, 7, 12)))
    if draw(st.integers(0, 5)) == 0:
        flags["min_epochs"] = 2
    if draw(st.integers(0, 5)) == 0:
        flags["min_steps"] = 9
    return flags


@st.composite
def data_flags(draw: st.DrawFn) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    if draw(st.integers(0, 2)) == 0:
        flags["limit_train_batches"] = draw(st.sampled_from((3, 1, 0.5, 0.75)))
    if draw(st.integers(0, 2)) == 0:
        flags["limit_val_batches"] = draw(st.sampled_from((0, 1, 0.5, 2)))
    if draw(st.integers(0, 5)) == 0:
        flags["overfit_batches"] = draw(st.sampled_from((2, 0.25)))
    return flags


@st.composite
def validation_flags(draw: st.DrawFn) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    interval = draw(mostly(None, 0.5, 0.34, 2, 3))
    if interval is not None:
        flags["val_check_interval"] = interval
    every = draw(mostly(None, 2, "null"))
    if every == "null":
        if isinstance(interval, int):
            flags["check_val_every_n_epoch"] = None
    elif every is not None:
        flags["check_val_every_n_epoch"] = every
    sanity = draw(mostly(None, 0, 1, -1))
    if sanity is not None:
        flags["num_sanity_val_steps"] = sanity
    return flags


@st.composite
def optimization_flags(draw: st.DrawFn, model: Model) -> dict[str, Any]:
    flags: dict[str, Any] = {}
    manual_refusal = model.manual and draw(st.integers(0, 9)) == 0  # Lightning refuses these: so must loopgen
    if not model.manual or manual_refusal:
        accumulate = draw(mostly(1, 2, 3, {0: 1, 1: 2}, {1: 3}))
        if accumulate != 1:
            flags["accumulate_grad_batches"] = accumulate
        clip = draw(mostly(None, 0.5, 0.05))
        if clip is not None:
            flags["gradient_clip_val"] = clip
            if draw(st.booleans()):
                flags["gradient_clip_algorithm"] = draw(st.sampled_from(("value", "norm")))
    return flags


@st.composite
def draw_2x(draw: st.DrawFn) -> Draw:
    code = draw(drawn_code()) if draw(st.integers(0, 2)) == 0 else None
    model = MODELS_2X[0] if code else draw(st.sampled_from(MODELS_2X))  # drawn code subclasses LitRegression
    trainer: dict[str, Any] = {
        "accelerator": "cpu",
        **draw(bounds()),
        **draw(data_flags()),
        **draw(validation_flags()),
        **draw(optimization_flags(model)),
        "precision": draw(mostly("32-true", "bf16-mixed", "64-true", "16-mixed", "bf16-true")),
        "logger": draw(logger_2x()),
        "log_every_n_steps": draw(mostly(50, 1, 2, 3)),
        "enable_checkpointing": draw(st.booleans()),
        "enable_progress_bar": draw(mostly(False, True)),
        "enable_model_summary": draw(st.booleans()),
        "deterministic": draw(mostly(False, True)),
        "detect_anomaly": draw(mostly(False, True)),
    }
    if draw(st.integers(0, 9)) == 0:  # a precision plugin in place of the flag
        precision = trainer.pop("precision")
        trainer["plugins"] = [{
            "32-true": "Precision", "64-true": "DoublePrecision",
            "bf16-true": {"class_path": "HalfPrecision", "init_args": {"precision": "bf16-true"}},
            "bf16-mixed": {"class_path": "MixedPrecision", "init_args": {"precision": "bf16-mixed", "device": "cpu"}},
            "16-mixed": {"class_path": "MixedPrecision", "init_args": {"precision": "16-mixed", "device": "cpu"}},
        }[precision]]  # fmt: skip
    callbacks = []
    if draw(st.integers(0, 4)) > 0:
        callbacks.append({"class_path": f"{ZOO}.Probe"})
    for _ in range(draw(st.integers(0, 2)) if draw(st.booleans()) else 0):
        callbacks.append(draw(model_checkpoint(model)))
    if draw(st.integers(0, 3)) == 0:
        callbacks.append(draw(early_stopping(model)))
    if draw(st.integers(0, 4 if trainer["logger"] else 19)) == 0:  # without a logger Lightning refuses it
        callbacks.append(draw(lr_monitor()))
    if draw(st.integers(0, 4)) == 0:
        callbacks.append(draw(stochastic_weight_averaging()))
    if trainer["enable_progress_bar"] and draw(st.integers(0, 2)) == 0:  # a project's bar subclass
        if draw(st.integers(0, 2)) > 0:
            callbacks.append({"class_path": f"{ZOO}.CompactBar", "init_args": {"refresh_rate": draw(mostly(1, 3))}})
        else:
            callbacks.append({"class_path": f"{ZOO}.CompactRichBar", "init_args": {"leave": draw(st.booleans())}})
    if code:
        text, module_class, data_class, callback_class = code
        if callback_class:
            callbacks.insert(
                draw(st.integers(0, len(callbacks))), {"class_path": f"{module_name(text)}.{callback_class}"}
            )
    if any(entry["class_path"].endswith("ModelCheckpoint") for entry in callbacks):
        trainer["enable_checkpointing"] = True
    if callbacks:
        trainer["callbacks"] = callbacks
    spec: dict[str, Any] = {"seed_everything": draw(st.sampled_from((42, 7, 1234))), "model": draw(model_entry(model))}
    if code:
        spec["model"]["class_path"] = f"{module_name(text)}.{module_class}"
    if model.data:
        spec["data"] = {"class_path": f"{ZOO}.{model.data}"}
    if code and data_class:  # the drawn data module's loaders replace the module's
        spec["data"] = {"class_path": f"{module_name(text)}.{data_class}"}
    spec["trainer"] = trainer
    return Draw(spec, "2.x", code[0] if code else "")


@st.composite
def draw_195(draw: st.DrawFn) -> Draw:
    """The seed's flags, against Lightning 1.9.5 (whose reference runner writes no checkpoints)."""
    seed_model = draw(st.sampled_from(MODELS_195 + (None,)))
    if seed_model is None:  # a 2.x module with the seed's gradient-norm tracking
        model = draw(st.sampled_from([m for m in MODELS_2X if not m.manual]))
    else:
        model = seed_model
    trainer: dict[str, Any] = {
        "accelerator": "cpu",
        **draw(bounds()),
        **draw(data_flags()),
        **draw(validation_flags()),
        **draw(optimization_flags(model)),
        "precision": draw(mostly("32-true", "bf16-mixed")),
        "log_every_n_steps": draw(mostly(50, 1, 2)),
        "logger": draw(st.one_of(st.just(False), st.just({"class_path": "CSVLogger", "init_args": {"save_dir": "."}}))),
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": draw(st.booleans()),
    }
    trainer.pop("overfit_batches", None)  # 1.9.5's overfit sampler rules differ from 2.x's: not compared here
    if model.tbptt:
        trainer["truncated_bptt_steps"] = draw(st.sampled_from((2, 4, 3)))
    if seed_model is None or draw(st.booleans()):
        trainer["track_grad_norm"] = draw(st.sampled_from((2, 1, "inf")))
    callbacks = []
    if draw(st.integers(0, 4)) > 0:
        callbacks.append({"class_path": f"{ZOO}.Probe195"})
    if draw(st.integers(0, 4)) == 0:
        callbacks.append(draw(early_stopping(model, subclass=False)))
    if callbacks:
        trainer["callbacks"] = callbacks
    spec: dict[str, Any] = {"seed_everything": draw(st.sampled_from((42, 7))), "model": draw(model_entry(model))}
    if model.data:
        spec["data"] = {"class_path": f"{ZOO}.{model.data}"}
    spec["trainer"] = trainer
    return Draw(spec, "1.9.5")


def draws(seed_era: bool = True) -> st.SearchStrategy:
    """Every kind of draw: mostly Lightning 2.x specs, a quarter the seed's flags against 1.9.5."""
    if not seed_era:
        return draw_2x()
    return st.one_of(draw_2x(), draw_2x(), draw_2x(), draw_195())
