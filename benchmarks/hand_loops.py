"""The hand-written loops: what a competent engineer writes for each configuration, nothing more.

One function per configuration, each specialised as the generated script is (no branch for a feature the
configuration lacks). They train to the same weights as the Trainer on the same model and seed: Lightning's
accumulation divides each loss by the window and steps at the window's end or the epoch's last batch, clips the
window's gradients by norm before the step, steps an epoch scheduler after the epoch's validation, and runs
`bf16-mixed` steps under CPU autocast (the backward outside it).
"""

import torch


def train_plain(model, max_epochs):
    optimizer = model.configure_optimizers()
    loader = model.train_dataloader()
    model.train()
    for _ in range(max_epochs):
        for batch in loader:
            loss = model.compute_loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return model


def train_val_accumulate_clip(model, max_epochs, accumulate, clip_norm):
    config = model.configure_optimizers()
    optimizer, scheduler = config["optimizer"], config["lr_scheduler"]
    loader, val_loader = model.train_dataloader(), model.val_dataloader()
    last = len(loader) - 1
    model.train()
    for _ in range(max_epochs):
        for i, batch in enumerate(loader):
            loss = model.compute_loss(batch) / accumulate
            loss.backward()
            if (i + 1) % accumulate == 0 or i == last:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_norm)
                optimizer.step()
                optimizer.zero_grad(set_to_none=True)
        model.eval()
        with torch.no_grad():
            for batch in val_loader:
                model.validation_loss(batch)
        model.train()
        scheduler.step()
    return model


def train_bf16(model, max_epochs):
    optimizer = model.configure_optimizers()
    loader = model.train_dataloader()
    model.train()
    for _ in range(max_epochs):
        for batch in loader:
            with torch.autocast("cpu", dtype=torch.bfloat16):
                loss = model.compute_loss(batch)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return model


def train_compiled(model, max_epochs):
    """train_plain with the step compiled as Lightning compiles a module it is given compiled (its
    from_compiled): the forward and training_step each run under torch.compile's context, so that every side
    compiles the same code (compiling the forward alone gives other kernels for the loss on the CNN)."""
    compiled = torch.compile(model)
    model.forward = compiled.dynamo_ctx(model.forward)
    training_step = compiled.dynamo_ctx(model.training_step)
    optimizer = model.configure_optimizers()
    loader = model.train_dataloader()
    model.train()
    for _ in range(max_epochs):
        for batch_idx, batch in enumerate(loader):
            loss = training_step(batch, batch_idx)
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
    return model
