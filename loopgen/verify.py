"""`loopgen verify SPEC [--steps N]`: train the spec with Lightning's Trainer and with the rendered script, each in
a fresh process, and compare the weights after every optimizer step.

Both runs get the same copy of the spec, with a recording callback added (a module written beside the copy) and
each its own default_root_dir; with --steps N, trainer.max_steps is N. The callback saves the model's state_dict
whenever trainer.global_step has moved (at on_train_batch_end, and at on_train_end), and the global steps at which
each validation and each training epoch ended. The Lightning side is LightningCLI's: the spec is its `fit` config
(subclass mode), instantiated by LightningCLI (seed, nested objects, optimizer and lr_scheduler, callbacks), then
trainer.fit. The script side runs the rendered script as `python train.py`.

A script with evaluation subcommands (validate, test, predict) has each compared too, once the weights are: the
Lightning side saves its fitted model's checkpoint, then runs `trainer.validate/test/predict(ckpt_path=that)`; the
script runs `python train.py COMMAND --ckpt-path that` in a fresh process; the metric dicts must be equal and the
predictions `torch.equal`.

Exit status: 0 identical; 1 different: the first differing step, or the script failed while Lightning trained;
2 could not compare, and why: Lightning or LightningCLI's jsonargparse[signatures] not installed, the reference
(Lightning) run failed, a module the script imports is not installed, neither run made an optimizer step, or the
spec does not render (the render's own messages). A missing package is never a difference.

Run as a module (`python -m loopgen.verify lightning CONFIG`) it is the Lightning side's process.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from loopgen.errors import LoopgenError

if TYPE_CHECKING:
    from loopgen.spec.sources import Sources

EXIT_IDENTICAL, EXIT_DIFFERENT, EXIT_CANNOT_COMPARE = 0, 1, 2
RECORDER_MODULE = "loopgen_verify_recorder"
OUT_VARIABLE = "LOOPGEN_VERIFY_OUT"  # the directory a side's recorder writes to
SIDE_VARIABLE = "LOOPGEN_VERIFY_SIDE"  # "lightning" or "script": set in each side's environment
UNAVAILABLE_FILE = "unavailable.txt"  # the Lightning side writes here why it cannot train (a package it lacks)
ERROR_FILE = "error.txt"  # and here the line of the error its run raised
MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '([\w.]+)'")
COMMANDS_VARIABLE = "LOOPGEN_VERIFY_COMMANDS"  # the evaluation subcommands the script has, for the Lightning side
FINAL_CHECKPOINT = "final.ckpt"  # the Lightning side's fitted model, which both sides evaluate
# run a script's main() with a command line, and save what it returned (an evaluation's results)
EVALUATE_SOURCE = (
    "import runpy, sys, torch; script, out, *argv = sys.argv[1:]; sys.argv = [script, *argv];"
    " torch.save(runpy.run_path(script)['main'](), out)"
)

NEEDS_LIGHTNING = "verify needs Lightning to train the reference run: pip install 'loopgen[verify]' (pytorch-lightning)"
NEEDS_JSONARGPARSE = (
    "LightningCLI, which reads the spec for the reference run, needs jsonargparse[signatures]:"
    " pip install 'loopgen[verify]' (or 'jsonargparse[signatures]')"
)

# The recording callback, written beside the spec's copy: both sides import it as a user callback.
RECORDER_SOURCE = '''"""Written by `loopgen verify`: records the weights after each optimizer step."""

import json
import os

import torch
from pytorch_lightning import Callback


class WeightRecorder(Callback):
    def __init__(self):
        self.directory = os.environ["{out}"]
        self.last_step = 0
        self.events = []

    def record(self, trainer, pl_module):
        if trainer.global_step != self.last_step:
            self.last_step = trainer.global_step
            state = {{k: v.detach().cpu().clone() for k, v in pl_module.state_dict().items()}}
            torch.save(state, os.path.join(self.directory, f"step_{{trainer.global_step}}.pt"))

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        self.record(trainer, pl_module)

    def on_validation_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            self.events.append(["validation", trainer.global_step])

    def on_train_epoch_end(self, trainer, pl_module):
        self.events.append(["epoch", trainer.global_step])

    def on_train_end(self, trainer, pl_module):
        self.record(trainer, pl_module)
        with open(os.path.join(self.directory, "events.json"), "w") as file:
            json.dump(self.events, file)
'''


@dataclass(frozen=True)
class Difference:
    step: int
    tensor: str
    max_abs: float
    hint: str


def lightning_package() -> str | None:
    """`pytorch_lightning` or `lightning.pytorch`, whichever is installed (None: neither)."""
    if importlib.util.find_spec("pytorch_lightning") is not None:
        return "pytorch_lightning"
    if importlib.util.find_spec("lightning") is not None:
        return "lightning.pytorch"
    return None


def verify(spec_path: Path | Sources, steps: int | None, out: TextIO | None = None) -> int:
    """Train both ways, print "identical: ..." or the first difference to `out` (stdout), return the exit status
    (EXIT_IDENTICAL or EXIT_DIFFERENT); a LoopgenError when the runs cannot be compared, saying why."""
    import yaml

    out = out or sys.stdout
    from loopgen.pipeline import project_root, read_classes, render_spec
    from loopgen.source.roots import default_roots
    from loopgen.spec.load import class_accepts, load_spec
    from loopgen.spec.sources import Sources

    package = lightning_package()
    if package is None:
        raise LoopgenError(f"cannot compare: {NEEDS_LIGHTNING}")
    if importlib.util.find_spec("torch") is None:
        raise LoopgenError("cannot compare: verify needs torch to train both runs: pip install 'loopgen[verify]'")
    spec = load_spec(spec_path)  # every spec problem, reported as render reports it
    model, *_ = read_classes(spec, default_roots(Sources.of(spec_path).path))
    if model is not None and not model.is_lightning_module:
        raise LoopgenError(
            f"cannot compare: {spec.model.class_path} is a plain torch.nn.Module (loopgen's model protocol), which"
            " Lightning's Trainer cannot train; verify compares LightningModules"
        )
    if spec.seed_everything is False:
        raise LoopgenError(
            "cannot compare: seed_everything: false: the two runs would start from different random weights; set a"
            " seed to verify"
        )
    sources = Sources.of(spec_path)
    data = sources.compose(class_accepts(sources.path)).data  # the composed spec, as LightningCLI would parse it
    root = project_root(spec_path)
    with tempfile.TemporaryDirectory(prefix="loopgen-verify-") as tmp:
        work = Path(tmp)
        (work / f"{RECORDER_MODULE}.py").write_text(
            RECORDER_SOURCE.format(out=OUT_VARIABLE).replace("pytorch_lightning", package), encoding="utf-8"
        )
        config = _config(data, spec.seed_everything, steps)
        sides = {}
        for side in ("lightning", "script"):
            (work / side).mkdir()
            side_config = copy.deepcopy(config)
            side_config["trainer"]["default_root_dir"] = str(work / side)
            config_path = work / f"{side}.yaml"
            config_path.write_text(yaml.safe_dump(side_config, sort_keys=False), encoding="utf-8")
            sides[side] = config_path
        script = work / "train.py"
        text, _ = render_spec(sides["script"], script)  # the user's modules are found from the current directory
        script.write_text(text, encoding="utf-8")
        env = dict(os.environ)
        paths = [str(root), str(work), str(Path(__file__).resolve().parent.parent)]
        env["PYTHONPATH"] = os.pathsep.join([*paths, *filter(None, [env.get("PYTHONPATH")])])

        def run(side: str, command: list[str]) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                command,
                env={**env, OUT_VARIABLE: str(work / side), SIDE_VARIABLE: side},
                capture_output=True,
                text=True,
                check=False,
            )

        commands = subcommands_of(text)
        env[COMMANDS_VARIABLE] = ",".join(commands)
        reference = run("lightning", [sys.executable, "-m", "loopgen.verify", "lightning", str(sides["lightning"])])
        if reference.returncode != 0:
            unavailable = work / "lightning" / UNAVAILABLE_FILE
            if unavailable.is_file():
                raise LoopgenError(f"cannot compare: {unavailable.read_text(encoding='utf-8').strip()}")
            error = work / "lightning" / ERROR_FILE
            line = error.read_text(encoding="utf-8").strip() if error.is_file() else _last_line(reference)
            raise LoopgenError(f"cannot compare: the Lightning run failed (exit status {reference.returncode}): {line}")
        ours = run("script", [sys.executable, str(script)])
        if ours.returncode != 0:
            missing = MISSING_MODULE.fullmatch(_last_line(ours))
            if missing:
                raise LoopgenError(
                    f"cannot compare: the script imports {missing[1]}, which is not installed here (Lightning trained"
                    " without it); install it and verify again"
                )
            tail = "\n".join((ours.stdout + ours.stderr).strip().splitlines()[-15:])
            print(
                f"different: the script failed (exit status {ours.returncode}) where Lightning trained:\n{tail}",
                file=out,
            )
            return EXIT_DIFFERENT
        status = _report(work / "lightning", work / "script", out)
        if status != EXIT_IDENTICAL or not commands:
            return status
        final = work / "lightning" / FINAL_CHECKPOINT
        for command in commands:
            result = work / "script" / f"{command}.pt"
            argv = [str(script), str(result), command, "--ckpt-path", str(final)]
            ours = run("script", [sys.executable, "-c", EVALUATE_SOURCE, *argv])
            if ours.returncode != 0:
                tail = "\n".join((ours.stdout + ours.stderr).strip().splitlines()[-15:])
                print(f"different: `{command}` failed in the script (exit status {ours.returncode}):\n{tail}", file=out)
                return EXIT_DIFFERENT
            difference = _evaluation_difference(work / "lightning" / f"{command}.pt", result)
            if difference:
                print(f"different: {command}: {difference}", file=out)
                return EXIT_DIFFERENT
        print(f"identical: {', '.join(commands)} of the fitted weights", file=out)
        return EXIT_IDENTICAL


def subcommands_of(text: str) -> list[str]:
    """The evaluation subcommands a rendered script offers (its command line's choices besides fit)."""
    found = re.search(r'"command",.*?choices=\(([^)]*)\)', text, re.DOTALL)
    return re.findall(r'"(\w+)"', found[1])[1:] if found else []


def _evaluation_difference(lightning: Path, script: Path) -> str | None:
    """How what an evaluation returned differs between the two sides (None: not at all): the metric dicts (one per
    loader) value by value, the predictions with torch.equal."""
    import torch

    theirs = torch.load(lightning, weights_only=False)
    ours = torch.load(script, weights_only=False)

    def compare(a: Any, b: Any, where: str) -> str | None:
        if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
            same = isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor) and a.shape == b.shape
            if same and torch.equal(a, b):
                return None
            return f"{where}: the tensors differ (max abs difference {_max_abs(a, b):.6g})" if same else f"{where}"
        if isinstance(a, dict) and isinstance(b, dict):
            if a.keys() != b.keys():
                return f"{where}: Lightning logged {sorted(a)}, the script {sorted(b)}"
            return next((d for k in a if (d := compare(a[k], b[k], f"{where}{k}")) is not None), None)
        if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
            if len(a) != len(b):
                return f"{where}: Lightning gave {len(a)} items, the script {len(b)}"
            return next(
                (d for i, (x, y) in enumerate(zip(a, b)) if (d := compare(x, y, f"{where}[{i}] ")) is not None), None
            )
        return None if a == b else f"{where}: Lightning {a!r}, the script {b!r}"

    return compare(theirs, ours, "")


