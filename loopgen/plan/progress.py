"""The progress bar (TQDM's, rich's, plain lines)."""

from __future__ import annotations

from dataclasses import dataclass

from loopgen.errors import Problem
from loopgen.plan.bounds import Bounds
from loopgen.plan.common import flag_problem
from loopgen.plan.loggers import Logging
from loopgen.plan.objects import PROGRESS_BAR_BASES, Callback, Construct, is_lightning
from loopgen.plan.validation import Validation
from loopgen.source.facts import ClassFacts
from loopgen.spec.model import ClassRef, Spec
from loopgen.spec.support import PROGRESS_BARS


@dataclass(frozen=True)
class Progress:
    """The progress bar: Lightning's default TQDMProgressBar, drawn by the script itself ("own"), or the spec's
    TQDMProgressBar / RichProgressBar, drawn by tqdm / rich."""

    kind: str | None  # None: no bar | "own" | "tqdm" | "rich"
    refresh_rate: int  # own, tqdm: redraw every n batches; rich: n times a second
    line_every: int  # own, when the output is not a terminal: a plain line every n batches
    leave: bool  # tqdm, rich: each epoch's bar stays (a line per epoch)
    process_position: int  # tqdm: the bars start this many lines down
    version: bool  # v_num: the loggers' version, which Lightning shows when there is a logger
    joined_version: bool  # ... of several loggers, joined with "_"
    text_version: bool  # ... a string (the last 4 characters; none when empty)
    metrics: bool  # the values logged with prog_bar=True (and the seed's "progress_bar" dicts)
    steps_total: bool  # max_epochs -1 with max_steps: an epoch's total is at most the steps left (Lightning)
    validation: bool  # a validation bar
    sanity: bool  # a sanity check bar
    last_epoch: int  # rich: "Epoch N/last" (max_epochs - 1, as Lightning writes it)
    # a user's subclass of Lightning's TQDMProgressBar or RichProgressBar is the bar: that class's name (kind None,
    # the subclass draws itself on the script's base, templates/subclassed.j2)
    subclassed: str | None = None

    @property
    def enabled(self) -> bool:
        return self.kind is not None

    @property
    def bar(self) -> str:
        """The template file of the bar's code: templates/progress/<bar>.j2 (none.j2: no bar)."""
        return self.kind or "none"

    @property
    def own(self) -> bool:
        return self.kind == "own"

    @property
    def rich(self) -> bool:
        """rich draws the bar (the spec's RichProgressBar, or a subclass of it): rich is installed, and the results
        of validate and test are rich's table, as Lightning prints them when rich is installed."""
        return self.kind == "rich" or self.subclassed == "RichProgressBar"

    @property
    def postfix(self) -> bool:
        """Something is shown after the timings (Lightning's get_metrics)."""
        return self.version or self.metrics

    @property
    def acts_at_epoch_end(self) -> bool:
        """tqdm's bar does something when a training epoch ends: it shows the postfix, or closes the epoch's bar
        (leave), as Lightning's on_train_epoch_end does."""
        return self.postfix or self.leave


PLAIN_LINE_EVERY = 50  # the script's own bar, when the output is not a terminal: a line every n batches


