"""Lightning under either of its package names, as libraries that support both import it, and the project's data
modules for the classes built on them: the classes of tests/parity/compat_models.py (and tests/ddp_models.py) reach
Lightning's classes only through this module (`compat.pl.LightningModule`, `pl.callbacks.EarlyStopping` after
`from tests.parity.compat import pl`), which loopgen's reader follows as Python does."""

try:
    import pytorch_lightning as pl
    from pytorch_lightning.callbacks import BasePredictionWriter
except ImportError:
    import lightning.pytorch as pl
    from lightning.pytorch.callbacks import BasePredictionWriter

from tests.parity import data

__all__ = ["BasePredictionWriter", "data", "pl"]
