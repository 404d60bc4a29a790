"""Test-only modules whose init args are objects (nested `class_path` entries), as LightningCLI configs give them.

The styles of public Lightning code: a classifier that takes its backbone and its loss as modules (the backbone
itself taking an encoder), built from the config before the classifier. Each object draws from the global random
generator when built (its weights), so building them in another order than LightningCLI does gives other weights.
"""

import torch
from torch import nn

from tests.parity.data import CLASSES, FEATURES
from tests.parity.models import MLP


class Encoder(nn.Module):
    def __init__(self, features: int = FEATURES, width: int = 12) -> None:
        super().__init__()
        self.layer = nn.Linear(features, width)
        self.width = width

    def forward(self, x):
        return torch.relu(self.layer(x))


class Backbone(nn.Module):
    """An encoder (an object itself), then more layers; `blocks` is a list of modules appended after it."""

    def __init__(self, encoder: nn.Module, hidden: int = 16, blocks: list[nn.Module] = (), **options) -> None:
        super().__init__()
        self.encoder = encoder
        self.hidden = nn.Linear(encoder.width, hidden)
        self.blocks = nn.ModuleList(blocks or [])
        self.out_features = hidden
        self.options = options

    def forward(self, x):
        x = torch.relu(self.hidden(self.encoder(x)))
        for block in self.blocks:
            x = block(x)
        return x


class Residual(nn.Module):
    def __init__(self, width: int = 16) -> None:
        super().__init__()
        self.layer = nn.Linear(width, width)

    def forward(self, x):
        return x + self.layer(x)


class WeightedCrossEntropy(nn.Module):
    """Cross-entropy with random class weights (a buffer): drawn from the global generator when built."""

    def __init__(self, classes: int = CLASSES, smoothing: float = 0.0) -> None:
        super().__init__()
        self.register_buffer("weight", torch.rand(classes) + 0.5)
        self.smoothing = smoothing

    def forward(self, logits, target):
        return nn.functional.cross_entropy(logits, target, weight=self.weight, label_smoothing=self.smoothing)


class BackboneClassifier(MLP):
    """A classifier head on a backbone given as an object, with its loss given as an object too."""

    def __init__(self, backbone: nn.Module, loss: nn.Module, lr: float = 0.1, shuffle: bool = True) -> None:
        super().__init__(lr=lr, shuffle=shuffle)
        self.backbone = backbone
        self.loss = loss
        self.head = nn.Linear(backbone.out_features, CLASSES)

    def forward(self, x):
        return self.head(self.backbone(x))

    def training_step(self, batch, batch_idx):
        x, y = batch
        return self.loss(self(x), y)

    def validation_step(self, batch, batch_idx):
        x, y = batch
        return self.loss(self(x), y)
