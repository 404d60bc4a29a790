"""Stage 3: Spec + ClassFacts -> Plan, every decision the script depends on.

The Plan is plain frozen data. It is the only place where flags interact
(Lightning's rules for max_epochs vs max_steps, fast_dev_run and overfit_batches
rewriting the limits, which hooks exist, ...). Templates only test its fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from loopgen import __version__
from loopgen.errors import LoopgenError, Problem
from loopgen.inspect import ClassFacts
from loopgen.spec import ClassRef, Spec

# Hooks of the model a generated script may call, in the order Lightning calls them.
# (Data hooks: prepare_data, setup, train_dataloader, val_dataloader.)
MODEL_HOOKS = (
    "prepare_data",
    "setup",
    "configure_optimizers",
    "on_fit_start",
    "on_train_start",
    "on_train_epoch_start",
    "on_train_batch_start",
    "training_step",
    "training_step_end",
    "on_before_zero_grad",
    "backward",
    "optimizer_zero_grad",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "configure_gradient_clipping",
    "on_train_batch_end",
    "training_epoch_end",
    "on_train_epoch_end",
    "on_validation_model_eval",
    "on_validation_model_train",
    "on_validation_start",
    "on_validation_epoch_start",
    "on_validation_batch_start",
    "validation_step",
    "on_validation_batch_end",
    "validation_epoch_end",
    "on_validation_epoch_end",
    "on_validation_end",
    "lr_scheduler_step",
    "on_train_end",
    "on_fit_end",
    "teardown",
    "on_before_batch_transfer",
    "transfer_batch_to_device",
    "on_after_batch_transfer",
)

# Callback hooks (Lightning's `Callback` API) the script calls when a user callback defines them.
CALLBACK_HOOKS = (
    "setup",
    "on_fit_start",
    "on_sanity_check_start",
    "on_sanity_check_end",
    "on_train_start",
    "on_train_epoch_start",
    "on_train_batch_start",
    "on_before_zero_grad",
    "on_before_backward",
    "on_after_backward",
    "on_before_optimizer_step",
    "on_train_batch_end",
    "on_train_epoch_end",
    "on_validation_start",
    "on_validation_epoch_start",
    "on_validation_batch_start",
    "on_validation_batch_end",
    "on_validation_epoch_end",
    "on_validation_end",
    "on_train_end",
    "on_fit_end",
    "teardown",
)


@dataclass(frozen=True)
class Construct:
    """A class to import and instantiate: `name(**args)`."""

    module: str
    cls: str
    name: str  # the name it is imported as in the script
    args: Mapping[str, Any] = field(default_factory=dict)

    @property
    def from_torch(self) -> bool:
        return self.module == "torch" or self.module.startswith("torch.")

    @property
    def ref(self) -> str:
        """How the script names the class: torch's by their full path, the user's by their imported name."""
        return f"{self.module}.{self.cls}" if self.from_torch else self.name


@dataclass(frozen=True)
class Import:
    module: str
    names: tuple[str, ...]

    @property
    def import_clause(self) -> str:
        return ", ".join(self.names)


@dataclass(frozen=True)
class Callback:
    construct: Construct
    var: str  # the script variable holding the instance
    hooks: frozenset[str]

    def has(self, hook: str) -> bool:
        return hook in self.hooks


@dataclass(frozen=True)
class Plan:
    # header
    version: str
    spec_name: str
    spec_sha256: str
    choices: tuple[str, ...]
    launch: str
    script_name: str
    # what to build
    model: Construct
    data: Construct | None
    callbacks: tuple[Callback, ...]
    optimizer: Construct | None  # from the spec; None: configure_optimizers
    lr_scheduler: Construct | None  # from the spec
    model_hooks: frozenset[str]
    data_hooks: frozenset[str]
    lightning_module: bool  # a LightningModule subclass (read-only current_epoch/global_step/trainer)
    attach_trainer: bool  # the model reads self.trainer / current_epoch / global_step
    uses_log: bool
    schedulers: bool  # code to step LR schedulers is needed
    # run-time environment
    precision: str  # "32" | "64" | "bf16-mixed" | "16-mixed" (16-mixed on CPU is already bf16-mixed here)
    seed: int | None
    seed_at_run_time: bool
    device: str  # cpu | cuda | auto
    deterministic: bool
    benchmark: bool | None
    # data
    train_loader_from: str  # "data" | "model"
    val_loader_from: str | None
    limit_train_batches: int | float
    limit_val_batches: int | float
    overfit_batches: bool
    reload_dataloaders_every_n_epochs: int
    # loop bounds (Lightning's resolution of None/-1 already applied)
    max_epochs: int  # -1: no limit
    min_epochs: int  # 0: none
    max_steps: int  # -1: no limit
    min_steps: int  # 0: none
    # validation
    validation: bool
    num_sanity_val_steps: int  # -1: all batches
    val_check_batches: int | None  # int val_check_interval
    val_check_fraction: float | None  # float val_check_interval
    check_val_every_n_epoch: int | None
    # optimisation
    accumulate_grad_batches: int
    accumulation_schedule: Mapping[int, int] | None
    gradient_clip_val: float | None
    gradient_clip_algorithm: str
    step_takes_batch_idx: bool
    validation_step_takes_batch_idx: bool
    lr_scheduler_monitor: str | None  # the spec's ReduceLROnPlateau monitor
    mirror_counters: frozenset[str]  # plain-module attributes the loop keeps current (current_epoch, global_step)
    stop_requests: bool  # a callback or the model can set trainer.should_stop
    # the seed's specialised branches (Lightning 1.9.5 semantics)
    multi_optimizer: bool = False  # training_step takes optimizer_idx: one step per optimizer per batch
    optimizer_frequencies: tuple[int, ...] | None = None  # one optimizer per batch, each in turn
    tbptt_steps: int | None = None  # truncated backpropagation through time
    closure: bool = False  # the step goes through optimizer.step(closure) (LBFGS, an optimizer_step override)
    optimizer_step_style: str | None = None  # "lightning2" | "seed": the override's signature
    zero_grad_style: str | None = None
    lr_scheduler_step_params: tuple[str, ...] | None = None
    apex: bool = False
    amp_level: str | None = None
    track_grad_norm: float | None = None
    terminate_on_nan: bool = False
    log_dicts: bool = False  # the seed's {"log": ..., "progress_bar": ...} returns are logged
    notices: tuple[str, ...] = ()  # decisions the user should hear about

    def hook(self, name: str) -> bool:
        """The model (or its in-project bases) defines hook `name`."""
        return name in self.model_hooks

    def data_hook(self, name: str) -> bool:
        return name in self.data_hooks

    def callbacks_with(self, hook: str) -> tuple[Callback, ...]:
        return tuple(c for c in self.callbacks if c.has(hook))

    def any_hook(self, name: str) -> bool:
        """The model or a callback defines `name`."""
        return self.hook(name) or bool(self.callbacks_with(name))

    @property
    def accumulates(self) -> bool:
        return self.accumulate_grad_batches > 1 or self.accumulation_schedule is not None

    @property
    def needs_batch_count(self) -> bool:
        """num_training_batches differs from len(train_loader) (an int 1 is one batch, the float 1.0 all)."""
        return _limits(self.limit_train_batches)

    @property
    def limits_val_batches(self) -> bool:
        return _limits(self.limit_val_batches)

    @property
    def needs_num_batches(self) -> bool:
        return self.needs_batch_count or (self.validation and self.limits_val_batches)

    @property
    def imports(self) -> tuple[Import, ...]:
        by_module: dict[str, list[str]] = {}
        for c in (self.model, self.data, *(cb.construct for cb in self.callbacks), self.optimizer, self.lr_scheduler):
            if c is not None and not c.from_torch and c.name not in by_module.setdefault(c.module, []):
                by_module[c.module].append(c.name)
        return tuple(Import(module, tuple(sorted(names))) for module, names in sorted(by_module.items()))

    @property
    def needs_is_last_batch(self) -> bool:
        return self.accumulates or self.schedulers

    @property
    def needs_total_batch_idx(self) -> bool:
        return (self.validation and self.check_val_every_n_epoch is None) or bool(
            self.optimizer_frequencies and self.schedulers
        )

    @property
    def epoch_loop_condition(self) -> str:
        parts = []
        if self.max_epochs != -1:
            parts.append("trainer.current_epoch < MAX_EPOCHS")
        if self.max_steps != -1:
            parts.append("trainer.global_step < MAX_STEPS")
        return " and ".join(parts) or "True"

    @property
    def validates_epoch_0(self) -> bool:
        return self.check_val_every_n_epoch in (None, 1)

    @property
    def waits_for_minimum(self) -> bool:
        """A stop request can be held back by min_epochs / min_steps."""
        return self.stop_requests and bool(self.min_epochs or self.min_steps)

    @property
    def stop_condition(self) -> str:
        return "trainer.should_stop and trainer.can_stop_early()" if self.waits_for_minimum else "trainer.should_stop"

    @property
    def stop_wait_message(self) -> str:
        """Lightning's message when a stop request waits for min_epochs / min_steps (source of an f-string)."""
        epochs = "{MIN_EPOCHS}" if self.min_epochs else "0"
        steps = "{MIN_STEPS}" if self.min_steps else "None"
        return (
            f'f"Trainer was signaled to stop but the required `min_epochs={epochs}` or"\n'
            f'f" `min_steps={steps}` has not been met. Training will continue..."'
        )

    @property
    def val_check_condition(self) -> str:
        counter = "trainer.total_batch_idx" if self.check_val_every_n_epoch is None else "batch_idx"
        when = f"({counter} + 1) % val_check_batch == 0"
        if self.stop_requests:
            when = f"{when} or ({self.stop_condition})"
        if self.check_val_every_n_epoch not in (None, 1):
            when = f"(trainer.current_epoch + 1) % CHECK_VAL_EVERY_N_EPOCH == 0 and ({when})"
        return when

    @property
    def val_loader_lazy(self) -> bool:
        """The val loader is (re)requested at validation time rather than once up front."""
        return self.validation and (
            self.reload_dataloaders_every_n_epochs > 0 or (not self.num_sanity_val_steps and not self.validates_epoch_0)
        )

    @property
    def val_loader_at_start(self) -> bool:
        return self.validates_epoch_0

    @property
    def train_batches_expr(self) -> str:
        if self.needs_batch_count:
            return 'num_batches(len(train_loader), LIMIT_TRAIN_BATCHES, "train")'
        return "len(train_loader)"

    @property
    def val_batches_expr(self) -> str:
        if self.limits_val_batches:
            return 'num_batches(len(val_loader), LIMIT_VAL_BATCHES, "val")'
        return "len(val_loader)"

    def _val_callbacks(self) -> list[str]:
        hooks = ("on_validation_start", "on_validation_epoch_start", "on_validation_batch_start")
        hooks += ("on_validation_batch_end", "on_validation_epoch_end", "on_validation_end")
        return [cb.var for cb in self.callbacks if any(cb.has(h) for h in hooks)]

    def _validate_extras(self) -> list[str]:
        extras = ["device"] if self.device != "cpu" else []
        if self.metric_log:
            extras.append("metrics")
        return extras + self._val_callbacks()

    @property
    def validate_extras(self) -> str:
        """The extra parameters of validate(), which its calls pass by the same names."""
        return "".join(f", {name}" for name in self._validate_extras())

    @property
    def scheduler_extras(self) -> str:
        """The extra parameter of step_schedulers(), passed by the same name."""
        return ", model" if self.hook("lr_scheduler_step") else ""

    @property
    def lr_scheduler_step_style(self) -> str | None:
        return _style(self.lr_scheduler_step_params)

    @property
    def reference_1_9_5(self) -> bool:
        """The spec uses a flag only Lightning 1.9.5 has: where 1.9.5 and 2.x differ, the script follows 1.9.5."""
        return (
            self.multi_optimizer
            or self.tbptt_steps is not None
            or self.apex
            or self.track_grad_norm is not None
            or self.terminate_on_nan
            or self.hook("training_epoch_end")
            or self.hook("validation_epoch_end")
            or self.hook("training_step_end")
        )

    @property
    def autocast_cache(self) -> str:
        """Lightning 2.x autocasts with cache_enabled=False; 1.9.5 with torch's default (cached casts, whose
        gradients are summed in the low precision)."""
        return "" if self.reference_1_9_5 else ", cache_enabled=False"

    @property
    def autocast(self) -> bool:
        return self.precision in ("16-mixed", "bf16-mixed") and not self.apex

    @property
    def autocast_device(self) -> str:
        return "device.type" if self.device == "auto" else repr(self.device)

    @property
    def autocast_dtype(self) -> str:
        if self.precision == "bf16-mixed":
            return "torch.bfloat16"
        if self.device == "auto":  # Lightning: float16 AMP on CUDA, bfloat16 on CPU
            return 'torch.float16 if device.type == "cuda" else torch.bfloat16'
        return "torch.float16"

    @property
    def scaler(self) -> bool:
        """16-bit AMP scales the loss (on CUDA; with accelerator auto, a disabled scaler on CPU)."""
        return self.precision == "16-mixed" and not self.apex

    @property
    def nested_outputs(self) -> bool:
        """Hooks receive outputs per time split and optimizer (Lightning 1.9.5's nesting)."""
        return (self.multi_optimizer or self.tbptt_steps is not None) and self.step_outputs_used

    @property
    def optimize_indent(self) -> int:
        return 4 * (self.tbptt_steps is not None) + 4 * self.multi_optimizer

    def training_step_call_args(self, step_input: str) -> str:
        args = [step_input]
        if self.step_takes_batch_idx:
            args.append("batch_idx")
        if self.multi_optimizer:
            args.append("optimizer_idx")
        if self.tbptt_steps:
            args.append("hiddens")
        return ", ".join(args)

    def closure_params(self, step_input: str) -> str:
        """The closure is called after the loop variables it reads are set: bind them explicitly."""
        names = [step_input, "batch_idx", "optimizer"]
        if self.multi_optimizer:
            names.append("optimizer_idx")
        if self.accumulates:
            names.append("should_step")
        return ", ".join(f"{name}={name}" for name in names)

    @property
    def zero_grad_call_args(self) -> str:
        args = "trainer.current_epoch, batch_idx, optimizer"
        if self.zero_grad_style == "seed":
            args += ", optimizer_idx" if self.multi_optimizer else ", 0"
        return args

    @property
    def optimizer_step_call(self) -> str:
        if self.optimizer_step_style is None:
            return "optimizer.step(closure)"
        if self.optimizer_step_style == "lightning2":
            return "model.optimizer_step(trainer.current_epoch, batch_idx, optimizer, closure)"
        index = "optimizer_idx" if self.multi_optimizer else "0"
        return (
            f"model.optimizer_step(trainer.current_epoch, batch_idx, optimizer, {index}, closure,"
            " on_tpu=False, using_lbfgs=isinstance(optimizer, torch.optim.LBFGS))"
        )

    @property
    def track_grad_norm_literal(self) -> str:
        return 'float("inf")' if self.track_grad_norm == float("inf") else repr(self.track_grad_norm)

    @property
    def metric_log(self) -> bool:
        """The script needs the self.log collector."""
        return self.uses_log or self.track_grad_norm is not None or self.log_dicts

    @property
    def validation_step_args(self) -> str:
        return "batch, batch_idx" if self.validation_step_takes_batch_idx else "batch"

    @property
    def val_output_used(self) -> bool:
        return self.any_hook("on_validation_batch_end") or self.hook("validation_epoch_end") or self.log_dicts

    @property
    def step_outputs_used(self) -> bool:
        return self.any_hook("on_train_batch_end") or self.hook("training_epoch_end")

    @property
    def clip_call(self) -> str:
        params = '[p for group in optimizer.param_groups for p in group["params"]]'
        if self.gradient_clip_algorithm == "value":
            return f"torch.nn.utils.clip_grad_value_({params}, GRADIENT_CLIP_VAL)"
        return f"torch.nn.utils.clip_grad_norm_({params}, GRADIENT_CLIP_VAL)"


