"""Parity with pytorch_lightning.Trainer: test models, data, callbacks, the runner and the cases."""
