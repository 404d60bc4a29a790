"""Domain libraries, second round: self-supervised learning (solo-learn, lightly), geospatial tasks (torchgeo),
graphs (PyTorch Geometric), diffusion, VAEs (Lightning Bolts), GPT-style language models (minGPT, nanoGPT),
forecasting (darts, pytorch-forecasting), CLIP-style contrastive training, and the callback and LightningModule API
these projects lean on. Each class here is this suite's own code on synthetic data, written the way the library
named in its case's `studied` uses Lightning (see tests/corpus/__init__.py).

CASES train alike under Lightning and the rendered script. FINDINGS (at the end) are cases loopgen gets wrong (a
crash after rendering, a different run, a refusal of code Lightning runs), each with a comment saying what differs;
they stay out of CASES."""

from __future__ import annotations

import copy
import inspect
import math
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import pytorch_lightning as pl
import torch
from pytorch_lightning.callbacks import Callback
from pytorch_lightning.utilities import grad_norm, rank_zero_only
from torch import nn
from torch.nn import functional as F
from torch.optim import AdamW
from torch.optim.lr_scheduler import ReduceLROnPlateau
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset
from torchmetrics import MeanAbsoluteError, MeanSquaredError, MetricCollection
from torchmetrics.classification import MulticlassAccuracy, MulticlassJaccardIndex

from tests.corpus.cases import corpus_case

# ---------------------------------------------------------------------------------------------------------------
# Shared synthetic data: small images with a class pattern, served as two augmented views or plainly.


def class_images(samples: int, seed: int, classes: int = 4):
    """Random 3x8x8 images whose mean carries the class (so that a classifier has something to learn)."""
    generator = torch.Generator().manual_seed(seed)
    labels = torch.randint(0, classes, (samples,), generator=generator)
    images = torch.rand(samples, 3, 8, 8, generator=generator) * 0.5
    images[:, 0] += labels.view(-1, 1, 1) * 0.25
    return images, labels


class MultiViewSet(Dataset):
    """Each image served as two views drawn with the global RNG (a flip, noise): ((v1, v2), label), or with the
    file name as lightly's LightlyDataset gives it: ([v1, v2], label, "img_0003.png")."""

    def __init__(self, images, labels, with_names: bool = False):
        self.images, self.labels, self.with_names = images, labels, with_names

    def __len__(self) -> int:
        return len(self.images)

    def view(self, image):
        if torch.rand(1) < 0.5:
            image = image.flip(-1)
        return image + 0.05 * torch.randn_like(image)

    def __getitem__(self, index):
        image = self.images[index]
        if self.with_names:
            return [self.view(image), self.view(image)], self.labels[index], f"img_{index:04d}.png"
        return (self.view(image), self.view(image)), self.labels[index]


class ViewsData(pl.LightningDataModule):
    """Two-view training data and plain (image, label) validation data, as solo-learn's pretrain loaders."""

    def __init__(self, batch_size: int = 16, samples: int = 96, with_names: bool = False):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.with_names = with_names

    def setup(self, stage: str) -> None:
        images, labels = class_images(self.samples, seed=11)
        val_images, val_labels = class_images(32, seed=12)
        self.train_set = MultiViewSet(images, labels, self.with_names)
        self.val_set = TensorDataset(val_images, val_labels)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


def small_backbone() -> nn.Module:
    return nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()
    )


def mlp_head(in_dim: int, hidden: int, out_dim: int) -> nn.Module:
    return nn.Sequential(nn.Linear(in_dim, hidden), nn.BatchNorm1d(hidden), nn.ReLU(), nn.Linear(hidden, out_dim))


# --- self-supervised: a LARS optimizer, as solo-learn and lightly ship their own --------------------------------


class LARS(torch.optim.Optimizer):
    """Layer-wise adaptive rate scaling over SGD with momentum: each parameter's step scaled by eta * ||p|| /
    (||g|| + wd * ||p||); biases and norm weights (1-d parameters) left unscaled with exclude_bias_n_norm, and a
    parameter group with "lars_exclude" never scaled."""

    def __init__(self, params, lr: float, momentum: float = 0.9, weight_decay: float = 0.0, eta: float = 0.02,
                 clip_lr: bool = False, exclude_bias_n_norm: bool = False, eps: float = 1e-8):  # fmt: skip
        defaults = {"lr": lr, "momentum": momentum, "weight_decay": weight_decay, "eta": eta, "clip_lr": clip_lr,
                    "exclude_bias_n_norm": exclude_bias_n_norm, "eps": eps}  # fmt: skip
        super().__init__(params, defaults)

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            weight_decay, momentum = group["weight_decay"], group["momentum"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                d_p = p.grad
                scaled = not group.get("lars_exclude", False) and (p.ndim != 1 or not group["exclude_bias_n_norm"])
                if scaled:
                    p_norm, g_norm = torch.norm(p), torch.norm(d_p)
                    if p_norm != 0 and g_norm != 0:
                        lars_lr = group["eta"] * p_norm / (g_norm + p_norm * weight_decay + group["eps"])
                        if group["clip_lr"]:
                            lars_lr = torch.clamp(lars_lr / group["lr"], max=1.0)
                        d_p = d_p.add(p, alpha=weight_decay).mul(lars_lr)
                if momentum != 0:
                    state = self.state[p]
                    if "momentum_buffer" not in state:
                        state["momentum_buffer"] = torch.clone(d_p).detach()
                    else:
                        state["momentum_buffer"].mul_(momentum).add_(d_p)
                    d_p = state["momentum_buffer"]
                p.add_(d_p, alpha=-group["lr"])
        return loss


class MomentumUpdater:
    """solo-learn's EMA rule: target = tau * target + (1 - tau) * online, tau rising from base_tau to final_tau on a
    cosine over the run's optimizer steps."""

    def __init__(self, base_tau: float = 0.99, final_tau: float = 1.0):
        self.base_tau = base_tau
        self.final_tau = final_tau
        self.cur_tau = base_tau

    @torch.no_grad()
    def update(self, online_net: nn.Module, momentum_net: nn.Module) -> None:
        for online, target in zip(online_net.parameters(), momentum_net.parameters()):
            target.data = self.cur_tau * target.data + (1 - self.cur_tau) * online.data

    def update_tau(self, cur_step: int, max_steps: int) -> None:
        progress = math.cos(math.pi * cur_step / max_steps) + 1
        self.cur_tau = self.final_tau - (self.final_tau - self.base_tau) * progress / 2


def static_lr(get_lr, param_group_indexes, lrs_to_replace):
    """solo-learn's trick: the scheduler's lrs, with the listed groups' kept at their own value."""
    lrs = get_lr()
    for idx, lr in zip(param_group_indexes, lrs_to_replace):
        lrs[idx] = lr
    return lrs


def byol_loss(p, z):
    return 2 - 2 * F.cosine_similarity(p, z.detach(), dim=-1).mean()


class SoloBYOL(pl.LightningModule):
    """solo-learn's BaseMomentumMethod and BYOL: momentum backbone and projector made by deepcopy, updated in
    on_train_batch_end only when trainer.global_step moved on (so once per optimizer step under accumulation),
    tau's cosine over trainer.estimated_stepping_batches and logged; an online linear classifier on detached
    features in its own parameter group with a static lr (the scheduler's get_lr patched with functools.partial);
    LARS with exclude_bias_n_norm and clip_lr; a warm-up cosine LambdaLR stepped every step, its warm-up read from
    estimated_stepping_batches / trainer.max_epochs."""

    def __init__(self, num_classes: int = 4, proj_dim: int = 8, lr: float = 0.3, classifier_lr: float = 0.1,
                 weight_decay: float = 1e-5, base_tau: float = 0.99, final_tau: float = 1.0,
                 warmup_epochs: float = 0.5):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.backbone = small_backbone()
        self.projector = mlp_head(8, 16, proj_dim)
        self.predictor = mlp_head(proj_dim, 16, proj_dim)
        self.classifier = nn.Linear(8, num_classes)
        self.momentum_backbone = copy.deepcopy(self.backbone)
        self.momentum_projector = copy.deepcopy(self.projector)
        for net in (self.momentum_backbone, self.momentum_projector):
            for param in net.parameters():
                param.requires_grad = False
        self.momentum_updater = MomentumUpdater(base_tau, final_tau)
        self.last_step = 0

    @property
    def momentum_pairs(self):
        return [(self.backbone, self.momentum_backbone), (self.projector, self.momentum_projector)]

    @property
    def learnable_params(self):
        return [
            {"name": "backbone", "params": self.backbone.parameters()},
            {"name": "projector", "params": self.projector.parameters()},
            {"name": "predictor", "params": self.predictor.parameters()},
            {
                "name": "classifier",
                "params": self.classifier.parameters(),
                "lr": self.hparams.classifier_lr,
                "weight_decay": 0,
                "static_lr": True,
            },
        ]

    def configure_optimizers(self):
        learnable_params = self.learnable_params
        idxs_no_scheduler = [i for i, group in enumerate(learnable_params) if group.pop("static_lr", False)]
        optimizer = LARS(learnable_params, lr=self.hparams.lr, momentum=0.9, weight_decay=self.hparams.weight_decay,
                         eta=0.02, clip_lr=True, exclude_bias_n_norm=True)  # fmt: skip
        total_steps = self.trainer.estimated_stepping_batches
        warmup_steps = int(self.hparams.warmup_epochs * (total_steps / self.trainer.max_epochs))

        def warmup_cosine(step):
            if step < warmup_steps:
                return (step + 1) / (warmup_steps + 1)
            return 0.5 * (1 + math.cos(math.pi * (step - warmup_steps) / max(1, total_steps - warmup_steps)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, warmup_cosine)
        if idxs_no_scheduler:
            scheduler.get_lr = partial(static_lr, get_lr=scheduler.get_lr, param_group_indexes=idxs_no_scheduler,
                                       lrs_to_replace=[self.hparams.classifier_lr] * len(idxs_no_scheduler))  # fmt: skip
        return [optimizer], [{"scheduler": scheduler, "interval": "step", "frequency": 1}]

    def on_train_start(self):
        self.last_step = 0

    def training_step(self, batch, batch_idx):
        (x1, x2), targets = batch
        feats1, feats2 = self.backbone(x1), self.backbone(x2)
        p1, p2 = self.predictor(self.projector(feats1)), self.predictor(self.projector(feats2))
        with torch.no_grad():
            z1 = self.momentum_projector(self.momentum_backbone(x1))
            z2 = self.momentum_projector(self.momentum_backbone(x2))
        neg_cos_sim = byol_loss(p1, z2) + byol_loss(p2, z1)
        logits = self.classifier(feats1.detach())
        class_loss = F.cross_entropy(logits, targets)
        acc1 = (logits.argmax(-1) == targets).float().mean()
        self.log_dict({"train_neg_cos_sim": neg_cos_sim, "train_class_loss": class_loss, "train_acc1": acc1},
                      on_epoch=True, sync_dist=True)  # fmt: skip
        return neg_cos_sim + class_loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        if self.trainer.global_step > self.last_step:
            for online, target in self.momentum_pairs:
                self.momentum_updater.update(online, target)
            self.log("tau", self.momentum_updater.cur_tau)
            self.momentum_updater.update_tau(
                cur_step=self.trainer.global_step, max_steps=self.trainer.estimated_stepping_batches
            )
        self.last_step = self.trainer.global_step

    def validation_step(self, batch, batch_idx):
        x, targets = batch
        logits = self.classifier(self.backbone(x))
        self.log("val_loss", F.cross_entropy(logits, targets), batch_size=x.size(0), sync_dist=True)
        self.log("val_acc1", (logits.argmax(-1) == targets).float().mean(), batch_size=x.size(0), sync_dist=True)


class LightlyBYOL(pl.LightningModule):
    """lightly's BYOL example: momentum copies deactivated with requires_grad False, the momentum from
    cosine_schedule(current_epoch, trainer.max_epochs, 0.996, 1) and update_momentum called at the top of
    training_step; batches of ([x0, x1], targets, filenames); SGD; the symmetric negative cosine loss."""

    def __init__(self, lr: float = 0.06):
        super().__init__()
        self.lr = lr
        self.backbone = small_backbone()
        self.projection_head = mlp_head(8, 16, 8)
        self.prediction_head = mlp_head(8, 16, 8)
        self.backbone_momentum = copy.deepcopy(self.backbone)
        self.projection_head_momentum = copy.deepcopy(self.projection_head)
        deactivate_requires_grad(self.backbone_momentum)
        deactivate_requires_grad(self.projection_head_momentum)
        self.criterion = NegativeCosineSimilarity()

    def forward(self, x):
        return self.prediction_head(self.projection_head(self.backbone(x)))

    def forward_momentum(self, x):
        return self.projection_head_momentum(self.backbone_momentum(x)).detach()

    def training_step(self, batch, batch_idx):
        momentum = cosine_schedule(self.current_epoch, self.trainer.max_epochs, 0.996, 1)
        update_momentum(self.backbone, self.backbone_momentum, m=momentum)
        update_momentum(self.projection_head, self.projection_head_momentum, m=momentum)
        x0, x1 = batch[0]
        p0, z0 = self.forward(x0), self.forward_momentum(x0)
        p1, z1 = self.forward(x1), self.forward_momentum(x1)
        loss = 0.5 * (self.criterion(p0, z1) + self.criterion(p1, z0))
        self.log("train_loss_ssl", loss)
        return loss

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=self.lr)


def deactivate_requires_grad(model: nn.Module) -> None:
    for param in model.parameters():
        param.requires_grad = False


@torch.no_grad()
def update_momentum(model: nn.Module, model_ema: nn.Module, m: float) -> None:
    for model_ema_param, model_param in zip(model_ema.parameters(), model.parameters()):
        model_ema_param.data = model_ema_param.data * m + model_param.data * (1.0 - m)


def cosine_schedule(step: int, max_steps: int, start_value: float, end_value: float) -> float:
    if max_steps == 1:
        return end_value
    return end_value - (end_value - start_value) * (math.cos(math.pi * step / (max_steps - 1)) + 1) / 2


class NegativeCosineSimilarity(nn.Module):
    def forward(self, x0, x1):
        return -F.cosine_similarity(x0, x1, dim=1).mean()


class MoCoQueue(pl.LightningModule):
    """MoCo v2 with its memory bank as registered buffers (a queue of keys and its pointer, written in
    training_step), the key encoder's momentum on a cosine over trainer.global_step /
    trainer.estimated_stepping_batches, InfoNCE with a temperature, SGD with weight decay and a CosineAnnealingLR
    over trainer.max_epochs."""

    def __init__(self, queue_size: int = 48, dim: int = 8, temperature: float = 0.2, lr: float = 0.05,
                 base_momentum: float = 0.99):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder_q = nn.Sequential(small_backbone(), nn.Linear(8, dim))
        self.encoder_k = copy.deepcopy(self.encoder_q)
        for param in self.encoder_k.parameters():
            param.requires_grad = False
        self.register_buffer("queue", F.normalize(torch.randn(dim, queue_size), dim=0))
        self.register_buffer("queue_ptr", torch.zeros(1, dtype=torch.long))

    @torch.no_grad()
    def _momentum_update_key_encoder(self):
        progress = self.trainer.global_step / self.trainer.estimated_stepping_batches
        m = 1 - (1 - self.hparams.base_momentum) * (math.cos(math.pi * progress) + 1) / 2
        for param_q, param_k in zip(self.encoder_q.parameters(), self.encoder_k.parameters()):
            param_k.data = param_k.data * m + param_q.data * (1.0 - m)

    @torch.no_grad()
    def _dequeue_and_enqueue(self, keys):
        batch_size = keys.shape[0]
        ptr = int(self.queue_ptr)
        self.queue[:, ptr : ptr + batch_size] = keys.T
        self.queue_ptr[0] = (ptr + batch_size) % self.hparams.queue_size

    def training_step(self, batch, batch_idx):
        (img_q, img_k), _ = batch
        q = F.normalize(self.encoder_q(img_q), dim=1)
        with torch.no_grad():
            self._momentum_update_key_encoder()
            k = F.normalize(self.encoder_k(img_k), dim=1)
        l_pos = torch.einsum("nc,nc->n", q, k).unsqueeze(-1)
        l_neg = torch.einsum("nc,ck->nk", q, self.queue.clone().detach())
        logits = torch.cat([l_pos, l_neg], dim=1) / self.hparams.temperature
        labels = torch.zeros(logits.shape[0], dtype=torch.long, device=self.device)
        loss = F.cross_entropy(logits, labels)
        self._dequeue_and_enqueue(k)
        self.log("train_loss", loss, prog_bar=True)
        self.log("train_acc1", (logits.argmax(1) == 0).float().mean())
        return loss

    def validation_step(self, batch, batch_idx):
        x, _ = batch
        self.log("val_feature_std", F.normalize(self.encoder_q(x), dim=1).std(0).mean())

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9, weight_decay=1e-4)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, self.trainer.max_epochs)
        return [optimizer], [scheduler]


