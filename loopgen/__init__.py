"""loopgen: compile a declarative training spec into one flat, readable PyTorch training script."""

__version__ = "0.1.0"
