"""The model summary and the profilers of a rendered script: the summary is Lightning's ModelSummary table, character
for character; the profilers report Lightning's tables, write their files where Lightning writes them, cover the run
they time, and leave the training as it was."""

from __future__ import annotations

import contextlib
import glob
import importlib
import io
import json
import os
import re
import runpy
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import torch

from tests.helpers import env_with_root, lightning_log_lines, render, write_spec

pytestmark = pytest.mark.slow

PLAIN = '''
import time

import torch
from torch.utils.data import DataLoader, TensorDataset


class Steps:
    """Steps, data and optimizer; the script serves self.log."""

    def training_step(self, batch, batch_idx):
        x, y = batch
        return torch.nn.functional.mse_loss(self(x).float(), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        self.log("val_loss", torch.nn.functional.mse_loss(self(x).float(), y))

    def loader(self, batches):
        g = torch.Generator().manual_seed(0)
        data = TensorDataset(torch.randn(4 * batches, 4, generator=g), torch.randn(4 * batches, 1, generator=g))
        return DataLoader(data, batch_size=4, shuffle=True)

    def train_dataloader(self):
        return self.loader(6)

    def val_dataloader(self):
        return self.loader(2)

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.1)


class Flat(Steps, torch.nn.Module):
    """No submodules: only the root's own parameters."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(4, 1))

    def forward(self, x):
        return x @ self.w


class Small(Steps, torch.nn.Module):
    """Dropout draws random numbers in every step: a profiler that drew any would change the training."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 32), torch.nn.Dropout(0.5), torch.nn.ReLU(), torch.nn.Linear(32, 1))

    def forward(self, x):
        return self.net(x)


class Slow(Steps, torch.nn.Module):
    """Steps that take a few milliseconds each, so that what is timed dwarfs the timing itself."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(4, 512), torch.nn.ReLU(), torch.nn.Linear(512, 1))

    def forward(self, x):
        time.sleep(0.003)
        return self.net(x)

    def on_train_epoch_start(self):
        time.sleep(0.002)


class Tested(Small):
    """Small, with test and predict runs (6 batches each)."""

    def test_step(self, batch, batch_idx):
        x, y = batch
        self.log("test_loss", torch.nn.functional.mse_loss(self(x).float(), y))

    def test_dataloader(self):
        return self.loader(6)

    def predict_step(self, batch, batch_idx):
        return self(batch[0])

    def predict_dataloader(self):
        return self.loader(6)
'''

# LightningModules, for Lightning's ModelSummary (their scripts import Lightning, which takes seconds)
LIT = '''
import torch
import pytorch_lightning as pl

from proj.plain import Steps


class Nested(Steps, pl.LightningModule):
    """Nested containers, a frozen weight, a submodule in eval mode, a parameter of the root's own."""

    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(
            torch.nn.Linear(4, 300), torch.nn.BatchNorm1d(300),
            torch.nn.Sequential(torch.nn.Linear(300, 4000), torch.nn.ReLU()), torch.nn.Linear(4000, 1),
        )
        self.head = torch.nn.Linear(1, 1)
        self.head.weight.requires_grad_(False)
        self.scale = torch.nn.Parameter(torch.ones(3))
        self.table = torch.nn.Embedding(1000, 64)
        self.table.eval()

    def forward(self, x):
        return self.head(self.net(x)) * self.scale.mean()


class WithExample(Nested):
    """An example input: the summary adds the sizes and FLOPs of a forward pass."""

    def __init__(self):
        super().__init__()
        self.example_input_array = torch.zeros(2, 4)


class WithHalfExample(Nested):
    """An example input in bfloat16: Lightning's summary runs it as given (not converted to the precision)."""

    def __init__(self):
        super().__init__()
        self.example_input_array = torch.zeros(2, 4, dtype=torch.bfloat16)


class Halving(pl.LightningDataModule):
    """Its on_after_batch_transfer keeps the first half of a tensor batch: Lightning's summary passes the model's
    example input through the data module's transfer hooks, so the table's sizes are the half's."""

    def train_dataloader(self):
        return Steps().loader(6)

    def on_after_batch_transfer(self, batch, dataloader_idx):
        return batch[: len(batch) // 2] if isinstance(batch, torch.Tensor) else batch


class Own(Steps, pl.LightningModule):
    """No submodules: only the root's own parameters."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.zeros(4, 1))

    def forward(self, x):
        return x @ self.w
'''