class OnlineLinear(pl.LightningModule):
    """solo-learn's online linear evaluation as a LightningModule of its own, held by the method: it reads its
    trainer (the parent's, given by Lightning's trainer setter) to scale its loss during a warm-up and to know
    whether the batch trains."""

    def __init__(self, features: int, num_classes: int, warmup_epochs: int = 1):
        super().__init__()
        self.head = nn.Linear(features, num_classes)
        self.warmup_epochs = warmup_epochs

    def forward(self, feats, targets):
        logits = self.head(feats.detach())
        loss = F.cross_entropy(logits, targets)
        if self.trainer.training and self.trainer.current_epoch < self.warmup_epochs:
            loss = loss * 0.5
        acc = (logits.argmax(-1) == targets).float().mean()
        return loss, acc


class KNNEvaluator(pl.LightningModule):
    """A weighted kNN evaluator as a child LightningModule (lightly's KNNClassifier, solo-learn's
    WeightedKNNClassifier): it banks training features (not during the sanity check, read from its trainer) and
    validation features, and computes the accuracy once per validation."""

    def __init__(self, k: int = 5, temperature: float = 0.1, num_classes: int = 4):
        super().__init__()
        self.k, self.temperature, self.num_classes = k, temperature, num_classes
        self.train_features, self.train_targets, self.test_features, self.test_targets = [], [], [], []

    def update(self, train_features=None, train_targets=None, test_features=None, test_targets=None):
        if train_features is not None and not self.trainer.sanity_checking:
            self.train_features.append(F.normalize(train_features.detach(), dim=1))
            self.train_targets.append(train_targets.detach())
        if test_features is not None:
            self.test_features.append(F.normalize(test_features.detach(), dim=1))
            self.test_targets.append(test_targets.detach())

    @torch.no_grad()
    def compute(self):
        if not self.train_features or not self.test_features:
            self.test_features, self.test_targets = [], []
            return None
        train_features, train_targets = torch.cat(self.train_features), torch.cat(self.train_targets)
        test_features, test_targets = torch.cat(self.test_features), torch.cat(self.test_targets)
        similarity = test_features @ train_features.T
        weights, indices = similarity.topk(min(self.k, len(train_targets)), dim=1)
        weights = (weights / self.temperature).exp()
        one_hot = F.one_hot(train_targets[indices], self.num_classes).float()
        scores = (one_hot * weights.unsqueeze(-1)).sum(1)
        acc = (scores.argmax(-1) == test_targets).float().mean().item()
        self.train_features, self.train_targets, self.test_features, self.test_targets = [], [], [], []
        return acc


class SimSiamWithEvaluators(pl.LightningModule):
    """A SimSiam method holding two child LightningModules (an OnlineLinear and a KNNEvaluator) that read the
    trainer Lightning hands them; the classifier's parameters in a second group; the kNN accuracy logged from
    on_validation_epoch_end when the evaluator has one."""

    def __init__(self, lr: float = 0.05, classifier_lr: float = 0.1, warmup_epochs: int = 1):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = small_backbone()
        self.projector = mlp_head(8, 16, 8)
        self.predictor = mlp_head(8, 16, 8)
        self.online = OnlineLinear(8, 4, warmup_epochs=warmup_epochs)
        self.knn = KNNEvaluator(k=5)

    def training_step(self, batch, batch_idx):
        (x1, x2), targets = batch
        f1, f2 = self.backbone(x1), self.backbone(x2)
        z1, z2 = self.projector(f1), self.projector(f2)
        p1, p2 = self.predictor(z1), self.predictor(z2)
        ssl = -(F.cosine_similarity(p1, z2.detach()).mean() + F.cosine_similarity(p2, z1.detach()).mean()) / 2
        class_loss, acc = self.online(f1, targets)
        self.knn.update(train_features=f1, train_targets=targets)
        self.log_dict({"train_simsiam_loss": ssl, "train_online_acc": acc}, on_epoch=True, on_step=False)
        return ssl + class_loss

    def validation_step(self, batch, batch_idx):
        x, targets = batch
        feats = self.backbone(x)
        loss, acc = self.online(feats, targets)
        self.knn.update(test_features=feats, test_targets=targets)
        self.log_dict({"val_loss": loss, "val_acc": acc})

    def on_validation_epoch_end(self):
        acc = self.knn.compute()
        if acc is not None:
            self.log("val_knn_acc", acc)

    def configure_optimizers(self):
        groups = [
            {"params": [*self.backbone.parameters(), *self.projector.parameters(), *self.predictor.parameters()]},
            {"params": self.online.parameters(), "lr": self.hparams.classifier_lr, "weight_decay": 0.0},
        ]
        return torch.optim.SGD(groups, lr=self.hparams.lr, momentum=0.9, weight_decay=1e-4)


class SimSiamForCLI(pl.LightningModule):
    """A method without configure_optimizers of its own: LightningCLI's `optimizer:` (the project's LARS) and
    `lr_scheduler:` entries give them, as solo-learn's and lightly's configs pick LARS by class path."""

    def __init__(self):
        super().__init__()
        self.backbone = small_backbone()
        self.projector = mlp_head(8, 16, 8)
        self.predictor = mlp_head(8, 16, 8)

    def training_step(self, batch, batch_idx):
        (x1, x2), _ = batch
        z1, z2 = self.projector(self.backbone(x1)), self.projector(self.backbone(x2))
        p1, p2 = self.predictor(z1), self.predictor(z2)
        loss = -(F.cosine_similarity(p1, z2.detach()).mean() + F.cosine_similarity(p2, z1.detach()).mean()) / 2
        self.log("train_loss", loss)
        return loss


class DINOHead(nn.Module):
    """A DINO projection head whose weight-normalised last layer is frozen for the first epochs."""

    def __init__(self, in_dim: int = 8, hidden: int = 16, out_dim: int = 12, freeze_last_layer: int = 1):
        super().__init__()
        self.mlp = nn.Sequential(nn.Linear(in_dim, hidden), nn.GELU(), nn.Linear(hidden, 8))
        self.last_layer = nn.Linear(8, out_dim, bias=False)
        self.freeze_last_layer = freeze_last_layer

    def cancel_last_layer_gradients(self, current_epoch: int) -> None:
        if current_epoch >= self.freeze_last_layer:
            return
        for param in self.last_layer.parameters():
            param.grad = None

    def forward(self, x):
        return self.last_layer(F.normalize(self.mlp(x), dim=-1))


class LightlyDINO(pl.LightningModule):
    """lightly's DINO example: a teacher made by deepcopy and updated by update_momentum with a cosine over
    current_epoch and trainer.max_epochs; the loss's center a registered buffer updated under no_grad; the
    teacher temperature warmed up by current_epoch; on_after_backward cancels the last layer's gradients during
    the first epoch; AdamW."""

    def __init__(self, lr: float = 1e-3, warmup_teacher_temp_epochs: int = 2, center_momentum: float = 0.9):
        super().__init__()
        self.save_hyperparameters()
        self.student_backbone = small_backbone()
        self.student_head = DINOHead()
        self.teacher_backbone = copy.deepcopy(self.student_backbone)
        self.teacher_head = DINOHead()
        deactivate_requires_grad(self.teacher_backbone)
        deactivate_requires_grad(self.teacher_head)
        self.register_buffer("center", torch.zeros(1, 12))

    def teacher_temp(self):
        warmup = self.hparams.warmup_teacher_temp_epochs
        if self.current_epoch < warmup:
            return 0.04 + (0.07 - 0.04) * self.current_epoch / warmup
        return 0.07

    def dino_loss(self, teacher_out, student_out):
        teacher_probs = F.softmax((teacher_out - self.center) / self.teacher_temp(), dim=-1)
        loss = 0.0
        for t_idx, t in enumerate(teacher_probs):
            for s_idx, s in enumerate(student_out):
                if t_idx != s_idx:
                    loss = loss + torch.sum(-t * F.log_softmax(s / 0.1, dim=-1), dim=-1).mean()
        return loss / 2

    @torch.no_grad()
    def update_center(self, teacher_out):
        batch_center = torch.cat(list(teacher_out)).mean(0, keepdim=True)
        self.center = self.center * self.hparams.center_momentum + batch_center * (1 - self.hparams.center_momentum)

    def training_step(self, batch, batch_idx):
        momentum = cosine_schedule(self.current_epoch, self.trainer.max_epochs, 0.996, 1)
        update_momentum(self.student_backbone, self.teacher_backbone, m=momentum)
        update_momentum(self.student_head, self.teacher_head, m=momentum)
        views = batch[0]
        with torch.no_grad():
            teacher_out = torch.stack([self.teacher_head(self.teacher_backbone(v)) for v in views])
        student_out = torch.stack([self.student_head(self.student_backbone(v)) for v in views])
        loss = self.dino_loss(teacher_out, student_out)
        self.update_center(teacher_out)
        self.log("train_loss", loss)
        return loss

    def on_after_backward(self):
        self.student_head.cancel_last_layer_gradients(current_epoch=self.current_epoch)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr)


# --- geospatial: torchgeo's data modules and tasks ---------------------------------------------------------------


class Normalize(nn.Module):
    """Kornia's Normalize over a sample dict's "image" (torchgeo's AugmentationSequential with data_keys None)."""

    def __init__(self, mean: float = 0.0, std: float = 1.0):
        super().__init__()
        self.mean, self.std = mean, std

    def forward(self, batch):
        batch["image"] = (batch["image"] - self.mean) / self.std
        return batch


class TrainAugmentation(Normalize):
    """Normalisation, then random horizontal and vertical flips of the image and its mask, per sample, drawn on
    the batch's device with the global RNG (Kornia's RandomHorizontalFlip / RandomVerticalFlip)."""

    def forward(self, batch):
        batch = super().forward(batch)
        image = batch["image"]
        horizontal = torch.rand(image.shape[0], device=image.device) < 0.5
        vertical = torch.rand(image.shape[0], device=image.device) < 0.5
        batch["image"] = torch.where(horizontal.view(-1, 1, 1, 1), image.flip(-1), image)
        batch["image"] = torch.where(vertical.view(-1, 1, 1, 1), batch["image"].flip(-2), batch["image"])
        if "mask" in batch:
            mask = batch["mask"]
            mask = torch.where(horizontal.view(-1, 1, 1), mask.flip(-1), mask)
            batch["mask"] = torch.where(vertical.view(-1, 1, 1), mask.flip(-2), mask)
        return batch


class PatchDataset(Dataset):
    """Sample dicts of a raster tiled into patches: "image" (float, 3x8x8) and either "mask" (class codes per pixel)
    or "label" (one class, or a float target)."""

    def __init__(self, samples: int, seed: int, target: str = "mask", codes=(0, 1, 2, 3)):
        generator = torch.Generator().manual_seed(seed)
        self.images = torch.rand(samples, 3, 8, 8, generator=generator)
        classes = (self.images[:, 0] * len(codes)).long().clamp(max=len(codes) - 1)
        self.masks = torch.tensor(codes)[classes]
        self.labels = classes.flatten(1).mode(1).values
        self.targets = self.images.mean(dim=(1, 2, 3)) * 10
        self.target = target

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, index):
        sample = {"image": self.images[index]}
        if self.target == "mask":
            sample["mask"] = self.masks[index]
        elif self.target == "label":
            sample["label"] = self.labels[index]
        else:
            sample["label"] = self.targets[index]
        return sample


class NonGeoDataModule(pl.LightningDataModule):
    """torchgeo's NonGeoDataModule: datasets made per stage in setup, the augmentation applied on the device in
    on_after_batch_transfer, chosen by what the trainer is doing (train_aug while training, val_aug while
    validating or sanity checking, test_aug, predict_aug), each falling back to aug."""

    target = "mask"
    codes = (0, 1, 2, 3)

    def __init__(self, batch_size: int = 8, samples: int = 64, mean: float = 0.5, std: float = 0.25):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.aug = Normalize(mean, std)
        self.train_aug = None
        self.val_aug = None
        self.test_aug = None
        self.predict_aug = None

    def setup(self, stage: str) -> None:
        if stage in ["fit"]:
            self.train_dataset = PatchDataset(self.samples, seed=21, target=self.target, codes=self.codes)
        if stage in ["fit", "validate"]:
            self.val_dataset = PatchDataset(self.samples // 4, seed=22, target=self.target, codes=self.codes)
        if stage in ["test"]:
            self.test_dataset = PatchDataset(self.samples // 4, seed=23, target=self.target, codes=self.codes)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_dataset, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_dataset, batch_size=self.batch_size, shuffle=False)

    def on_after_batch_transfer(self, batch, dataloader_idx):
        if self.trainer:
            if self.trainer.training:
                aug = self.train_aug or self.aug
            elif self.trainer.validating or self.trainer.sanity_checking:
                aug = self.val_aug or self.aug
            elif self.trainer.testing:
                aug = self.test_aug or self.aug
            elif self.trainer.predicting:
                aug = self.predict_aug or self.aug
            batch = aug(batch)
        return batch

    def plot(self, sample):
        """torchgeo's datamodules plot through their dataset; these patches have no RGB bands to show (None)."""


class LandCoverDataModule(NonGeoDataModule):
    """A segmentation datamodule with flips in train_aug."""

    def __init__(self, batch_size: int = 8, samples: int = 64):
        super().__init__(batch_size, samples, mean=0.5, std=0.25)
        self.train_aug = TrainAugmentation(0.5, 0.25)


class ChesapeakeLikeDataModule(LandCoverDataModule):
    """Masks that hold the survey's class codes (0 nodata, 11 water, 21 developed, 41 forest), remapped to ordinals
    on the device after the parent's augmentation, through a lookup tensor (torchgeo's Chesapeake datamodules)."""

    codes = (0, 11, 21, 41)

    def __init__(self, batch_size: int = 8, samples: int = 64):
        super().__init__(batch_size, samples)
        lookup = torch.zeros(256, dtype=torch.long)
        for ordinal, code in enumerate(self.codes):
            lookup[code] = ordinal
        self.ordinal_map = lookup

    def on_after_batch_transfer(self, batch, dataloader_idx):
        batch = super().on_after_batch_transfer(batch, dataloader_idx)
        batch["mask"] = self.ordinal_map.to(batch["mask"].device)[batch["mask"]]
        return batch


class SceneDataModule(NonGeoDataModule):
    """A scene-classification datamodule (one label per patch), flips while training."""

    target = "label"

    def __init__(self, batch_size: int = 8, samples: int = 64):
        super().__init__(batch_size, samples, mean=0.5, std=0.3)
        self.train_aug = TrainAugmentation(0.5, 0.3)


class RegressionDataModule(NonGeoDataModule):
    """A regression datamodule (a float target per patch), its validation data split off the training raster by
    random_split with a seeded generator."""

    target = "regression"

    def setup(self, stage: str) -> None:
        if stage in ["fit", "validate"]:
            dataset = PatchDataset(self.samples, seed=24, target=self.target)
            self.train_dataset, self.val_dataset = torch.utils.data.random_split(
                dataset, [0.75, 0.25], generator=torch.Generator().manual_seed(0)
            )


class BaseTask(pl.LightningModule, ABC):
    """torchgeo's BaseTask: hyperparameters saved with a class attribute's ignore list, then configure_models,
    configure_losses and configure_metrics called from __init__; AdamW over hparams["lr"] and a ReduceLROnPlateau
    on the class attribute `monitor`."""

    ignore = "weights"
    monitor = "val_loss"
    mode = "min"

    def __init__(self) -> None:
        super().__init__()
        self.save_hyperparameters(ignore=self.ignore)
        self.configure_models()
        self.configure_losses()
        self.configure_metrics()

    @abstractmethod
    def configure_models(self) -> None:
        """Initialize the model."""

    def configure_losses(self) -> None:
        """Initialize the loss criterion."""

    def configure_metrics(self) -> None:
        """Initialize the performance metrics."""

    def configure_optimizers(self):
        optimizer = AdamW(self.parameters(), lr=self.hparams["lr"])
        scheduler = ReduceLROnPlateau(optimizer, patience=self.hparams["patience"])
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "monitor": self.monitor}}

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)


