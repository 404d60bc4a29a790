"""Domain libraries (vision, text, audio, graphs, tabular, time series, reinforcement learning): the LightningModules
they ship or build on. Each class here is this suite's own code on synthetic data (see tests/corpus/__init__.py).

CASES train alike under Lightning and the rendered script. FINDINGS (at the end) are cases that render and then
crash or log differently: loopgen bugs, each with a comment saying what differs; they stay out of CASES."""

from __future__ import annotations

import itertools
import math
from collections import UserDict
from dataclasses import dataclass

import pytorch_lightning as pl
import torch
import torchmetrics
from pytorch_lightning.callbacks import BaseFinetuning
from pytorch_lightning.utilities import grad_norm
from pytorch_lightning.utilities.rank_zero import rank_zero_info
from torch import nn
from torch.nn import functional as F
from torch.utils.data import DataLoader, Dataset, IterableDataset, TensorDataset

from tests.corpus.cases import corpus_case

# --- text: a GLUE fine-tuning module (Lightning's text-transformers tutorial) ---------------------------------


class TokenData(pl.LightningDataModule):
    """Variable-length "token" sequences with a binary label, padded by the datamodule's own collate function
    into dict batches (input_ids, attention_mask, labels), as a tokenizer's padding collator gives them."""

    def __init__(self, batch_size: int = 16, samples: int = 160, vocab: int = 40):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.vocab = vocab

    def prepare_data(self) -> None:
        # The tutorial downloads the data set and the tokenizer here; nothing is assigned.
        torch.Generator().manual_seed(1)

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(1)
        rows = []
        for _ in range(self.samples):
            length = int(torch.randint(3, 12, (1,), generator=generator))
            ids = torch.randint(1, self.vocab, (length,), generator=generator)
            rows.append({"input_ids": ids, "label": int(ids[0] % 2)})
        cut = self.samples * 3 // 4
        self.dataset = {"train": rows[:cut], "validation": rows[cut:]}

    @staticmethod
    def collate(rows):
        width = max(len(row["input_ids"]) for row in rows)
        input_ids = torch.zeros(len(rows), width, dtype=torch.long)
        attention_mask = torch.zeros(len(rows), width, dtype=torch.long)
        for i, row in enumerate(rows):
            input_ids[i, : len(row["input_ids"])] = row["input_ids"]
            attention_mask[i, : len(row["input_ids"])] = 1
        labels = torch.tensor([row["label"] for row in rows])
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.dataset["train"], batch_size=self.batch_size, shuffle=True, collate_fn=self.collate)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.dataset["validation"], batch_size=self.batch_size, collate_fn=self.collate)