TRAINER = {
    "accelerator": "cpu",
    "logger": False,
    "enable_checkpointing": False,
    "enable_progress_bar": False,
    "enable_model_summary": False,
    "max_epochs": 2,
}


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("summary")
    (root / "proj").mkdir()
    (root / "proj" / "__init__.py").write_text("")
    (root / "proj" / "plain.py").write_text(PLAIN)
    (root / "proj" / "lit.py").write_text(LIT)
    return root


def spec(model: str, **trainer) -> dict:
    module = "plain" if model in ("Flat", "Small", "Slow", "Tested") else "lit"
    return {"seed_everything": 7, "model": f"proj.{module}.{model}", "trainer": {**TRAINER, **trainer}}


def rendered(project: Path, name: str, spec: dict) -> Path:
    """The script `name`.py the spec renders to, rendered from the project's directory (where `proj` is found)."""
    cwd = os.getcwd()
    os.chdir(project)
    try:
        script = project / f"{name}.py"
        script.write_text(render(write_spec(project, spec, f"{name}.yaml"), script_name=script.name))
        return script
    finally:
        os.chdir(cwd)


def run(script: Path, cwd: Path, times: int = 1) -> subprocess.CompletedProcess:
    """Run the script's main() `times` times, in one fresh interpreter (importing torch takes a while)."""
    code = f"import runpy\nfor _ in range({times}):\n    runpy.run_path({str(script)!r}, run_name='__main__')"
    return run_code(code, cwd, script.parent)