class TinyUNet(nn.Module):
    def __init__(self, in_channels: int, classes: int):
        super().__init__()
        self.down = nn.Sequential(nn.Conv2d(in_channels, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU())
        self.pool = nn.MaxPool2d(2)
        self.mid = nn.Sequential(nn.Conv2d(8, 8, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        skip = self.down(x)
        return self.head(torch.cat([skip, self.up(self.mid(self.pool(skip)))], dim=1))


class SemanticSegmentationTask(BaseTask):
    """torchgeo's SemanticSegmentationTask: the weights argument set before super().__init__(), a loss chosen by
    name with ignore_index, a MetricCollection cloned with train_/val_ prefixes and logged with log_dict and the
    batch size; training_step and validation_step take a dataloader_idx defaulting to 0; the validation step
    plots through the datamodule when the logger's experiment can add figures (here a CSVLogger's cannot)."""

    def __init__(self, in_channels: int = 3, num_classes: int = 4, loss: str = "ce", ignore_index: int | None = None,
                 lr: float = 1e-2, patience: int = 1, weights=None, freeze_backbone: bool = False):  # fmt: skip
        self.weights = weights
        super().__init__()

    def configure_models(self) -> None:
        self.model = TinyUNet(self.hparams["in_channels"], self.hparams["num_classes"])
        if self.hparams["freeze_backbone"]:
            for param in self.model.down.parameters():
                param.requires_grad = False

    def configure_losses(self) -> None:
        loss = self.hparams["loss"]
        ignore_index = self.hparams["ignore_index"]
        if loss == "ce":
            ignore_value = -1000 if ignore_index is None else ignore_index
            self.criterion = nn.CrossEntropyLoss(ignore_index=ignore_value)
        else:
            raise ValueError(f"Loss type '{loss}' is not valid.")

    def configure_metrics(self) -> None:
        num_classes = self.hparams["num_classes"]
        ignore_index = self.hparams["ignore_index"]
        metrics = MetricCollection(
            [
                MulticlassAccuracy(
                    num_classes=num_classes, ignore_index=ignore_index, multidim_average="global", average="micro"
                ),
                MulticlassJaccardIndex(num_classes=num_classes, ignore_index=ignore_index, average="micro"),
            ]
        )
        self.train_metrics = metrics.clone(prefix="train_")
        self.val_metrics = metrics.clone(prefix="val_")

    def training_step(self, batch, batch_idx, dataloader_idx=0):
        x = batch["image"]
        y = batch["mask"]
        batch_size = x.shape[0]
        y_hat = self(x)
        loss = self.criterion(y_hat, y)
        self.log("train_loss", loss, batch_size=batch_size)
        self.train_metrics(y_hat, y)
        self.log_dict(self.train_metrics, batch_size=batch_size)
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        x = batch["image"]
        y = batch["mask"]
        batch_size = x.shape[0]
        y_hat = self(x)
        loss = self.criterion(y_hat, y)
        self.log("val_loss", loss, batch_size=batch_size)
        self.val_metrics(y_hat, y)
        self.log_dict(self.val_metrics, batch_size=batch_size)
        if (
            batch_idx < 10
            and hasattr(self.trainer, "datamodule")
            and hasattr(self.trainer.datamodule, "plot")
            and self.logger
            and hasattr(self.logger, "experiment")
            and hasattr(self.logger.experiment, "add_figure")
        ):
            sample = {key: batch[key][0].cpu() for key in ("image", "mask")}
            fig = self.trainer.datamodule.plot(sample)
            if fig:
                self.logger.experiment.add_figure(f"image/{batch_idx}", fig, global_step=self.global_step)


class SegmentationTaskNoPlot(SemanticSegmentationTask):
    """The same task as torchgeo's newer releases write it: no plotting in validation_step."""

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        x = batch["image"]
        y = batch["mask"]
        y_hat = self(x)
        self.log("val_loss", self.criterion(y_hat, y), batch_size=x.shape[0])
        self.val_metrics(y_hat, y)
        self.log_dict(self.val_metrics, batch_size=x.shape[0])


class ClassificationTask(BaseTask):
    """torchgeo's ClassificationTask: a backbone frozen by hparams["freeze_backbone"] but for its classifier, a
    MulticlassAccuracy collection whose epoch values are logged in on_train_epoch_end and reset by hand, a
    dict batch's "image" and "label"."""

    def __init__(self, in_channels: int = 3, num_classes: int = 4, lr: float = 1e-2, patience: int = 2,
                 weights=None, freeze_backbone: bool = False):  # fmt: skip
        self.weights = weights
        super().__init__()

    def configure_models(self) -> None:
        self.model = nn.Sequential(small_backbone(), nn.Linear(8, self.hparams["num_classes"]))
        if self.hparams["freeze_backbone"]:
            for param in self.model.parameters():
                param.requires_grad = False
            for param in self.model[-1].parameters():
                param.requires_grad = True

    def configure_losses(self) -> None:
        self.criterion = nn.CrossEntropyLoss()

    def configure_metrics(self) -> None:
        metrics = MetricCollection(
            {"OverallAccuracy": MulticlassAccuracy(self.hparams["num_classes"], average="micro")}
        )
        self.train_metrics = metrics.clone(prefix="train_")
        self.val_metrics = metrics.clone(prefix="val_")

    def training_step(self, batch, batch_idx, dataloader_idx=0):
        x, y = batch["image"], batch["label"]
        y_hat = self(x)
        loss = self.criterion(y_hat, y)
        self.log("train_loss", loss, batch_size=x.shape[0])
        self.train_metrics(y_hat, y)
        return loss

    def on_train_epoch_end(self):
        self.log_dict(self.train_metrics.compute())
        self.train_metrics.reset()

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        x, y = batch["image"], batch["label"]
        y_hat = self(x)
        self.log("val_loss", self.criterion(y_hat, y), batch_size=x.shape[0])
        self.val_metrics(y_hat, y)

    def on_validation_epoch_end(self):
        self.log_dict(self.val_metrics.compute())
        self.val_metrics.reset()


class RegressionTask(BaseTask):
    """torchgeo's RegressionTask: a `target_key` class attribute, the target unsqueezed to the prediction's ndim,
    RMSE (MeanSquaredError(squared=False)) and MAE in a MetricCollection logged by log_dict without a batch size
    (Lightning infers it from the dict batch)."""

    target_key = "label"

    def __init__(self, in_channels: int = 3, num_outputs: int = 1, lr: float = 1e-2, patience: int = 1,
                 weights=None):  # fmt: skip
        self.weights = weights
        super().__init__()

    def configure_models(self) -> None:
        self.model = nn.Sequential(small_backbone(), nn.Linear(8, self.hparams["num_outputs"]))

    def configure_losses(self) -> None:
        self.criterion = nn.MSELoss()

    def configure_metrics(self) -> None:
        metrics = MetricCollection({"RMSE": MeanSquaredError(squared=False), "MAE": MeanAbsoluteError()})
        self.train_metrics = metrics.clone(prefix="train_")
        self.val_metrics = metrics.clone(prefix="val_")

    def training_step(self, batch, batch_idx, dataloader_idx=0):
        x = batch["image"]
        y = batch[self.target_key]
        y_hat = self(x)
        if y_hat.ndim != y.ndim:
            y = y.unsqueeze(dim=1)
        loss = self.criterion(y_hat, y.to(torch.float))
        self.log("train_loss", loss)
        self.train_metrics(y_hat, y.to(torch.float))
        self.log_dict(self.train_metrics)
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        x = batch["image"]
        y = batch[self.target_key]
        y_hat = self(x)
        if y_hat.ndim != y.ndim:
            y = y.unsqueeze(dim=1)
        self.log("val_loss", self.criterion(y_hat, y.to(torch.float)))
        self.val_metrics(y_hat, y.to(torch.float))
        self.log_dict(self.val_metrics)


# --- graphs: PyTorch Geometric's Data / Batch objects ------------------------------------------------------------


class GraphData:
    """PyG's Data / Batch as Lightning sees them: tensors in a store read as attributes, `to(device)` moving each
    (Lightning's _TransferableDataType), iteration over (key, value) pairs (how Lightning's extract_batch_size
    walks it), num_graphs from the batch vector."""

    def __init__(self, **store):
        self.__dict__["_store"] = dict(store)

    def __getattr__(self, key):
        try:
            return self.__dict__["_store"][key]
        except KeyError:
            raise AttributeError(key) from None

    def __setattr__(self, key, value):
        self._store[key] = value

    def __iter__(self):
        yield from self._store.items()

    def keys(self):
        return list(self._store)

    @property
    def num_graphs(self) -> int:
        return int(self._store["batch"].max()) + 1 if "batch" in self._store else 1

    def to(self, device, *args, non_blocking: bool = False):
        moved = {k: v.to(device, non_blocking=non_blocking) if torch.is_tensor(v) else v for k, v in self}
        return type(self)(**moved)


def random_graphs(count: int, seed: int, features: int = 6):
    """Small random graphs whose label is whether they hold more edges than nodes."""
    generator = torch.Generator().manual_seed(seed)
    graphs = []
    for _ in range(count):
        nodes = int(torch.randint(4, 9, (1,), generator=generator))
        edges = int(torch.randint(3, 14, (1,), generator=generator))
        edge_index = torch.randint(0, nodes, (2, edges), generator=generator)
        x = torch.randn(nodes, features, generator=generator)
        graphs.append(GraphData(x=x, edge_index=edge_index, y=torch.tensor([int(edges > nodes)])))
    return graphs


class Collater:
    """PyG's Collater: a list of graphs into one Batch (node features stacked, edge indices offset, a batch vector
    and ptr)."""

    def __call__(self, graphs):
        xs, edges, batch, ys, ptr = [], [], [], [], [0]
        for i, graph in enumerate(graphs):
            xs.append(graph.x)
            edges.append(graph.edge_index + ptr[-1])
            batch.append(torch.full((graph.x.size(0),), i, dtype=torch.long))
            ys.append(graph.y)
            ptr.append(ptr[-1] + graph.x.size(0))
        return GraphData(x=torch.cat(xs), edge_index=torch.cat(edges, dim=1), y=torch.cat(ys),
                         batch=torch.cat(batch), ptr=torch.tensor(ptr))  # fmt: skip


class GraphDataModule(pl.LightningDataModule):
    """PyG's LightningDataset: train/val graph lists served by loaders with its Collater."""

    def __init__(self, batch_size: int = 8, graphs: int = 96):
        super().__init__()
        self.batch_size = batch_size
        self.graphs = graphs

    def setup(self, stage: str) -> None:
        graphs = random_graphs(self.graphs + 24, seed=31)
        self.train_dataset, self.val_dataset = graphs[: self.graphs], graphs[self.graphs :]

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_dataset, batch_size=self.batch_size, shuffle=True, collate_fn=Collater())

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_dataset, batch_size=self.batch_size, collate_fn=Collater())


class SelfLoopsGraphData(GraphDataModule):
    """The datamodule adds self-loops in on_before_batch_transfer (a graph transform on the host) and moves batches
    itself in transfer_batch_to_device, as PyG's LightningDataModule does for its Batch objects."""

    def on_before_batch_transfer(self, batch, dataloader_idx):
        loops = torch.arange(batch.x.size(0)).repeat(2, 1)
        batch.edge_index = torch.cat([batch.edge_index, loops], dim=1)
        return batch

    def transfer_batch_to_device(self, batch, device, dataloader_idx):
        if isinstance(batch, GraphData):
            return batch.to(device, non_blocking=True)
        return super().transfer_batch_to_device(batch, device, dataloader_idx)


def scatter_sum(src, index, size: int):
    return torch.zeros(size, src.size(1), dtype=src.dtype, device=src.device).index_add_(0, index, src)


class GINConv(nn.Module):
    def __init__(self, mlp: nn.Module, train_eps: bool = True):
        super().__init__()
        self.mlp = mlp
        self.eps = nn.Parameter(torch.zeros(1)) if train_eps else None

    def forward(self, x, edge_index):
        src, dst = edge_index
        aggregated = scatter_sum(x[src], dst, x.size(0))
        return self.mlp((1 + self.eps) * x + aggregated)


class GIN(pl.LightningModule):
    """PyG's GIN example: GINConv layers with BatchNorm, global add pooling by the batch vector, dropout, a
    torchmetrics Accuracy per stage logged on epoch with batch_size=data.y.size(0), Adam; a ModelCheckpoint on
    val_acc among the trainer's callbacks."""

    def __init__(self, in_channels: int = 6, out_channels: int = 2, hidden_channels: int = 16, num_layers: int = 2,
                 dropout: float = 0.5):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.convs = nn.ModuleList()
        for _ in range(num_layers):
            mlp = nn.Sequential(nn.Linear(in_channels, 2 * hidden_channels), nn.BatchNorm1d(2 * hidden_channels),
                                nn.ReLU(inplace=True), nn.Linear(2 * hidden_channels, hidden_channels),
                                nn.BatchNorm1d(hidden_channels), nn.ReLU(inplace=True))  # fmt: skip
            self.convs.append(GINConv(mlp, train_eps=True))
            in_channels = hidden_channels
        self.classifier = nn.Sequential(nn.Linear(hidden_channels, hidden_channels), nn.ReLU(inplace=True),
                                        nn.Dropout(p=dropout), nn.Linear(hidden_channels, out_channels))  # fmt: skip
        self.train_acc = MulticlassAccuracy(out_channels, average="micro")
        self.val_acc = MulticlassAccuracy(out_channels, average="micro")

    def forward(self, x, edge_index, batch):
        for conv in self.convs:
            x = conv(x, edge_index)
        return self.classifier(scatter_sum(x, batch, int(batch.max()) + 1))

    def training_step(self, data, batch_idx):
        y_hat = self(data.x, data.edge_index, data.batch)
        loss = F.cross_entropy(y_hat, data.y)
        self.train_acc(y_hat.softmax(dim=-1), data.y)
        self.log("train_acc", self.train_acc, prog_bar=True, on_step=False, on_epoch=True, batch_size=data.y.size(0))
        return loss

    def validation_step(self, data, batch_idx):
        y_hat = self(data.x, data.edge_index, data.batch)
        self.val_acc(y_hat.softmax(dim=-1), data.y)
        self.log("val_acc", self.val_acc, prog_bar=True, on_step=False, on_epoch=True, batch_size=data.y.size(0))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01)


class GraphMeanPoolNet(pl.LightningModule):
    """A graph-level regressor whose logs give no batch size: Lightning infers it by walking the Batch's (key,
    value) pairs to its first tensor (x: the node count), for the epoch means of train_loss and val_loss."""

    def __init__(self, hidden: int = 16, lr: float = 5e-3):
        super().__init__()
        self.save_hyperparameters()
        self.lin1 = nn.Linear(6, hidden)
        self.lin2 = nn.Linear(hidden, hidden)
        self.out = nn.Linear(hidden, 1)

    def forward(self, data):
        src, dst = data.edge_index
        h = torch.relu(self.lin1(data.x))
        h = torch.relu(self.lin2(h + scatter_sum(h[src], dst, h.size(0))))
        counts = torch.bincount(data.batch).clamp(min=1).unsqueeze(-1).float()
        return self.out(scatter_sum(h, data.batch, data.num_graphs) / counts).squeeze(-1)

    def training_step(self, data, batch_idx):
        loss = F.mse_loss(self(data), data.y.float())
        self.log("train_loss", loss, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, data, batch_idx):
        self.log("val_loss", F.mse_loss(self(data), data.y.float()))

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class CitationGraphData(pl.LightningDataModule):
    """One citation-style graph served whole (PyG's LightningNodeData in full-batch mode): a loader over a single
    index whose collate function returns the graph with its train/val masks."""

    def __init__(self, nodes: int = 120, features: int = 8, classes: int = 3):
        super().__init__()
        self.nodes, self.features, self.classes = nodes, features, classes

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(41)
        y = torch.randint(0, self.classes, (self.nodes,), generator=generator)
        x = torch.randn(self.nodes, self.features, generator=generator) + F.one_hot(y, self.features).float()
        src = torch.randint(0, self.nodes, (400,), generator=generator)
        dst = torch.where(torch.rand(400, generator=generator) < 0.7, src.roll(1), src.roll(7))
        order = torch.randperm(self.nodes, generator=generator)
        train_mask = torch.zeros(self.nodes, dtype=torch.bool)
        train_mask[order[:60]] = True
        val_mask = torch.zeros(self.nodes, dtype=torch.bool)
        val_mask[order[60:90]] = True
        self.data = GraphData(x=x, edge_index=torch.stack([src, dst]), y=y, train_mask=train_mask, val_mask=val_mask)

    def full_batch(self, indices):
        return self.data

    def train_dataloader(self) -> DataLoader:
        return DataLoader(range(1), collate_fn=self.full_batch)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(range(1), collate_fn=self.full_batch)