def _last_line(result: subprocess.CompletedProcess[str]) -> str:
    """The last line a failed run printed: its error's, when it raised one with a one-line message."""
    lines = (result.stderr.strip() or result.stdout.strip()).splitlines()
    return lines[-1].strip() if lines else "(it printed nothing)"


def _config(data: dict[str, Any], seed: int | bool, steps: int | None) -> dict[str, Any]:
    """The spec's copy both sides train: a fixed seed, the recorder among the callbacks, max_steps for --steps."""
    config = copy.deepcopy(data)
    config.pop("loop", None)  # loopgen-only facts; Lightning finds them at run time
    if seed is True:
        config["seed_everything"] = 0  # a seed chosen at run time would differ between the runs
    trainer = config["trainer"] = dict(config.get("trainer") or {})
    trainer["callbacks"] = [*(trainer.get("callbacks") or []), {"class_path": f"{RECORDER_MODULE}.WeightRecorder"}]
    if steps is not None:
        trainer["max_steps"] = steps
    return config


def _report(lightning: Path, script: Path, out: TextIO) -> int:
    import torch

    theirs, ours = _steps(lightning), _steps(script)
    events = json.loads((lightning / "events.json").read_text()) if (lightning / "events.json").is_file() else []
    previous = 0
    tensors = 0
    for step in sorted(set(theirs) | set(ours)):
        if step not in theirs or step not in ours:
            last = (max(theirs, default=0), max(ours, default=0))
            print(
                f"different: the runs made different numbers of optimizer steps (Lightning {last[0]}, script"
                f" {last[1]}): the loop's bounds, a stop request, or the data's length",
                file=out,
            )
            return EXIT_DIFFERENT
        a = torch.load(theirs[step], weights_only=True)
        b = torch.load(ours[step], weights_only=True)
        if a.keys() != b.keys():
            print(
                f"different: at step {step} the models hold different tensors: {sorted(a.keys() ^ b.keys())}", file=out
            )
            return EXIT_DIFFERENT
        for name in a:
            x, y = a[name], b[name]
            if x.shape != y.shape or x.dtype != y.dtype or not torch.equal(x, y):
                max_abs = _max_abs(x, y)
                hint = _hint(step, previous, events)
                print(f"different: step {step}, tensor {name}, max abs difference {max_abs:.6g}", file=out)
                print(f"  {hint}", file=out)
                return EXIT_DIFFERENT
        tensors = len(a)
        previous = step
    steps = len(theirs)
    if steps == 0:
        raise LoopgenError(
            "cannot compare: neither run made an optimizer step (the spec's bounds, limit_train_batches, or an empty"
            " train loader); let it train at least one step"
        )
    print(f"identical: {steps} steps, {tensors} tensors", file=out)
    return EXIT_IDENTICAL