def run_code(code: str, cwd: Path, project: Path) -> subprocess.CompletedProcess:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env={**env_with_root(project), "OMP_NUM_THREADS": "1"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    return result


def script_namespace(script: Path) -> dict:
    """The script's functions and classes, without running main()."""
    sys.path.insert(0, str(script.parent))
    try:
        return runpy.run_path(str(script), run_name="loopgen_script")
    finally:
        sys.path.remove(str(script.parent))


def models_module(project: Path, name: str = "lit"):
    sys.path.insert(0, str(project))
    try:
        return importlib.import_module(f"proj.{name}")
    finally:
        sys.path.remove(str(project))


# --- the model summary


DEPTHS = [1, 2, 3, -1]


@pytest.mark.parametrize("model", ["Nested", "WithExample", "Own"])
def test_summary_is_lightnings_table(project: Path, model: str) -> None:
    """Lightning's ModelSummary(model, max_depth) for each depth, and the script's, on the same model."""
    from pytorch_lightning.utilities.model_summary import ModelSummary

    callbacks = [{"class_path": "ModelSummary", "init_args": {"max_depth": depth}} for depth in DEPTHS]
    script = rendered(project, f"summary_{model}", spec(model, callbacks=callbacks))
    assert [f"print_model_summary(model, {depth})" in script.read_text() for depth in DEPTHS] == [True] * 4
    summarize = script_namespace(script)["print_model_summary"]
    cls = getattr(models_module(project), model)
    for depth in DEPTHS:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            summarize(cls(), depth)
        assert printed.getvalue() == "\n" + str(ModelSummary(cls(), max_depth=depth)) + "\n", depth
    assert "In sizes" in printed.getvalue() if model == "WithExample" else "In sizes" not in printed.getvalue()


@pytest.mark.parametrize("model", ["Nested", "WithExample", "Own"])
def test_rich_summary_is_lightnings_rich_table(project: Path, model: str) -> None:
    """RichModelSummary entries: Lightning's RichModelSummary.summarize of the same summary, drawn by rich on the
    same console (the script imports rich for it)."""
    from pytorch_lightning.callbacks import RichModelSummary
    from pytorch_lightning.utilities.model_summary import summarize

    callbacks = [{"class_path": "RichModelSummary", "init_args": {"max_depth": depth}} for depth in DEPTHS]
    script = rendered(project, f"rich_summary_{model}", spec(model, callbacks=callbacks))
    assert "from rich import get_console" in script.read_text()
    print_summary = script_namespace(script)["print_model_summary"]
    cls = getattr(models_module(project), model)
    for depth in DEPTHS:
        ours, theirs = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(ours):
            print_summary(cls(), depth)
        with contextlib.redirect_stdout(theirs):
            summary = summarize(cls(), max_depth=depth)
            RichModelSummary.summarize(
                summary._get_summary_data(),
                summary.total_parameters,
                summary.trainable_parameters,
                summary.model_size,
                summary.total_training_modes,
                total_flops=summary.total_flops,
            )
        assert ours.getvalue() == theirs.getvalue(), depth
        assert "Total FLOPs" in ours.getvalue()


def test_a_model_summary_with_a_rich_one_is_refused(project: Path) -> None:
    callbacks = [{"class_path": "ModelSummary"}, {"class_path": "RichModelSummary", "init_args": {"max_depth": 2}}]
    with pytest.raises(Exception, match="a ModelSummary with a RichModelSummary is not supported by loopgen"):
        rendered(project, "mixed_summaries", spec("Nested", callbacks=callbacks))


def test_counts_are_written_as_lightning_writes_them(project: Path) -> None:
    from pytorch_lightning.utilities.model_summary.model_summary import get_human_readable_count

    readable_count = script_namespace(rendered(project, "counts", spec("Own", enable_model_summary=True)))[
        "readable_count"
    ]
    edges = [0, 1, 99, 100, 999, 1000, 1049, 1050, 99_949, 99_950, 100_000, 999_999, 10**6, 10**12 - 1, 10**12]
    numbers = edges + [10**15, 5 * 10**15] + [int(1.0001**k) for k in range(0, 300_000, 97)]
    assert [readable_count(n) for n in numbers] == [get_human_readable_count(n) for n in numbers]


def lightning_summary_log(project: Path, model: str, data: str | None = None, **trainer) -> str:
    """What Lightning's Trainer logs for its model summary, fitting `model` (on the data module `data`) with
    `trainer` flags."""
    import pytorch_lightning as pl

    with lightning_log_lines("pytorch_lightning.callbacks.model_summary") as records:
        pl.seed_everything(7, verbose=False)
        flags = {**TRAINER, **trainer, "max_epochs": 1, "limit_train_batches": 1, "limit_val_batches": 1}
        trainer_ = pl.Trainer(**flags, devices=1)
        module = models_module(project)
        trainer_.fit(getattr(module, model)(), datamodule=getattr(module, data)() if data else None)
    assert len(records) == 1
    return records[0]


@pytest.mark.parametrize(
    ("model", "flags"),
    [
        ("Nested", {"precision": "64", "callbacks": [{"class_path": "ModelSummary", "init_args": {"max_depth": 2}}]}),
        ("WithExample", {"precision": "bf16-mixed", "enable_model_summary": True}),
        ("WithHalfExample", {"precision": "bf16-true", "enable_model_summary": True}),
        (
            "Nested",
            {"precision": "16-true", "callbacks": [{"class_path": "ModelSummary", "init_args": {"max_depth": 2}}]},
        ),
    ],
    ids=["double_depth_2", "bf16_example_input", "bf16_true_example_input", "16_true_depth_2"],
)
def test_script_prints_what_lightnings_trainer_logs(project: Path, model: str, flags: dict) -> None:
    """At the start of fit, under the trainer's precision: 64 bits a parameter for precision 64, 16 for bf16-true and
    16-true; for mixed precision Lightning's warning and 32 bits, the example's forward pass under autocast."""
    from pytorch_lightning.callbacks import ModelSummary

    # an explicit ModelSummary: Lightning's default one is a RichModelSummary when rich is installed
    callbacks = [ModelSummary(max_depth=2 if "callbacks" in flags else 1)]
    precision = {"64": "64-true"}.get(flags["precision"], flags["precision"])
    lightning_flags = {"enable_model_summary": True, "precision": precision, "callbacks": callbacks}
    if flags["precision"] == "bf16-mixed":
        with pytest.warns(UserWarning, match="Precision bf16-mixed is not supported by the model summary"):
            expected = lightning_summary_log(project, model, **lightning_flags)
    else:
        expected = lightning_summary_log(project, model, **lightning_flags)
    script = rendered(project, f"fit_{model}_{flags['precision']}", spec(model, **flags))
    result = run(script, project)
    assert "\n" + expected + "\n" in "\n" + result.stdout
    assert ("not supported by the model summary" in result.stderr) == (precision == "bf16-mixed")


def test_the_example_passes_through_the_data_module_s_transfer_hooks(project: Path) -> None:
    from pytorch_lightning.callbacks import ModelSummary

    expected = lightning_summary_log(project, "WithExample", "Halving", callbacks=[ModelSummary(max_depth=1)])
    assert "[1, 4]" in expected  # the half of the example's 2 rows
    flags = {"enable_model_summary": True, "limit_val_batches": 0}
    script = rendered(project, "fit_halving", {**spec("WithExample", **flags), "data": "proj.lit.Halving"})
    result = run(script, project)
    assert "\n" + expected + "\n" in "\n" + result.stdout


def test_no_summary_leaves_no_code(project: Path) -> None:
    off = rendered(project, "summary_off", spec("Nested")).read_text()
    zero = rendered(
        project,
        "summary_zero",
        spec(
            "Nested",
            enable_model_summary=True,
            callbacks=[{"class_path": "ModelSummary", "init_args": {"max_depth": 0}}],
        ),
    ).read_text()
    for text in (off, zero):
        assert "summary" not in text.split('"""', 2)[2] and "readable_count" not in text
    # a ModelSummary entry prints even with the default one off, as in Lightning
    entry = spec("Nested", callbacks=[{"class_path": "pytorch_lightning.callbacks.ModelSummary"}])
    assert "print_model_summary(model)" in rendered(project, "summary_entry", entry).read_text()


# --- the profilers


def report_rows(text: str) -> dict[str, tuple[float, int, float]]:
    """The rows of Lightning's extended SimpleProfiler table: action -> (mean, calls, total)."""
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("Action",) and cells[2].isdigit():
            rows[cells[0]] = (float(cells[1]) if cells[1] != "-" else 0.0, int(cells[2]), float(cells[3]))
    return rows


def test_simple_profiler_times_every_part_of_the_run(project: Path) -> None:
    """The actions partition the run: their times add up to the Total row, and the Total row is the run (main(),
    timed from outside, less building the model)."""
    flags = {"profiler": "simple", "val_check_interval": 0.5}
    script = rendered(project, "simple", spec("Slow", **flags))
    code = textwrap.dedent(f"""
        import runpy, time
        import proj.plain
        proj.plain.Slow()  # torch's first operations take a while: not in the measured run
        main = runpy.run_path({str(script)!r})["main"]
        start = time.perf_counter()
        main()
        print(f"main took {{time.perf_counter() - start}}")
        """)
    result = run_code(code, project, project)
    rows = report_rows(result.stdout)
    total = rows.pop("Total")[2]
    main = float(re.search(r"main took ([0-9.]+)", result.stdout).group(1))
    actions = sum(seconds for _, _, seconds in rows.values())
    assert abs(actions - total) < 0.03 * total, (actions, total, result.stdout)
    assert 0.9 * main < total <= main, (total, main)
    # each part of the loop, under Lightning's names; 2 epochs of 6 batches, validation every 3 batches
    assert rows["[Strategy]SingleDeviceStrategy.training_step"][1] == 12
    assert rows["[Strategy]SingleDeviceStrategy.backward"][1] == 12
    assert rows["[LightningModule]Slow.optimizer_step"][1] == 12
    assert rows["[LightningModule]Slow.optimizer_zero_grad"][1] == 12
    assert rows["[_TrainingEpochLoop].train_dataloader_next"][1] == 12
    assert rows["[Strategy]SingleDeviceStrategy.validation_step"][1] == 2 + 4 * 2  # sanity check, then 4 validations
    assert rows["[_EvaluationLoop].val_next"][1] == 10
    assert rows["[LightningModule]Slow.on_train_epoch_start"][1] == 2
    assert {"[LightningModule]Slow.train_dataloader", "[LightningModule]Slow.val_dataloader"} <= rows.keys()


def test_simple_profiler_report_is_lightnings_table(project: Path) -> None:
    """The same durations give Lightning's SimpleProfiler summary, character for character, extended or not."""
    from pytorch_lightning.profilers import SimpleProfiler

    durations = {"[Strategy]SingleDeviceStrategy.training_step": [0.25, 0.5], "save_checkpoint": [0.125], "x": [1.0]}
    for extended in (True, False):
        profiler = {"class_path": "SimpleProfiler", "init_args": {"extended": extended}}
        script = rendered(project, f"simple_table_{extended}", spec("Flat", profiler=profiler))
        ours = script_namespace(script)["SimpleProfiler"]()
        lightning = SimpleProfiler(extended=extended)
        lightning._stage = "fit"
        for profiler_ in (ours, lightning):
            profiler_.start_time = 100.0
        ours.durations = {action: list(times) for action, times in durations.items()}
        lightning.recorded_durations.update({action: list(times) for action, times in durations.items()})
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(time, "perf_counter", lambda: 104.0)
            printed = io.StringIO()
            with contextlib.redirect_stdout(printed):
                ours.describe()
            expected = lightning.summary()
        assert printed.getvalue() == expected + "\n"


def test_profiler_report_goes_to_its_file(project: Path, tmp_path: Path) -> None:
    """dirpath and filename: Lightning's fit-FILENAME.txt there (appended to), nothing printed; filename alone: in
    the logger's directory (Lightning's trainer.log_dir)."""
    profiler = {"class_path": "SimpleProfiler", "init_args": {"dirpath": str(tmp_path / "prof"), "filename": "perf"}}
    script = rendered(project, "simple_file", spec("Flat", profiler=profiler))
    assert "Profiler Report" not in run(script, project, times=2).stdout
    report = (tmp_path / "prof" / "fit-perf.txt").read_text()
    assert report.count("FIT Profiler Report") == 2 and "[Strategy]SingleDeviceStrategy.training_step" in report
    logged = {"class_path": "SimpleProfiler", "init_args": {"filename": "perf"}}
    flags = {"profiler": logged, "logger": True, "default_root_dir": str(tmp_path)}
    run(rendered(project, "simple_logger", spec("Flat", **flags)), project)
    assert (tmp_path / "lightning_logs" / "version_0" / "fit-perf.txt").is_file()


def test_advanced_profiler_reports_cprofile_stats(project: Path, tmp_path: Path) -> None:
    profiler = {"class_path": "AdvancedProfiler", "init_args": {"dirpath": str(tmp_path), "dump_stats": True}}
    script = rendered(project, "advanced", spec("Flat", profiler=profiler, max_epochs=1))
    out = run(script, project).stdout
    assert out.startswith("FIT Profiler Report\nProfile stats for: ")
    assert "Profile stats for: [Strategy]SingleDeviceStrategy.training_step\n" in out
    assert "Ordered by: cumulative time" in out and "function calls" in out
    assert "(training_step)" in out  # the model's training_step, as cProfile names it
    stats = tmp_path / "fit-[Strategy]SingleDeviceStrategy.training_step.prof"
    import pstats

    assert pstats.Stats(str(stats)).total_calls > 0


def test_pytorch_profiler_writes_a_trace(project: Path, tmp_path: Path) -> None:
    """Lightning's default schedule (training steps 3 to 5); the trace is JSON that Chrome's trace viewer reads,
    with the run's actions labelled."""
    profiler = {"class_path": "PyTorchProfiler", "init_args": {"dirpath": str(tmp_path), "row_limit": 5}}
    script = rendered(project, "pytorch", spec("Flat", profiler=profiler, max_epochs=1))
    out = run(script, project).stdout
    assert "FIT Profiler Report\nProfile stats for: records\n" in out
    (trace,) = tmp_path.glob("fit-[[]Strategy]SingleDeviceStrategy.training_step.*.pt.trace.json")
    events = json.loads(trace.read_text())["traceEvents"]
    names = {event.get("name") for event in events}
    assert "[pl][profile][Strategy]SingleDeviceStrategy.training_step" in names
    steps = [e for e in events if e.get("name") == "[pl][profile][Strategy]SingleDeviceStrategy.training_step"]
    assert len(steps) == 3  # the active steps of the schedule


def test_profilers_do_not_change_training(project: Path, tmp_path: Path) -> None:
    scripts = []
    for profiler in (None, "simple", "advanced", "pytorch"):
        flags = {"profiler": profiler, "enable_model_summary": True}
        scripts.append(str(rendered(project, f"weights_{profiler}", spec("Small", **flags))))
    code = f"import runpy, torch\nfor i, script in enumerate({scripts!r}):\n"
    code += "    torch.save(runpy.run_path(script)['main']().state_dict(), f'{i}.pt')"
    run_code(code, tmp_path, project)
    weights = [torch.load(tmp_path / f"{i}.pt") for i in range(len(scripts))]
    torch.manual_seed(7)  # the spec's seed: the weights the script starts from
    initial = models_module(project, "plain").Small().state_dict()
    assert not torch.equal(weights[0]["net.0.weight"], initial["net.0.weight"])  # training changed them
    for other in weights[1:]:
        assert all(torch.equal(weights[0][key], other[key]) for key in weights[0])


def test_profilers_report_each_evaluation_run_as_lightning(project: Path, tmp_path: Path) -> None:
    """test and predict: the report titled and its files named after the run (Lightning's stage), the run's own
    actions; fit --test: fit's report, then the test's (the simple profiler's holds fit's actions too, the advanced
    one's starts afresh, as Lightning's)."""
    from pytorch_lightning.profilers import AdvancedProfiler, PyTorchProfiler

    step = "[Strategy]SingleDeviceStrategy.test_step"

    def evaluated(kind: str, **args) -> Path:
        profiler = {"class_path": kind, "init_args": {"dirpath": str(tmp_path / kind), "filename": "perf", **args}}
        return rendered(project, f"evaluated_{kind}", spec("Tested", profiler=profiler, enable_checkpointing=True))

    def main(script: Path, *argv: str) -> None:
        run_code(f"import runpy, sys\nsys.argv = {[script.name, *argv]!r}\nrunpy.run_path({str(script)!r}, "
                 "run_name='__main__')", tmp_path, project)  # fmt: skip

    simple = evaluated("SimpleProfiler")
    main(simple, "test")
    main(simple, "predict")
    rows = report_rows((tmp_path / "SimpleProfiler" / "test-perf.txt").read_text())
    assert (tmp_path / "SimpleProfiler" / "test-perf.txt").read_text().startswith("TEST Profiler Report")
    assert rows[step][1] == rows["[_EvaluationLoop].test_next"][1] == 6
    assert (
        rows["[LightningModule]Tested.on_test_model_eval"][1] == 1
        and "[Strategy]SingleDeviceStrategy.training_step" not in rows
    )
    rows = report_rows((tmp_path / "SimpleProfiler" / "predict-perf.txt").read_text())
    assert rows["[Strategy]SingleDeviceStrategy.predict_step"][1] == rows["[_PredictionLoop].predict_next"][1] == 6

    advanced = evaluated("AdvancedProfiler", dump_stats=True)
    main(advanced, "fit", "--test", "best")
    lightning = AdvancedProfiler(dirpath=str(tmp_path / "AdvancedProfiler"), filename="perf", dump_stats=True)
    lightning.setup("test")
    assert (tmp_path / "AdvancedProfiler" / lightning._prepare_filename(action_name=step, extension=".prof")).is_file()
    fit, test = ((tmp_path / "AdvancedProfiler" / f"{stage}-perf.txt").read_text() for stage in ("fit", "test"))
    assert fit.startswith("FIT Profiler Report") and test.startswith("TEST Profiler Report")
    assert "training_step" in fit and "training_step" not in test and f"Profile stats for: {step}" in test

    pytorch = evaluated("PyTorchProfiler")
    main(pytorch, "test")
    lightning = PyTorchProfiler(dirpath=str(tmp_path / "PyTorchProfiler"), filename="perf")
    lightning.setup("test")
    name = lightning._prepare_filename(action_name=step, extension="")
    (trace,) = (tmp_path / "PyTorchProfiler").glob(f"{glob.escape(name)}.*.pt.trace.json")
    events = json.loads(trace.read_text())["traceEvents"]
    assert len([e for e in events if e.get("name") == f"[pl][profile]{step}"]) == 3  # the schedule's active steps
    assert (tmp_path / "PyTorchProfiler" / "test-perf.txt").read_text().startswith("TEST Profiler Report")