class GraphSAGE(pl.LightningModule):
    """PyG's graph_sage example on a full graph: mean aggregation of neighbours, dropout, masked losses, accuracy
    logged on epoch with prog_bar and no batch size (Lightning reads the node count from the Data object)."""

    def __init__(self, in_channels: int = 8, hidden_channels: int = 16, out_channels: int = 3, dropout: float = 0.3):
        super().__init__()
        self.save_hyperparameters()
        self.lin_self = nn.ModuleList(
            [nn.Linear(in_channels, hidden_channels), nn.Linear(hidden_channels, out_channels)]
        )
        self.lin_neigh = nn.ModuleList(
            [nn.Linear(in_channels, hidden_channels), nn.Linear(hidden_channels, out_channels)]
        )

    def forward(self, x, edge_index):
        src, dst = edge_index
        degree = torch.bincount(dst, minlength=x.size(0)).clamp(min=1).unsqueeze(-1).float()
        for i, (lin_self, lin_neigh) in enumerate(zip(self.lin_self, self.lin_neigh)):
            neigh = scatter_sum(x[src], dst, x.size(0)) / degree
            x = lin_self(x) + lin_neigh(neigh)
            if i == 0:
                x = F.dropout(torch.relu(x), p=self.hparams.dropout, training=self.training)
        return x

    def training_step(self, data, batch_idx):
        out = self(data.x, data.edge_index)[data.train_mask]
        loss = F.cross_entropy(out, data.y[data.train_mask])
        acc = (out.argmax(-1) == data.y[data.train_mask]).float().mean()
        self.log("train_acc", acc, prog_bar=True, on_step=False, on_epoch=True)
        return loss

    def validation_step(self, data, batch_idx):
        out = self(data.x, data.edge_index)[data.val_mask]
        acc = (out.argmax(-1) == data.y[data.val_mask]).float().mean()
        self.log("val_acc", acc, prog_bar=True, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=0.01, weight_decay=5e-4)


# --- diffusion: DDPM noise schedules, timesteps drawn in training_step, an EMA copy -----------------------------


def linear_beta_schedule(timesteps: int, start: float = 1e-4, end: float = 0.02):
    return torch.linspace(start, end, timesteps, dtype=torch.float64)


class Points2D(pl.LightningDataModule):
    """Samples of a 2-d two-moons-like distribution, as toy diffusion projects train on."""

    def __init__(self, batch_size: int = 32, samples: int = 256):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(51)
        angle = torch.rand(self.samples, generator=generator) * math.pi
        upper = torch.rand(self.samples, generator=generator) < 0.5
        x = torch.where(upper, torch.cos(angle), 1 - torch.cos(angle))
        y = torch.where(upper, torch.sin(angle), 0.5 - torch.sin(angle))
        points = torch.stack([x, y], dim=1) + 0.05 * torch.randn(self.samples, 2, generator=generator)
        self.train_set = TensorDataset(points[: self.samples * 3 // 4])
        self.val_set = TensorDataset(points[self.samples * 3 // 4 :])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class TimeMLP(nn.Module):
    """A denoiser over 2-d points with a sinusoidal timestep embedding."""

    def __init__(self, hidden: int = 32, timesteps: int = 50):
        super().__init__()
        self.timesteps = timesteps
        self.net = nn.Sequential(nn.Linear(2 + 8, hidden), nn.SiLU(), nn.Linear(hidden, hidden), nn.SiLU(),
                                 nn.Linear(hidden, 2))  # fmt: skip

    def embed(self, t):
        freqs = torch.exp(torch.arange(4, device=t.device) * -(math.log(1000.0) / 4))
        angles = t.float().unsqueeze(-1) / self.timesteps * 100 * freqs
        return torch.cat([angles.sin(), angles.cos()], dim=-1)

    def forward(self, x, t):
        return self.net(torch.cat([x, self.embed(t)], dim=-1))


class GaussianDiffusion(pl.LightningModule):
    """A DDPM: the schedule's tensors registered as float32 buffers from a float64 computation, t drawn with
    torch.randint on self.device in training_step and the noise with randn_like, the noisy sample from
    q_sample, an EMA copy made by deepcopy and updated in on_train_batch_end with a warm-up of its decay by
    global_step; validation scores the EMA model on a fixed generator's noise."""

    def __init__(self, timesteps: int = 50, lr: float = 2e-3, ema_decay: float = 0.995, hidden: int = 32):
        super().__init__()
        self.save_hyperparameters()
        self.model = TimeMLP(hidden, timesteps)
        self.ema_model = copy.deepcopy(self.model).requires_grad_(False)
        betas = linear_beta_schedule(timesteps)
        alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

        def register_buffer(name, value):
            self.register_buffer(name, value.to(torch.float32))

        register_buffer("betas", betas)
        register_buffer("sqrt_alphas_cumprod", torch.sqrt(alphas_cumprod))
        register_buffer("sqrt_one_minus_alphas_cumprod", torch.sqrt(1.0 - alphas_cumprod))

    def q_sample(self, x_start, t, noise):
        return (
            self.sqrt_alphas_cumprod[t].unsqueeze(-1) * x_start
            + self.sqrt_one_minus_alphas_cumprod[t].unsqueeze(-1) * noise
        )

    def p_losses(self, model, x_start, t, noise):
        return F.mse_loss(model(self.q_sample(x_start, t, noise), t), noise)

    def training_step(self, batch, batch_idx):
        (x,) = batch
        t = torch.randint(0, self.hparams.timesteps, (x.shape[0],), device=self.device).long()
        loss = self.p_losses(self.model, x, t, torch.randn_like(x))
        self.log("train/loss", loss, prog_bar=True)
        return loss

    @torch.no_grad()
    def on_train_batch_end(self, outputs, batch, batch_idx):
        step = self.global_step
        decay = min(self.hparams.ema_decay, (1 + step) / (10 + step))
        for ema_param, param in zip(self.ema_model.parameters(), self.model.parameters()):
            ema_param.mul_(decay).add_(param.detach(), alpha=1 - decay)

    def validation_step(self, batch, batch_idx):
        (x,) = batch
        generator = torch.Generator(device=self.device).manual_seed(batch_idx)
        t = torch.randint(0, self.hparams.timesteps, (x.shape[0],), generator=generator, device=self.device)
        noise = torch.randn(x.shape, generator=generator, device=self.device)
        self.log("val/loss", self.p_losses(self.model, x, t, noise))
        self.log("val/loss_ema", self.p_losses(self.ema_model, x, t, noise))

    def configure_optimizers(self):
        return torch.optim.Adam(self.model.parameters(), lr=self.hparams.lr)


class EMA(nn.Module):
    """diffusers' EMAModel in small: shadow parameters, a step count, decay warm-up (1 + n) / (10 + n)."""

    def __init__(self, model: nn.Module, decay: float = 0.999):
        super().__init__()
        self.shadow = copy.deepcopy(model).requires_grad_(False)
        self.decay = decay
        self.register_buffer("num_updates", torch.tensor(0, dtype=torch.long))

    @torch.no_grad()
    def step(self, model: nn.Module) -> None:
        self.num_updates += 1
        n = int(self.num_updates)
        decay = min(self.decay, (1 + n) / (10 + n))
        for shadow, param in zip(self.shadow.parameters(), model.parameters()):
            shadow.sub_((1 - decay) * (shadow - param))


class DiffusionOptimizerStepEMA(GaussianDiffusion):
    """The EMA held in a module (EMA(nn.Module) with a num_updates buffer) and stepped in an optimizer_step
    override after super().optimizer_step(...), under gradient accumulation; a warm-up LambdaLR stepped every
    step; gradient clipping by the trainer's flag."""

    def __init__(self, timesteps: int = 50, lr: float = 2e-3, ema_decay: float = 0.995, hidden: int = 32,
                 warmup_steps: int = 4):  # fmt: skip
        super().__init__(timesteps, lr, ema_decay, hidden)
        self.ema = EMA(self.model, decay=ema_decay)

    def on_train_batch_end(self, outputs, batch, batch_idx):
        pass

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        super().optimizer_step(epoch, batch_idx, optimizer, optimizer_closure=optimizer_closure)
        self.ema.step(self.model)

    def validation_step(self, batch, batch_idx):
        (x,) = batch
        generator = torch.Generator().manual_seed(batch_idx)
        t = torch.randint(0, self.hparams.timesteps, (x.shape[0],), generator=generator)
        noise = torch.randn(x.shape, generator=generator)
        self.log("val/loss_ema", self.p_losses(self.ema.shadow, x, t, noise))

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.hparams.lr, weight_decay=1e-2)
        warmup = self.hparams.warmup_steps
        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: min(1.0, (step + 1) / warmup))
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}


class DiffusionZeroGradEMA(GaussianDiffusion):
    """The EMA updated in on_before_zero_grad (as Lightning's docs suggest for weight averaging) under gradient
    accumulation, and a sample drawn from the EMA model by the reverse process in on_validation_epoch_end with a
    generator seeded by current_epoch, its statistics logged."""

    def on_train_batch_end(self, outputs, batch, batch_idx):
        pass

    @torch.no_grad()
    def on_before_zero_grad(self, optimizer):
        decay = self.hparams.ema_decay
        for ema_param, param in zip(self.ema_model.parameters(), self.model.parameters()):
            ema_param.lerp_(param, 1 - decay)

    @torch.no_grad()
    def on_validation_epoch_end(self):
        generator = torch.Generator(device=self.device).manual_seed(self.current_epoch)
        x = torch.randn(16, 2, generator=generator, device=self.device)
        alphas = 1.0 - self.betas
        for i in reversed(range(self.hparams.timesteps)):
            t = torch.full((16,), i, device=self.device, dtype=torch.long)
            eps = self.ema_model(x, t)
            x = (x - self.betas[i] / self.sqrt_one_minus_alphas_cumprod[i] * eps) / alphas[i].sqrt()
            if i > 0:
                x = x + self.betas[i].sqrt() * torch.randn(x.shape, generator=generator, device=self.device)
        self.log_dict({"sample/mean": x.mean(), "sample/std": x.std()})


# --- VAEs: Lightning Bolts' VAE -------------------------------------------------------------------------------------


class FlatImages(pl.LightningDataModule):
    """Images flattened to vectors in [0, 1], with their labels (Bolts' VAE reads (x, y) batches)."""

    def __init__(self, batch_size: int = 16, samples: int = 128):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        images, labels = class_images(self.samples + 32, seed=61)
        flat = images.flatten(1).clamp(0, 1)
        self.train_set = TensorDataset(flat[: self.samples], labels[: self.samples])
        self.val_set = TensorDataset(flat[self.samples :], labels[self.samples :])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class BoltsVAE(pl.LightningModule):
    """Bolts' VAE: encoder, fc_mu and fc_var, a Normal posterior sampled with rsample (the global RNG), the KL as
    the mean of log q(z|x) - log p(z), the reconstruction MSE, a shared step returning (loss, logs) logged by
    log_dict under train_ / val_ prefixes (on step only in training), the KL's weight warmed up by
    current_epoch."""

    def __init__(self, input_dim: int = 192, enc_out_dim: int = 32, latent_dim: int = 4, kl_coeff: float = 0.1,
                 kl_warmup_epochs: int = 2, lr: float = 1e-3):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Linear(input_dim, enc_out_dim), nn.ReLU())
        self.decoder = nn.Sequential(nn.Linear(latent_dim, enc_out_dim), nn.ReLU(), nn.Linear(enc_out_dim, input_dim))
        self.fc_mu = nn.Linear(enc_out_dim, latent_dim)
        self.fc_var = nn.Linear(enc_out_dim, latent_dim)

    def forward(self, x):
        x = self.encoder(x)
        mu, log_var = self.fc_mu(x), self.fc_var(x)
        _, _, z = self.sample(mu, log_var)
        return self.decoder(z)

    def _run_step(self, x):
        x = self.encoder(x)
        mu, log_var = self.fc_mu(x), self.fc_var(x)
        p, q, z = self.sample(mu, log_var)
        return z, self.decoder(z), p, q

    def sample(self, mu, log_var):
        std = torch.exp(log_var / 2)
        p = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(std))
        q = torch.distributions.Normal(mu, std)
        z = q.rsample()
        return p, q, z

    def kl_weight(self):
        warmup = self.hparams.kl_warmup_epochs
        return self.hparams.kl_coeff * min(1.0, (self.current_epoch + 1) / warmup)

    def step(self, batch, batch_idx):
        x, _ = batch
        z, x_hat, p, q = self._run_step(x)
        recon_loss = F.mse_loss(x_hat, x, reduction="mean")
        kl = (q.log_prob(z) - p.log_prob(z)).mean()
        kl = kl * self.kl_weight()
        loss = kl + recon_loss
        logs = {"recon_loss": recon_loss, "kl": kl, "loss": loss}
        return loss, logs

    def training_step(self, batch, batch_idx):
        loss, logs = self.step(batch, batch_idx)
        self.log_dict({f"train_{k}": v for k, v in logs.items()}, on_step=True, on_epoch=False)
        return loss

    def validation_step(self, batch, batch_idx):
        loss, logs = self.step(batch, batch_idx)
        self.log_dict({f"val_{k}": v for k, v in logs.items()})
        return loss

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class CyclicalBetaVAE(BoltsVAE):
    """A beta-VAE with cyclical KL annealing: the KL weight ramps within each cycle of global_step, the cycle's
    length read from trainer.num_training_batches; the weight itself logged; a StepLR."""

    def kl_weight(self):
        cycle = max(1, self.trainer.num_training_batches)
        position = (self.global_step % cycle) / cycle
        return self.hparams.kl_coeff * min(1.0, 2 * position)

    def training_step(self, batch, batch_idx):
        loss, logs = self.step(batch, batch_idx)
        self.log("beta", self.kl_weight(), on_step=True, on_epoch=False)
        self.log_dict({f"train_{k}": v for k, v in logs.items()})
        return loss

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)]


# --- GPT-style language models: minGPT, nanoGPT ----------------------------------------------------------------------


def char_corpus(length: int, seed: int, vocab: int = 16):
    """A token stream with structure (a noisy repeating pattern), as a character-level corpus gives."""
    generator = torch.Generator().manual_seed(seed)
    base = torch.arange(length) % vocab
    noise = torch.randint(0, vocab, (length,), generator=generator)
    return torch.where(torch.rand(length, generator=generator) < 0.2, noise, base)


class CharDataset(Dataset):
    """minGPT's CharDataset: each item a block of tokens and the same block shifted by one."""

    def __init__(self, data, block_size: int):
        self.data, self.block_size = data, block_size

    def __len__(self) -> int:
        return len(self.data) - self.block_size

    def __getitem__(self, idx):
        chunk = self.data[idx : idx + self.block_size + 1]
        return chunk[:-1], chunk[1:]


