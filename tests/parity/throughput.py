"""For ThroughputMonitor (tests/test_throughput.py): the functions it counts batches with, and a module that
states its flops per batch."""

from __future__ import annotations

from tests.parity.models import CheckpointModel


def batch_size(batch) -> int:
    """The samples of an (inputs, targets) batch."""
    return len(batch[0])


def features(batch) -> int:
    """The items of a batch: every input feature of every sample."""
    return batch[0].numel()


count_samples = batch_size  # a second name for the same function


class FlopsModel(CheckpointModel):
    """CheckpointModel, with the flops a batch costs as a property (ThroughputMonitor writes their rate)."""

    @property
    def flops_per_batch(self) -> int:
        return 6 * sum(p.numel() for p in self.parameters()) * 16


def no_samples(batch) -> int:
    """A wrong count: Lightning's Throughput raises when a batch has fewer samples than it is batches."""
    return 0
