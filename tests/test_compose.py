"""Specs composed of several config files and command-line overrides, as LightningCLI composes them: the composed
spec against what LightningCLI's own parser (jsonargparse) makes of the same arguments, errors naming the source
of a bad key, and every command that reads a spec taking the same sources."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from loopgen.cli import main
from loopgen.errors import LoopgenError
from loopgen.spec.load import class_accepts, load_spec
from loopgen.spec.sources import Sources, split_arguments
from tests.helpers import ROOT

BASE = {
    "seed_everything": 42,
    "model": {"class_path": "examples.lightning_models.LitClassifier", "init_args": {"hidden": 32, "lr": 0.05}},
    "trainer": {
        "accelerator": "cpu",
        "max_epochs": 3,
        "logger": False,
        "enable_progress_bar": False,
        "callbacks": [{"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "save_top_k": 2}}],
    },
}
EXP = {
    "model": {"init_args": {"lr": 0.1}},
    "trainer": {"max_epochs": 7, "callbacks": [{"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss"}}]},
}

# (the arguments after `-c base.yaml`, keys whose values the composed spec must have: those given, and kept)
CASES = {
    "two_files": (
        ["-c", "exp.yaml"],
        {"trainer.max_epochs": 7, "model.init_args.lr": 0.1, "model.init_args.hidden": 32},
    ),
    "overrides": (
        ["-c", "exp.yaml", "--trainer.max_epochs=5", "--model.init_args.lr=0.01", "--seed_everything", "7"],
        {"trainer.max_epochs": 5, "model.init_args.lr": 0.01, "seed_everything": 7},
    ),
    "init_arg_shorthand_and_yaml_floats": (["--model.lr", "1e-3", "--model.hidden=8"], {"model.init_args.lr": 0.001}),
    "append_and_set_the_last": (
        ["--trainer.callbacks+=EarlyStopping", "--trainer.callbacks.monitor=val_acc", "--trainer.callbacks.patience=5"],
        {"trainer.callbacks.1.init_args.patience": 5, "trainer.callbacks.0.init_args.save_top_k": 2},
    ),
    "list_replaced": (
        ["--trainer.callbacks=[{class_path: EarlyStopping, init_args: {monitor: a}}]"],
        {"trainer.callbacks.0.init_args.monitor": "a"},
    ),
    "later_file_wins_over_earlier_override": (["--trainer.max_epochs=5", "-c", "exp.yaml"], {"trainer.max_epochs": 7}),
    "optimizer_class_change_keeps_what_it_takes": (
        ["--optimizer=SGD", "--optimizer.lr=0.2", "--optimizer.momentum=0.9", "--optimizer=Adam"],
        {"optimizer.class_path": "torch.optim.Adam", "optimizer.init_args.lr": 0.2},
    ),
    "model_class_change_keeps_what_it_takes": (
        ["--model.batch_size=16", "--model=examples.lightning_models.LitEvaluated"],
        {"model.init_args.hidden": 32, "model.init_args.lr": 0.05},
    ),
    "nested_mapping_merged": (
        ["--trainer={max_epochs: 4, min_epochs: 2}"],
        {"trainer.max_epochs": 4, "trainer.min_epochs": 2, "trainer.accelerator": "cpu"},
    ),
}


@pytest.fixture
def configs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    (tmp_path / "base.yaml").write_text(yaml.safe_dump(BASE, sort_keys=False))
    (tmp_path / "exp.yaml").write_text(yaml.safe_dump(EXP, sort_keys=False))
    return tmp_path


def composed(args: list[str]) -> dict[str, Any]:
    sources, rest = split_arguments(args, ())
    assert not rest
    spec = Sources(tuple(sources))
    return spec.compose(class_accepts(spec.path)).data


def lightning_cli(args: list[str]) -> dict[str, Any]:
    """The config LightningCLI's parser composes from `args` (every default filled in)."""
    import pytorch_lightning as pl
    from pytorch_lightning.cli import LightningCLI

    cli = LightningCLI(
        pl.LightningModule,
        subclass_mode_model=True,
        run=False,
        args=args,
        save_config_callback=None,
        auto_configure_optimizers=True,
    )
    return yaml.safe_load(cli.parser.dump(cli.config, skip_none=False))


def canonical(value: Any) -> Any:
    """Class paths as jsonargparse writes them (Lightning's and torch's by their full import path)."""
    from loopgen.spec.support import lightning_callback, lightning_logger

    if isinstance(value, dict):
        out = {key: canonical(item) for key, item in value.items()}
        path = out.get("class_path")
        if isinstance(path, str) and "." not in path:
            out["class_path"] = lightning_callback(path) or lightning_logger(path) or path
        return out
    if isinstance(value, list):
        return [canonical(item) for item in value]
    return value