class CharDataModule(pl.LightningDataModule):
    def __init__(self, batch_size: int = 16, block_size: int = 8, length: int = 520):
        super().__init__()
        self.batch_size, self.block_size, self.length = batch_size, block_size, length

    def setup(self, stage: str) -> None:
        self.train_dataset = CharDataset(char_corpus(self.length, seed=71), self.block_size)
        self.val_dataset = CharDataset(char_corpus(self.length // 4, seed=72), self.block_size)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_dataset, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_dataset, batch_size=self.batch_size)


class Block(nn.Module):
    """A pre-norm transformer block with causal self-attention."""

    def __init__(self, n_embd: int, n_head: int, block_size: int, dropout: float = 0.1):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = nn.MultiheadAttention(n_embd, n_head, dropout=dropout, batch_first=True)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(), nn.Linear(4 * n_embd, n_embd),
                                 nn.Dropout(dropout))  # fmt: skip
        self.register_buffer("mask", torch.triu(torch.ones(block_size, block_size, dtype=torch.bool), diagonal=1))

    def forward(self, x):
        t = x.size(1)
        h = self.ln_1(x)
        x = x + self.attn(h, h, h, attn_mask=self.mask[:t, :t], need_weights=False)[0]
        return x + self.mlp(self.ln_2(x))


class GPT(pl.LightningModule):
    """minGPT's GPT as a LightningModule: token and position embeddings (pos_emb an nn.Parameter), blocks, a head;
    configure_optimizers sorts every parameter into decay / no_decay by module type (Linear weights decay;
    LayerNorm, Embedding and biases do not; pos_emb by name), asserts the split covers all, AdamW with betas
    (0.9, 0.95); a linear warm-up then cosine LambdaLR stepped every step over
    trainer.estimated_stepping_batches."""

    def __init__(self, vocab_size: int = 16, block_size: int = 8, n_layer: int = 2, n_head: int = 2,
                 n_embd: int = 16, learning_rate: float = 3e-3, weight_decay: float = 0.1,
                 warmup_fraction: float = 0.1, betas: tuple = (0.9, 0.95)):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.tok_emb = nn.Embedding(vocab_size, n_embd)
        self.pos_emb = nn.Parameter(torch.zeros(1, block_size, n_embd))
        self.drop = nn.Dropout(0.1)
        self.blocks = nn.Sequential(*[Block(n_embd, n_head, block_size) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab_size, bias=False)
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, (nn.Linear, nn.Embedding)):
            module.weight.data.normal_(mean=0.0, std=0.02)
            if isinstance(module, nn.Linear) and module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def forward(self, idx, targets=None):
        t = idx.size(1)
        x = self.drop(self.tok_emb(idx) + self.pos_emb[:, :t, :])
        logits = self.head(self.ln_f(self.blocks(x)))
        loss = None
        if targets is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), targets.view(-1))
        return logits, loss

    def configure_optimizers(self):
        decay, no_decay = set(), set()
        whitelist_weight_modules = (torch.nn.Linear, torch.nn.MultiheadAttention)
        blacklist_weight_modules = (torch.nn.LayerNorm, torch.nn.Embedding)
        for mn, m in self.named_modules():
            for pn, p in m.named_parameters(recurse=False):
                fpn = f"{mn}.{pn}" if mn else pn
                if pn.endswith("bias"):
                    no_decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, whitelist_weight_modules):
                    decay.add(fpn)
                elif pn.endswith("weight") and isinstance(m, blacklist_weight_modules):
                    no_decay.add(fpn)
        no_decay.add("pos_emb")
        param_dict = dict(self.named_parameters())
        inter_params = decay & no_decay
        union_params = decay | no_decay
        assert len(inter_params) == 0, f"parameters {inter_params} made it into both decay/no_decay sets!"
        assert len(param_dict.keys() - union_params) == 0, f"{param_dict.keys() - union_params} were not separated"
        optim_groups = [
            {"params": [param_dict[pn] for pn in sorted(decay)], "weight_decay": self.hparams.weight_decay},
            {"params": [param_dict[pn] for pn in sorted(no_decay)], "weight_decay": 0.0},
        ]
        optimizer = torch.optim.AdamW(optim_groups, lr=self.hparams.learning_rate, betas=self.hparams.betas)
        total = self.trainer.estimated_stepping_batches
        warmup = max(1, int(self.hparams.warmup_fraction * total))

        def lr_lambda(step):
            if step < warmup:
                return (step + 1) / warmup
            progress = (step - warmup) / max(1, total - warmup)
            return max(0.1, 0.5 * (1.0 + math.cos(math.pi * progress)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lr_lambda)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step", "frequency": 1}}

    def training_step(self, batch, batch_idx):
        idx, targets = batch
        _, loss = self(idx, targets)
        self.log("train_loss", loss, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        idx, targets = batch
        _, loss = self(idx, targets)
        self.log("val_loss", loss, prog_bar=True)


class WarmupCosineLearningRateDecay(Callback):
    """minGPT's Lightning-era lr_decay callback: it counts the tokens trained on in on_train_batch_end and sets
    every param group's lr of trainer.optimizers from a linear warm-up and a cosine decay over tokens."""

    def __init__(self, learning_rate: float, warmup_tokens: int, final_tokens: int):
        super().__init__()
        self.learning_rate = learning_rate
        self.warmup_tokens = warmup_tokens
        self.final_tokens = final_tokens
        self.tokens = 0

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        _, y = batch
        self.tokens += int((y >= 0).sum())
        if self.tokens < self.warmup_tokens:
            lr_mult = float(self.tokens) / float(max(1, self.warmup_tokens))
        else:
            progress = float(self.tokens - self.warmup_tokens) / float(max(1, self.final_tokens - self.warmup_tokens))
            lr_mult = max(0.1, 0.5 * (1.0 + math.cos(math.pi * progress)))
        lr = self.learning_rate * lr_mult
        for optimizer in trainer.optimizers:
            for param_group in optimizer.param_groups:
                param_group["lr"] = lr


class GPTPlainAdamW(GPT):
    """minGPT with its learning rate driven by the callback above: configure_optimizers returns the AdamW alone."""

    def configure_optimizers(self):
        no_decay = [p for n, p in self.named_parameters() if n.endswith("bias") or "ln" in n or n == "pos_emb"]
        decay = [p for n, p in self.named_parameters() if not (n.endswith("bias") or "ln" in n or n == "pos_emb")]
        groups = [
            {"params": decay, "weight_decay": self.hparams.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]
        return torch.optim.AdamW(groups, lr=self.hparams.learning_rate, betas=self.hparams.betas)


class RandomBlocks(IterableDataset):
    """nanoGPT's get_batch as an endless IterableDataset: block offsets drawn with torch.randint (the global RNG)."""

    def __init__(self, data, block_size: int):
        self.data, self.block_size = data, block_size

    def __iter__(self):
        while True:
            i = int(torch.randint(len(self.data) - self.block_size, (1,)))
            chunk = self.data[i : i + self.block_size + 1]
            yield chunk[:-1], chunk[1:]


class NanoGPTData(pl.LightningDataModule):
    def __init__(self, batch_size: int = 16, block_size: int = 8):
        super().__init__()
        self.batch_size, self.block_size = batch_size, block_size

    def setup(self, stage: str) -> None:
        self.train_data = char_corpus(600, seed=73)
        self.val_data = char_corpus(200, seed=74)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(RandomBlocks(self.train_data, self.block_size), batch_size=self.batch_size)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(CharDataset(self.val_data, self.block_size), batch_size=self.batch_size)


class NanoGPT(GPT):
    """nanoGPT on Lightning: AdamW groups by parameter dimension (2-d and up decay), the fused flag chosen by
    inspecting AdamW's signature (and the device), and the learning rate set by hand from get_lr(iter) in an
    optimizer_step override before calling the optimizer with its closure; trained by max_steps over an endless
    loader, validated every val_check_interval batches on a few batches."""

    def get_lr(self, it: int) -> float:
        warmup_iters, lr_decay_iters, min_lr = 3, self.trainer.max_steps, self.hparams.learning_rate / 10
        if it < warmup_iters:
            return self.hparams.learning_rate * (it + 1) / (warmup_iters + 1)
        if it > lr_decay_iters:
            return min_lr
        decay_ratio = (it - warmup_iters) / (lr_decay_iters - warmup_iters)
        coeff = 0.5 * (1.0 + math.cos(math.pi * decay_ratio))
        return min_lr + coeff * (self.hparams.learning_rate - min_lr)

    def configure_optimizers(self):
        param_dict = {pn: p for pn, p in self.named_parameters() if p.requires_grad}
        decay_params = [p for n, p in param_dict.items() if p.dim() >= 2]
        nodecay_params = [p for n, p in param_dict.items() if p.dim() < 2]
        optim_groups = [
            {"params": decay_params, "weight_decay": self.hparams.weight_decay},
            {"params": nodecay_params, "weight_decay": 0.0},
        ]
        fused_available = "fused" in inspect.signature(torch.optim.AdamW).parameters
        use_fused = fused_available and self.device.type == "cuda"
        extra_args = {"fused": True} if use_fused else {}
        return torch.optim.AdamW(optim_groups, lr=self.hparams.learning_rate, betas=self.hparams.betas, **extra_args)

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure=None):
        lr = self.get_lr(self.trainer.global_step)
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr
        optimizer.step(closure=optimizer_closure)
        self.log("lr", lr, on_step=True, on_epoch=False)


# --- time series: darts, pytorch-forecasting --------------------------------------------------------------------------


def sine_series(length: int, seed: int):
    generator = torch.Generator().manual_seed(seed)
    t = torch.arange(length, dtype=torch.float32)
    noise = 0.1 * torch.randn(length, generator=generator)
    return (torch.sin(t * 0.2) + 0.5 * torch.sin(t * 0.05) + noise).unsqueeze(-1)


class PastCovariatesDataset(Dataset):
    """darts' PastCovariatesSequentialDataset in small: (past_target, past_covariates, future_target) windows, the
    covariates None when the series has none."""

    def __init__(self, series, input_chunk_length: int, output_chunk_length: int, covariates=None):
        self.series, self.covariates = series, covariates
        self.input_chunk_length, self.output_chunk_length = input_chunk_length, output_chunk_length

    def __len__(self) -> int:
        return len(self.series) - self.input_chunk_length - self.output_chunk_length + 1

    def __getitem__(self, idx):
        past = self.series[idx : idx + self.input_chunk_length]
        future = self.series[idx + self.input_chunk_length : idx + self.input_chunk_length + self.output_chunk_length]
        covariates = None if self.covariates is None else self.covariates[idx : idx + self.input_chunk_length]
        return past, covariates, future


def batch_collate_fn(batch):
    """darts' _batch_collate_fn: stack each position of the samples' tuples, None where a sample holds None."""
    first = batch[0]
    aggregated = []
    for i, elem in enumerate(first):
        if elem is None:
            aggregated.append(None)
        else:
            aggregated.append(torch.stack([sample[i] for sample in batch]))
    return tuple(aggregated)


class SeriesWindowsData(pl.LightningDataModule):
    """Training and validation windows of one series (the validation part after the training part)."""

    def __init__(self, batch_size: int = 16, input_chunk_length: int = 12, output_chunk_length: int = 4,
                 length: int = 200, with_covariates: bool = False):  # fmt: skip
        super().__init__()
        self.batch_size = batch_size
        self.input_chunk_length, self.output_chunk_length = input_chunk_length, output_chunk_length
        self.length, self.with_covariates = length, with_covariates

    def setup(self, stage: str) -> None:
        series = sine_series(self.length, seed=81)
        covariates = torch.cos(torch.arange(self.length) * 0.2).unsqueeze(-1) if self.with_covariates else None
        cut = self.length * 3 // 4
        self.train_set = PastCovariatesDataset(series[:cut], self.input_chunk_length, self.output_chunk_length,
                                               None if covariates is None else covariates[:cut])  # fmt: skip
        self.val_set = PastCovariatesDataset(series[cut:], self.input_chunk_length, self.output_chunk_length,
                                             None if covariates is None else covariates[cut:])  # fmt: skip

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True,
                          collate_fn=batch_collate_fn)  # fmt: skip

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, collate_fn=batch_collate_fn)


class PLForecastingModule(pl.LightningModule, ABC):
    """darts' PLForecastingModule: the optimizer and scheduler built from classes and kwargs given to __init__
    (ReduceLROnPlateau's monitor popped from the kwargs), returned as ([optimizer], {scheduler, monitor}); losses
    logged with batch_size and sync_dist, torchmetrics' functional metrics named in metrics_str logged on epoch;
    dtype saved in on_save_checkpoint."""

    def __init__(self, input_chunk_length: int = 12, output_chunk_length: int = 4, loss_fn: nn.Module | None = None,
                 optimizer_cls: Callable = torch.optim.Adam, optimizer_kwargs: dict | None = None,
                 lr_scheduler_cls: Callable | None = ReduceLROnPlateau, lr_scheduler_kwargs: dict | None = None,
                 metrics_str: tuple = ("mean_absolute_error",)):  # fmt: skip
        super().__init__()
        self.save_hyperparameters(ignore=["loss_fn"])
        self.input_chunk_length = input_chunk_length
        self.output_chunk_length = output_chunk_length
        self.criterion = loss_fn if loss_fn is not None else nn.MSELoss()
        self.optimizer_cls = optimizer_cls
        self.optimizer_kwargs = {} if optimizer_kwargs is None else optimizer_kwargs
        self.lr_scheduler_cls = lr_scheduler_cls
        self.lr_scheduler_kwargs = {} if lr_scheduler_kwargs is None else lr_scheduler_kwargs
        import torchmetrics.functional

        self.metrics = [getattr(torchmetrics.functional, name) for name in metrics_str]
        self.metrics_str = list(metrics_str)

    @abstractmethod
    def _produce_train_output(self, input_batch):
        pass

    def training_step(self, train_batch, batch_idx):
        output = self._produce_train_output(train_batch[:-1])
        target = train_batch[-1]
        loss = self.criterion(output, target)
        self.log("train_loss", loss, batch_size=train_batch[0].shape[0], prog_bar=True, sync_dist=True)
        self._calculate_metrics(output, target, "train")
        return loss

    def validation_step(self, val_batch, batch_idx):
        output = self._produce_train_output(val_batch[:-1])
        target = val_batch[-1]
        loss = self.criterion(output, target)
        self.log("val_loss", loss, batch_size=val_batch[0].shape[0], prog_bar=True, sync_dist=True)
        self._calculate_metrics(output, target, "val")
        return loss

    def _calculate_metrics(self, output, target, tag):
        for metric, metric_str in zip(self.metrics, self.metrics_str):
            self.log(f"{tag}_{metric_str}", metric(output, target), on_epoch=True, on_step=False, logger=True,
                     prog_bar=True, batch_size=target.shape[0])  # fmt: skip

    def configure_optimizers(self):
        def _create_from_cls_and_kwargs(cls, kws):
            try:
                return cls(**kws)
            except (TypeError, ValueError) as e:
                raise ValueError(f"Error when building the optimizer or learning rate scheduler: {e}") from e

        optimizer_kws = {k: v for k, v in self.optimizer_kwargs.items()}
        optimizer_kws["params"] = self.parameters()
        optimizer = _create_from_cls_and_kwargs(self.optimizer_cls, optimizer_kws)
        if self.lr_scheduler_cls is not None:
            lr_sched_kws = {k: v for k, v in self.lr_scheduler_kwargs.items()}
            lr_sched_kws["optimizer"] = optimizer
            lr_monitor = lr_sched_kws.pop("monitor", None)
            lr_scheduler = _create_from_cls_and_kwargs(self.lr_scheduler_cls, lr_sched_kws)
            return [optimizer], {
                "scheduler": lr_scheduler,
                "monitor": lr_monitor if lr_monitor is not None else "val_loss",
            }
        return optimizer

    def on_save_checkpoint(self, checkpoint):
        checkpoint["model_dtype"] = str(self.dtype)

    @property
    def epochs_trained(self):
        return self.current_epoch


class BlockRNN(PLForecastingModule):
    """darts' BlockRNNModel: a GRU over the input chunk, a linear layer to the whole output chunk."""

    def __init__(self, hidden_dim: int = 16, **kwargs):
        super().__init__(**kwargs)
        self.rnn = nn.GRU(1, hidden_dim, batch_first=True)
        self.fc = nn.Linear(hidden_dim, self.output_chunk_length)

    def _produce_train_output(self, input_batch):
        past_target, past_covariates = input_batch
        x = past_target if past_covariates is None else torch.cat([past_target, past_covariates], dim=2)
        _, hidden = self.rnn(x[..., :1])
        return self.fc(hidden[-1]).unsqueeze(-1)


