"""`loopgen upgrade` and `loopgen check` on a vendored script over time, end to end in a temporary git repository:
render, commit, edit by hand, change the spec (or loopgen's templates), upgrade (clean, then conflicting), check
after each step; the merged script trains as a fresh render does, except where the hand edit changes training."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pytest
import torch
import yaml

from loopgen.cli import main
from loopgen.render.header import PLACEHOLDER, Header
from tests.helpers import ROOT, train_script

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")

SPEC = {
    "seed_everything": 42,
    "model": {"class_path": "examples.models.Classifier", "init_args": {"hidden": 16, "lr": 0.05}},
    "trainer": {
        "accelerator": "cpu",
        "max_epochs": 2,
        "limit_train_batches": 4,
        "logger": False,
        "enable_checkpointing": False,
        "enable_progress_bar": False,
        "enable_model_summary": False,
    },
}

# three hand edits far from the lines a spec change touches: a constant, a line in main(), a line in a helper
EDITS = [
    ("NUM_SANITY_VAL_STEPS = 2\n", 'NUM_SANITY_VAL_STEPS = 2\nRUN_NAME = "mine"\n'),
    (
        "    train_loader = model.train_dataloader()\n",
        '    train_loader = model.train_dataloader()\n    print(f"{RUN_NAME}: {len(train_loader)} batches")\n',
    ),
    (
        "    val_iter = iter(val_loader)\n",
        "    val_iter = iter(val_loader)\n    model.validations = getattr(model, 'validations', 0) + 1\n",
    ),
]


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A git repository holding a model package and its spec; the current directory, with its own render cache."""
    root = tmp_path / "repo"
    (root / "examples").mkdir(parents=True)
    (root / "examples" / "__init__.py").write_text("")
    for name in ("models.py", "data.py"):
        shutil.copy(ROOT / "examples" / name, root / "examples" / name)
    write(root / "spec.yaml", SPEC)
    monkeypatch.chdir(root)
    monkeypatch.setenv("LOOPGEN_CACHE_DIR", str(tmp_path / "cache"))
    git("init", "-q")
    git("config", "user.email", "dev@example.com")
    git("config", "user.name", "dev")
    return root


def git(*args: str) -> str:
    return subprocess.run(["git", *args], check=True, capture_output=True, text=True).stdout


def write(path: Path, spec: dict) -> None:
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")


