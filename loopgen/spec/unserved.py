"""Lightning's callbacks that loopgen does not serve, each refused by name (loopgen/spec/support.py,
`callback_support`) with why the script has no code for it and what to do instead."""

from __future__ import annotations

# Lightning's other callbacks (pytorch_lightning.callbacks.__all__, 2.x's and 1.9.5's): why the script has no
# code for each, and what to do instead. A name here is Lightning's even when written without its module, as LightningCLI takes it.
OTHER_LIGHTNING_CALLBACKS = {
    "LearningRateFinder": (
        (
            "its search trains the module for up to num_training_steps steps before fit, restores the weights, and sets"
            " the learning rate it picked; the script trains once, with the learning rate the spec gives"
        ),
        "find the rate once with Lightning's `Tuner(trainer).lr_find(model)` and write it in model.init_args",
    ),
    "BatchSizeFinder": (
        (
            "its search runs steps at growing batch sizes before fit until memory runs out, then sets the size it"
            " picked; the script trains once, with the batch size the spec gives"
        ),
        "find the size once with Lightning's `Tuner(trainer).scale_batch_size(model)` and write it in the spec",
    ),
    "LambdaCallback": (
        "its hooks are functions, which a YAML spec cannot give",
        "write a callback class of your own with the same hooks",
    ),
    "Callback": ("Lightning's base class does nothing by itself", "leave it out, or name your own subclass of it"),
    "Checkpoint": ("Lightning's base class does nothing by itself", "use ModelCheckpoint"),
    "ProgressBar": ("Lightning's base class draws nothing", "use TQDMProgressBar or RichProgressBar"),
    "BaseFinetuning": ("Lightning's base class freezes nothing by itself", "use BackboneFinetuning or your subclass"),
    "BasePredictionWriter": ("Lightning's base class writes nothing", "name your own subclass of it"),
    # Lightning 1.9.5's only
    "QuantizationAwareTraining": (
        (
            "Lightning 1.9.5's quantization-aware training wraps the module in torch.ao.quantization's observers"
            " and converts it when fit ends, and the script does not carry it"
        ),
        "quantize the trained module with torch.ao.quantization after training",
    ),
    "ProgressBarBase": ("Lightning 1.9.5's base class draws nothing", "use TQDMProgressBar or RichProgressBar"),
}