class BlockRNNByPath(BlockRNN):
    """BlockRNN with the parent's arguments spelled out, as a project exposes darts' module to LightningCLI: the
    optimizer and scheduler classes typed Callable, so that a config gives them by import path."""

    def __init__(self, hidden_dim: int = 16, input_chunk_length: int = 12, output_chunk_length: int = 4,
                 optimizer_cls: Callable = torch.optim.Adam, optimizer_kwargs: dict | None = None,
                 lr_scheduler_cls: Callable | None = ReduceLROnPlateau, lr_scheduler_kwargs: dict | None = None,
                 metrics_str: tuple = ("mean_absolute_error",)):  # fmt: skip
        super().__init__(hidden_dim=hidden_dim, input_chunk_length=input_chunk_length,
                         output_chunk_length=output_chunk_length, optimizer_cls=optimizer_cls,
                         optimizer_kwargs=optimizer_kwargs, lr_scheduler_cls=lr_scheduler_cls,
                         lr_scheduler_kwargs=lr_scheduler_kwargs, metrics_str=metrics_str)  # fmt: skip


class TeacherForcedSeq2Seq(pl.LightningModule):
    """pytorch-forecasting's DeepAR / seq2seq decoding: an LSTM encoder, a decoder cell fed the true previous value
    with a teacher-forcing ratio decayed by current_epoch (a coin per decoding step from torch.rand, the global
    RNG) while training and its own prediction while validating; ReduceLROnPlateau on val_loss with strict and
    frequency; EarlyStopping and ModelCheckpoint on val_loss among the trainer's callbacks."""

    def __init__(self, hidden_size: int = 16, learning_rate: float = 5e-3, teacher_forcing: float = 0.9,
                 teacher_forcing_decay: float = 0.5, reduce_on_plateau_patience: int = 1):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.LSTM(1, hidden_size, batch_first=True)
        self.decoder = nn.LSTMCell(1, hidden_size)
        self.output_layer = nn.Linear(hidden_size, 1)

    @property
    def teacher_forcing_ratio(self):
        return self.hparams.teacher_forcing * self.hparams.teacher_forcing_decay**self.current_epoch

    def forward(self, past, future=None, horizon: int = 4):
        _, (h, c) = self.encoder(past)
        h, c = h[-1], c[-1]
        step_input = past[:, -1]
        outputs = []
        for i in range(horizon):
            h, c = self.decoder(step_input, (h, c))
            prediction = self.output_layer(h)
            outputs.append(prediction)
            if future is not None and self.training and torch.rand(1).item() < self.teacher_forcing_ratio:
                step_input = future[:, i]
            else:
                step_input = prediction
        return torch.stack(outputs, dim=1)

    def training_step(self, batch, batch_idx):
        past, _, future = batch
        prediction = self(past, future, horizon=future.shape[1])
        loss = F.l1_loss(prediction, future)
        self.log("train_loss", loss, on_step=self.training, on_epoch=True, prog_bar=True, batch_size=past.size(0))
        return loss

    def validation_step(self, batch, batch_idx):
        past, _, future = batch
        loss = F.l1_loss(self(past, horizon=future.shape[1]), future)
        self.log("val_loss", loss, on_step=False, on_epoch=True, prog_bar=True, batch_size=past.size(0))

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)
        scheduler = ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                      patience=self.hparams.reduce_on_plateau_patience, min_lr=1e-5)  # fmt: skip
        return {
            "optimizer": optimizer,
            "lr_scheduler": {
                "scheduler": scheduler,
                "monitor": "val_loss",
                "interval": "epoch",
                "frequency": 1,
                "strict": True,
            },
        }


class ResampledWindowsData(SeriesWindowsData):
    """Windows re-drawn at every epoch: train_dataloader picks random window starts with torch.randint (the global
    RNG), as samplers of long series do; reload_dataloaders_every_n_epochs asks Lightning to call it each epoch."""

    def train_dataloader(self) -> DataLoader:
        starts = torch.randint(0, len(self.train_set), (48,))
        subset = torch.utils.data.Subset(self.train_set, starts.tolist())
        return DataLoader(subset, batch_size=self.batch_size, shuffle=False, collate_fn=batch_collate_fn)


# --- CLIP-style contrastive training ----------------------------------------------------------------------------------


class ImageTextPairs(pl.LightningDataModule):
    """(image, token ids) pairs whose tokens describe the image's class, with a little noise."""

    def __init__(self, batch_size: int = 16, samples: int = 96, vocab: int = 20, length: int = 6):
        super().__init__()
        self.batch_size, self.samples, self.vocab, self.length = batch_size, samples, vocab, length

    def setup(self, stage: str) -> None:
        images, labels = class_images(self.samples + 32, seed=91)
        generator = torch.Generator().manual_seed(92)
        tokens = labels.unsqueeze(-1) * 4 + torch.randint(0, 4, (self.samples + 32, self.length), generator=generator)
        self.train_set = TensorDataset(images[: self.samples], tokens[: self.samples])
        self.val_set = TensorDataset(images[self.samples :], tokens[self.samples :])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class TinyCLIP(nn.Module):
    """An image tower, a text tower (embedding bag) and CLIP's learnable logit scale, init log(1 / 0.07)."""

    def __init__(self, embed_dim: int = 8, vocab: int = 20):
        super().__init__()
        self.visual = nn.Sequential(small_backbone(), nn.Linear(8, embed_dim))
        self.token_embedding = nn.Embedding(vocab, 16)
        self.text_projection = nn.Linear(16, embed_dim, bias=False)
        self.logit_scale = nn.Parameter(torch.ones([]) * math.log(1 / 0.07))

    def encode_image(self, image):
        return self.visual(image)

    def encode_text(self, text):
        return self.text_projection(self.token_embedding(text).mean(1))

    def forward(self, image, text):
        image_features = F.normalize(self.encode_image(image), dim=1)
        text_features = F.normalize(self.encode_text(text), dim=1)
        logits_per_image = self.logit_scale.exp() * image_features @ text_features.t()
        return logits_per_image, logits_per_image.t()


class CLIPWrapper(pl.LightningModule):
    """train-CLIP's CLIPWrapper: manual optimization over mini-batches of each batch; features computed under
    no_grad and gathered with self.all_gather, then each mini-batch re-encoded with grad into a deepcopy of the
    gathered list at [self.global_rank] and backpropagated by manual_backward; the optimizer and a
    CosineAnnealingWarmRestarts stepped by hand; logit_scale clamped after the step; the scheduler's T_0 from a
    num_training_steps property reading len(trainer.datamodule.train_dataloader()), trainer.max_steps,
    num_devices, accumulate_grad_batches and max_epochs."""

    def __init__(self, minibatch_size: int = 8, learning_rate: float = 5e-3):
        super().__init__()
        self.model = TinyCLIP()
        self.minibatch_size = minibatch_size
        self.learning_rate = learning_rate
        self.automatic_optimization = False

    @property
    def num_training_steps(self) -> int:
        if self.trainer.max_steps > 0:
            return self.trainer.max_steps
        limit_batches = self.trainer.limit_train_batches
        batches = len(self.trainer.datamodule.train_dataloader())
        batches = min(batches, limit_batches) if isinstance(limit_batches, int) else int(limit_batches * batches)
        num_devices = max(1, self.trainer.num_devices)
        effective_accum = self.trainer.accumulate_grad_batches * num_devices
        return (batches // effective_accum) * self.trainer.max_epochs

    def training_step(self, train_batch, idx):
        optimizer = self.optimizers()
        image, text = train_batch
        n = math.ceil(len(image) // self.minibatch_size) if self.minibatch_size > 0 else 1
        image_mbs = torch.chunk(image, n)
        text_mbs = torch.chunk(text, n)
        with torch.no_grad():
            ims = [F.normalize(self.model.encode_image(im), dim=1) for im in image_mbs]
            txt = [F.normalize(self.model.encode_text(t), dim=1) for t in text_mbs]
            ims = self.all_gather(torch.cat(ims))
            txt = self.all_gather(torch.cat(txt))
            if len(ims.shape) == 3:
                ims = list(ims)
                txt = list(txt)
            else:
                ims = [ims]
                txt = [txt]
            image_logits = torch.cat(ims) @ torch.cat(txt).t() * self.model.logit_scale.exp()
            ground_truth = torch.arange(len(image_logits)).long().to(image_logits.device)
            loss = (F.cross_entropy(image_logits, ground_truth) + F.cross_entropy(image_logits.t(), ground_truth)) / 2
            acc_i = (torch.argmax(image_logits, 1) == ground_truth).sum()
            acc_t = (torch.argmax(image_logits, 0) == ground_truth).sum()
            self.log_dict({"loss": loss, "acc": (acc_i + acc_t) / 2 / len(image)}, prog_bar=True)
        optimizer.zero_grad()
        for j, mb in enumerate(image_mbs):
            images_tmp = copy.deepcopy(ims)
            images_tmp[self.global_rank][j * self.minibatch_size : (j + 1) * self.minibatch_size] = F.normalize(
                self.model.encode_image(mb), dim=1
            )
            image_logits = torch.cat(images_tmp) @ torch.cat(txt).t() * self.model.logit_scale.exp()
            loss = (F.cross_entropy(image_logits, ground_truth) + F.cross_entropy(image_logits.t(), ground_truth)) / 2
            self.manual_backward(loss)
        for j, mb in enumerate(text_mbs):
            text_tmp = copy.deepcopy(txt)
            text_tmp[self.global_rank][j * self.minibatch_size : (j + 1) * self.minibatch_size] = F.normalize(
                self.model.encode_text(mb), dim=1
            )
            image_logits = torch.cat(ims) @ torch.cat(text_tmp).t() * self.model.logit_scale.exp()
            loss = (F.cross_entropy(image_logits, ground_truth) + F.cross_entropy(image_logits.t(), ground_truth)) / 2
            self.manual_backward(loss)
        optimizer.step()
        lr_scheduler = self.lr_schedulers()
        lr_scheduler.step()
        self.model.logit_scale.data.clamp_(-math.log(100), math.log(100))

    def validation_step(self, val_batch, idx):
        image, text = val_batch
        image_logits, text_logits = self.model(image, text)
        ground_truth = torch.arange(len(image_logits))
        loss = (F.cross_entropy(image_logits, ground_truth) + F.cross_entropy(text_logits, ground_truth)).div(2)
        self.log("val_loss", loss)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.learning_rate, betas=(0.9, 0.98), eps=1e-6,
                                      weight_decay=0.2)  # fmt: skip
        lr_scheduler = torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(optimizer, T_0=self.num_training_steps)
        return {"optimizer": optimizer, "lr_scheduler": lr_scheduler}


class OpenCLIPStyle(pl.LightningModule):
    """open_clip's training recipe under automatic optimization: features gathered with all_gather(sync_grads=True)
    and flattened, the symmetric InfoNCE with logit_scale.exp(); AdamW whose exclude rule (ndim < 2, bias, ln,
    logit_scale) puts those parameters in a no-decay group; a warm-up cosine LambdaLR per step over
    estimated_stepping_batches; logit_scale clamped to [0, log 100] in on_train_batch_end; the temperature logged."""

    def __init__(self, lr: float = 5e-3, weight_decay: float = 0.2, warmup: int = 2):
        super().__init__()
        self.save_hyperparameters()
        self.model = TinyCLIP()

    def training_step(self, batch, batch_idx):
        image, text = batch
        image_features = F.normalize(self.model.encode_image(image), dim=-1)
        text_features = F.normalize(self.model.encode_text(text), dim=-1)
        all_image = self.all_gather(image_features, sync_grads=True).reshape(-1, image_features.shape[-1])
        all_text = self.all_gather(text_features, sync_grads=True).reshape(-1, text_features.shape[-1])
        logit_scale = self.model.logit_scale.exp()
        logits_per_image = logit_scale * all_image @ all_text.T
        labels = torch.arange(logits_per_image.shape[0], device=self.device, dtype=torch.long)
        loss = (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_image.T, labels)) / 2
        self.log("train/contrastive_loss", loss, prog_bar=True)
        self.log("train/scale", logit_scale)
        return loss

    def on_train_batch_end(self, outputs, batch, batch_idx):
        with torch.no_grad():
            self.model.logit_scale.clamp_(0, math.log(100))

    def validation_step(self, batch, batch_idx):
        image, text = batch
        logits_per_image, logits_per_text = self.model(image, text)
        labels = torch.arange(len(image))
        self.log("val/loss", (F.cross_entropy(logits_per_image, labels) + F.cross_entropy(logits_per_text, labels)) / 2)

    def configure_optimizers(self):
        def exclude(n, p):
            return p.ndim < 2 or "bn" in n or "ln" in n or "bias" in n or "logit_scale" in n

        named_parameters = list(self.model.named_parameters())
        gain_or_bias_params = [p for n, p in named_parameters if exclude(n, p) and p.requires_grad]
        rest_params = [p for n, p in named_parameters if not exclude(n, p) and p.requires_grad]
        optimizer = torch.optim.AdamW(
            [{"params": gain_or_bias_params, "weight_decay": 0.0},
             {"params": rest_params, "weight_decay": self.hparams.weight_decay}],
            lr=self.hparams.lr, betas=(0.9, 0.98), eps=1e-6,
        )  # fmt: skip
        total = self.trainer.estimated_stepping_batches
        warmup = self.hparams.warmup

        def cosine_lr(step):
            if step < warmup:
                return (step + 1) / warmup
            return 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_lr)
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


# --- callbacks that hand the trainer on, or read it by name -----------------------------------------------------------


class VectorData(pl.LightningDataModule):
    """Seeded random vectors with a linear-ish label (a plain classification data set)."""

    def __init__(self, batch_size: int = 16, samples: int = 96, features: int = 8):
        super().__init__()
        self.batch_size, self.samples, self.features = batch_size, samples, features

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(101)
        x = torch.randn(self.samples + 32, self.features, generator=generator)
        y = (x[:, 0] + 0.5 * x[:, 1] > 0).long() + (x[:, 2] > 1).long()
        self.train_set = TensorDataset(x[: self.samples], y[: self.samples])
        self.val_set = TensorDataset(x[self.samples :], y[self.samples :])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class RecordingClassifier(pl.LightningModule):
    """A small MLP classifier that keeps `records`, a list the callbacks of these cases append plain values to."""

    def __init__(self, features: int = 8, hidden: int = 16, classes: int = 3, lr: float = 0.05):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(features, hidden), nn.ReLU(), nn.Linear(hidden, classes))
        self.records = []

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_idx):
        x, y = batch
        loss = F.cross_entropy(self(x), y)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.log("val_loss", F.cross_entropy(logits, y), prog_bar=True)
        self.log("val_acc", (logits.argmax(-1) == y).float().mean())

    def configure_optimizers(self):
        optimizer = torch.optim.SGD(self.parameters(), lr=self.hparams.lr, momentum=0.9)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.7)]


def plain_value(value):
    """A trainer attribute's value as plain Python (what the records compare)."""
    if torch.is_tensor(value):
        return round(float(value), 6)
    if isinstance(value, float):
        return round(value, 6) if math.isfinite(value) else str(value)
    if isinstance(value, (list, tuple)):
        return [plain_value(v) for v in value]
    if isinstance(value, dict):
        return {k: plain_value(v) for k, v in sorted(value.items())}
    if value is None or isinstance(value, (bool, int, str)):
        return value
    return type(value).__name__


def log_stats(trainer, pl_module, stage: str) -> None:
    """A project's helper the callback hands the trainer to: it reads several of its attributes and logs through
    the module."""
    lr = trainer.optimizers[0].param_groups[0]["lr"]
    row = {
        "stage": stage,
        "epoch": trainer.current_epoch,
        "step": trainer.global_step,
        "max_epochs": trainer.max_epochs,
        "batches": trainer.num_training_batches,
        "val_batches": plain_value(trainer.num_val_batches),
        "lr": round(lr, 8),
        "metrics": plain_value(dict(trainer.callback_metrics)),
        "is_last_batch": trainer.is_last_batch,
        "scheduler_interval": trainer.lr_scheduler_configs[0].interval,
    }
    pl_module.records.append(row)
    pl_module.log(f"{stage}_lr", lr)