class GlueTransformer(pl.LightningModule):
    """A sequence classifier fine-tuned as the GLUE tutorial does: `forward(**batch)` returning (loss, logits),
    validation outputs kept in a list and reduced in on_validation_epoch_end (log and log_dict with prog_bar),
    AdamW over two parameter groups (no decay on bias and LayerNorm.weight) and a linear warm-up/decay LambdaLR
    stepped every step, its length read from trainer.estimated_stepping_batches."""

    def __init__(self, vocab: int = 40, hidden: int = 16, num_labels: int = 2, learning_rate: float = 2e-3,
                 adam_epsilon: float = 1e-8, warmup_steps: int = 3, weight_decay: float = 0.01):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)
        self.dense = nn.Linear(hidden, hidden)
        self.classifier = nn.Linear(hidden, num_labels)
        self.validation_step_outputs = []

    def forward(self, input_ids, attention_mask, labels=None):
        mask = attention_mask.unsqueeze(-1).float()
        hidden = self.LayerNorm(self.embeddings(input_ids))
        pooled = (hidden * mask).sum(1) / mask.sum(1)
        logits = self.classifier(torch.tanh(self.dense(pooled)))
        loss = F.cross_entropy(logits, labels)
        return loss, logits

    def training_step(self, batch, batch_idx):
        outputs = self(**batch)
        return outputs[0]

    def validation_step(self, batch, batch_idx):
        val_loss, logits = self(**batch)
        preds = torch.argmax(logits, dim=1)
        self.validation_step_outputs.append({"loss": val_loss, "preds": preds, "labels": batch["labels"]})

    def on_validation_epoch_end(self):
        preds = torch.cat([x["preds"] for x in self.validation_step_outputs])
        labels = torch.cat([x["labels"] for x in self.validation_step_outputs])
        loss = torch.stack([x["loss"] for x in self.validation_step_outputs]).mean()
        self.log("val_loss", loss, prog_bar=True)
        self.log_dict({"accuracy": (preds == labels).float().mean()}, prog_bar=True)
        self.validation_step_outputs.clear()

    def configure_optimizers(self):
        no_decay = ["bias", "LayerNorm.weight"]
        optimizer_grouped_parameters = [
            {
                "params": [p for n, p in self.named_parameters() if not any(nd in n for nd in no_decay)],
                "weight_decay": self.hparams.weight_decay,
            },
            {
                "params": [p for n, p in self.named_parameters() if any(nd in n for nd in no_decay)],
                "weight_decay": 0.0,
            },
        ]
        optimizer = torch.optim.AdamW(
            optimizer_grouped_parameters, lr=self.hparams.learning_rate, eps=self.hparams.adam_epsilon
        )
        total = self.trainer.estimated_stepping_batches
        warmup = self.hparams.warmup_steps

        def linear_warmup(step):
            if step < warmup:
                return float(step) / float(max(1, warmup))
            return max(0.0, float(total - step) / float(max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_warmup)
        scheduler = {"scheduler": scheduler, "interval": "step", "frequency": 1}
        return [optimizer], [scheduler]


# --- audio: a source-separation System (asteroid) ---------------------------------------------------------------


class MixtureData(pl.LightningDataModule):
    """Two random "sources" per sample and their sum, the mixture: (mixture [1, T], sources [2, T])."""

    def __init__(self, batch_size: int = 16, samples: int = 128, length: int = 64):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.length = length

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(2)
        sources = torch.randn(self.samples, 2, self.length, generator=generator)
        sources[:, 1] = torch.sin(sources[:, 1].cumsum(-1) * 0.1)
        mixtures = sources.sum(1, keepdim=True)
        cut = self.samples * 3 // 4
        self.train_set = TensorDataset(mixtures[:cut], sources[:cut])
        self.val_set = TensorDataset(mixtures[cut:], sources[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


def pit_mse(estimates, targets):
    """Permutation-invariant MSE over two sources: the better of the two pairings, per sample."""
    straight = ((estimates - targets) ** 2).mean(dim=(1, 2))
    swapped = ((estimates.flip(1) - targets) ** 2).mean(dim=(1, 2))
    return torch.minimum(straight, swapped).mean()


class SeparationSystem(pl.LightningModule):
    """asteroid's System: training and validation share common_step; "loss" logged with logger=True, "val_loss"
    on epoch with prog_bar; on_validation_epoch_end hands trainer.callback_metrics["val_loss"] to
    trainer.logger.log_metrics as hp_metric; Adam with a ReduceLROnPlateau on val_loss in a list of scheduler
    dicts; gradient clipping, EarlyStopping and ModelCheckpoint given as trainer flags."""

    def __init__(self, channels: int = 8, lr: float = 1e-3, patience: int = 1):
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Conv1d(1, channels, kernel_size=4, stride=2, padding=1)
        self.masker = nn.Sequential(nn.Conv1d(channels, channels, 3, padding=1), nn.ReLU(),
                                    nn.Conv1d(channels, 2 * channels, 1))  # fmt: skip
        self.decoder = nn.ConvTranspose1d(channels, 1, kernel_size=4, stride=2, padding=1)
        self.loss_func = pit_mse

    def forward(self, wav):
        tf_rep = torch.relu(self.encoder(wav))
        masks = torch.sigmoid(self.masker(tf_rep)).view(wav.size(0), 2, tf_rep.size(1), tf_rep.size(2))
        masked = masks * tf_rep.unsqueeze(1)
        return self.decoder(masked.flatten(0, 1)).view(wav.size(0), 2, -1)

    def common_step(self, batch, batch_nb, train=True):
        inputs, targets = batch
        est_targets = self(inputs)
        return self.loss_func(est_targets, targets)

    def training_step(self, batch, batch_nb):
        loss = self.common_step(batch, batch_nb, train=True)
        self.log("loss", loss, logger=True)
        return loss

    def validation_step(self, batch, batch_nb):
        loss = self.common_step(batch, batch_nb, train=False)
        self.log("val_loss", loss, on_epoch=True, prog_bar=True)

    def on_validation_epoch_end(self):
        hp_metric = self.trainer.callback_metrics.get("val_loss", None)
        if hp_metric is not None:
            self.trainer.logger.log_metrics({"hp_metric": hp_metric}, step=self.trainer.global_step)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, factor=0.5, patience=self.hparams.patience)
        return [optimizer], [{"scheduler": scheduler, "monitor": "val_loss", "interval": "epoch", "frequency": 1}]


# --- graphs: a graph-level GNN on a dataclass batch (PyTorch Geometric style) -----------------------------------


@dataclass
class GraphBatch:
    """Several small graphs merged into one, as PyG's Batch merges them: node features first, edges offset, a
    `batch` vector naming each node's graph, one label per graph."""

    x: torch.Tensor
    edge_index: torch.Tensor
    batch: torch.Tensor
    y: torch.Tensor


class GraphSet(Dataset):
    """A list of (x, edge_index, label) graphs as a map-style data set."""

    def __init__(self, graphs):
        self.graphs = graphs

    def __len__(self) -> int:
        return len(self.graphs)

    def __getitem__(self, index):
        return self.graphs[index]


def collate_graphs(graphs) -> GraphBatch:
    """PyG-style batching: node features stacked, edges offset by the nodes before, a `batch` vector."""
    xs, edges, owners, offset = [], [], [], 0
    for i, (x, edge_index, _) in enumerate(graphs):
        xs.append(x)
        edges.append(edge_index + offset)
        owners.append(torch.full((x.size(0),), i, dtype=torch.long))
        offset += x.size(0)
    y = torch.tensor([float(label) for _, _, label in graphs])
    return GraphBatch(torch.cat(xs), torch.cat(edges, dim=1), torch.cat(owners), y)


class GraphData(pl.LightningDataModule):
    """Random graphs of 3 to 8 nodes; the label says whether the mean of the first feature is positive."""

    def __init__(self, batch_size: int = 8, graphs: int = 96, features: int = 4):
        super().__init__()
        self.batch_size = batch_size
        self.graphs = graphs
        self.features = features

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(3)
        graphs = []
        for _ in range(self.graphs):
            nodes = int(torch.randint(3, 9, (1,), generator=generator))
            x = torch.randn(nodes, self.features, generator=generator)
            edge_index = torch.randint(0, nodes, (2, nodes * 2), generator=generator)
            graphs.append((x, edge_index, int(x[:, 0].mean() > 0)))
        cut = self.graphs * 3 // 4
        self.train_set, self.val_set = GraphSet(graphs[:cut]), GraphSet(graphs[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, collate_fn=collate_graphs)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, collate_fn=collate_graphs)


class GraphConv(nn.Module):
    """A mean-aggregating graph convolution by index_add_ (in place of torch_geometric's GCNConv)."""

    def __init__(self, c_in: int, c_out: int):
        super().__init__()
        self.linear = nn.Linear(c_in, c_out)

    def forward(self, x, edge_index):
        source, target = edge_index
        messages = torch.zeros_like(x).index_add_(0, target, x[source])
        degree = torch.zeros(x.size(0)).index_add_(0, target, torch.ones(target.size(0))) + 1.0
        return self.linear((messages + x) / degree.unsqueeze(-1))


class GraphLevelGNN(pl.LightningModule):
    """The UvA course's GraphLevelGNN: GNN layers, a global mean pool over the `batch` vector, a linear head and
    BCE-with-logits; train_loss, train_acc and val_acc logged with no batch_size, so Lightning infers it from the
    batch (a dataclass: its first tensor, the node count); AdamW with weight_decay 0."""

    def __init__(self, c_in: int = 4, c_hidden: int = 16, dp_rate: float = 0.1, lr: float = 1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.layers = nn.ModuleList([GraphConv(c_in, c_hidden), GraphConv(c_hidden, c_hidden)])
        self.head = nn.Sequential(nn.Dropout(dp_rate), nn.Linear(c_hidden, 1))
        self.loss_module = nn.BCEWithLogitsLoss()

    def forward(self, data: GraphBatch):
        x = data.x
        for layer in self.layers:
            x = torch.relu(layer(x, data.edge_index))
        graphs = int(data.y.size(0))
        pooled = torch.zeros(graphs, x.size(1)).index_add_(0, data.batch, x)
        counts = torch.zeros(graphs).index_add_(0, data.batch, torch.ones(x.size(0)))
        x = self.head(pooled / counts.unsqueeze(-1)).squeeze(dim=-1)
        loss = self.loss_module(x, data.y)
        acc = ((x > 0).float() == data.y).sum().float() / data.y.size(0)
        return loss, acc

    def training_step(self, batch, batch_idx):
        loss, acc = self.forward(batch)
        self.log("train_loss", loss)
        self.log("train_acc", acc)
        return loss

    def validation_step(self, batch, batch_idx):
        _, acc = self.forward(batch)
        self.log("val_acc", acc)

    def configure_optimizers(self):
        return torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=0.0)


# --- vision, self-supervised: SimCLR (Lightning Bolts) --------------------------------------------------------


class TwoViewSet(Dataset):
    """Each item twice augmented by the global RNG (noise and a flip, as torchvision transforms draw them)."""

    def __init__(self, images, labels):
        self.images, self.labels = images, labels

    def __len__(self) -> int:
        return len(self.images)

    def view(self, image):
        if torch.rand(1) < 0.5:
            image = image.flip(-1)
        return image + 0.1 * torch.randn_like(image)

    def __getitem__(self, index):
        image = self.images[index]
        return (self.view(image), self.view(image)), self.labels[index]


class TwoViewData(pl.LightningDataModule):
    """Random 3x8x8 images and labels, each served as two augmented views."""

    def __init__(self, batch_size: int = 32, samples: int = 192):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(4)
        images = torch.rand(self.samples + 64, 3, 8, 8, generator=generator)
        labels = torch.randint(0, 4, (self.samples + 64,), generator=generator)
        self.train_set = TwoViewSet(images[: self.samples], labels[: self.samples])
        self.val_set = TwoViewSet(images[self.samples :], labels[self.samples :])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, drop_last=True)


def linear_warmup_decay(warmup_steps, total_steps, cosine=True):
    """A LambdaLR factor: linear warm-up, then cosine (or linear) decay to 0 (Bolts' helper)."""

    def fn(step):
        if step < warmup_steps:
            return float(step) / float(max(1, warmup_steps))
        progress = float(step - warmup_steps) / float(max(1, total_steps - warmup_steps))
        if cosine:
            return 0.5 * (1.0 + math.cos(math.pi * progress))
        return 1.0 - progress

    return fn


class SimCLR(pl.LightningModule):
    """Bolts' SimCLR: an encoder with BatchNorm and a projection head, NT-Xent over two views; train_loss logged
    on step only, val_loss on epoch with sync_dist; parameters split into decay and no-decay groups by name
    (bias, bn), a warm-up cosine LambdaLR stepped every step whose length comes from num_samples and the batch
    size; LearningRateMonitor among the trainer's callbacks."""

    def __init__(self, batch_size: int = 32, num_samples: int = 192, warmup_epochs: int = 1, max_epochs: int = 2,
                 learning_rate: float = 1e-2, weight_decay: float = 1e-4, temperature: float = 0.5,
                 exclude_bn_bias: bool = True):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.conv = nn.Conv2d(3, 8, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.projection = nn.Sequential(nn.Linear(8, 16), nn.BatchNorm1d(16), nn.ReLU(), nn.Linear(16, 8))
        self.train_iters_per_epoch = num_samples // batch_size

    def forward(self, x):
        return F.adaptive_avg_pool2d(torch.relu(self.bn1(self.conv(x))), 1).flatten(1)

    def nt_xent_loss(self, out_1, out_2, temperature, eps=1e-6):
        out = torch.cat([out_1, out_2], dim=0)
        cov = torch.mm(out, out.t().contiguous())
        sim = torch.exp(cov / temperature)
        neg = sim.sum(dim=-1)
        row_sub = torch.full_like(neg, math.e ** (1 / temperature))
        neg = torch.clamp(neg - row_sub, min=eps)
        pos = torch.exp(torch.sum(out_1 * out_2, dim=-1) / temperature)
        pos = torch.cat([pos, pos], dim=0)
        return -torch.log(pos / (neg + eps)).mean()

    def shared_step(self, batch):
        (img1, img2), _ = batch
        z1 = F.normalize(self.projection(self(img1)), dim=1)
        z2 = F.normalize(self.projection(self(img2)), dim=1)
        return self.nt_xent_loss(z1, z2, self.hparams.temperature)

    def training_step(self, batch, batch_idx):
        loss = self.shared_step(batch)
        self.log("train_loss", loss, on_step=True, on_epoch=False)
        return loss

    def validation_step(self, batch, batch_idx):
        loss = self.shared_step(batch)
        self.log("val_loss", loss, on_step=False, on_epoch=True, sync_dist=True)
        return loss

    def exclude_from_wt_decay(self, named_params, weight_decay, skip_list=("bias", "bn")):
        params, excluded_params = [], []
        for name, param in named_params:
            if not param.requires_grad:
                continue
            if any(layer_name in name for layer_name in skip_list):
                excluded_params.append(param)
            else:
                params.append(param)
        return [{"params": params, "weight_decay": weight_decay}, {"params": excluded_params, "weight_decay": 0.0}]

    def configure_optimizers(self):
        if self.hparams.exclude_bn_bias:
            params = self.exclude_from_wt_decay(self.named_parameters(), weight_decay=self.hparams.weight_decay)
        else:
            params = self.parameters()
        optimizer = torch.optim.Adam(params, lr=self.hparams.learning_rate, weight_decay=self.hparams.weight_decay)
        warmup_steps = self.train_iters_per_epoch * self.hparams.warmup_epochs
        total_steps = self.train_iters_per_epoch * self.hparams.max_epochs
        scheduler = {
            "scheduler": torch.optim.lr_scheduler.LambdaLR(
                optimizer, linear_warmup_decay(warmup_steps, total_steps, cosine=True)
            ),
            "interval": "step",
            "frequency": 1,
        }
        return [optimizer], [scheduler]


# --- reinforcement learning: DQN on an experience-source IterableDataset (Lightning Bolts) ---------------------


class ExperienceSourceDataset(IterableDataset):
    """Bolts' ExperienceSourceDataset: an IterableDataset over the module's own batch generator."""

    def __init__(self, generate_batch):
        self.generate_batch = generate_batch

    def __iter__(self):
        return self.generate_batch()


class ChainEnv:
    """A toy 5-state chain: action 1 moves right (reward 1 at the end), action 0 moves left; noise from the
    global RNG."""

    def __init__(self, size: int = 5):
        self.size = size
        self.state = 0

    def observe(self):
        return F.one_hot(torch.tensor(self.state), self.size).float()

    def reset(self):
        self.state = 0
        return self.observe()

    def step(self, action: int):
        if torch.rand(1) < 0.1:
            action = 1 - action
        self.state = max(0, min(self.size - 1, self.state + (1 if action == 1 else -1)))
        done = self.state == self.size - 1
        return self.observe(), float(done), done


class DQN(pl.LightningModule):
    """Bolts' DQN: train_dataloader builds the replay buffer, warms it up and returns a DataLoader over an
    ExperienceSourceDataset whose generator plays the environment with the online net (epsilon decaying with
    global_step) and yields sampled transitions; training_step syncs the target net every sync_rate steps and
    logs a dict with log_dict; the step returns an OrderedDict with the loss; Adam alone."""

    def __init__(self, obs: int = 5, hidden: int = 16, lr: float = 1e-2, batch_size: int = 16, gamma: float = 0.9,
                 sync_rate: int = 5, warm_start_size: int = 32, batches_per_epoch: int = 6, eps_last_frame: int = 30,
                 eps_start: float = 1.0, eps_end: float = 0.05, replay_size: int = 200):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(obs, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.target_net = nn.Sequential(nn.Linear(obs, hidden), nn.ReLU(), nn.Linear(hidden, 2))
        self.target_net.load_state_dict(self.net.state_dict())
        self.env = ChainEnv(obs)
        self.state = self.env.reset()
        self.buffer = []
        self.total_rewards = [0.0]
        self.episode_reward = 0.0
        self.done_episodes = 0

    def epsilon(self):
        frac = min(1.0, self.global_step / self.hparams.eps_last_frame)
        return self.hparams.eps_start + frac * (self.hparams.eps_end - self.hparams.eps_start)

    def act(self, epsilon):
        if torch.rand(1) < epsilon:
            return int(torch.randint(0, 2, (1,)))
        with torch.no_grad():
            return int(self.net(self.state.unsqueeze(0)).argmax(dim=1))

    def play_step(self, epsilon):
        action = self.act(epsilon)
        new_state, reward, done = self.env.step(action)
        self.buffer.append((self.state, action, reward, done, new_state))
        self.buffer = self.buffer[-self.hparams.replay_size :]
        self.state = new_state
        self.episode_reward += reward
        if done:
            self.total_rewards.append(self.episode_reward)
            self.done_episodes += 1
            self.episode_reward = 0.0
            self.state = self.env.reset()

    def populate(self, warm_start):
        for _ in range(warm_start):
            self.play_step(1.0)

    def train_batch(self):
        for _ in range(self.hparams.batches_per_epoch):
            for _ in range(self.hparams.batch_size // 4):
                self.play_step(self.epsilon())
            indices = torch.randint(0, len(self.buffer), (self.hparams.batch_size,))
            for index in indices.tolist():
                state, action, reward, done, new_state = self.buffer[index]
                yield state, action, reward, done, new_state

    def dqn_loss(self, batch):
        states, actions, rewards, dones, next_states = batch
        state_action_values = self.net(states).gather(1, actions.unsqueeze(-1)).squeeze(-1)
        with torch.no_grad():
            next_state_values = self.target_net(next_states).max(1)[0]
            next_state_values[dones] = 0.0
        expected = next_state_values * self.hparams.gamma + rewards.float()
        return F.mse_loss(state_action_values, expected)

    def training_step(self, batch, _):
        loss = self.dqn_loss(batch)
        if self.global_step % self.hparams.sync_rate == 0:
            self.target_net.load_state_dict(self.net.state_dict())
        self.log_dict(
            {
                "total_reward": self.total_rewards[-1],
                "avg_reward": sum(self.total_rewards[-5:]) / len(self.total_rewards[-5:]),
                "train_loss": loss,
                "episodes": float(self.done_episodes),
            }
        )
        return {"loss": loss, "avg_reward": torch.tensor(self.total_rewards[-1])}

    def configure_optimizers(self):
        return [torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)]

    def train_dataloader(self):
        self.populate(self.hparams.warm_start_size)
        dataset = ExperienceSourceDataset(self.train_batch)
        return DataLoader(dataset=dataset, batch_size=self.hparams.batch_size)


# --- tabular: dict batches and a bare scheduler with a top-level monitor (pytorch_tabular) ----------------------


class RowSet(Dataset):
    """Rows as dicts: continuous features, categorical codes and the target, as pytorch_tabular's TabularDataset."""

    def __init__(self, continuous, categorical, target):
        self.continuous, self.categorical, self.target = continuous, categorical, target

    def __len__(self) -> int:
        return len(self.target)

    def __getitem__(self, index):
        return {"continuous": self.continuous[index], "categorical": self.categorical[index],
                "target": self.target[index]}  # fmt: skip


class TabularData(pl.LightningDataModule):
    """Two continuous-and-categorical splits whose target is a function of both."""

    def __init__(self, batch_size: int = 32, samples: int = 256):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def prepare_data(self) -> None:
        pass

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(5)
        continuous = torch.randn(self.samples, 4, generator=generator)
        categorical = torch.stack(
            [torch.randint(0, 5, (self.samples,), generator=generator),
             torch.randint(0, 3, (self.samples,), generator=generator)], dim=1)  # fmt: skip
        target = (continuous[:, :1] * 2 + categorical[:, :1].float() * 0.3).clone()
        cut = self.samples * 3 // 4
        self.train = RowSet(continuous[:cut], categorical[:cut], target[:cut])
        self.validation = RowSet(continuous[cut:], categorical[cut:], target[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.validation, batch_size=self.batch_size)


class CategoryEmbeddingModel(pl.LightningModule):
    """pytorch_tabular's BaseModel with a CategoryEmbedding backbone: embeddings for the categorical columns,
    BatchNorm on the continuous ones, forward returning a dict; the loss logged per tag (train on step, valid
    on epoch, prog_bar and logger) and a torchmetrics functional metric beside it; configure_optimizers returns
    {"optimizer", "lr_scheduler": a bare StepLR, "monitor"}; EarlyStopping and ModelCheckpoint on valid_loss."""

    def __init__(self, cardinality: tuple = (5, 3), embedding_dim: int = 3, layers: str = "16-8", lr: float = 1e-2,
                 gamma: float = 0.7):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.embedding_layers = nn.ModuleList([nn.Embedding(c, embedding_dim) for c in cardinality])
        self.normalizing_batch_norm = nn.BatchNorm1d(4)
        sizes = [4 + embedding_dim * len(cardinality)] + [int(n) for n in layers.split("-")]
        blocks = []
        for a, b in itertools.pairwise(sizes):
            blocks += [nn.Linear(a, b), nn.ReLU()]
        self.backbone = nn.Sequential(*blocks)
        self.head = nn.Linear(sizes[-1], 1)
        self.loss = nn.MSELoss()

    def forward(self, x):
        embedded = [layer(x["categorical"][:, i]) for i, layer in enumerate(self.embedding_layers)]
        inputs = torch.cat([self.normalizing_batch_norm(x["continuous"]), *embedded], dim=1)
        features = self.backbone(inputs)
        return {"logits": self.head(features), "backbone_features": features}

    def calculate_loss(self, output, y, tag):
        computed_loss = self.loss(output["logits"], y)
        self.log(f"{tag}_loss", computed_loss, on_epoch=(tag == "valid"), on_step=(tag == "train"), logger=True,
                 prog_bar=True)  # fmt: skip
        return computed_loss

    def calculate_metrics(self, y, y_hat, tag):
        metric = torchmetrics.functional.mean_squared_error(y_hat, y)
        self.log(f"{tag}_mean_squared_error", metric, on_epoch=True, on_step=False, logger=True, prog_bar=False)
        return [metric]

    def training_step(self, batch, batch_idx):
        output = self(batch)
        loss = self.calculate_loss(output, batch["target"], tag="train")
        self.calculate_metrics(batch["target"], output["logits"], tag="train")
        return loss

    def validation_step(self, batch, batch_idx):
        output = self(batch)
        self.calculate_loss(output, batch["target"], tag="valid")
        self.calculate_metrics(batch["target"], output["logits"], tag="valid")

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(opt, step_size=1, gamma=self.hparams.gamma)
        return {"optimizer": opt, "lr_scheduler": scheduler, "monitor": "valid_loss"}


# --- time series: windows of a series, a plateau scheduler with strict=False (pytorch-forecasting) --------------


class WindowSet(Dataset):
    """Encoder/decoder windows slid over each series, as dicts of tensors."""

    def __init__(self, series, encoder_length: int, prediction_length: int):
        self.series = series
        self.encoder_length = encoder_length
        self.prediction_length = prediction_length
        self.per_series = series.size(1) - encoder_length - prediction_length + 1

    def __len__(self) -> int:
        return self.series.size(0) * self.per_series

    def __getitem__(self, index):
        row, start = divmod(index, self.per_series)
        cut = start + self.encoder_length
        return {
            "encoder_cont": self.series[row, start:cut].unsqueeze(-1),
            "encoder_target": self.series[row, start:cut],
            "decoder_target": self.series[row, cut : cut + self.prediction_length],
        }


def collate_windows(samples):
    """pytorch-forecasting's collate: (x dict, (target, weight)), the weight None."""
    x = {key: torch.stack([sample[key] for sample in samples]) for key in samples[0]}
    return x, (x["decoder_target"], None)


class SeriesData(pl.LightningDataModule):
    """Noisy sines, windows of 8 steps to predict the next 4; validation from a later stretch."""

    def __init__(self, batch_size: int = 16, series: int = 6, length: int = 40):
        super().__init__()
        self.batch_size = batch_size
        self.series = series
        self.length = length

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(6)
        steps = torch.arange(self.length).float()
        phase = torch.rand(self.series, 1, generator=generator) * 6
        values = torch.sin(steps * 0.3 + phase) + 0.1 * torch.randn(self.series, self.length, generator=generator)
        self.train_set = WindowSet(values[:, :30], 8, 4)
        self.val_set = WindowSet(values[:, 18:], 8, 4)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, collate_fn=collate_windows)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, collate_fn=collate_windows)


class ForecastingModel(pl.LightningModule):
    """pytorch-forecasting's BaseModel: batches (x, (y, weight)); step() logs `{train|val}_loss` with
    on_step=self.training, on_epoch=True, prog_bar and an explicit batch_size, and a metric beside it;
    training_step returns a dict with the loss and n_samples; Adam with a ReduceLROnPlateau config dict
    (monitor val_loss, interval epoch, reduce_on_plateau, frequency 1, strict False); gradient clipping,
    limit_train_batches and log_every_n_steps as trainer flags."""

    def __init__(self, encoder_length: int = 8, prediction_length: int = 4, hidden: int = 16,
                 learning_rate: float = 1e-2, reduce_on_plateau_patience: int = 1):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.rnn = nn.GRU(1, hidden, batch_first=True)
        self.output_layer = nn.Linear(hidden, prediction_length)

    def forward(self, x):
        _, hidden = self.rnn(x["encoder_cont"])
        return {"prediction": self.output_layer(hidden[-1])}

    def step(self, x, y, batch_idx):
        out = self(x)
        prediction = out["prediction"]
        loss = F.mse_loss(prediction, y[0])
        prefix = ["val", "train"][self.training]
        batch_size = len(x["decoder_target"])
        self.log(f"{prefix}_loss", loss, on_step=self.training, on_epoch=True, prog_bar=True, batch_size=batch_size)
        self.log(f"{prefix}_MAE", (prediction - y[0]).abs().mean(), on_step=self.training, on_epoch=True,
                 batch_size=batch_size)  # fmt: skip
        return {"loss": loss, "n_samples": x["decoder_target"].size(0)}, out

    def training_step(self, batch, batch_idx):
        x, y = batch
        log, _ = self.step(x, y, batch_idx)
        return log

    def validation_step(self, batch, batch_idx):
        x, y = batch
        log, _ = self.step(x, y, batch_idx)
        return log

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.learning_rate)
        scheduler_config = {
            "scheduler": torch.optim.lr_scheduler.ReduceLROnPlateau(
                optimizer,
                mode="min",
                factor=0.2,
                patience=self.hparams.reduce_on_plateau_patience,
                cooldown=0,
                min_lr=1e-5,
            ),
            "monitor": "val_loss",
            "interval": "epoch",
            "reduce_on_plateau": True,
            "frequency": 1,
            "strict": False,
        }
        return {"optimizer": optimizer, "lr_scheduler": scheduler_config}


# --- vision: semantic segmentation with a torchmetrics IoU (Lightning Bolts' SemSegment, 2.x hooks) -------------


class SegmentationData(pl.LightningDataModule):
    """3x16x16 images whose mask (3 classes) thresholds their first channel; masks as uint8 like a decoded PNG."""

    def __init__(self, batch_size: int = 8, samples: int = 64):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(8)
        images = torch.rand(self.samples, 3, 16, 16, generator=generator)
        masks = (images[:, 0] * 3).clamp(max=2.999).to(torch.uint8)
        cut = self.samples * 3 // 4
        self.train_set = TensorDataset(images[:cut], masks[:cut])
        self.val_set = TensorDataset(images[cut:], masks[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class TinyUNet(nn.Module):
    """A one-level UNet: a BatchNorm block, a pooled bottom, a transposed-conv up path with a skip."""

    def __init__(self, num_classes: int, features_start: int):
        super().__init__()
        f = features_start
        self.down = nn.Sequential(nn.Conv2d(3, f, 3, padding=1), nn.BatchNorm2d(f), nn.ReLU())
        self.bottom = nn.Sequential(nn.MaxPool2d(2), nn.Conv2d(f, 2 * f, 3, padding=1), nn.ReLU())
        self.up = nn.ConvTranspose2d(2 * f, f, 2, stride=2)
        self.out = nn.Conv2d(2 * f, num_classes, 1)

    def forward(self, x):
        skip = self.down(x)
        return self.out(torch.cat([skip, self.up(self.bottom(skip))], dim=1))


class SemSegment(pl.LightningModule):
    """Bolts' SemSegment (its validation_epoch_end moved to Lightning 2.x's self.log): images cast with .float()
    and masks with .long() in the step, cross-entropy with ignore_index, a torchmetrics MulticlassJaccardIndex
    attribute logged as a Metric object on epoch; Adam over self.net's parameters with CosineAnnealingLR(T_max)
    returned as ([opt], [sch]); gradient accumulation as a trainer flag."""

    def __init__(self, num_classes: int = 3, features_start: int = 8, lr: float = 1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.net = TinyUNet(num_classes, features_start)
        self.val_iou = torchmetrics.classification.MulticlassJaccardIndex(num_classes=num_classes)

    def forward(self, x):
        return self.net(x)

    def training_step(self, batch, batch_nb):
        img, mask = batch
        img = img.float()
        mask = mask.long()
        out = self(img)
        loss_val = F.cross_entropy(out, mask, ignore_index=250)
        self.log("train_loss", loss_val, prog_bar=True)
        return loss_val

    def validation_step(self, batch, batch_idx):
        img, mask = batch
        img = img.float()
        mask = mask.long()
        out = self(img)
        loss_val = F.cross_entropy(out, mask, ignore_index=250)
        self.val_iou(out.argmax(dim=1), mask)
        self.log("val_loss", loss_val, prog_bar=True)
        self.log("val_iou", self.val_iou, on_step=False, on_epoch=True)

    def configure_optimizers(self):
        opt = torch.optim.Adam(self.net.parameters(), lr=self.hparams.lr)
        sch = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=10)
        return [opt], [sch]


# --- vision: a classification task with a freeze/unfreeze finetuning callback (lightning-flash) -----------------


class FreezeUnfreeze(BaseFinetuning):
    """Flash's freeze_unfreeze strategy: the module's backbone frozen before training, unfrozen (joined to the
    optimizer as a new group) at `unfreeze_epoch`."""

    def __init__(self, unfreeze_epoch: int = 1, train_bn: bool = True):
        super().__init__()
        self.unfreeze_epoch = unfreeze_epoch
        self.train_bn = train_bn

    def freeze_before_training(self, pl_module):
        self.freeze(modules=pl_module.backbone, train_bn=self.train_bn)

    def finetune_function(self, pl_module, epoch, optimizer):
        if epoch != self.unfreeze_epoch:
            return
        self.unfreeze_and_add_param_group(modules=pl_module.backbone, optimizer=optimizer, train_bn=self.train_bn)


class ImageClassifier(pl.LightningModule):
    """lightning-flash's ClassificationTask: a backbone and a head, step() updating torchmetrics metrics kept in a
    ModuleDict and logging them with the loss through log_dict of a plain dict (Metric objects and a tensor) with
    on_step, on_epoch and prog_bar; the optimizer over the parameters that require grad and a StepLR; the
    finetuning callback among the trainer's callbacks."""

    def __init__(self, num_classes: int = 4, lr: float = 1e-2):
        super().__init__()
        self.save_hyperparameters()
        self.backbone = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.AdaptiveAvgPool2d(1), nn.Flatten())  # fmt: skip
        self.head = nn.Linear(8, num_classes)
        self.train_metrics = nn.ModuleDict({"accuracy": torchmetrics.classification.MulticlassAccuracy(num_classes)})
        self.val_metrics = nn.ModuleDict({"accuracy": torchmetrics.classification.MulticlassAccuracy(num_classes)})

    def forward(self, x):
        return self.head(self.backbone(x))

    def step(self, batch, metrics):
        x, y = batch
        y_hat = self(x)
        logs = {}
        for name, metric in metrics.items():
            metric(y_hat, y)
            logs[name] = metric
        loss = F.cross_entropy(y_hat, y)
        logs["cross_entropy"] = loss
        return loss, logs

    def training_step(self, batch, batch_idx):
        loss, logs = self.step(batch, self.train_metrics)
        self.log_dict({f"train_{k}": v for k, v in logs.items()}, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        _, logs = self.step(batch, self.val_metrics)
        self.log_dict({f"val_{k}": v for k, v in logs.items()}, on_step=False, on_epoch=True, prog_bar=True)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(filter(lambda p: p.requires_grad, self.parameters()), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.5)
        return [optimizer], [scheduler]


class SmallImages(pl.LightningDataModule):
    """1x8x8 images, 4 classes."""

    def __init__(self, batch_size: int = 16, samples: int = 128):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(9)
        labels = torch.randint(0, 4, (self.samples,), generator=generator)
        images = torch.rand(self.samples, 1, 8, 8, generator=generator) + labels.view(-1, 1, 1, 1) * 0.2
        cut = self.samples * 3 // 4
        self.train_set = TensorDataset(images[:cut], labels[:cut])
        self.val_set = TensorDataset(images[cut:], labels[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


# --- speech: a CTC model (NeMo's EncDecCTCModel) ----------------------------------------------------------------


class UtteranceSet(Dataset):
    """A list of (features [T, 8], tokens [U]) utterances as a map-style data set."""

    def __init__(self, items):
        self.items = items

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


def collate_audio(batch):
    """NeMo's speech collate: padded features and their lengths, padded transcripts and their lengths."""
    signal_len = torch.tensor([features.size(0) for features, _ in batch])
    transcript_len = torch.tensor([tokens.size(0) for _, tokens in batch])
    signal = torch.zeros(len(batch), int(signal_len.max()), batch[0][0].size(1))
    transcript = torch.zeros(len(batch), int(transcript_len.max()), dtype=torch.long)
    for i, (features, tokens) in enumerate(batch):
        signal[i, : features.size(0)] = features
        transcript[i, : tokens.size(0)] = tokens
    return signal, signal_len, transcript, transcript_len


class SpeechData(pl.LightningDataModule):
    """Utterances of 10 to 20 frames of 8 features, transcripts of 2 to 4 tokens from a 5-token vocabulary."""

    def __init__(self, batch_size: int = 8, samples: int = 96):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(10)
        items = []
        for _ in range(self.samples):
            tokens = torch.randint(0, 5, (int(torch.randint(2, 5, (1,), generator=generator)),), generator=generator)
            frames = int(torch.randint(10, 21, (1,), generator=generator))
            features = torch.randn(frames, 8, generator=generator) * 0.5
            features[:, :5] += F.one_hot(tokens, 5).float().repeat_interleave(frames // len(tokens) + 1, 0)[:frames]
            items.append((features, tokens))
        cut = self.samples * 3 // 4
        self.train_set, self.val_set = UtteranceSet(items[:cut]), UtteranceSet(items[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, collate_fn=collate_audio)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, collate_fn=collate_audio)


class EncDecCTCModel(pl.LightningModule):
    """NeMo's EncDecCTCModel: batches (signal, signal_len, transcript, transcript_len), CTC loss; training_step
    logs train_loss, the optimizer's learning_rate (a float read from param_groups) and global_step (a float
    tensor) with log_dict and returns {"loss"}; validation outputs kept in a list, reduced in
    on_validation_epoch_end and logged with sync_dist; AdamW with a warm-up/annealing LambdaLR in NeMo's scheduler
    dict (interval step, frequency 1, monitor, reduce_on_plateau False); gradient accumulation."""

    def __init__(self, features: int = 8, hidden: int = 16, vocabulary: int = 5, lr: float = 5e-3,
                 warmup_steps: int = 2, max_steps: int = 24):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.encoder = nn.Sequential(nn.Conv1d(features, hidden, 3, padding=1), nn.ReLU(),
                                     nn.Conv1d(hidden, hidden, 3, padding=1), nn.ReLU())  # fmt: skip
        self.decoder = nn.Conv1d(hidden, vocabulary + 1, 1)
        self.loss = nn.CTCLoss(blank=vocabulary, reduction="mean", zero_infinity=True)
        self.validation_step_outputs = []

    def forward(self, input_signal, input_signal_length):
        encoded = self.encoder(input_signal.transpose(1, 2))
        log_probs = self.decoder(encoded).transpose(1, 2).log_softmax(dim=-1)
        return log_probs, input_signal_length

    def training_step(self, batch, batch_nb):
        signal, signal_len, transcript, transcript_len = batch
        log_probs, encoded_len = self.forward(input_signal=signal, input_signal_length=signal_len)
        loss_value = self.loss(log_probs.transpose(0, 1), transcript, encoded_len, transcript_len)
        tensorboard_logs = {
            "train_loss": loss_value,
            "learning_rate": self._optimizer.param_groups[0]["lr"],
            "global_step": torch.tensor(self.trainer.global_step, dtype=torch.float32),
        }
        self.log_dict(tensorboard_logs)
        return {"loss": loss_value}

    def validation_step(self, batch, batch_idx):
        signal, signal_len, transcript, transcript_len = batch
        log_probs, encoded_len = self.forward(input_signal=signal, input_signal_length=signal_len)
        loss_value = self.loss(log_probs.transpose(0, 1), transcript, encoded_len, transcript_len)
        self.validation_step_outputs.append({"val_loss": loss_value})

    def on_validation_epoch_end(self):
        val_loss_mean = torch.stack([x["val_loss"] for x in self.validation_step_outputs]).mean()
        self.log("val_loss", val_loss_mean, sync_dist=True)
        self.validation_step_outputs.clear()

    def configure_optimizers(self):
        self._optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.lr, weight_decay=1e-3)
        warmup, total = self.hparams.warmup_steps, self.hparams.max_steps

        def warmup_annealing(step):
            if step < warmup:
                return (step + 1) / (warmup + 1)
            return max(0.1, 0.5 * (1 + math.cos(math.pi * (step - warmup) / max(1, total - warmup))))

        self._scheduler = torch.optim.lr_scheduler.LambdaLR(self._optimizer, warmup_annealing)
        scheduler = {"scheduler": self._scheduler, "interval": "step", "frequency": 1, "monitor": "val_loss",
                     "reduce_on_plateau": False}  # fmt: skip
        return [self._optimizer], [scheduler]


# --- text: a TaskTransformer over BatchEncoding-like batches (lightning-transformers) ----------------------------


class Encoding(UserDict):
    """A tokenizer's BatchEncoding in miniature: a Mapping (a UserDict, not a dict) of padded tensors."""


class EncodedTextData(TokenData):
    """TokenData whose collate returns an Encoding, as transformers' DataCollatorWithPadding does; 40 validation
    rows in batches of 16, so the last validation batch is smaller."""

    @staticmethod
    def collate(rows):
        return Encoding(TokenData.collate(rows))


class TextClassificationTransformer(pl.LightningModule):
    """lightning-transformers' TaskTransformer: `self.model(**batch)` returning the loss and logits, train_loss
    logged on step, val_loss with sync_dist and no batch_size (Lightning infers it from the Mapping batch), the
    computed metrics with log_dict and prog_bar; AdamW and a linear warm-up LambdaLR whose length comes from
    trainer.estimated_stepping_batches and a warm-up fraction (compute_warmup), in a dict with interval step."""

    def __init__(self, vocab: int = 40, hidden: int = 16, num_labels: int = 2, learning_rate: float = 3e-3,
                 warmup: float = 0.1):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.model = GlueTransformer(vocab, hidden, num_labels)

    def training_step(self, batch, batch_idx):
        loss, _ = self.model(**batch)
        self.log("train_loss", loss)
        return loss

    def common_step(self, prefix, batch):
        loss, logits = self.model(**batch)
        preds = torch.argmax(logits, dim=1)
        metrics = {f"{prefix}_accuracy": (preds == batch["labels"]).float().mean()}
        self.log_dict(metrics, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        loss = self.common_step("val", batch)
        self.log("val_loss", loss, sync_dist=True)

    def compute_warmup(self, num_training_steps, num_warmup_steps):
        if num_training_steps < 0:
            num_training_steps = self.trainer.estimated_stepping_batches
        if isinstance(num_warmup_steps, float):
            num_warmup_steps *= num_training_steps
            num_warmup_steps = math.ceil(num_warmup_steps)
        return num_training_steps, num_warmup_steps

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.parameters(), lr=self.hparams.learning_rate)
        total, warmup = self.compute_warmup(-1, self.hparams.warmup)

        def linear(step):
            if step < warmup:
                return float(step) / float(max(1, warmup))
            return max(0.0, float(total - step) / float(max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear)
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step", "frequency": 1}}


# --- vision: batched augmentation in on_after_batch_transfer (Lightning's Kornia tutorial) -----------------------


class DataAugmentation(nn.Module):
    """Batched augmentation drawing the global RNG (a random flip per image and noise), as kornia's modules do."""

    @torch.no_grad()
    def forward(self, x):
        flip = torch.rand(x.size(0)) < 0.5
        x = torch.where(flip.view(-1, 1, 1, 1), x.flip(-1), x)
        return x + 0.05 * torch.randn_like(x)


class AugmentedClassifier(pl.LightningModule):
    """The Kornia tutorial's CoolSystem: the augmentation applied in on_after_batch_transfer only while
    trainer.training, preprocessing in on_before_batch_transfer, train/val loss and accuracy logged with prog_bar,
    AdamW over self.model's parameters with CosineAnnealingLR(T_max=trainer.max_epochs); bf16-mixed precision."""

    def __init__(self, num_classes: int = 4, lr: float = 3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.model = nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(2), nn.Flatten(),
                                   nn.Linear(32, num_classes))  # fmt: skip
        self.transform = DataAugmentation()

    def forward(self, x):
        return self.model(x)

    def on_before_batch_transfer(self, batch, dataloader_idx):
        x, y = batch
        return (x - 0.5) / 0.5, y

    def on_after_batch_transfer(self, batch, dataloader_idx):
        x, y = batch
        if self.trainer.training:
            x = self.transform(x)
        return x, y

    def compute_loss(self, y_logit, y):
        return F.cross_entropy(y_logit, y)

    def training_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        loss = self.compute_loss(y_hat, y)
        self.log("train_loss", loss, prog_bar=False)
        self.log("train_acc", (y_hat.argmax(1) == y).float().mean(), prog_bar=False)
        return loss

    def validation_step(self, batch, batch_idx):
        x, y = batch
        y_hat = self(x)
        self.log("valid_loss", self.compute_loss(y_hat, y), prog_bar=False)
        self.log("valid_acc", (y_hat.argmax(1) == y).float().mean(), prog_bar=True)

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.hparams.lr)
        scheduler = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, self.trainer.max_epochs, 0)
        return [optimizer], [scheduler]


# --- reinforcement learning: PPO with repeated optimizer steps (Lightning Bolts) ---------------------------------


class PPO(pl.LightningModule):
    """Bolts' PPO, with its actor and critic losses summed for one Adam (2.x has no optimizer_idx): trajectories
    generated by the module into an ExperienceSourceDataset, GAE-style advantages normalised in the step, episode
    statistics logged on epoch with prog_bar, and an optimizer_step override calling super().optimizer_step
    num_optim_iters times for each batch (the closure, so the step, runs each time)."""

    def __init__(self, obs: int = 5, hidden: int = 16, lr: float = 3e-3, gamma: float = 0.9, batch_size: int = 8,
                 steps_per_epoch: int = 24, num_optim_iters: int = 3, clip_ratio: float = 0.2):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.actor = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, 2))
        self.critic = nn.Sequential(nn.Linear(obs, hidden), nn.Tanh(), nn.Linear(hidden, 1))
        self.env = ChainEnv(obs)
        self.state = self.env.reset()
        self.avg_reward = 0.0
        self.avg_ep_len = 0.0

    def discount(self, rewards, discount):
        out, running = [], 0.0
        for reward in reversed(rewards):
            running = running * discount + reward
            out.append(running)
        return list(reversed(out))

    def generate_trajectory_samples(self):
        states, actions, logps, rewards, values = [], [], [], [], []
        episodes, length = 0, 0
        for _ in range(self.hparams.steps_per_epoch):
            with torch.no_grad():
                logits = self.actor(self.state)
                action = int(torch.multinomial(logits.softmax(-1), 1))
                value = float(self.critic(self.state))
            next_state, reward, done = self.env.step(action)
            states.append(self.state)
            actions.append(action)
            logps.append(logits.log_softmax(-1)[action])
            rewards.append(reward)
            values.append(value)
            length += 1
            self.state = next_state
            if done:
                episodes += 1
                self.state = self.env.reset()
        qvals = self.discount(rewards, self.hparams.gamma)
        self.avg_reward = sum(rewards) / self.hparams.steps_per_epoch
        self.avg_ep_len = length / max(1, episodes)
        for state, action, logp, qval, value in zip(states, actions, logps, qvals, values):
            yield state, action, logp, torch.tensor(qval), torch.tensor(qval - value)

    def training_step(self, batch, batch_idx):
        state, action, old_logp, qval, adv = batch
        adv = (adv - adv.mean()) / (adv.std() + 1e-8)
        self.log("avg_ep_len", self.avg_ep_len, prog_bar=True, on_step=False, on_epoch=True)
        self.log("avg_reward", self.avg_reward, prog_bar=True, on_step=False, on_epoch=True)
        logp = self.actor(state).log_softmax(-1).gather(1, action.unsqueeze(-1)).squeeze(-1)
        ratio = torch.exp(logp - old_logp)
        clip_adv = torch.clamp(ratio, 1 - self.hparams.clip_ratio, 1 + self.hparams.clip_ratio) * adv
        loss_actor = -(torch.min(ratio * adv, clip_adv)).mean()
        loss_critic = (qval.float() - self.critic(state).squeeze(-1)).pow(2).mean()
        self.log("loss_actor", loss_actor, on_step=False, on_epoch=True, prog_bar=True, logger=True)
        self.log("loss_critic", loss_critic, on_step=False, on_epoch=True, prog_bar=False, logger=True)
        return loss_actor + loss_critic

    def configure_optimizers(self):
        return torch.optim.Adam(self.parameters(), lr=self.hparams.lr)

    def optimizer_step(self, *args, **kwargs):
        for _ in range(self.hparams.num_optim_iters):
            super().optimizer_step(*args, **kwargs)

    def train_dataloader(self):
        dataset = ExperienceSourceDataset(self.generate_trajectory_samples)
        return DataLoader(dataset=dataset, batch_size=self.hparams.batch_size)


# --- text: the module builds its own loaders in setup (transformers' legacy Lightning examples) ------------------


class TinyTextEncoder(nn.Module):
    """A stand-in for a pretrained encoder with a classification head (embeddings, LayerNorm, classifier)."""

    def __init__(self, vocab: int = 40, hidden: int = 16, num_labels: int = 2):
        super().__init__()
        self.embeddings = nn.Embedding(vocab, hidden)
        self.LayerNorm = nn.LayerNorm(hidden)
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, input_ids, attention_mask, labels):
        mask = attention_mask.unsqueeze(-1).float()
        pooled = (self.LayerNorm(self.embeddings(input_ids)) * mask).sum(1) / mask.sum(1)
        logits = self.classifier(pooled)
        return F.cross_entropy(logits, labels), logits


class LoggingCallback(pl.Callback):
    """transformers' LoggingCallback (2.x hook names): each batch's learning rates handed to the module's
    logger.log_metrics without a step; the callback metrics reported when validation ends."""

    def on_train_batch_end(self, trainer, pl_module, outputs, batch, batch_idx):
        lr_scheduler = trainer.lr_scheduler_configs[0].scheduler
        lrs = {f"lr_group_{i}": lr for i, lr in enumerate(lr_scheduler.get_last_lr())}
        pl_module.logger.log_metrics(lrs)

    def on_validation_end(self, trainer, pl_module):
        metrics = trainer.callback_metrics
        for key in sorted(metrics):
            if key not in ["log", "progress_bar"]:
                rank_zero_info(f"{key} = {metrics[key]!s}")


class BaseTransformer(pl.LightningModule):
    """transformers' BaseTransformer and GLUETransformer: setup() builds the train loader and reads the data set's
    size, train_dataloader returns it, val_dataloader builds one at each call; total_steps() from the data set
    size, batch size, accumulation and max_epochs hyperparameters; AdamW with no-decay groups kept as self.opt
    and a linear warm-up scheduler dict (interval step, frequency 1); training_step returns the seed's
    {"loss", "log"} dict; the lr read from trainer.lr_scheduler_configs; LoggingCallback and gradient clipping."""

    def __init__(self, learning_rate: float = 5e-3, weight_decay: float = 0.01, adam_epsilon: float = 1e-8,
                 warmup_steps: int = 2, train_batch_size: int = 16, eval_batch_size: int = 32,
                 accumulate_grad_batches: int = 2, max_epochs: int = 2, gpus: int = 0):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.model = TinyTextEncoder()
        self.validation_step_outputs = []

    def forward(self, **inputs):
        return self.model(**inputs)

    def get_dataloader(self, type_path: str, batch_size: int, shuffle: bool = False):
        generator = torch.Generator().manual_seed(11 if type_path == "train" else 12)
        rows = []
        for _ in range(128 if type_path == "train" else 40):
            ids = torch.randint(1, 40, (int(torch.randint(3, 10, (1,), generator=generator)),), generator=generator)
            rows.append({"input_ids": ids, "label": int(ids[-1] % 2)})
        return DataLoader(rows, batch_size=batch_size, shuffle=shuffle, collate_fn=TokenData.collate)

    def setup(self, stage):
        if stage == "test":
            self.dataset_size = len(self.test_dataloader().dataset)
        else:
            self.train_loader = self.get_dataloader("train", self.hparams.train_batch_size, shuffle=True)
            self.dataset_size = len(self.train_dataloader().dataset)

    def train_dataloader(self):
        return self.train_loader

    def val_dataloader(self):
        return self.get_dataloader("dev", self.hparams.eval_batch_size, shuffle=False)

    def total_steps(self) -> int:
        num_devices = max(1, self.hparams.gpus)
        effective_batch_size = self.hparams.train_batch_size * self.hparams.accumulate_grad_batches * num_devices
        return (self.dataset_size / effective_batch_size) * self.hparams.max_epochs

    def get_lr_scheduler(self):
        warmup, total = self.hparams.warmup_steps, self.total_steps()

        def linear(step):
            if step < warmup:
                return float(step) / float(max(1, warmup))
            return max(0.0, float(total - step) / float(max(1, total - warmup)))

        scheduler = torch.optim.lr_scheduler.LambdaLR(self.opt, linear)
        return {"scheduler": scheduler, "interval": "step", "frequency": 1}

    def configure_optimizers(self):
        model = self.model
        no_decay = ["bias", "LayerNorm.weight"]
        optimizer_grouped_parameters = [
            {
                "params": [p for n, p in model.named_parameters() if not any(nd in n for nd in no_decay)],
                "weight_decay": self.hparams.weight_decay,
            },
            {
                "params": [p for n, p in model.named_parameters() if any(nd in n for nd in no_decay)],
                "weight_decay": 0.0,
            },
        ]
        optimizer = torch.optim.AdamW(
            optimizer_grouped_parameters, lr=self.hparams.learning_rate, eps=self.hparams.adam_epsilon
        )
        self.opt = optimizer
        scheduler = self.get_lr_scheduler()
        return [optimizer], [scheduler]

    def training_step(self, batch, batch_idx):
        outputs = self(**batch)
        loss = outputs[0]
        lr_scheduler = self.trainer.lr_scheduler_configs[0].scheduler
        tensorboard_logs = {"loss": loss, "rate": lr_scheduler.get_last_lr()[-1]}
        return {"loss": loss, "log": tensorboard_logs}

    def validation_step(self, batch, batch_nb):
        tmp_eval_loss, logits = self(**batch)
        self.validation_step_outputs.append({"val_loss": tmp_eval_loss.detach().cpu(), "pred": logits.argmax(1),
                                             "target": batch["labels"]})  # fmt: skip

    def on_validation_epoch_end(self):
        outputs = self.validation_step_outputs
        val_loss_mean = torch.stack([x["val_loss"] for x in outputs]).mean()
        preds = torch.cat([x["pred"] for x in outputs])
        targets = torch.cat([x["target"] for x in outputs])
        self.log("val_loss", val_loss_mean)
        self.log("acc", (preds == targets).float().mean())
        outputs.clear()


# --- vision, detection: tuple(zip(*batch)) batches with dict targets (Lightning Bolts' FasterRCNN) ---------------


def box_iou(boxes1, boxes2):
    """Pairwise IoU of [x0, y0, x1, y1] boxes (torchvision.ops.box_iou's formula)."""
    area1 = (boxes1[:, 2] - boxes1[:, 0]) * (boxes1[:, 3] - boxes1[:, 1])
    area2 = (boxes2[:, 2] - boxes2[:, 0]) * (boxes2[:, 3] - boxes2[:, 1])
    lt = torch.max(boxes1[:, None, :2], boxes2[:, :2])
    rb = torch.min(boxes1[:, None, 2:], boxes2[:, 2:])
    inter = (rb - lt).clamp(min=0).prod(dim=2)
    return inter / (area1[:, None] + area2 - inter)


def _evaluate_iou(target, pred):
    """Bolts' per-image IoU: the diagonal of the target/prediction IoU matrix, 0 with no prediction."""
    if pred["boxes"].shape[0] == 0:
        return torch.tensor(0.0, device=pred["boxes"].device)
    return box_iou(target["boxes"], pred["boxes"]).diag().mean()


class BoxSet(Dataset):
    """Images with one or two boxes each, targets as dicts of boxes and labels (torchvision's detection format)."""

    def __init__(self, seed: int, samples: int):
        generator = torch.Generator().manual_seed(seed)
        self.items = []
        for _ in range(samples):
            count = int(torch.randint(1, 3, (1,), generator=generator))
            corner = torch.rand(count, 2, generator=generator) * 8
            boxes = torch.cat([corner, corner + 2 + torch.rand(count, 2, generator=generator) * 6], dim=1)
            image = torch.rand(3, 16, 16, generator=generator) * 0.1
            x0, y0, x1, y1 = boxes[0].long().tolist()
            image[:, y0:y1, x0:x1] += 1.0
            self.items.append((image, {"boxes": boxes, "labels": torch.randint(1, 3, (count,), generator=generator)}))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index):
        return self.items[index]


