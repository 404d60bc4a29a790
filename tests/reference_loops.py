"""Hand-written plain PyTorch loops for the example specs: what a user would write without any framework.

Each must train to exactly the weights of the script loopgen renders from the same spec.
Run one in a fresh interpreter: python -m tests.reference_loops NAME OUT.pt
"""

from __future__ import annotations

import random
import sys

import torch


def _validate(model, loader):
    model.eval()
    with torch.no_grad():
        for batch_idx, batch in enumerate(loader):
            model.validation_step(batch, batch_idx)
    model.train()


def classifier() -> torch.nn.Module:
    """examples/classifier.yaml: seed 42, 3 epochs, SGD from configure_optimizers, validation each epoch."""
    from examples.models import Classifier

    random.seed(42)
    torch.manual_seed(42)
    model = Classifier(hidden=64, lr=0.05)
    optimizer = model.configure_optimizers()
    train_loader, val_loader = model.train_dataloader(), model.val_dataloader()
    for _ in range(3):
        for batch_idx, batch in enumerate(train_loader):
            loss = model.training_step(batch, batch_idx)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        _validate(model, val_loader)
    return model


def mlp_data() -> torch.nn.Module:
    """examples/mlp_data.yaml: seed 7, 2 epochs, Adam, data from examples.data.ClassificationData."""
    from examples.data import ClassificationData
    from examples.models import MLP

    random.seed(7)
    torch.manual_seed(7)
    model = MLP(hidden=32, lr=0.001)
    data = ClassificationData(batch_size=32)
    data.setup("fit")
    optimizer = model.configure_optimizers()
    train_loader, val_loader = data.train_dataloader(), data.val_dataloader()
    for _ in range(2):
        for batch_idx, batch in enumerate(train_loader):
            loss = model.training_step(batch, batch_idx)["loss"]
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        _validate(model, val_loader)
    return model


if __name__ == "__main__":
    name, out = sys.argv[1], sys.argv[2]
    torch.save({"state_dict": globals()[name]().state_dict()}, out)