class StatsCallback(Callback):
    """A callback whose hooks hand the trainer and module on to log_stats."""

    def on_train_epoch_end(self, trainer, pl_module):
        log_stats(trainer, pl_module, "train")

    def on_validation_epoch_end(self, trainer, pl_module):
        if not trainer.sanity_checking:
            log_stats(trainer, pl_module, "val")


class TrainerStateRecorder(Callback):
    """A callback that reads trainer properties by getattr over a list of names (as experiment trackers dump the
    run's state), at several hooks."""

    FIELDS = ("current_epoch", "global_step", "max_epochs", "max_steps", "min_epochs", "num_training_batches",
              "num_val_batches", "num_sanity_val_batches", "accumulate_grad_batches", "estimated_stepping_batches",
              "val_check_batch", "val_check_interval", "check_val_every_n_epoch", "log_every_n_steps", "precision",
              "world_size", "num_devices", "global_rank", "sanity_checking", "training", "validating",
              "is_last_batch", "should_stop", "limit_train_batches", "limit_val_batches", "num_sanity_val_steps",
              "gradient_clip_val", "gradient_clip_algorithm", "enable_validation", "is_global_zero", "interrupted",
              "fast_dev_run", "overfit_batches", "reload_dataloaders_every_n_epochs")  # fmt: skip

    def snapshot(self, trainer, pl_module, hook):
        state = {name: plain_value(getattr(trainer, name, "<missing>")) for name in self.FIELDS}
        pl_module.records.append({"hook": hook, **state})

    def on_fit_start(self, trainer, pl_module):
        self.snapshot(trainer, pl_module, "on_fit_start")

    def on_train_start(self, trainer, pl_module):
        self.snapshot(trainer, pl_module, "on_train_start")

    def on_validation_start(self, trainer, pl_module):
        self.snapshot(trainer, pl_module, "on_validation_start")

    def on_train_epoch_end(self, trainer, pl_module):
        self.snapshot(trainer, pl_module, "on_train_epoch_end")

    def on_fit_end(self, trainer, pl_module):
        self.snapshot(trainer, pl_module, "on_fit_end")


class BestScoreSummary(Callback):
    """A template's end-of-run summary: on_fit_end under rank_zero_only reads the checkpoint callback's best score
    and path and the early-stopping callback's wait count and stopped epoch, and keeps them."""

    @rank_zero_only
    def on_fit_end(self, trainer, pl_module):
        checkpoint = trainer.checkpoint_callback
        stopping = trainer.early_stopping_callback
        pl_module.records.append(
            {
                "best_model_score": plain_value(checkpoint.best_model_score),
                "best_model_file": checkpoint.best_model_path.rsplit("/", 1)[-1],
                "wait_count": stopping.wait_count,
                "stopped_epoch": stopping.stopped_epoch,
                "callback_metrics": sorted(trainer.callback_metrics),
            }
        )


# --- the LightningModule API through the trainer ---------------------------------------------------------------------


class StrategyAwareClassifier(RecordingClassifier):
    """A module that talks to its strategy on one device as multi-GPU code does: self.print at epoch ends,
    tensors made on self.device, trainer.strategy.barrier(name), reduce(tensor, reduce_op="mean"),
    broadcast(obj, src=0), reduce_boolean_decision, root_device; self.all_gather of the epoch's correct counts."""

    def on_train_epoch_start(self):
        self.correct = torch.zeros(1, device=self.device)
        self.seen = torch.zeros(1, device=self.device)

    def training_step(self, batch, batch_idx):
        x, y = batch
        logits = self(x)
        self.correct += (logits.argmax(-1) == y).sum()
        self.seen += y.numel()
        loss = F.cross_entropy(logits, y)
        self.log("train_loss", loss)
        return loss

    def on_train_epoch_end(self):
        strategy = self.trainer.strategy
        strategy.barrier("epoch_end")
        correct = self.all_gather(self.correct).sum()
        accuracy = strategy.reduce(correct / self.seen, reduce_op="mean")
        seed = strategy.broadcast(int(self.current_epoch) * 10 + 3, src=0)
        decided = strategy.reduce_boolean_decision(bool(accuracy > 0.99), all=True)
        self.print(f"epoch {self.current_epoch}: accuracy {float(accuracy):.4f} on {strategy.root_device}")
        self.records.append({"acc": round(float(accuracy), 6), "seed": seed, "decided": decided,
                             "device": str(strategy.root_device), "rank": self.global_rank})  # fmt: skip
        self.log("train_acc_epoch", accuracy)


class SelectiveClipping(RecordingClassifier):
    """A configure_gradient_clipping override: no clipping during the first epoch, then the trainer's flags passed
    to self.clip_gradients, and the first layer's gradients clipped by value with torch's own function on top."""

    def configure_gradient_clipping(self, optimizer, gradient_clip_val=None, gradient_clip_algorithm=None):
        if self.current_epoch < 1:
            return
        self.clip_gradients(
            optimizer, gradient_clip_val=gradient_clip_val, gradient_clip_algorithm=gradient_clip_algorithm
        )
        torch.nn.utils.clip_grad_value_(self.net[0].parameters(), 0.05)


class WarmupInOptimizerStep(RecordingClassifier):
    """Lightning's documented warm-up: optimizer_step scales every param group's lr by the global step's share of
    the warm-up, then steps the optimizer with its closure; the lr logged on step; under gradient accumulation."""

    def optimizer_step(self, epoch, batch_idx, optimizer, optimizer_closure):
        optimizer.step(closure=optimizer_closure)
        if self.trainer.global_step < 6:
            lr_scale = min(1.0, float(self.trainer.global_step + 1) / 6.0)
            for pg in optimizer.param_groups:
                pg["lr"] = lr_scale * self.hparams.lr
        self.log("lr", optimizer.param_groups[0]["lr"], on_step=True, on_epoch=False)

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)


class GradNormLogging(RecordingClassifier):
    """on_before_optimizer_step logging Lightning's grad_norm of the whole module and of one layer (the 2-norm of
    each parameter and the total), under accumulation, with log_every_n_steps 1."""

    def on_before_optimizer_step(self, optimizer):
        norms = grad_norm(self, norm_type=2)
        self.log_dict(norms)
        layer = grad_norm(self.net[2], norm_type="inf")
        self.log("head_grad_inf", layer["grad_inf_norm_total"])


# --- the cases ---------------------------------------------------------------------------------------------------

CSV = {"class_path": "pytorch_lightning.loggers.CSVLogger", "init_args": {"save_dir": "."}}


def callback(name: str, **init_args) -> dict:
    """A Lightning callback's spec entry, by its class path in pytorch_lightning.callbacks."""
    return {"class_path": f"pytorch_lightning.callbacks.{name}", "init_args": init_args}


def with_cli_optimizer(case, optimizer: dict, lr_scheduler: dict | None = None):
    """The case with LightningCLI's `optimizer:` (and `lr_scheduler:`) entries added to its spec."""
    spec = {**case.spec, "optimizer": optimizer}
    if lr_scheduler is not None:
        spec["lr_scheduler"] = lr_scheduler
    return replace(case, spec=spec)


LIB = "libraries"