def loopgen(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    status = main(list(args))
    out, err = capsys.readouterr()
    return status, out, err


def edit(path: Path, edits: list[tuple[str, str]]) -> None:
    text = path.read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    path.write_text(text)


def with_epochs(epochs: int, **init_args: float) -> dict:
    spec = yaml.safe_load(yaml.safe_dump(SPEC))
    spec["trainer"]["max_epochs"] = epochs
    spec["model"]["init_args"].update(init_args)
    return spec


def render_and_commit(capsys: pytest.CaptureFixture[str], *sources: str) -> Path:
    assert loopgen(capsys, "render", *sources, "-o", "train.py")[0] == 0
    git("add", "-A")
    git("commit", "-q", "-m", "vendor the loop")
    return Path("train.py")


def weights(script: Path, out: Path) -> dict[str, torch.Tensor]:
    return train_script(script.absolute(), out, cwd=script.absolute().parent)["state_dict"]


def fresh(tmp_path: Path, spec: dict, name: str) -> Path:
    """A fresh render of `spec`, beside the repository's scripts."""
    write(Path(f"{name}.yaml"), spec)
    assert main(["render", f"{name}.yaml", "-o", f"{name}.py"]) == 0
    return Path(f"{name}.py")


def test_edits_survive_a_spec_change_and_train_as_a_fresh_render(repo, capsys, tmp_path):
    script = render_and_commit(capsys, "spec.yaml")
    script.chmod(0o755)
    edit(script, EDITS)
    status, _, err = loopgen(capsys, "check", "spec.yaml", "train.py")
    assert status == 1 and "edited by hand" in err

    write(Path("spec.yaml"), with_epochs(3))
    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 0, out
    assert "carrying 3 hunks of hand edits (base: loopgen's cache)" in out
    text = script.read_text()
    for _, new in EDITS:
        assert new in text
    assert "MAX_EPOCHS = 3\n" in text
    assert "hand edits carried by loopgen upgrade: 3 hunks\n" in text
    assert os.stat(script).st_mode & 0o777 == 0o755

    status, _, err = loopgen(capsys, "check", "spec.yaml", "train.py")
    assert status == 0
    assert "edited by hand (3 hunks, carried from the last upgrade)" in err

    # the merged script trains as a fresh render of the new spec: its edits do not change training
    reference = weights(fresh(tmp_path, with_epochs(3), "reference"), tmp_path / "reference.pt")
    merged = weights(script, tmp_path / "merged.pt")
    assert merged.keys() == reference.keys()
    assert all(torch.equal(merged[k], reference[k]) for k in reference)

    # edited again after the upgrade: check says so; upgrade merges again from the new render
    edit(script, [("    set_up(numpy)\n", "    set_up(numpy)\n    print('again')\n")])
    status, _, err = loopgen(capsys, "check", "spec.yaml", "train.py")
    assert status == 1 and "carried from the last upgrade; and edited by hand again since" in err
    write(Path("spec.yaml"), with_epochs(4))
    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 0 and "carrying 4 hunks" in out
    assert "MAX_EPOCHS = 4\n" in script.read_text() and "print('again')" in script.read_text()
    assert loopgen(capsys, "check", "spec.yaml", "train.py")[0] == 0


def test_an_edit_that_changes_training_is_carried(repo, capsys, tmp_path):
    script = render_and_commit(capsys, "spec.yaml")
    edit(script, [("lr=0.05)", "lr=0.1)")])
    write(Path("spec.yaml"), with_epochs(3))
    assert loopgen(capsys, "upgrade", "spec.yaml", "train.py")[0] == 0
    assert "lr=0.1)" in script.read_text()
    reference = weights(fresh(tmp_path, with_epochs(3, lr=0.1), "reference"), tmp_path / "reference.pt")
    merged = weights(script, tmp_path / "merged.pt")
    assert all(torch.equal(merged[k], reference[k]) for k in reference)
    unedited = weights(fresh(tmp_path, with_epochs(3), "unedited"), tmp_path / "unedited.pt")
    assert not all(torch.equal(merged[k], unedited[k]) for k in reference)


def test_edits_survive_a_template_change(repo, capsys):
    """The script came from an older loopgen whose templates wrote a line differently: upgrade brings the new
    templates' text and keeps the edits (the base found in git: the cache is empty)."""
    script = render_and_commit(capsys, "spec.yaml")
    old = script.read_text().replace("    # training data\n", "    # the training data (an older template's comment)\n")
    old = resealed(old)
    script.write_text(old)
    git("commit", "-q", "-am", "the render of an older loopgen")
    edit(script, EDITS)
    shutil.rmtree(os.environ["LOOPGEN_CACHE_DIR"])
    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 0, out
    assert "base: git commit" in out
    text = script.read_text()
    assert "    # training data\n" in text and "older template" not in text
    assert all(new in text for _, new in EDITS)


def test_a_conflict_leaves_the_script_unless_asked(repo, capsys):
    script = render_and_commit(capsys, "spec.yaml")
    edit(script, [("MAX_EPOCHS = 2\n", "MAX_EPOCHS = 5  # mine\n"), *EDITS[1:]])
    edited = script.read_text()
    write(Path("spec.yaml"), with_epochs(3))

    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 1
    assert "1 conflict between" in out and "your edit and the new render both change these lines" in out
    assert script.read_text() == edited

    status, out, _ = loopgen(capsys, "upgrade", "--conflicts", "spec.yaml", "train.py")
    assert status == 1
    text = script.read_text()
    assert "<<<<<<< train.py (your edits)\nMAX_EPOCHS = 5  # mine\n||||||| old render\nMAX_EPOCHS = 2\n" in text
    assert "=======\nMAX_EPOCHS = 3\n>>>>>>> new render\n" in text
    status, _, err = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 2 and "still has conflict markers" in err

    # resolved by hand: the next upgrade records the carried edits, and check accepts them
    resolved = text.split("<<<<<<<")[0] + "MAX_EPOCHS = 3\n" + text.split(">>>>>>> new render\n")[1]
    script.write_text(resolved)
    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 0 and "carrying 2 hunks" in out
    assert loopgen(capsys, "check", "spec.yaml", "train.py")[0] == 0


@pytest.mark.parametrize("composed", [False, True], ids=["plain", "composed"])
def test_after_an_upgrade_the_base_is_the_spec_as_it_was_rendered_again(repo, capsys, composed):
    """The merged script is committed, loopgen's cache is gone (another clone, a CI machine): the render it came
    from is made again from the spec's committed version whose sha256 the header records."""
    write(Path("exp.yaml"), {"trainer": {"max_epochs": 2}})
    sources = ["-c", "spec.yaml", "-c", "exp.yaml"] if composed else ["spec.yaml"]
    changed = Path("exp.yaml") if composed else Path("spec.yaml")
    script = render_and_commit(capsys, *sources)
    edit(script, EDITS[:1])
    write(changed, {"trainer": {"max_epochs": 3}} if composed else with_epochs(3))
    upgrade = ["upgrade", *(sources if not composed else []), "train.py"]
    assert loopgen(capsys, *upgrade)[0] == 0
    git("commit", "-q", "-am", "upgraded")
    shutil.rmtree(os.environ["LOOPGEN_CACHE_DIR"])

    edit(script, EDITS[1:])
    write(changed, {"trainer": {"max_epochs": 4}} if composed else with_epochs(4))
    status, out, _ = loopgen(capsys, *upgrade)
    assert status == 0, out
    assert "base: the spec as it was (from git commit" in out and "carrying 3 hunks" in out
    text = script.read_text()
    assert "MAX_EPOCHS = 4\n" in text and all(new in text for _, new in EDITS)


def test_the_base_from_the_option_or_a_clear_refusal(repo, capsys, tmp_path):
    assert loopgen(capsys, "render", "spec.yaml", "-o", "train.py")[0] == 0  # not committed
    shutil.copy("train.py", tmp_path / "pristine.py")
    edit(Path("train.py"), EDITS)
    edited = Path("train.py").read_text()
    shutil.rmtree(os.environ["LOOPGEN_CACHE_DIR"])
    write(Path("spec.yaml"), with_epochs(3))

    status, _, err = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 2
    assert "is neither in loopgen's cache nor committed in its git history, and the spec as it was" in err
    assert "give it with --base FILE" in err
    assert Path("train.py").read_text() == edited

    status, _, err = loopgen(capsys, "upgrade", "spec.yaml", "train.py", "--base", "spec.yaml")
    assert status == 2 and "--base spec.yaml: is not the render train.py came from" in err

    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py", "--base", str(tmp_path / "pristine.py"))
    assert status == 0 and "carrying 3 hunks" in out


def test_composed_sources_are_read_again_from_the_header(repo, capsys):
    """render -c base -c exp --override; then check and upgrade with the script alone re-read the same list."""
    write(Path("exp.yaml"), {"trainer": {"max_epochs": 3}})
    script = render_and_commit(capsys, "-c", "spec.yaml", "-c", "exp.yaml", "--model.init_args.hidden=8")
    text = script.read_text()
    assert "- spec.yaml\n  sha256: " + hashlib.sha256(Path("spec.yaml").read_bytes()).hexdigest() in text
    assert "- exp.yaml\n" in text and "- --model.init_args.hidden=8\n" in text
    assert "MAX_EPOCHS = 3\n" in text and "hidden=8" in text
    assert loopgen(capsys, "check", "train.py")[0] == 0

    edit(script, EDITS)
    write(Path("exp.yaml"), {"trainer": {"max_epochs": 4}})
    status, _, err = loopgen(capsys, "check", "train.py")
    assert status == 1 and "the spec changed (exp.yaml: edited since the script was rendered)" in err
    status, out, _ = loopgen(capsys, "upgrade", "train.py")
    assert status == 0, out
    text = script.read_text()
    assert "MAX_EPOCHS = 4\n" in text and "hidden=8" in text and all(new in text for _, new in EDITS)
    assert loopgen(capsys, "check", "train.py")[0] == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["check"], "name the script: loopgen check|upgrade [SPEC...] SCRIPT"),
        (["upgrade", "spec.yaml", "missing.py"], "missing.py: no such file; render it first: loopgen render spec.yaml"),
        (["upgrade", "spec.yaml"], "spec.yaml: is not a script loopgen rendered"),
        (["upgrade", "plain.py"], "plain.py: its header records no composed spec"),
        (["upgrade", "spec.yaml", "examples/models.py"], "examples/models.py: has no loopgen header"),
    ],
)
def test_bad_check_and_upgrade_arguments(repo, capsys, args, message):
    assert loopgen(capsys, "render", "spec.yaml", "-o", "plain.py")[0] == 0
    before = Path("examples/models.py").read_text()
    status, _, err = loopgen(capsys, *args)
    assert status == 2 and message in err, err
    assert "Traceback" not in err and Path("examples/models.py").read_text() == before


def test_upgrade_without_edits_renders_again(repo, capsys):
    script = render_and_commit(capsys, "spec.yaml")
    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 0 and "is up to date" in out
    write(Path("spec.yaml"), with_epochs(3))
    status, out, _ = loopgen(capsys, "upgrade", "spec.yaml", "train.py")
    assert status == 0 and "no hand edits to carry" in out
    assert "hand edits carried" not in script.read_text()
    assert loopgen(capsys, "check", "spec.yaml", "train.py")[0] == 0


def resealed(text: str) -> str:
    """`text` with its header's own sha256 made true again (as a render of other templates would have it)."""
    recorded = Header.read(text).script
    text = text.replace(f"script sha256: {recorded}\n", f"script sha256: {PLACEHOLDER}\n", 1)
    return text.replace(
        f"script sha256: {PLACEHOLDER}\n", f"script sha256: {hashlib.sha256(text.encode()).hexdigest()}\n"
    )