def leaves(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = ((str(i), item) for i, item in enumerate(value))
    else:
        return {prefix: value}
    out: dict[str, Any] = {}
    for key, item in items:
        out.update(leaves(item, f"{prefix}.{key}" if prefix else str(key)))
    return out


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize("case", CASES)
def test_composed_as_lightning_cli_composes(configs: Path, case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("sys.argv", ["loopgen"])
    args, expected = CASES[case]
    ours = leaves(canonical(composed(["-c", "base.yaml", *args])))
    theirs = leaves(lightning_cli(["-c", "base.yaml", *args]))
    assert {key: value for key, value in expected.items()} == {key: ours.get(key) for key in expected}
    # every key of ours has jsonargparse's value (which also holds every default): nothing kept that it dropped
    assert {key: theirs.get(key, "<absent>") for key in ours} == ours
    # lists of the same length (a list replaced, or appended to, the same way)
    for key in ("trainer.callbacks",):
        count = len([k for k in theirs if k.startswith(f"{key}.") and k.endswith(".class_path")])
        assert count == len([k for k in ours if k.startswith(f"{key}.") and k.endswith(".class_path")])


def test_a_pasted_lightning_cli_command_line(configs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["render", "fit", "--config", "base.yaml", "--config=exp.yaml", "--trainer.max_epochs", "4"]) == 0
    pasted = capsys.readouterr().out
    assert main(["render", "base.yaml", "-c", "exp.yaml", "--trainer.max_epochs=4"]) == 0
    plain = capsys.readouterr().out
    assert "MAX_EPOCHS = 4\n" in pasted
    assert (
        pasted.split("spec sha256")[1].split("composed of")[0] == plain.split("spec sha256")[1].split("composed of")[0]
    )
    assert main(["render", "validate", "-c", "base.yaml"]) == 2
    assert "the script runs `validate` itself" in capsys.readouterr().err


def test_print_config(configs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ["-c", "base.yaml", "-c", "exp.yaml", "--trainer.callbacks+=EarlyStopping", "--trainer.callbacks.monitor=x"]
    assert main(["render", *args, "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed == composed(args)
    assert printed["trainer"]["callbacks"][-1] == {
        "class_path": "pytorch_lightning.callbacks.EarlyStopping",
        "init_args": {"monitor": "x"},
    }


def test_a_single_file_reads_as_it_always_did(configs: Path) -> None:
    spec = load_spec(Path("base.yaml"))
    line = Path("base.yaml").read_text().splitlines().index("  max_epochs: 3") + 1
    assert spec.line("trainer.max_epochs") == line and type(spec.line("trainer.max_epochs")) is int
    assert spec.sources == () and spec.name == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["-c", "exp.yaml"], None),
        (["-c", "bad.yaml"], "trainer.max_epochz (bad.yaml line 3): unknown key"),
        (["--trainer.max_epochz=3"], "trainer.max_epochz (--trainer.max_epochz=3): unknown key"),
        (["--trainer.max_epochs=many"], "trainer.max_epochs (--trainer.max_epochs=many): expected"),
        (["--model.init_args.hiden=3"], "model.init_args.hiden (--model.init_args.hiden=3): unknown argument"),
        (["--trainer.callbacks+=Earlystopping"], "Earlystopping is not one of Lightning's callbacks"),
        (["--model=Net"], "--model=Net: give the class's import path"),
        (["--trainr.max_epochs=3"], "--trainr.max_epochs=3: trainr is not a spec key"),
        (["-c", "missing.yaml"], "missing.yaml: no such file"),
        (["-c", "broken.yaml"], "broken.yaml (line 3): invalid YAML"),
        (["--trainer.max_epochs"], "--trainer.max_epochs: expected a value after it"),
        (["--trainer.callbacks=\n- EarlyStopping"], "--trainer.callbacks: an override is one line"),
    ],
)
def test_errors_name_the_source(
    configs: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    (configs / "bad.yaml").write_text("trainer:\n  accelerator: cpu\n  max_epochz: 3\n")
    (configs / "broken.yaml").write_text("trainer:\n  max_epochs: [3\n")
    status = main(["render", "-c", "base.yaml", *args, "-o", "train.py"])
    err = capsys.readouterr().err
    if message is None:
        assert status == 0, err
        return
    assert status == 2 and message in err, err
    assert "Traceback" not in err and not Path("train.py").exists()


def test_where_sorts_problems_by_source(configs: Path) -> None:
    (configs / "bad.yaml").write_text("trainer:\n  max_epochz: 3\n")
    with pytest.raises(LoopgenError) as raised:
        load_spec(
            Sources(tuple(split_arguments(["-c", "base.yaml", "--trainer.min_epochz=1", "-c", "bad.yaml"], ())[0]))
        )
    assert [str(p).split(":")[0] for p in raised.value.problems] == [
        "trainer.min_epochz (--trainer.min_epochz=1)",
        "trainer.max_epochz (bad.yaml line 2)",
    ]


def test_diff_and_run_take_sources(configs: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", "base.yaml", "--", "base.yaml", "--trainer.max_epochs=5"]) == 1
    out = capsys.readouterr().out
    assert "-MAX_EPOCHS = 3\n" in out and "+MAX_EPOCHS = 5\n" in out
    assert main(["diff", "base.yaml", "base.yaml"]) == 0
    tiny = ["--trainer.max_epochs=1", "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1"]
    env = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env]))
    try:
        status = main(["run", "-c", "base.yaml", *tiny, "--trainer.callbacks=[]", "--keep", ".", "--", "--help"])
    finally:
        os.environ.pop("PYTHONPATH") if env is None else os.environ.update(PYTHONPATH=env)
    assert status == 0
    assert "MAX_EPOCHS = 1\n" in Path("base.py").read_text()


EXAMPLE_SPECS = sorted((ROOT / "examples").glob("*.yaml"))


def split_leaves(value: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    """The spec's values by key path: mappings with string keys opened, anything else (lists, {epoch: factor}
    schedules, empty mappings) whole."""
    if isinstance(value, dict) and value and all(isinstance(key, str) for key in value):
        return [leaf for key, item in value.items() for leaf in split_leaves(item, (*path, key))]
    return [(path, value)]


def put(target: dict, path: tuple[str, ...], value: Any) -> None:
    for key in path[:-1]:
        target = target.setdefault(key, {})
    target[path[-1]] = value


@pytest.mark.filterwarnings("ignore")
@settings(
    max_examples=20,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    phases=[Phase.explicit, Phase.reuse, Phase.generate],  # each example renders twice: no slow shrinking
)
@given(data=st.data())
def test_a_spec_split_into_files_and_overrides_composes_to_itself(data: st.DataObject, tmp_path: Path) -> None:
    """Any example spec, its values spread at random over two files and command-line overrides, composes back to
    the same spec, and renders the script that spec written as one file renders to (but for the header, which
    names its sources)."""

    path = data.draw(st.sampled_from(EXAMPLE_SPECS), label="spec")
    original = yaml.safe_load(path.read_text())
    files: list[dict] = [{}, {}]
    overrides = []
    for key, value in split_leaves(original):
        where = data.draw(st.sampled_from(["base", "exp", "override"]), label=".".join(key))
        if where == "override":
            flow = yaml.safe_dump(value, default_flow_style=True, width=10**6).strip().removesuffix("\n...")
            overrides.append(f"--{'.'.join(key)}={flow}")
        else:
            put(files[where == "exp"], key, value)
    overrides.sort(key=lambda option: not option.split("=")[0].endswith("class_path"))  # a class before its args
    directory = tmp_path / f"split-{path.stem}-{len(overrides)}"
    directory.mkdir(exist_ok=True)
    names = []
    for index, part in enumerate(files):
        names += ["-c", str(directory / f"{index}.yaml")]
        (directory / f"{index}.yaml").write_text(yaml.safe_dump(part, sort_keys=False))
    args = [*names, *overrides]

    # a class named alone (`model: pkg.Net`) and given by `--model=pkg.Net` are the same object to LightningCLI
    def objects(spec: dict) -> dict:
        slots = ("model", "data", "optimizer", "lr_scheduler")
        return {key: {"class_path": v} if key in slots and isinstance(v, str) else v for key, v in spec.items()}

    assert objects(composed(args)) == objects(original)
    from loopgen.pipeline import render_spec

    # the same script as the composed spec written as one file (keyword arguments in the order composed)
    ours, _ = render_spec(Sources(tuple(split_arguments(args, ())[0])), directory / "train.py")
    (directory / "whole.yaml").write_text(yaml.safe_dump(composed(args), sort_keys=False))
    whole, _ = render_spec(directory / "whole.yaml", directory / "train.py")
    assert ours.split('"""', 2)[2] == whole.split('"""', 2)[2]


@pytest.mark.filterwarnings("ignore")
@pytest.mark.parametrize(
    "flag", ["limit_train_batches", "limit_val_batches", "limit_test_batches", "limit_predict_batches",
             "val_check_interval", "overfit_batches"],
)  # fmt: skip
@pytest.mark.parametrize("text", ["1", "1.0", "0.5", "3", "0"])
def test_int_or_float_flags_are_read_with_lightning_clis_type(configs: Path, flag: str, text: str) -> None:
    """A number of batches (int) or a fraction of them (float): `1` is one batch and `1.0` all of them, so the
    type matters, and loopgen reads each as LightningCLI's parser (jsonargparse) types it, in a config file and on
    the command line."""
    if flag == "val_check_interval" and text == "0":
        pytest.skip("Lightning's Trainer refuses val_check_interval 0, and loopgen as the spec is read")
    (configs / "limit.yaml").write_text(f"trainer:\n  {flag}: {text}\n")
    for args in (["-c", "base.yaml", "-c", "limit.yaml"], ["-c", "base.yaml", f"--trainer.{flag}={text}"]):
        ours = getattr(load_spec_from(args).trainer, flag)
        theirs = lightning_cli(args)["trainer"][flag]
        assert (type(ours), ours) == (type(theirs), theirs), args


def load_spec_from(args: list[str]):
    """The spec loopgen reads from LightningCLI-style arguments."""
    sources, rest = split_arguments(args, ())
    assert not rest
    return load_spec(Sources(tuple(sources)))