def collate_detection(batch):
    """torchvision's detection collate: (images, targets) as two tuples."""
    return tuple(zip(*batch))


class DetectionData(pl.LightningDataModule):
    """Images with boxes, in (image, {boxes, labels}) items."""

    def __init__(self, batch_size: int = 8):
        super().__init__()
        self.batch_size = batch_size

    def setup(self, stage: str) -> None:
        self.train_set, self.val_set = BoxSet(13, 64), BoxSet(14, 20)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, collate_fn=collate_detection)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size, collate_fn=collate_detection)


class TinyDetector(nn.Module):
    """A one-box detector that, like torchvision's, returns a loss dict in train mode and predictions in eval."""

    def __init__(self, num_classes: int = 3):
        super().__init__()
        self.backbone = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(4), nn.Flatten())
        self.box_head = nn.Linear(128, 4)
        self.cls_head = nn.Linear(128, num_classes)

    def forward(self, images, targets=None):
        features = self.backbone(torch.stack(images))
        boxes = self.box_head(features) * 4 + 8
        logits = self.cls_head(features)
        if self.training:
            target_boxes = torch.stack([t["boxes"][0] for t in targets])
            target_labels = torch.stack([t["labels"][0] for t in targets])
            return {"loss_classifier": F.cross_entropy(logits, target_labels),
                    "loss_box_reg": F.smooth_l1_loss(boxes, target_boxes)}  # fmt: skip
        scores, labels = logits.softmax(-1).max(-1)
        return [{"boxes": b.unsqueeze(0), "labels": c.unsqueeze(0), "scores": s.unsqueeze(0)}
                for b, c, s in zip(boxes, labels, scores)]  # fmt: skip