def _steps(directory: Path) -> dict[int, Path]:
    return {int(path.stem.split("_")[1]): path for path in directory.glob("step_*.pt")}


def _max_abs(x: Any, y: Any) -> float:
    if x.shape != y.shape:
        return float("inf")
    return (x.double() - y.double()).abs().max().item() if x.numel() else 0.0


def _hint(step: int, previous: int, events: list[list[Any]]) -> str:
    """Which part of the loop the first differing step points to."""
    if previous == 0:
        return (
            "the first optimizer step already differs: the model's construction (init args, seed), the first batch,"
            " forward / loss / backward, precision, gradient clipping or the optimizer"
        )
    between = [(kind, at) for kind, at in events if previous <= at < step]
    if any(kind == "validation" for kind, _ in between):
        at = next(at for kind, at in between if kind == "validation")
        return (
            f"the first step after the validation at step {at}: validation (its hooks, what it logs, the random"
            " state it leaves), or what acts on its results (ReduceLROnPlateau, monitoring callbacks)"
        )
    if between:
        at = between[0][1]
        return (
            f"the first step after the epoch that ended at step {at}: epoch-end hooks, LR schedulers stepped per"
            " epoch, the next epoch's data order (shuffling, reloading)"
        )
    return (
        f"mid-epoch (steps up to {previous} identical): the data order, accumulation, an LR scheduler stepped per"
        " step, or a hook acting at this step"
    )


