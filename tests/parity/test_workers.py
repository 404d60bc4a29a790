"""Worker seeding against pytorch_lightning.Trainer under LightningCLI's `seed_everything(seed, workers=True)`:
loaders read by two worker processes whose samples draw random augmentation (tests/parity/worker_models.py). The
weights and the validation losses (the records) must be equal; without the script's worker seeding, each case
but the project's own worker_init_fn differs. Lightning 1.9.5's seeding: tests/test_lightning195.py.

    pytest tests/parity/test_workers.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Case, case_ids
from tests.parity.test_parity import Runner, case, differences, train_both

pytest.importorskip("pytorch_lightning")

pytestmark = pytest.mark.slow


def workers(id: str, init: dict | None = None, model: str = "WorkerRegression", **trainer) -> Case:
    trainer = {"max_epochs": 2, "val_check_interval": 3, "num_sanity_val_steps": 1, **trainer}
    built = case(id, init=init, **trainer)
    built.spec["model"]["class_path"] = f"tests.parity.worker_models.{model}"
    return built


CASES = [
    # each epoch's workers seeded from the seed, their ids and the rank: the training, sanity check and validation
    # loaders' (an iterator, and so workers, made per epoch and per validation)
    workers("workers_seeded_each_epoch"),
    # persistent workers: seeded once, their generators running on across epochs and validations
    workers("workers_persistent", {"persistent_workers": True}),
    # an IterableDataset whose samples the workers split between them
    workers("workers_iterable_stream", {"stream": True}),
    # a project's own worker_init_fn is kept
    workers("workers_own_init_fn", {"own_init": True}),
    # pinned memory, three workers, accumulation
    workers("workers_pinned", {"pin_memory": True, "num_workers": 3}, accumulate_grad_batches=2),
    # the project's own samplers, with a set_epoch that Lightning calls as each epoch and each validation starts
    workers("own_sampler_set_epoch", {"num_workers": 0}, model="EpochSampledRegression", max_epochs=3),
    # ... read by workers, which draw epoch 0's order as its iterator is made, before Lightning sets the epoch
    workers("own_sampler_set_epoch_workers", model="EpochSampledRegression", max_epochs=3),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_workers_match_lightning(case: Case, runner: Runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script differs from Lightning ({tmp_path}):\n" + "\n".join(found)


@pytest.mark.parametrize(("seed", "seeded"), [(False, None), (True, "pl_worker_init_function")])
def test_workers_are_seeded_where_lightning_cli_seeds(seed, seeded, runner: Runner, tmp_path: Path) -> None:
    """`seed_everything: false`: LightningCLI seeds nothing, and the loaders keep no worker_init_fn; `true`: a seed
    drawn at run time, the workers seeded from it (the runs differ, their loaders' worker_init_fn does not)."""
    built = workers(f"workers_seed_{seed}")
    built.spec["seed_everything"] = seed
    lightning, script = train_both(runner, built.spec, tmp_path)
    for side in (lightning, script):
        assert [e for e in side["records"]["events"] if e[0] == "worker_init_fn"] == [("worker_init_fn", seeded)]


def test_a_script_without_worker_seeding_stops_at_a_loader_with_workers(tmp_path: Path, monkeypatch) -> None:
    """Where the code read never sets num_workers the script has no worker seeding; a loader that has workers all
    the same (built by code the render did not read) stops it rather than train unlike Lightning."""
    from types import SimpleNamespace

    from tests.helpers import ROOT, render

    text = render(ROOT / "examples" / "lit_classifier.yaml")
    assert "pl_worker_init_function" not in text
    namespace: dict = {"__name__": "rendered"}
    exec(compile(text, "train.py", "exec"), namespace)  # noqa: S102 - the rendered script's helpers
    monkeypatch.setenv("PL_SEED_WORKERS", "1")
    plain = SimpleNamespace(num_workers=0, worker_init_fn=None)
    assert namespace["seed_workers"](plain, 0) is plain
    with pytest.raises(SystemExit, match="not rendered to seed"):
        namespace["seed_workers"](SimpleNamespace(num_workers=2, worker_init_fn=None), 0)


def test_the_seed_sequence_written_out_is_numpys(monkeypatch) -> None:
    """Lightning 1.9.5's worker seeding goes through numpy's SeedSequence, which the script writes out in Python
    (it imports nothing but torch): the pools, their spawned children and generated words equal numpy's."""
    import random

    numpy = pytest.importorskip("numpy")
    import sys
    import types

    from tests.helpers import ROOT, render

    text = render(ROOT / "tests" / "lightning195" / "specs" / "workers.yaml")
    module = types.ModuleType("rendered")
    monkeypatch.setitem(sys.modules, "rendered", module)  # its dataclasses look their module up
    exec(compile(text, "train.py", "exec"), module.__dict__)  # noqa: S102 - the rendered script's helpers
    pool, words = module.seed_pool, module.seed_words
    draw = random.Random(0)
    for _ in range(200):
        entropy = [draw.choice([draw.getrandbits(64), draw.getrandbits(32), 0, 2**63 + 5]), draw.randint(0, 7), 1]
        sequence = numpy.random.SeedSequence(entropy)
        assert words(pool(entropy), 4) == list(sequence.generate_state(4))
        for spawned, child in enumerate(sequence.spawn(2)):
            assert words(pool(entropy, spawned=spawned), 6) == list(child.generate_state(6))