class FasterRCNN(pl.LightningModule):
    """Bolts' FasterRCNN: the batch a (images, targets) pair of tuples from tuple(zip(*batch)), the targets dicts
    copied in the step, the model's loss dict summed and logged with log_dict; in validation the mean IoU of each
    image's best box logged with prog_bar and no batch_size (Lightning infers it from the first image); SGD with
    momentum and weight decay."""

    def __init__(self, learning_rate: float = 1e-2, num_classes: int = 3):
        super().__init__()
        self.save_hyperparameters()
        self.model = TinyDetector(num_classes)

    def forward(self, x):
        self.model.eval()
        return self.model(x)

    def training_step(self, batch, batch_idx):
        images, targets = batch
        targets = [{k: v for k, v in t.items()} for t in targets]
        loss_dict = self.model(images, targets)
        loss = sum(loss for loss in loss_dict.values())
        self.log_dict(loss_dict)
        return loss

    def validation_step(self, batch, batch_idx):
        images, targets = batch
        outs = self.model(images)
        iou = torch.stack([_evaluate_iou(t, o) for t, o in zip(targets, outs)]).mean()
        self.log("val_iou", iou, prog_bar=True)

    def configure_optimizers(self):
        return torch.optim.SGD(self.model.parameters(), lr=self.hparams.learning_rate, momentum=0.9,
                               weight_decay=0.005)  # fmt: skip