CASES = [
    # self-supervised learning
    corpus_case(
        "libraries_solo_byol_lars_static_lr",
        LIB,
        "SoloBYOL",
        data="ViewsData",
        pattern="momentum encoders by deepcopy updated in on_train_batch_end when global_step moved, tau's cosine over"
        " estimated_stepping_batches, LARS with exclude_bias_n_norm and clip_lr, a static-lr group by patching"
        " get_lr with partial, warm-up cosine LambdaLR per step, gradient accumulation, LearningRateMonitor",
        studied="vturrisi/solo-learn: solo/methods/byol.py",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=2,
        log_every_n_steps=1,
        callbacks=[callback("LearningRateMonitor", logging_interval="step")],
    ),
    corpus_case(
        "libraries_lightly_byol_filenames",
        LIB,
        "LightlyBYOL",
        data="ViewsData",
        data_init={"with_names": True},
        pattern="([x0, x1], targets, filenames) batches, momentum copies with requires_grad off updated at the top of"
        " training_step from cosine_schedule(current_epoch, trainer.max_epochs), no validation_step, SGD",
        studied="lightly-ai/lightly: examples/pytorch_lightning/byol.py",
        max_epochs=3,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "libraries_moco_queue_buffers_bf16",
        LIB,
        "MoCoQueue",
        data="ViewsData",
        pattern="a key queue and pointer as registered buffers written in training_step, key-encoder momentum from"
        " global_step / estimated_stepping_batches, InfoNCE, SGD and CosineAnnealingLR over max_epochs, bf16-mixed",
        studied="vturrisi/solo-learn: solo/methods/mocov2plus.py",
        max_epochs=2,
        logger=CSV,
        precision="bf16-mixed",
        log_every_n_steps=2,
    ),
    corpus_case(
        "libraries_simsiam_child_evaluators",
        LIB,
        "SimSiamWithEvaluators",
        data="ViewsData",
        pattern="child LightningModules (online linear head, kNN evaluator) reading the trainer Lightning hands them"
        " (training, current_epoch, sanity_checking), a kNN accuracy logged from on_validation_epoch_end, two"
        " parameter groups",
        studied="vturrisi/solo-learn: solo/utils/knn.py",
        max_epochs=3,
        logger=CSV,
    ),
    with_cli_optimizer(
        corpus_case(
            "libraries_simsiam_cli_sgd",
            LIB,
            "SimSiamForCLI",
            data="ViewsData",
            pattern="no configure_optimizers: LightningCLI's optimizer entry (SGD with momentum and weight decay) and"
            " lr_scheduler entry (CosineAnnealingLR over the epochs)",
            studied="lightly-ai/lightly: benchmarks/imagenet/resnet50/simsiam.py",
            max_epochs=2,
            logger=CSV,
            log_every_n_steps=2,
        ),
        {"class_path": "torch.optim.SGD", "init_args": {"lr": 0.05, "momentum": 0.9, "weight_decay": 1e-4}},
        {"class_path": "torch.optim.lr_scheduler.CosineAnnealingLR", "init_args": {"T_max": 2}},
    ),
    corpus_case(
        "libraries_lightly_dino_center_buffer",
        LIB,
        "LightlyDINO",
        data="ViewsData",
        pattern="a teacher by deepcopy updated by update_momentum, the loss's center a buffer reassigned under"
        " no_grad, teacher temperature by current_epoch, on_after_backward cancelling the last layer's grads,"
        " AdamW, gradient clipping",
        studied="lightly-ai/lightly: examples/pytorch_lightning/dino.py",
        max_epochs=3,
        logger=CSV,
        gradient_clip_val=3.0,
    ),
    # geospatial
    corpus_case(
        "libraries_torchgeo_segmentation_aug_by_stage",
        LIB,
        "SemanticSegmentationTask",
        data="LandCoverDataModule",
        pattern="datamodule-side augmentation in on_after_batch_transfer picked by trainer.training / validating /"
        " sanity_checking, dict batches, save_hyperparameters(ignore=class attribute), MetricCollection clones"
        " logged by log_dict, ReduceLROnPlateau on a class attribute's monitor, a plot guarded by hasattr on the"
        " logger's experiment, ModelCheckpoint and EarlyStopping",
        studied="microsoft/torchgeo: torchgeo/trainers/segmentation.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            callback("ModelCheckpoint", monitor="val_loss", mode="min", save_last=True),
            callback("EarlyStopping", monitor="val_loss", mode="min", patience=2),
        ],
    ),
    corpus_case(
        "libraries_torchgeo_chesapeake_ordinal_map",
        LIB,
        "SemanticSegmentationTask",
        model_init={"ignore_index": 0},
        data="ChesapeakeLikeDataModule",
        pattern="a datamodule subclass calling super().on_after_batch_transfer then remapping class codes with a"
        " lookup tensor moved to the batch's device, ignore_index in the loss and metrics, bf16-mixed",
        studied="microsoft/torchgeo: torchgeo/datamodules/chesapeake.py",
        max_epochs=2,
        logger=CSV,
        precision="bf16-mixed",
    ),
    corpus_case(
        "libraries_torchgeo_segmentation_val_interval",
        LIB,
        "SegmentationTaskNoPlot",
        model_init={"freeze_backbone": True},
        data="LandCoverDataModule",
        pattern="a frozen encoder by hparams, dataloader_idx=0 step signatures, validation twice an epoch with the"
        " datamodule's val augmentation, log_every_n_steps",
        studied="microsoft/torchgeo: torchgeo/trainers/segmentation.py",
        max_epochs=2,
        logger=CSV,
        val_check_interval=0.5,
        log_every_n_steps=2,
    ),
    corpus_case(
        "libraries_torchgeo_classification_frozen",
        LIB,
        "ClassificationTask",
        model_init={"freeze_backbone": True, "lr": 0.05},
        data="SceneDataModule",
        pattern="a backbone frozen but for its classifier, metric collections computed and reset by hand in"
        " on_train_epoch_end / on_validation_epoch_end, ModelCheckpoint on val_loss, LearningRateMonitor",
        studied="microsoft/torchgeo: torchgeo/trainers/classification.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            callback("ModelCheckpoint", monitor="val_loss", save_top_k=1),
            callback("LearningRateMonitor", logging_interval="epoch"),
        ],
    ),
    corpus_case(
        "libraries_torchgeo_classification_early_stop",
        LIB,
        "ClassificationTask",
        model_init={"patience": 0},
        data="SceneDataModule",
        pattern="ReduceLROnPlateau with patience 0 on val_loss, EarlyStopping with patience 1, limit_train_batches",
        studied="microsoft/torchgeo: torchgeo/trainers/classification.py",
        max_epochs=5,
        logger=CSV,
        limit_train_batches=4,
        callbacks=[callback("EarlyStopping", monitor="val_loss", patience=1)],
    ),
    corpus_case(
        "libraries_torchgeo_regression_random_split",
        LIB,
        "RegressionTask",
        data="RegressionDataModule",
        pattern="a target_key class attribute, the target unsqueezed, RMSE and MAE Metrics logged by log_dict without"
        " a batch size (inferred from a dict batch), validation split by random_split with a seeded generator",
        studied="microsoft/torchgeo: torchgeo/trainers/regression.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=2,
    ),
    # graphs
    corpus_case(
        "libraries_pyg_gin_batch_objects",
        LIB,
        "GIN",
        data="GraphDataModule",
        pattern="PyG Batch objects (attribute store, to(device), (key, value) iteration) from a Collater, GIN layers"
        " with BatchNorm, torchmetrics Accuracy logged on epoch with batch_size, ModelCheckpoint on val_acc (max)",
        studied="pyg-team/pytorch_geometric: examples/pytorch_lightning/gin.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[callback("ModelCheckpoint", monitor="val_acc", mode="max")],
    ),
    corpus_case(
        "libraries_pyg_transfer_batch_to_device",
        LIB,
        "GIN",
        data="SelfLoopsGraphData",
        pattern="a graph transform in on_before_batch_transfer, transfer_batch_to_device overridden for Batch objects"
        " with super() for the rest",
        studied="pyg-team/pytorch_geometric: torch_geometric/data/lightning/datamodule.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=4,
    ),
    corpus_case(
        "libraries_pyg_inferred_batch_size",
        LIB,
        "GraphMeanPoolNet",
        data="GraphDataModule",
        pattern="logs without a batch size over Batch objects: Lightning's extract_batch_size walks the (key, value)"
        " pairs to the first tensor for the epoch means",
        studied="pyg-team/pytorch_geometric: examples/pytorch_lightning/graph_sage.py",
        max_epochs=3,
        logger=CSV,
    ),
    corpus_case(
        "libraries_pyg_full_batch_node_classification",
        LIB,
        "GraphSAGE",
        data="CitationGraphData",
        pattern="one whole graph per epoch from a collate_fn returning it, masked losses, prog_bar epoch logs with an"
        " inferred batch size, many one-batch epochs",
        studied="pyg-team/pytorch_geometric: examples/pytorch_lightning/graph_sage.py",
        max_epochs=15,
        logger=CSV,
        log_every_n_steps=1,
    ),
    # diffusion
    corpus_case(
        "libraries_ddpm_ema_on_train_batch_end",
        LIB,
        "GaussianDiffusion",
        data="Points2D",
        pattern="schedule buffers registered through a nested helper, timesteps by torch.randint on self.device and"
        " noise by randn_like in training_step, an EMA copy updated in on_train_batch_end with a decay warm-up,"
        " validation on a seeded generator, gradient clipping",
        studied="lucidrains/denoising-diffusion-pytorch: denoising_diffusion_pytorch/denoising_diffusion_pytorch.py",
        max_epochs=3,
        logger=CSV,
        gradient_clip_val=1.0,
    ),
    corpus_case(
        "libraries_diffusion_ema_optimizer_step",
        LIB,
        "DiffusionOptimizerStepEMA",
        data="Points2D",
        pattern="an EMA nn.Module with a num_updates buffer stepped after super().optimizer_step(...), warm-up"
        " LambdaLR per step, gradient accumulation and clipping",
        studied="huggingface/diffusers: src/diffusers/training_utils.py",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=2,
        gradient_clip_val=1.0,
        log_every_n_steps=1,
    ),
    corpus_case(
        "libraries_diffusion_ema_before_zero_grad",
        LIB,
        "DiffusionZeroGradEMA",
        data="Points2D",
        pattern="an EMA updated in on_before_zero_grad under accumulation, reverse-process sampling in"
        " on_validation_epoch_end with a generator seeded by current_epoch",
        studied="Lightning-AI/pytorch-lightning: docs/source-pytorch/common/lightning_module.rst",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=3,
    ),
    # VAEs
    corpus_case(
        "libraries_bolts_vae_rsample",
        LIB,
        "BoltsVAE",
        data="FlatImages",
        pattern="Normal posteriors sampled by rsample (the global RNG), a shared step returning (loss, logs),"
        " prefixed log_dict on step only in training, the KL weight warmed up by current_epoch",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/autoencoders/basic_vae/basic_vae_module.py",
        max_epochs=3,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "libraries_beta_vae_cyclical",
        LIB,
        "CyclicalBetaVAE",
        data="FlatImages",
        pattern="a KL weight cycling with global_step % trainer.num_training_batches, logged on step, StepLR,"
        " LearningRateMonitor",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/autoencoders/basic_vae/basic_vae_module.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=1,
        callbacks=[callback("LearningRateMonitor")],
    ),
    # GPT-style language models
    corpus_case(
        "libraries_mingpt_decay_groups_warmup",
        LIB,
        "GPT",
        data="CharDataModule",
        pattern="decay / no_decay sets by module type with assertions, pos_emb a Parameter, AdamW betas from"
        " hparams, warm-up cosine LambdaLR per step over estimated_stepping_batches, clipping, validation every"
        " few batches, limit_*_batches",
        studied="karpathy/minGPT: mingpt/model.py",
        max_epochs=1,
        logger=CSV,
        limit_train_batches=12,
        limit_val_batches=3,
        val_check_interval=6,
        gradient_clip_val=1.0,
        log_every_n_steps=2,
        callbacks=[callback("LearningRateMonitor", logging_interval="step")],
    ),
    corpus_case(
        "libraries_mingpt_lr_decay_callback",
        LIB,
        "GPTPlainAdamW",
        data="CharDataModule",
        pattern="a callback counting tokens in on_train_batch_end and setting the lr of trainer.optimizers' groups"
        " by hand (warm-up then cosine over tokens)",
        studied="karpathy/minGPT: mingpt/lr_decay.py",
        max_epochs=2,
        logger=CSV,
        limit_train_batches=8,
        limit_val_batches=2,
        gradient_clip_val=1.0,
        callbacks=[
            {
                "class_path": "tests.corpus.libraries.WarmupCosineLearningRateDecay",
                "init_args": {"learning_rate": 3e-3, "warmup_tokens": 256, "final_tokens": 2048},
            }
        ],
    ),
    corpus_case(
        "libraries_nanogpt_max_steps_endless_loader",
        LIB,
        "NanoGPT",
        data="NanoGPTData",
        pattern="an endless IterableDataset of random blocks, max_steps, lr set by hand in an optimizer_step override"
        " before optimizer.step(closure), the fused flag from inspect.signature, dim-based decay groups,"
        " bf16-mixed, accumulation, validation every val_check_interval batches",
        studied="karpathy/nanoGPT: train.py",
        max_steps=8,
        logger=CSV,
        precision="bf16-mixed",
        accumulate_grad_batches=2,
        gradient_clip_val=1.0,
        val_check_interval=4,
        limit_val_batches=2,
        log_every_n_steps=2,
    ),
    # time series
    corpus_case(
        "libraries_darts_block_rnn_checkpoints",
        LIB,
        "BlockRNN",
        model_init={"optimizer_kwargs": {"lr": 5e-3}, "lr_scheduler_kwargs": {"patience": 1, "monitor": "val_loss"}},
        data="SeriesWindowsData",
        pattern="optimizer and scheduler built from classes and kwargs given to __init__ (the monitor popped from the"
        " kwargs), ([optimizer], {scheduler, monitor}), functional metrics logged on epoch with sync_dist,"
        " on_save_checkpoint adding a key, EarlyStopping and ModelCheckpoint with save_last",
        studied="unit8co/darts: darts/models/forecasting/pl_forecasting_module.py",
        max_epochs=3,
        enable_checkpointing=True,
        callbacks=[
            callback("EarlyStopping", monitor="val_loss", patience=3, min_delta=0.0),
            callback("ModelCheckpoint", monitor="val_loss", save_last=True),
        ],
    ),
    corpus_case(
        "libraries_darts_covariates_none_collate",
        LIB,
        "BlockRNN",
        model_init={
            "optimizer_kwargs": {"lr": 1e-2, "weight_decay": 1e-3},
            "lr_scheduler_kwargs": {"factor": 0.5, "patience": 0},
            "metrics_str": ["mean_absolute_error", "mean_squared_error"],
        },
        data="SeriesWindowsData",
        data_init={"with_covariates": True},
        pattern="a collate_fn stacking tuple positions (None where a sample has no covariates), ReduceLROnPlateau"
        " on the default monitor, two functional metrics, gradient clipping",
        studied="unit8co/darts: darts/models/forecasting/torch_forecasting_model.py",
        max_epochs=3,
        gradient_clip_val=0.5,
    ),
    corpus_case(
        "libraries_forecasting_teacher_forcing",
        LIB,
        "TeacherForcedSeq2Seq",
        data="SeriesWindowsData",
        pattern="teacher forcing by torch.rand coins decayed by current_epoch, on_step=self.training logs,"
        " ReduceLROnPlateau dict with strict and frequency, EarlyStopping and ModelCheckpoint, clipping",
        studied="jdb78/pytorch-forecasting: pytorch_forecasting/models/deepar/_deepar.py",
        max_epochs=3,
        logger=CSV,
        gradient_clip_val=0.1,
        limit_train_batches=6,
        enable_checkpointing=True,
        callbacks=[
            callback("EarlyStopping", monitor="val_loss", patience=2, mode="min"),
            callback("ModelCheckpoint", monitor="val_loss", save_top_k=1),
        ],
    ),
    # CLIP-style contrastive training
    corpus_case(
        "libraries_train_clip_manual_minibatches",
        LIB,
        "CLIPWrapper",
        data="ImageTextPairs",
        pattern="manual optimization over mini-batches: features under no_grad gathered by all_gather, re-encoded"
        " into a deepcopy at [global_rank], manual_backward per chunk, a CosineAnnealingWarmRestarts stepped by"
        " hand with T_0 from len(trainer.datamodule.train_dataloader()), limit_train_batches, num_devices",
        studied="Zasder3/train-CLIP: models/wrapper.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "libraries_open_clip_logit_scale_clamp",
        LIB,
        "OpenCLIPStyle",
        data="ImageTextPairs",
        pattern="all_gather(sync_grads=True) on one device, symmetric InfoNCE, no-decay group by name and ndim,"
        " warm-up cosine LambdaLR per step, logit_scale clamped in on_train_batch_end, bf16-mixed, clipping",
        studied="mlfoundations/open_clip: src/open_clip_train/train.py",
        max_epochs=2,
        logger=CSV,
        precision="bf16-mixed",
        gradient_clip_val=1.0,
        log_every_n_steps=1,
    ),
    # callbacks and the trainer
    corpus_case(
        "libraries_callback_hands_trainer_to_helper",
        LIB,
        "RecordingClassifier",
        data="VectorData",
        pattern="a callback handing trainer and module to a helper that reads optimizers, num_val_batches,"
        " callback_metrics, is_last_batch, lr_scheduler_configs and logs through the module",
        studied="ashleve/lightning-hydra-template: src/utils/logging_utils.py",
        max_epochs=3,
        logger=CSV,
        callbacks=[{"class_path": "tests.corpus.libraries.StatsCallback"}],
    ),
    corpus_case(
        "libraries_callback_getattr_trainer_state",
        LIB,
        "RecordingClassifier",
        data="VectorData",
        pattern="a callback reading trainer properties by getattr over a list of names at several hooks, under"
        " val_check_interval, limit_val_batches, num_sanity_val_steps, accumulation and clipping",
        studied="Lightning-AI/pytorch-lightning: src/lightning/pytorch/callbacks/device_stats_monitor.py",
        max_epochs=2,
        logger=CSV,
        val_check_interval=0.5,
        limit_val_batches=1,
        num_sanity_val_steps=1,
        accumulate_grad_batches=2,
        gradient_clip_val=0.5,
        callbacks=[{"class_path": "tests.corpus.libraries.TrainerStateRecorder"}],
    ),
    corpus_case(
        "libraries_callback_best_score_summary",
        LIB,
        "RecordingClassifier",
        data="VectorData",
        pattern="a rank_zero_only on_fit_end reading trainer.checkpoint_callback's best score and path and"
        " trainer.early_stopping_callback's wait count and stopped epoch",
        studied="ashleve/lightning-hydra-template: src/train.py",
        max_epochs=6,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            callback("ModelCheckpoint", monitor="val_loss", save_top_k=2, filename="{epoch}-{val_loss:.3f}"),
            callback("EarlyStopping", monitor="val_acc", mode="max", patience=1),
            {"class_path": "tests.corpus.libraries.BestScoreSummary"},
        ],
    ),
    corpus_case(
        "libraries_strategy_collectives_one_device",
        LIB,
        "StrategyAwareClassifier",
        data="VectorData",
        pattern="strategy.barrier, reduce, broadcast, reduce_boolean_decision and root_device on one device,"
        " self.all_gather, self.print, tensors on self.device",
        studied="vturrisi/solo-learn: solo/utils/misc.py",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "libraries_configure_gradient_clipping_override",
        LIB,
        "SelectiveClipping",
        data="VectorData",
        pattern="configure_gradient_clipping skipping the first epoch, then self.clip_gradients with the trainer's"
        " flags and torch's clip_grad_value_ on one layer",
        studied="Lightning-AI/pytorch-lightning: src/lightning/pytorch/core/module.py",
        max_epochs=3,
        logger=CSV,
        gradient_clip_val=0.5,
        gradient_clip_algorithm="norm",
    ),
    corpus_case(
        "libraries_warmup_in_optimizer_step",
        LIB,
        "WarmupInOptimizerStep",
        data="VectorData",
        pattern="Lightning's documented warm-up: param groups' lr scaled in an optimizer_step override after the"
        " closure's step, the lr logged on step, gradient accumulation",
        studied="Lightning-AI/pytorch-lightning: docs/source-pytorch/common/optimization.rst",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=2,
        log_every_n_steps=1,
    ),
    corpus_case(
        "libraries_grad_norm_before_optimizer_step",
        LIB,
        "GradNormLogging",
        data="VectorData",
        pattern="grad_norm of the module and of one layer (inf norm) logged in on_before_optimizer_step, under"
        " accumulation and clipping, log_every_n_steps 1",
        studied="Lightning-AI/pytorch-lightning: src/lightning/pytorch/utilities/grads.py",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=2,
        gradient_clip_val=1.0,
        log_every_n_steps=1,
    ),
    # LightningCLI's optimizer entry naming the project's own optimizer class: the script imports it
    with_cli_optimizer(
        corpus_case(
            "libraries_simsiam_cli_lars",
            LIB,
            "SimSiamForCLI",
            data="ViewsData",
            pattern="no configure_optimizers: LightningCLI's optimizer entry (the project's own LARS by class path)"
            " and lr_scheduler entry (CosineAnnealingLR)",
            studied="lightly-ai/lightly: benchmarks/imagenet/resnet50/simsiam.py",
            max_epochs=2,
            logger=CSV,
            log_every_n_steps=2,
        ),
        {
            "class_path": "tests.corpus.libraries.LARS",
            "init_args": {"lr": 0.1, "weight_decay": 1e-5, "exclude_bias_n_norm": True},
        },
        {"class_path": "torch.optim.lr_scheduler.CosineAnnealingLR", "init_args": {"T_max": 2}},
    ),
    # save_hyperparameters records darts' class-valued arguments (optimizer_cls=torch.optim.Adam, the defaults):
    # hparams.yaml names them as PyYAML does (`!!python/name:torch.optim.lr_scheduler.ReduceLROnPlateau ''`), once
    # written as their repr
    corpus_case(
        "libraries_darts_block_rnn_plateau",
        LIB,
        "BlockRNN",
        model_init={"optimizer_kwargs": {"lr": 5e-3}, "lr_scheduler_kwargs": {"patience": 1, "monitor": "val_loss"}},
        data="SeriesWindowsData",
        pattern="optimizer and scheduler built from classes and kwargs given to __init__ (the monitor popped from the"
        " kwargs), ([optimizer], {scheduler, monitor}), functional metrics logged on epoch, on_save_checkpoint,"
        " EarlyStopping and ModelCheckpoint",
        studied="unit8co/darts: darts/models/forecasting/pl_forecasting_module.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            callback("EarlyStopping", monitor="val_loss", patience=3, min_delta=0.0),
            callback("ModelCheckpoint", monitor="val_loss", save_last=True),
        ],
    ),
    # LightningCLI imports a string given for an __init__ parameter typed Callable (optimizer_cls="torch.optim.AdamW"):
    # so does the script (it once passed the string on, and configure_optimizers failed on it)
    corpus_case(
        "libraries_darts_classes_by_import_path",
        LIB,
        "BlockRNNByPath",
        model_init={
            "optimizer_cls": "torch.optim.AdamW",
            "optimizer_kwargs": {"lr": 1e-2, "weight_decay": 1e-3},
            "lr_scheduler_cls": "torch.optim.lr_scheduler.ExponentialLR",
            "lr_scheduler_kwargs": {"gamma": 0.8},
            "metrics_str": ["mean_absolute_error", "mean_squared_error"],
        },
        data="SeriesWindowsData",
        data_init={"with_covariates": True},
        pattern="the optimizer and scheduler classes given by import path for __init__ parameters typed Callable"
        " (LightningCLI imports them), a non-plateau scheduler in a dict with monitor, two functional metrics",
        studied="unit8co/darts: darts/models/forecasting/torch_forecasting_model.py",
        max_epochs=2,
        gradient_clip_val=0.5,
    ),
    # The data module's loaders are map-style (a Subset, with a length); an IterableDataset is another class in the
    # same file (nanoGPT's RandomBlocks), which it never names: reload_dataloaders_every_n_epochs is served (it was
    # refused for loaders that "may have no length")
    corpus_case(
        "libraries_forecasting_reload_dataloaders",
        LIB,
        "TeacherForcedSeq2Seq",
        data="ResampledWindowsData",
        pattern="train_dataloader drawing window starts with the global RNG, reloaded every epoch by"
        " reload_dataloaders_every_n_epochs",
        studied="jdb78/pytorch-forecasting: pytorch_forecasting/data/samplers.py",
        max_epochs=3,
        logger=CSV,
        reload_dataloaders_every_n_epochs=1,
    ),
]


# Cases loopgen gets wrong (a crash after rendering, a different run, a refusal of code Lightning runs): kept out of
# CASES, each with what differs. tests/test_corpus.py (LOOPGEN_CORPUS_FINDINGS=1) expects each to still differ.
FINDINGS = []