def _construct(ref: ClassRef, name: str | None = None) -> Construct:
    return Construct(ref.module, ref.name, name or ref.name, dict(ref.init_args))


def _schedule_with_zero(schedule: Mapping[int, int]) -> dict[int, int]:
    # Lightning's GradientAccumulationScheduler starts at factor 1 when epoch 0 is not given.
    full = {0: 1} if 0 not in schedule else {}
    full.update(schedule)
    return dict(sorted(full.items()))


def make_plan(
    spec: Spec,
    model: ClassFacts,
    data: ClassFacts | None,
    callbacks: tuple[ClassFacts, ...],
    script_name: str = "train.py",
) -> Plan:
    t = spec.trainer
    problems: list[Problem] = []

    if not model.defines("training_step"):
        problems.append(
            Problem("model.class_path", f"{spec.model.class_path} does not define training_step", spec.model.line)
        )
    if spec.optimizer is None and not model.defines("configure_optimizers"):
        problems.append(
            Problem(
                "model.class_path",
                f"{spec.model.class_path} defines no configure_optimizers and the spec has no `optimizer:`",
                spec.model.line,
            )
        )

    def loader_owner(hook: str) -> str | None:
        # With a data class, Lightning reads the loaders from it only (the model's are ignored).
        if data is not None:
            return "data" if data.defines(hook) else None
        return "model" if model.defines(hook) else None

    train_from = loader_owner("train_dataloader")
    if train_from is None:
        owner = f"{spec.data.class_path} or {spec.model.class_path}" if spec.data else spec.model.class_path
        problems.append(Problem("data" if spec.data else "model", f"no train_dataloader() defined on {owner}"))
    val_from = loader_owner("val_dataloader")

    step_params = model.methods.get("training_step", ())
    where = "model.class_path"
    multi_optimizer = "optimizer_idx" in step_params
    frequencies = spec.loop.optimizer_frequencies
    if frequencies and not multi_optimizer:
        problems.append(
            Problem("loop.optimizer_frequencies", f"{spec.model.name}.training_step has no `optimizer_idx` parameter")
        )
    tbptt = t.truncated_bptt_steps
    if tbptt and "hiddens" not in step_params and "*args" not in step_params:
        problems.append(
            Problem(
                where, f"truncated_bptt_steps is set, but {spec.model.name}.training_step has no `hiddens` parameter"
            )
        )
    for hook in ("configure_gradient_clipping", "on_save_checkpoint", "on_load_checkpoint"):
        if model.defines(hook):
            problems.append(Problem(where, f"{spec.model.class_path} overrides {hook}: not supported yet"))
    lbfgs = model.mentions_lbfgs if spec.optimizer is None else spec.optimizer.name == "LBFGS"
    closure = lbfgs or model.defines("optimizer_step")
    scaler = t.precision == "16-mixed" and t.accelerator != "cpu" and t.amp_backend == "native"
    apex = t.amp_backend == "apex"
    if lbfgs and scaler:
        problems.append(Problem("trainer.precision", "native 16-bit AMP and the LBFGS optimizer are not compatible"))
    if model.defines("optimizer_step") and (scaler or apex):
        problems.append(Problem(where, "an optimizer_step override together with 16-bit AMP is not supported"))
    if apex:
        if t.accelerator == "cpu":
            problems.append(Problem("trainer.amp_backend", "apex AMP is not supported on CPU"))
        if lbfgs:
            problems.append(Problem("trainer.amp_backend", "apex AMP and the LBFGS optimizer are not compatible"))
    if problems:
        raise LoopgenError(problems)

    # --- Lightning's resolution of the loop bounds and debugging flags -----------------------
    limit_train, limit_val = t.limit_train_batches, t.limit_val_batches
    max_steps, max_epochs = t.max_steps, t.max_epochs
    num_sanity = t.num_sanity_val_steps
    val_check_interval, check_every = t.val_check_interval, t.check_val_every_n_epoch
    if t.overfit_batches:
        limit_train = limit_val = t.overfit_batches
    if t.fast_dev_run:
        limit_train = limit_val = t.fast_dev_run
        max_steps, max_epochs, num_sanity = t.fast_dev_run, 1, 0
        val_check_interval, check_every = 1.0, 1
    if max_epochs is None:
        max_epochs = 1000 if max_steps == -1 else -1
    min_epochs = t.min_epochs
    if min_epochs is None:  # Lightning's _parse_loop_limits
        min_epochs = 1 if t.min_steps is not None else 0

    validation = val_from is not None and model.defines("validation_step") and limit_val != 0

    accumulation_schedule = None
    accumulate = 1
    if isinstance(t.accumulate_grad_batches, Mapping):
        accumulation_schedule = _schedule_with_zero(t.accumulate_grad_batches)
    else:
        accumulate = t.accumulate_grad_batches

    callback_plans = tuple(
        Callback(
            construct=_construct(ref, ref.name),
            var=f"callback_{i}" if len(spec.trainer.callbacks) > 1 else "callback",
            hooks=frozenset(h for h in CALLBACK_HOOKS if facts.defines(h)),
        )
        for i, (ref, facts) in enumerate(zip(spec.trainer.callbacks, callbacks))
    )
    _dedupe_names([spec.model] + ([spec.data] if spec.data else []) + list(spec.trainer.callbacks))

    device = t.accelerator
    precision = t.precision
    notices: list[str] = []
    if precision == "16-mixed" and device == "cpu" and t.amp_backend == "native":
        precision = "bf16-mixed"
        notices.append(
            "trainer.precision: 16-mixed: float16 AMP is not supported on CPU; using bf16-mixed instead, as Lightning does"
        )
    seed = spec.seed_everything if not isinstance(spec.seed_everything, bool) else None

    reads = model.attributes_read
    attach_trainer = model.is_lightning_module or "trainer" in reads
    mirror = frozenset() if model.is_lightning_module else reads & {"current_epoch", "global_step"}
    monitor = None
    if spec.lr_scheduler is not None and spec.lr_scheduler.name == "ReduceLROnPlateau":
        args = dict(spec.lr_scheduler.init_args)
        monitor = args.pop("monitor", None)
        if monitor is None:
            raise LoopgenError(
                Problem(
                    "lr_scheduler.init_args.monitor",
                    "ReduceLROnPlateau needs a `monitor` metric",
                    spec.lr_scheduler.line,
                )
            )
        spec_scheduler = Construct("torch.optim.lr_scheduler", "ReduceLROnPlateau", "ReduceLROnPlateau", args)
    else:
        spec_scheduler = _construct(spec.lr_scheduler) if spec.lr_scheduler else None

    choices = _choices(spec, device, precision, max_epochs, max_steps, accumulate, accumulation_schedule, validation)
    return Plan(
        version=__version__,
        spec_name=spec.path.name,
        spec_sha256=spec.sha256,
        choices=choices,
        launch=f"python {script_name}",
        script_name=script_name,
        model=_construct(spec.model),
        data=_construct(spec.data) if spec.data else None,
        callbacks=callback_plans,
        optimizer=_construct(spec.optimizer) if spec.optimizer else None,
        lr_scheduler=spec_scheduler,
        model_hooks=frozenset(h for h in MODEL_HOOKS if model.defines(h)),
        data_hooks=frozenset(h for h in ("prepare_data", "setup", "teardown") if data is not None and data.defines(h)),
        lightning_module=model.is_lightning_module,
        attach_trainer=attach_trainer,
        uses_log=model.uses_log,
        schedulers=_has_schedulers(spec, model),
        precision=precision,
        seed=seed,
        seed_at_run_time=spec.seed_everything is True,
        device=device,
        deterministic=t.deterministic,
        benchmark=t.benchmark,
        train_loader_from=train_from,
        val_loader_from=val_from if validation else None,
        limit_train_batches=limit_train,
        limit_val_batches=limit_val,
        overfit_batches=bool(t.overfit_batches),
        reload_dataloaders_every_n_epochs=t.reload_dataloaders_every_n_epochs,
        max_epochs=max_epochs,
        min_epochs=min_epochs,
        max_steps=max_steps,
        min_steps=t.min_steps or 0,
        validation=validation,
        num_sanity_val_steps=num_sanity if validation else 0,
        val_check_batches=val_check_interval if isinstance(val_check_interval, int) else None,
        val_check_fraction=float(val_check_interval) if isinstance(val_check_interval, float) else None,
        check_val_every_n_epoch=check_every,
        accumulate_grad_batches=accumulate,
        accumulation_schedule=accumulation_schedule,
        gradient_clip_val=t.gradient_clip_val or None,
        gradient_clip_algorithm=t.gradient_clip_algorithm,
        step_takes_batch_idx=_takes_two(step_params),
        validation_step_takes_batch_idx=_takes_two(model.methods.get("validation_step", ())),
        lr_scheduler_monitor=monitor,
        mirror_counters=mirror,
        stop_requests=bool(callback_plans) or "trainer" in reads,
        multi_optimizer=multi_optimizer,
        optimizer_frequencies=tuple(frequencies) if frequencies else None,
        tbptt_steps=tbptt or None,
        closure=closure,
        optimizer_step_style=_style(model.methods.get("optimizer_step")),
        zero_grad_style=_style(model.methods.get("optimizer_zero_grad")),
        lr_scheduler_step_params=model.methods.get("lr_scheduler_step"),
        apex=apex,
        amp_level=(t.amp_level or "O2") if apex else None,
        track_grad_norm=t.track_grad_norm if t.track_grad_norm != -1 else None,
        terminate_on_nan=t.terminate_on_nan,
        log_dicts=model.returns_log_dicts,
        notices=tuple(notices),
    )