# --- reinforcement learning: SAC with manual optimization over three optimizers (Lightning Bolts, 2.x port) ------


class TransitionData(pl.LightningDataModule):
    """Logged transitions (state, action, reward, done, next state) of a 4-dimensional continuous task."""

    def __init__(self, batch_size: int = 16, samples: int = 128):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(15)
        states = torch.randn(self.samples, 4, generator=generator)
        actions = torch.rand(self.samples, 1, generator=generator) * 2 - 1
        rewards = -(states[:, 0] - actions[:, 0]).abs()
        dones = torch.rand(self.samples, generator=generator) < 0.1
        next_states = states + 0.1 * torch.randn(self.samples, 4, generator=generator)
        self.train_set = TensorDataset(states, actions, rewards, dones, next_states)

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True)


class SAC(pl.LightningModule):
    """Bolts' SAC as Lightning 2.x runs it: automatic_optimization False, three optimizers (two Q nets, the
    policy) from self.optimizers(), manual_backward, Polyak-averaged target Q nets, a scheduler stepped by hand
    from self.lr_schedulers() at trainer.is_last_batch, log_dict of the losses; the policy's noise from the global
    RNG."""

    def __init__(self, hidden: int = 16, policy_lr: float = 3e-3, q_lr: float = 3e-3, gamma: float = 0.9,
                 target_alpha: float = 0.05, alpha: float = 0.2):  # fmt: skip
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False

        def q_net():
            return nn.Sequential(nn.Linear(5, hidden), nn.ReLU(), nn.Linear(hidden, 1))

        self.q1, self.q2, self.target_q1, self.target_q2 = q_net(), q_net(), q_net(), q_net()
        self.target_q1.load_state_dict(self.q1.state_dict())
        self.target_q2.load_state_dict(self.q2.state_dict())
        self.policy = nn.Sequential(nn.Linear(4, hidden), nn.ReLU(), nn.Linear(hidden, 2))

    def sample_action(self, states):
        mean, log_std = self.policy(states).chunk(2, dim=-1)
        std = log_std.clamp(-5, 2).exp()
        raw = mean + std * torch.randn_like(mean)
        action = torch.tanh(raw)
        log_prob = (-0.5 * ((raw - mean) / std) ** 2 - std.log() - 0.5 * math.log(2 * math.pi)).sum(-1)
        return action, log_prob - torch.log(1 - action.pow(2) + 1e-6).sum(-1)

    def soft_update_target(self, q_net, target_net):
        for q_param, target_param in zip(q_net.parameters(), target_net.parameters()):
            target_param.data.copy_(
                (1.0 - self.hparams.target_alpha) * target_param.data + self.hparams.target_alpha * q_param
            )

    def loss(self, batch):
        states, actions, rewards, dones, next_states = batch
        new_actions, new_logprobs = self.sample_action(states)
        new_states_actions = torch.cat((states, new_actions), 1)
        new_q = torch.min(self.q1(new_states_actions), self.q2(new_states_actions)).squeeze(-1)
        policy_loss = (self.hparams.alpha * new_logprobs - new_q).mean()
        states_actions = torch.cat((states, actions), 1)
        with torch.no_grad():
            next_actions, next_logprobs = self.sample_action(next_states)
            next_states_actions = torch.cat((next_states, next_actions), 1)
            next_q = torch.min(self.target_q1(next_states_actions), self.target_q2(next_states_actions)).squeeze(-1)
            next_q = next_q - self.hparams.alpha * next_logprobs
            next_q[dones] = 0.0
            target_q = rewards + self.hparams.gamma * next_q
        q1_loss = F.mse_loss(self.q1(states_actions).squeeze(-1), target_q)
        q2_loss = F.mse_loss(self.q2(states_actions).squeeze(-1), target_q)
        return policy_loss, q1_loss, q2_loss

    def training_step(self, batch, _):
        policy_optim, q1_optim, q2_optim = self.optimizers()
        policy_loss, q1_loss, q2_loss = self.loss(batch)
        policy_optim.zero_grad()
        self.manual_backward(policy_loss)
        policy_optim.step()
        q1_optim.zero_grad()
        self.manual_backward(q1_loss)
        q1_optim.step()
        q2_optim.zero_grad()
        self.manual_backward(q2_loss)
        q2_optim.step()
        if self.global_step % 2 == 0:
            self.soft_update_target(self.q1, self.target_q1)
            self.soft_update_target(self.q2, self.target_q2)
        if self.trainer.is_last_batch:
            self.lr_schedulers().step()
        self.log_dict({"policy_loss": policy_loss, "q1_loss": q1_loss, "q2_loss": q2_loss})

    def configure_optimizers(self):
        policy_optim = torch.optim.Adam(self.policy.parameters(), self.hparams.policy_lr)
        q1_optim = torch.optim.Adam(self.q1.parameters(), self.hparams.q_lr)
        q2_optim = torch.optim.Adam(self.q2.parameters(), self.hparams.q_lr)
        policy_scheduler = torch.optim.lr_scheduler.StepLR(policy_optim, step_size=1, gamma=0.5)
        return [policy_optim, q1_optim, q2_optim], [policy_scheduler]