class _Unavailable(Exception):
    """A package the reference run needs is not installed: why, and what to install."""


def _train_lightning(config_path: Path) -> None:
    """The Lightning side: LightningCLI reads the config (subclass mode) and builds everything, then fits. When a
    package it needs is missing, it writes why to UNAVAILABLE_FILE and exits; when the run raises, it writes the
    error's line to ERROR_FILE (its traceback follows as usual)."""
    import yaml

    out = Path(os.environ[OUT_VARIABLE])
    try:
        module, cli_module = _import_lightning()
    except _Unavailable as reason:
        (out / UNAVAILABLE_FILE).write_text(str(reason), encoding="utf-8")
        sys.exit(EXIT_CANNOT_COMPARE)
    config = yaml.safe_load(config_path.read_text(encoding="utf-8"))
    ckpt_path = config.pop("ckpt_path", None)
    weights_only = config.pop("weights_only", None)
    # how fit loads ckpt_path, as the script does: an argument of Lightning >= 2.6, given only when the spec sets it
    fit_options = {} if weights_only is None else {"weights_only": weights_only}
    try:
        cli = cli_module.LightningCLI(
            module.LightningModule,
            module.LightningDataModule if config.get("data") is not None else None,
            subclass_mode_model=True,
            subclass_mode_data=config.get("data") is not None,
            run=False,
            args=config,
            save_config_callback=None,
        )
        cli.trainer.fit(cli.model, datamodule=cli.datamodule, ckpt_path=ckpt_path, **fit_options)
        commands = [c for c in os.environ.get(COMMANDS_VARIABLE, "").split(",") if c]
        if commands:  # the script's evaluation subcommands, on the fitted weights, from a checkpoint of them
            import torch

            final = out / FINAL_CHECKPOINT
            cli.trainer.save_checkpoint(final)
            for command in commands:
                result = getattr(cli.trainer, command)(cli.model, datamodule=cli.datamodule, ckpt_path=str(final))
                torch.save(result, out / f"{command}.pt")
    except Exception as error:
        (out / ERROR_FILE).write_text(_error_line(error), encoding="utf-8")
        raise