def resolve_progress(
    spec: Spec,
    model: ClassFacts,
    callbacks: tuple[ClassFacts, ...],
    bounds: Bounds,
    validation: Validation,
    logging: Logging,
    problems: list[Problem],
    notices: list[str],
) -> Progress:
    """The progress bar, by Lightning's _configure_progress_bar rules: the spec's TQDMProgressBar or
    RichProgressBar (one at most, refused with `enable_progress_bar: false`), else with enable_progress_bar
    Lightning's default TQDMProgressBar, which the script draws itself. A refresh rate of 0 shows nothing."""
    t = spec.trainer
    # a user's TQDMProgressBar or RichProgressBar subclass is the bar (it draws itself, on the script's base)
    bars = {f.class_path: base for f in callbacks for base in PROGRESS_BAR_BASES if base in f.lightning_bases}
    subclassed = [ref for ref in t.callbacks if ref.class_path in bars]
    given = [ref for ref in t.callbacks if is_progress_bar(ref) or ref in subclassed]
    if len(given) > 1:
        message = f"{given[1].name}: a second progress bar (Lightning supports one)"
        problems.append(Problem("trainer.callbacks", message, given[1].line))
    if given and not t.enable_progress_bar:
        message = f"is false, but the callbacks have a {given[0].name} (Lightning refuses this too)"
        problems.append(flag_problem(spec, "enable_progress_bar", message))
    if given and spec.progress_bar_refresh_rate is not None:
        message = f"and a {given[0].name} in the callbacks: give the refresh rate to the {given[0].name}"
        problems.append(flag_problem(spec, "progress_bar_refresh_rate", message))
    if subclassed:  # drawn by the subclass: the script draws no bar of its own
        kind, rate, leave, position = None, 1, False, 0
    elif given:
        args = given[0].init_args
        kind: str | None = "tqdm" if given[0].name == "TQDMProgressBar" else "rich"
        rate, leave, position = args["refresh_rate"], args["leave"], args.get("process_position", 0)
    else:
        kind = "own" if t.enable_progress_bar else None
        rate, leave, position = spec.progress_bar_refresh_rate or 1, False, 0
    if rate == 0:
        kind = None
    if kind == "own":
        notices.append(
            "enable_progress_bar: Lightning's default bar is RichProgressBar when rich is installed, else"
            " TQDMProgressBar; the script draws TQDMProgressBar's, without tqdm. For rich's, name it:"
            " `callbacks: [RichProgressBar]`"
        )
    loggers = logging.loggers
    version = kind is not None and bool(loggers)
    return Progress(
        kind=kind,
        refresh_rate=rate,
        line_every=spec.progress_bar_refresh_rate or PLAIN_LINE_EVERY,
        leave=leave,
        process_position=position,
        version=version,
        joined_version=version and len(loggers) > 1,
        # Lightning shows a version that is a string (a name, a run id) by its last 4 characters
        text_version=version
        and (
            len(loggers) > 1
            or loggers[0].kind in ("mlflow", "wandb")
            or isinstance(loggers[0].args.get("version"), str)
        ),
        metrics=kind is not None and any(facts.logs_to_progress_bar for facts in (model, *callbacks)),
        steps_total=kind is not None and bounds.max_epochs == -1 and bounds.max_steps > 0,
        validation=kind is not None and validation.enabled,
        sanity=kind is not None and validation.sanity,
        last_epoch=bounds.max_epochs - 1,
        subclassed=bars[subclassed[0].class_path] if subclassed else None,
    )


def progress_callback(progress: Progress) -> Callback | None:
    """The progress bar as a callback of the script (called among the callbacks, where Lightning calls it)."""
    if progress.kind is None:
        return None
    hooks = {"on_train_start", "on_train_epoch_start", "on_train_batch_end"}
    hooks.add("teardown" if progress.kind == "rich" else "on_train_end")  # rich's display stops at teardown
    if progress.kind == "rich":
        hooks.add("on_exception")  # ... or when fit raises
    if progress.own or progress.postfix or (progress.kind == "tqdm" and progress.leave):
        hooks.add("on_train_epoch_end")
    if progress.sanity:
        hooks |= {"on_sanity_check_start", "on_sanity_check_end"}
    if progress.validation:
        hooks |= {"on_validation_start", "on_validation_batch_end", "on_validation_end"}
    cls = {"own": "ProgressBar", "tqdm": "TQDMProgressBar", "rich": "RichProgressBar"}[progress.kind]
    return Callback(construct=Construct("", cls), var="progress_bar", hooks=frozenset(hooks), kind="progress")


def is_progress_bar(ref: ClassRef) -> bool:
    return any(is_lightning(ref, name) for name in PROGRESS_BARS)