class TwoSetSpeechData(SpeechData):
    """SpeechData with two validation sets (NeMo's validation_ds with several manifests): a list of loaders."""

    def val_dataloader(self):
        half = len(self.val_set.items) // 2
        first, second = UtteranceSet(self.val_set.items[:half]), UtteranceSet(self.val_set.items[half:])
        return [DataLoader(first, batch_size=self.batch_size, collate_fn=collate_audio),
                DataLoader(second, batch_size=5, collate_fn=collate_audio)]  # fmt: skip


class MultiValCTCModel(EncDecCTCModel):
    """NeMo's multi-dataloader validation: validation_step(..., dataloader_idx=0) keeps each loader's outputs
    apart when trainer.val_dataloaders is a list of several, logs the step loss (Lightning suffixes the loader's
    index), and on_validation_epoch_end logs each loader's mean under its own name and the first's as val_loss,
    which ModelCheckpoint monitors with NeMo's filename template and save_last."""

    def on_validation_start(self):
        self.validation_step_outputs = [[] for _ in self.trainer.val_dataloaders]

    def validation_step(self, batch, batch_idx, dataloader_idx=0):
        signal, signal_len, transcript, transcript_len = batch
        log_probs, encoded_len = self.forward(input_signal=signal, input_signal_length=signal_len)
        loss_value = self.loss(log_probs.transpose(0, 1), transcript, encoded_len, transcript_len)
        self.log("val_step_loss", loss_value)
        if isinstance(self.trainer.val_dataloaders, list) and len(self.trainer.val_dataloaders) > 1:
            self.validation_step_outputs[dataloader_idx].append({"val_loss": loss_value})
        else:
            self.validation_step_outputs[0].append({"val_loss": loss_value})

    def on_validation_epoch_end(self):
        for index, outputs in enumerate(self.validation_step_outputs):
            val_loss_mean = torch.stack([x["val_loss"] for x in outputs]).mean()
            if index == 0:
                self.log("val_loss", val_loss_mean, sync_dist=True)
            self.log(f"val_loss_set{index}", val_loss_mean, sync_dist=True, add_dataloader_idx=False)


# --- audio: a masked-token model with grad-norm logging and a custom scheduler step (VampNet) --------------------


class CodesData(pl.LightningDataModule):
    """Dict batches {"codes": [B, T]} of "codec tokens" (a vocabulary of 8) with a repeating structure."""

    def __init__(self, batch_size: int = 16, samples: int = 128, length: int = 12):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples
        self.length = length

    def setup(self, stage: str | None = None):
        generator = torch.Generator().manual_seed(16)
        start = torch.randint(0, 8, (self.samples, 1), generator=generator)
        step = torch.randint(1, 3, (self.samples, 1), generator=generator)
        codes = (start + step * torch.arange(self.length)) % 8
        cut = self.samples * 3 // 4
        self.train_data = [{"codes": c} for c in codes[:cut]]
        self.val_data = [{"codes": c} for c in codes[cut:]]

    def train_dataloader(self):
        return DataLoader(self.train_data, batch_size=self.batch_size, shuffle=True)

    def val_dataloader(self):
        return DataLoader(self.val_data, batch_size=self.batch_size, shuffle=False)