def _style(params: tuple[str, ...] | None) -> str | None:
    """How to call an optimizer_step / optimizer_zero_grad override: Lightning 2.x's arguments, or the
    seed's (and 1.9.5's), which add optimizer_idx."""
    if params is None:
        return None
    return "seed" if "optimizer_idx" in params else "lightning2"


def _has_schedulers(spec: Spec, model: ClassFacts) -> bool:
    """Code to step LR schedulers is needed: the spec has `lr_scheduler:`, or configure_optimizers returns
    schedulers (`loop.lr_schedulers`, else read from its source; the script checks at run time)."""
    if spec.optimizer is not None:
        return spec.lr_scheduler is not None
    if spec.loop.lr_schedulers is not None:
        return spec.loop.lr_schedulers
    return model.mentions_scheduler


def _limits(limit: float) -> bool:
    return not (isinstance(limit, float) and limit == 1.0)


def _takes_two(params: tuple[str, ...]) -> bool:
    return len([p for p in params if not p.startswith("*")]) >= 2 or "*args" in params


def _dedupe_names(refs: list[ClassRef]) -> None:
    seen: dict[str, str] = {}
    for ref in refs:
        other = seen.setdefault(ref.name, ref.class_path)
        if other != ref.class_path:
            raise LoopgenError(
                Problem(
                    "", f"two different classes are both named {ref.name} ({other}, {ref.class_path}): not supported"
                )
            )


def _choices(
    spec: Spec,
    device: str,
    precision: str,
    max_epochs: int,
    max_steps: int,
    accumulate: int,
    schedule,
    validation: bool,
) -> tuple[str, ...]:
    t = spec.trainer
    out = [f"accelerator={device}", f"precision={precision}"]
    out.append(f"max_epochs={max_epochs}" + (f", max_steps={max_steps}" if max_steps != -1 else ""))
    if schedule is not None:
        out.append(f"accumulate_grad_batches={dict(schedule)}")
    elif accumulate > 1:
        out.append(f"accumulate_grad_batches={accumulate}")
    if t.gradient_clip_val:
        out.append(f"gradient_clip_val={t.gradient_clip_val} ({t.gradient_clip_algorithm})")
    out.append("validation" if validation else "no validation")
    return tuple(out)
