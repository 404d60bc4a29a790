"""Parity for loaders without a length (IterableDataset): weights torch.equal with pytorch_lightning.Trainer, and
the same validation points, batch indices, num_training_batches and epoch ends.

    pytest tests/parity/test_streams.py -p no:xdist
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness import Case, case_ids
from tests.parity.test_parity import differences, train_both

pytestmark = pytest.mark.slow


def stream_case(id: str, init: dict, **trainer) -> Case:
    model = {"class_path": "tests.parity.streams.StreamClassifier", "init_args": init}
    return Case(id, {"seed_everything": 7, "model": model, "trainer": trainer})


CASES = [
    # the case: an endless stream bounded by max_steps (max_epochs unset: -1), a sanity check only
    stream_case("iterable_max_steps", {"passes": None}, max_steps=12),
    # a finite stream: epochs end when the iterator does, validation at each epoch's end (the prefetched last batch)
    stream_case("iterable_epochs_validation_at_end", {"passes": 1}, max_epochs=3),
    # trainer.is_last_batch (and the rest a callback reads) when the loader has no length: the fetcher's `done`
    stream_case(
        "iterable_trainer_attributes",
        {"passes": 1},
        max_epochs=2,
        callbacks=[{"class_path": "tests.parity.trainer_attributes.TrainerAttributesRecorder"}],
    ),
    # an int val_check_interval counts batches (no validation at the end of a 5-batch epoch)
    stream_case("iterable_int_val_check_interval", {"passes": 1}, max_epochs=2, val_check_interval=2),
    # an int limit_train_batches bounds the epochs of an endless stream (no prefetching: the loader has a length)
    stream_case("iterable_int_limit_train_batches", {"passes": None}, max_epochs=2, limit_train_batches=3),
]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_same_training_as_lightning(case: Case, runner, tmp_path: Path) -> None:
    lightning, script = train_both(runner, case.spec, tmp_path)
    found = differences(lightning, script)
    assert not found, f"{case.id}: the script trains differently from Lightning ({tmp_path}):\n" + "\n".join(found)