class MaskedTokenModel(pl.LightningModule):
    """VampNet's Lightning module: a mask ratio per example drawn from a scrambled SobolEngine the module holds,
    masked tokens predicted with cross-entropy and ignore_index, "loss/train" logged on step with prog_bar and
    sync_dist, validation's dict of loss and accuracy logged with log_dict on epoch and returned; per-layer gradient
    norms from Lightning's grad_norm logged in on_before_optimizer_step; a Noam-style LambdaLR per step stepped by an
    lr_scheduler_step override."""

    IGNORE_INDEX = -100

    def __init__(self, vocab: int = 8, hidden: int = 16, lr: float = 1e-2, warmup: int = 4):
        super().__init__()
        self.save_hyperparameters()
        self.model = nn.ModuleDict({"embedding": nn.Embedding(vocab + 1, hidden),
                                    "mixer": nn.Conv1d(hidden, hidden, 3, padding=1),
                                    "classifier": nn.Linear(hidden, vocab)})  # fmt: skip
        self.criterion = nn.CrossEntropyLoss(ignore_index=self.IGNORE_INDEX)
        self.rng = torch.quasirandom.SobolEngine(1, scramble=True, seed=1)

    def forward(self, codes):
        hidden = self.model["embedding"](codes).transpose(1, 2)
        hidden = torch.relu(self.model["mixer"](hidden)).transpose(1, 2)
        return self.model["classifier"](hidden).transpose(1, 2)

    def masked(self, codes):
        r = self.rng.draw(codes.size(0))[:, 0].to(self.device)
        positions = (torch.arange(codes.size(1)) + 0.5) / codes.size(1)
        mask = positions.unsqueeze(0) < r.unsqueeze(1).clamp(min=0.2)
        z_mask = codes.masked_fill(mask, self.hparams.vocab)
        target = codes.masked_fill(~mask, self.IGNORE_INDEX)
        return z_mask, target, mask

    def training_step(self, batch, batch_idx):
        z_mask, target, _ = self.masked(batch["codes"])
        loss = self.criterion(self(z_mask), target)
        self.log("loss/train", loss, on_step=True, prog_bar=True, sync_dist=True)
        return loss

    def validation_step(self, batch, batch_idx):
        z_mask, target, mask = self.masked(batch["codes"])
        z_hat = self(z_mask)
        output = {"loss/val": self.criterion(z_hat, target)}
        output["accuracy/top1/masked"] = (z_hat.argmax(1) == batch["codes"])[mask].float().mean()
        self.log_dict(output, on_step=False, on_epoch=True, prog_bar=True, sync_dist=True)
        return output

    def on_before_optimizer_step(self, optimizer):
        norms = grad_norm(self.model, norm_type=2)
        self.log_dict(norms)

    def lr_scheduler_step(self, scheduler, metric):
        scheduler.step()

    def configure_optimizers(self):
        optimizer = torch.optim.AdamW(self.model.parameters(), lr=self.hparams.lr)
        warmup = self.hparams.warmup

        def noam(step):
            step = step + 1
            return min(step**-0.5, step * warmup**-1.5) * warmup**0.5

        scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, noam)
        return [optimizer], [{"scheduler": scheduler, "interval": "step"}]


# --- audio: a GAN vocoder with manual optimization and two schedulers (NeMo's HifiGanModel) ----------------------


class MelAudioData(pl.LightningDataModule):
    """Pairs (audio [B, 32], its "mel" [B, 4, 8]): the mel a fixed projection of the audio's frames."""

    def __init__(self, batch_size: int = 8, samples: int = 96):
        super().__init__()
        self.batch_size = batch_size
        self.samples = samples

    def setup(self, stage: str) -> None:
        generator = torch.Generator().manual_seed(17)
        audio = torch.tanh(torch.randn(self.samples, 32, generator=generator).cumsum(-1) * 0.2)
        mel = audio.view(self.samples, 8, 4).transpose(1, 2).abs()
        cut = self.samples * 3 // 4
        self.train_set = TensorDataset(audio[:cut], mel[:cut])
        self.val_set = TensorDataset(audio[cut:], mel[cut:])

    def train_dataloader(self) -> DataLoader:
        return DataLoader(self.train_set, batch_size=self.batch_size, shuffle=True, drop_last=True)

    def val_dataloader(self) -> DataLoader:
        return DataLoader(self.val_set, batch_size=self.batch_size)


class HifiGan(pl.LightningModule):
    """NeMo's HifiGanModel: automatic_optimization False; the discriminator's step then the generator's from
    self.optimizers(), manual_backward; both schedulers from self.lr_schedulers() stepped at trainer.is_last_batch;
    log_dict of the losses with on_step, the mel loss with prog_bar and logger=False, and global_step logged as a
    number; validation's mel loss on epoch."""

    def __init__(self, hidden: int = 16, lr: float = 2e-3, l1_weight: float = 45.0):
        super().__init__()
        self.save_hyperparameters()
        self.automatic_optimization = False
        self.generator = nn.Sequential(nn.ConvTranspose1d(4, hidden, 4, stride=4), nn.LeakyReLU(0.1),
                                       nn.Conv1d(hidden, 1, 3, padding=1), nn.Tanh())  # fmt: skip
        self.mpd = nn.Sequential(nn.Conv1d(1, hidden, 5, stride=2, padding=2), nn.LeakyReLU(0.1),
                                 nn.Conv1d(hidden, 1, 3, padding=1))  # fmt: skip

    def mel(self, audio):
        return audio.view(audio.size(0), 8, 4).transpose(1, 2).abs()

    def training_step(self, batch, batch_idx):
        audio, audio_mel = batch
        optim_g, optim_d = self.optimizers()
        audio_pred = self.generator(audio_mel).squeeze(1)

        optim_d.zero_grad()
        real = self.mpd(audio.unsqueeze(1))
        fake = self.mpd(audio_pred.detach().unsqueeze(1))
        loss_d = ((1 - real) ** 2).mean() + (fake**2).mean()
        self.manual_backward(loss_d)
        optim_d.step()

        optim_g.zero_grad()
        loss_mel = F.l1_loss(self.mel(audio_pred), audio_mel)
        loss_gen = ((1 - self.mpd(audio_pred.unsqueeze(1))) ** 2).mean()
        loss_g = loss_mel * self.hparams.l1_weight + loss_gen
        self.manual_backward(loss_g)
        optim_g.step()

        if self.trainer.is_last_batch:
            sched_g, sched_d = self.lr_schedulers()
            sched_g.step()
            sched_d.step()

        metrics = {"g_loss_gen": loss_gen, "g_loss": loss_g, "d_loss": loss_d, "lr": optim_g.param_groups[0]["lr"]}
        self.log_dict(metrics, on_step=True, sync_dist=True)
        self.log("g_l1_loss", loss_mel, prog_bar=True, logger=False, sync_dist=True)
        self.log("global_step", self.global_step)

    def validation_step(self, batch, batch_idx):
        _, audio_mel = batch
        audio_pred = self.generator(audio_mel).squeeze(1)
        self.log("val_loss", F.l1_loss(self.mel(audio_pred), audio_mel), on_epoch=True, sync_dist=True)

    def configure_optimizers(self):
        optim_g = torch.optim.AdamW(self.generator.parameters(), lr=self.hparams.lr, betas=(0.8, 0.99))
        optim_d = torch.optim.AdamW(self.mpd.parameters(), lr=self.hparams.lr, betas=(0.8, 0.99))
        sched_g = torch.optim.lr_scheduler.ExponentialLR(optim_g, gamma=0.9)
        sched_d = torch.optim.lr_scheduler.ExponentialLR(optim_d, gamma=0.9)
        return [optim_g, optim_d], [sched_g, sched_d]


# --- games: a datamodule with a module-style epoch hook (a chess/checkers transformer project) -------------------


class PositionSet(Dataset):
    """ "Board positions" (16 features) and a move class; `current_epoch` shifts the positions it serves."""

    def __init__(self, seed: int, records: int):
        generator = torch.Generator().manual_seed(seed)
        self.boards = torch.randn(records, 16, generator=generator)
        self.moves = (self.boards[:, :4].argmax(dim=1) + 1) % 4
        self.current_epoch = 0

    def __len__(self) -> int:
        return len(self.moves)

    def __getitem__(self, index):
        return self.boards[index] + 0.5 * self.current_epoch, self.moves[index]


class PositionData(pl.LightningDataModule):
    """The project's datamodule: data sets made in setup, and an on_train_epoch_start that hands
    trainer.current_epoch to the training set. LightningDataModule has no such hook: Lightning never calls it."""

    def __init__(self, records: int = 128, batch_size: int = 16):
        super().__init__()
        self.records = records
        self.batch_size = batch_size
        self.train_ds = None
        self.val_ds = None

    def setup(self, stage=None):
        self.train_ds = PositionSet(18, self.records)
        self.val_ds = PositionSet(19, self.records // 4)

    def train_dataloader(self):
        return DataLoader(self.train_ds, batch_size=self.batch_size, shuffle=False)

    def val_dataloader(self):
        return DataLoader(self.val_ds, batch_size=self.batch_size, shuffle=False)

    def on_train_epoch_start(self):
        ep = self.trainer.current_epoch
        self.train_ds.current_epoch = ep


class MovePolicy(pl.LightningModule):
    """A small policy network over board features: cross-entropy on the played move, train_loss on step and epoch
    with prog_bar, val_acc on epoch; Adam with a StepLR."""

    def __init__(self, hidden: int = 32, lr: float = 3e-3):
        super().__init__()
        self.save_hyperparameters()
        self.net = nn.Sequential(nn.Linear(16, hidden), nn.GELU(), nn.LayerNorm(hidden), nn.Linear(hidden, 4))

    def training_step(self, batch, batch_idx):
        boards, moves = batch
        loss = F.cross_entropy(self.net(boards), moves)
        self.log("train_loss", loss, on_step=True, on_epoch=True, prog_bar=True)
        return loss

    def validation_step(self, batch, batch_idx):
        boards, moves = batch
        self.log("val_acc", (self.net(boards).argmax(1) == moves).float().mean(), on_epoch=True)

    def configure_optimizers(self):
        optimizer = torch.optim.Adam(self.parameters(), lr=self.hparams.lr)
        return [optimizer], [torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.8)]


class TokenErrorRate(torchmetrics.Metric):
    """NeMo's WER metric in miniature: a torchmetrics Metric subclass with summed error and length states,
    updated with greedy CTC decodings."""

    full_state_update = True

    def __init__(self, blank: int, dist_sync_on_step: bool = False):
        super().__init__(dist_sync_on_step=dist_sync_on_step)
        self.blank = blank
        self.add_state("scores", default=torch.tensor(0.0), dist_reduce_fx="sum", persistent=False)
        self.add_state("words", default=torch.tensor(0.0), dist_reduce_fx="sum", persistent=False)

    def update(self, log_probs, lengths, targets, target_lengths):
        best = log_probs.argmax(-1)
        for row, length, target, target_length in zip(best, lengths, targets, target_lengths):
            tokens = torch.unique_consecutive(row[: int(length)])
            tokens = tokens[tokens != self.blank]
            reference = target[: int(target_length)]
            common = min(len(tokens), len(reference))
            errors = (tokens[:common] != reference[:common]).sum() + abs(len(tokens) - len(reference))
            self.scores += errors.float()
            self.words += float(len(reference))

    def compute(self):
        return self.scores / self.words