def _error_line(error: BaseException) -> str:
    """The error in one line: the innermost one it was raised from (jsonargparse raises a ValueError listing the
    types it tried from the model's own error), the first line of its message."""
    while error.__cause__ is not None:
        error = error.__cause__
    message = str(error).strip().splitlines()
    return f"{type(error).__name__}: {message[0]}" if message else type(error).__name__


def _import_lightning() -> tuple[Any, Any]:
    """Lightning's package and its `cli` module, ready to parse; _Unavailable naming what to install."""
    package = lightning_package()
    if package is None:
        raise _Unavailable(NEEDS_LIGHTNING)
    try:
        module = importlib.import_module(package)
    except ImportError as error:
        raise _Unavailable(f"{NEEDS_LIGHTNING} ({package} does not import: {error})") from None
    try:
        cli_module = importlib.import_module(f"{package}.cli")
        cli_module.LightningArgumentParser()  # Lightning checks jsonargparse[signatures] (and its version) here
    except ImportError as error:
        raise _Unavailable(f"{NEEDS_JSONARGPARSE} ({error})") from None
    return module, cli_module


if __name__ == "__main__":
    if sys.argv[1:2] == ["lightning"] and len(sys.argv) == 3:
        _train_lightning(Path(sys.argv[2]))
    else:
        sys.exit("usage: python -m loopgen.verify lightning CONFIG.yaml")
