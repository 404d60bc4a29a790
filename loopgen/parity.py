"""The versions loopgen's parity tests train against: what "bit-exact with Lightning" means for this version of
loopgen. The generated script's header names them; tests/test_parity_versions.py fails when the test set-up
installs others, so that the header cannot claim a check that did not run."""

TORCH = "2.13.0"
LIGHTNING = "2.6.6"  # pytorch_lightning 2.x: the reference for every flag it has
LIGHTNING_SEED_FLAGS = "1.9.5"  # the reference for the seed's flags 2.x removed (TBPTT, optimizer frequencies, ...)