class CTCWithWER(EncDecCTCModel):
    """EncDecCTCModel with NeMo's WER: a torchmetrics Metric subclass of the module's own, updated in
    validation_step and logged as the Metric object on epoch (its compute() at the epoch's end)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.wer = TokenErrorRate(blank=self.hparams.vocabulary)

    def validation_step(self, batch, batch_idx):
        signal, signal_len, transcript, transcript_len = batch
        log_probs, encoded_len = self.forward(input_signal=signal, input_signal_length=signal_len)
        loss_value = self.loss(log_probs.transpose(0, 1), transcript, encoded_len, transcript_len)
        self.wer.update(log_probs, encoded_len, transcript, transcript_len)
        self.log("val_loss", loss_value)
        self.log("val_wer", self.wer, on_step=False, on_epoch=True)

    def on_validation_epoch_end(self):
        pass


CSV = {"class_path": "CSVLogger", "init_args": {"save_dir": "."}}

CASES = [
    corpus_case(
        "dom_glue_transformer_warmup",
        "domains",
        "GlueTransformer",
        data="TokenData",
        pattern="dict batches from a padding collate_fn, forward(**batch), outputs reduced in on_validation_epoch_end,"
        " AdamW with no-decay groups, linear warm-up LambdaLR per step over estimated_stepping_batches",
        studied="Lightning-AI/tutorials: lightning_examples/text-transformers/text-transformers.py",
        max_epochs=2,
        logger=CSV,
        val_check_interval=0.5,
    ),
    corpus_case(
        "dom_bolts_simclr_warmup_groups",
        "domains",
        "SimCLR",
        data="TwoViewData",
        pattern="two views augmented by the global RNG in __getitem__, BatchNorm, decay/no-decay groups by name,"
        " warm-up cosine LambdaLR per step, on_step-only and sync_dist logs, LearningRateMonitor",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/self_supervised/simclr/simclr_module.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=1,
        callbacks=[{"class_path": "LearningRateMonitor", "init_args": {"logging_interval": "step"}}],
    ),
    corpus_case(
        "dom_bolts_dqn_experience_source",
        "domains",
        "DQN",
        pattern="train_dataloader in the module over an IterableDataset whose generator plays the env with the"
        " online net, epsilon from global_step, target-net sync, log_dict of floats, a dict returned",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/rl/dqn_model.py",
        max_epochs=3,
        logger=CSV,
        log_every_n_steps=1,
    ),
    corpus_case(
        "dom_tabular_dict_batch_monitor",
        "domains",
        "CategoryEmbeddingModel",
        data="TabularData",
        pattern="dict rows collated by default_collate, embeddings and BatchNorm, per-tag loss logs, torchmetrics"
        " functional, {optimizer, lr_scheduler: bare StepLR, monitor}, EarlyStopping and ModelCheckpoint",
        studied="manujosephv/pytorch_tabular: src/pytorch_tabular/models/base_model.py",
        max_epochs=3,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            {"class_path": "EarlyStopping", "init_args": {"monitor": "valid_loss", "patience": 3, "mode": "min"}},
            {"class_path": "ModelCheckpoint", "init_args": {"monitor": "valid_loss", "save_last": True}},
        ],
    ),
    corpus_case(
        "dom_forecasting_plateau_not_strict",
        "domains",
        "ForecastingModel",
        data="SeriesData",
        pattern="(x dict, (y, None)) batches from a collate_fn, GRU, logs with on_step=self.training and"
        " batch_size, a dict returned, ReduceLROnPlateau dict with strict False, clipping, limit_train_batches",
        studied="jdb78/pytorch-forecasting: pytorch_forecasting/models/base_model.py",
        max_epochs=3,
        logger=CSV,
        gradient_clip_val=0.1,
        limit_train_batches=6,
        log_every_n_steps=2,
    ),
    corpus_case(
        "dom_bolts_semsegment_iou",
        "domains",
        "SemSegment",
        data="SegmentationData",
        pattern="uint8 masks cast in the step, a UNet with BatchNorm, cross-entropy with ignore_index, a"
        " torchmetrics JaccardIndex attribute logged as a Metric, CosineAnnealingLR, gradient accumulation",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/vision/segmentation.py",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=2,
    ),
    corpus_case(
        "dom_flash_freeze_unfreeze",
        "domains",
        "ImageClassifier",
        data="SmallImages",
        pattern="a BaseFinetuning subclass unfreezing the backbone at epoch 1, torchmetrics in a ModuleDict logged"
        " with log_dict of a plain dict (Metrics and a tensor), optimizer over requires_grad parameters",
        studied="Lightning-Universe/lightning-flash: src/flash/core/finetuning.py",
        max_epochs=3,
        logger=CSV,
        callbacks=[
            {"class_path": "tests.corpus.domains.FreezeUnfreeze", "init_args": {"unfreeze_epoch": 1, "train_bn": True}}
        ],
    ),
    corpus_case(
        "dom_nemo_ctc_accumulate",
        "domains",
        "EncDecCTCModel",
        data="SpeechData",
        pattern="a 4-tuple padded speech batch, CTC loss, log_dict with a float lr and a global_step tensor,"
        " validation outputs reduced with sync_dist, NeMo's scheduler dict per step, gradient accumulation",
        studied="NVIDIA/NeMo: nemo/collections/asr/models/ctc_models.py",
        max_epochs=2,
        logger=CSV,
        accumulate_grad_batches=2,
        log_every_n_steps=1,
    ),
    corpus_case(
        "dom_kornia_after_batch_transfer",
        "domains",
        "AugmentedClassifier",
        data="SmallImages",
        pattern="on_before_batch_transfer preprocessing, on_after_batch_transfer augmenting (global RNG) only while"
        " trainer.training, CosineAnnealingLR over trainer.max_epochs, bf16-mixed",
        studied="Lightning-AI/tutorials: lightning_examples/augmentation_kornia/augmentation.py",
        max_epochs=2,
        logger=CSV,
        precision="bf16-mixed",
    ),
    corpus_case(
        "dom_bolts_ppo_repeated_optimizer_step",
        "domains",
        "PPO",
        pattern="trajectories generated into an IterableDataset, advantages normalised in the step, epoch-only"
        " prog_bar logs of floats, an optimizer_step override calling super().optimizer_step several times",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/rl/ppo_model.py",
        max_epochs=3,
        logger=CSV,
    ),
    corpus_case(
        "dom_bolts_faster_rcnn_tuple_batches",
        "domains",
        "FasterRCNN",
        data="DetectionData",
        pattern="(images, targets) tuples from tuple(zip(*batch)) with dict targets, a loss dict summed and logged"
        " with log_dict, val IoU with no batch_size, SGD with momentum and weight decay",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/detection/faster_rcnn/faster_rcnn_module.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "dom_bolts_sac_manual_three_optimizers",
        "domains",
        "SAC",
        data="TransitionData",
        pattern="manual optimization over three optimizers, manual_backward, Polyak target updates at even"
        " global_step, a scheduler stepped by hand at trainer.is_last_batch, log_dict, global-RNG policy noise",
        studied="Lightning-Universe/lightning-bolts: src/pl_bolts/models/rl/sac_model.py",
        max_epochs=3,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "dom_vampnet_grad_norm_scheduler_step",
        "domains",
        "MaskedTokenModel",
        data="CodesData",
        pattern="dict batches, mask ratios from the module's SobolEngine, grad_norm logged in on_before_optimizer_step,"
        " an lr_scheduler_step override, a step-interval LambdaLR, log_dict of a returned dict with sync_dist",
        studied="hugofloresgarcia/vampnet: scripts/exp/train.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=2,
        gradient_clip_val=1.0,
    ),
    corpus_case(
        "dom_nemo_hifigan_manual_gan",
        "domains",
        "HifiGan",
        data="MelAudioData",
        pattern="manual optimization of a GAN (discriminator then generator), two schedulers from lr_schedulers()"
        " stepped at trainer.is_last_batch, log_dict with an lr float, logger=False prog_bar log, global_step logged",
        studied="NVIDIA/NeMo: nemo/collections/tts/models/hifigan.py",
        max_epochs=3,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "dom_datamodule_epoch_hook_not_called",
        "domains",
        "MovePolicy",
        data="PositionData",
        pattern="a LightningDataModule defining on_train_epoch_start (not a datamodule hook: Lightning never calls"
        " it) that reads trainer.current_epoch into its data set; setup(stage=None); unshuffled loaders",
        studied="TheOlgen/Chess-CheckersTransformer: ChessModel/ChessDataModule.py",
        max_epochs=3,
        logger=CSV,
    ),
    corpus_case(
        "dom_nemo_ctc_max_steps_partial_window",
        "domains",
        "EncDecCTCModel",
        data="SpeechData",
        data_init={"batch_size": 10},
        pattern="NeMo's step-bounded training: max_steps with max_epochs -1, accumulation windows of 3 over 8"
        " batches (the epoch's last window short), a per-step scheduler, val_check_interval as a batch count",
        studied="NVIDIA/NeMo: nemo/collections/asr/models/ctc_models.py",
        max_epochs=-1,
        max_steps=7,
        accumulate_grad_batches=3,
        val_check_interval=4,
        logger=CSV,
        log_every_n_steps=1,
    ),
    corpus_case(
        "dom_nemo_wer_metric_subclass",
        "domains",
        "CTCWithWER",
        data="SpeechData",
        pattern="a torchmetrics.Metric subclass of the module's own (summed states, a Python loop in update) updated"
        " in validation_step and logged as the Metric object on epoch",
        studied="NVIDIA/NeMo: nemo/collections/asr/metrics/wer.py",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "dom_hf_legacy_setup_loaders",
        "domains",
        "BaseTransformer",
        pattern="setup() building the train loader, total_steps from hparams, a {loss, log} dict returned, the lr"
        " read from trainer.lr_scheduler_configs, a callback calling logger.log_metrics without a step",
        studied="huggingface/transformers: examples/legacy/pytorch-lightning/lightning_base.py",
        max_epochs=2,
        accumulate_grad_batches=2,
        gradient_clip_val=1.0,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            {"class_path": "tests.corpus.domains.LoggingCallback"},
            {"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "mode": "min", "save_top_k": 1}},
        ],
    ),
    corpus_case(
        "dom_asteroid_plateau_system",
        "domains",
        "SeparationSystem",
        data="MixtureData",
        pattern="common_step, ReduceLROnPlateau dict in a list, callback_metrics read and logger.log_metrics in"
        " on_validation_epoch_end, gradient clipping, EarlyStopping and ModelCheckpoint on val_loss",
        studied="asteroid-team/asteroid: asteroid/engine/system.py",
        max_epochs=3,
        logger=CSV,
        gradient_clip_val=5.0,
        enable_checkpointing=True,
        callbacks=[
            {"class_path": "ModelCheckpoint", "init_args": {"monitor": "val_loss", "mode": "min", "save_top_k": 2}},
            {"class_path": "EarlyStopping", "init_args": {"monitor": "val_loss", "patience": 2}},
        ],
    ),
    corpus_case(
        "dom_pyg_graph_level_dataclass_batch",
        "domains",
        "GraphLevelGNN",
        data="GraphData",
        pattern="a dataclass batch from a graph collate_fn, self.log without batch_size (inferred from the"
        " dataclass's first tensor), index_add_ message passing and pooling, AdamW",
        studied="Lightning-AI/tutorials: course_UvA-DL/06-graph-neural-networks/GNN_overview.py",
        max_epochs=2,
        logger=CSV,
        log_every_n_steps=2,
    ),
    corpus_case(
        "dom_lightning_transformers_mapping_batch",
        "domains",
        "TextClassificationTransformer",
        data="EncodedTextData",
        data_init={"samples": 200},
        pattern="a UserDict (BatchEncoding-like) batch, val_loss logged with sync_dist and no batch_size, log_dict"
        " with prog_bar, compute_warmup over estimated_stepping_batches, a step-interval LambdaLR dict",
        studied="Lightning-Universe/lightning-transformers: lightning_transformers/core/model.py",
        max_epochs=2,
        logger=CSV,
    ),
    corpus_case(
        "dom_nemo_multi_validation",
        "domains",
        "MultiValCTCModel",
        data="TwoSetSpeechData",
        pattern="two validation loaders, validation_step with dataloader_idx, trainer.val_dataloaders read, step logs"
        " suffixed by the loader index, per-loader epoch means, ModelCheckpoint with a metric filename and save_last",
        studied="NVIDIA/NeMo: nemo/core/classes/modelPT.py",
        max_epochs=2,
        logger=CSV,
        enable_checkpointing=True,
        callbacks=[
            {
                "class_path": "ModelCheckpoint",
                "init_args": {
                    "monitor": "val_loss",
                    "save_top_k": 2,
                    "save_last": True,
                    "filename": "{val_loss:.2f}-{epoch}",
                },
            }
        ],
    ),
]

# Cases that render and then train or log differently from Lightning (loopgen bugs): kept out of CASES.
FINDINGS = []
