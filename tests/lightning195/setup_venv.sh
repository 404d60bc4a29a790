#!/usr/bin/env bash
# Create (or reuse) a virtual environment with pytorch-lightning 1.9.5: the reference for the seed-era features
# that Lightning 2.x removed (multiple optimizers, truncated BPTT, LBFGS closures, apex/native AMP flags, ...).
#
#   bash tests/lightning195/setup_venv.sh VENV_DIR        (e.g. .venv195)
#
# Idempotent: a VENV_DIR that already imports pytorch_lightning 1.9.5 and torch 2.13.0 is left as it is.
# setuptools < 81 keeps `pkg_resources`, which lightning_fabric 1.9.5 imports (the deprecation warning it
# prints on import is expected).
# Then train a spec with it:
#   PYTHONPATH=. VENV_DIR/bin/python tests/lightning195/runner195.py SPEC.yaml OUT.pt
set -euo pipefail

VENV=${1:?usage: setup_venv.sh VENV_DIR}
PYTHON=${PYTHON:-python3}

ready() {
    "$VENV/bin/python" - <<'EOF' 2>/dev/null
import sys
import warnings

warnings.filterwarnings("ignore")
import pytorch_lightning
import torch

ok = pytorch_lightning.__version__ == "1.9.5" and torch.__version__.split("+")[0] == "2.13.0"
sys.exit(0 if ok else 1)
EOF
}

if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
fi

if ! ready; then
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
        torch==2.13.0 'setuptools>=77.0.3,<81' pytorch-lightning==1.9.5
fi

# check that it imports (pkg_resources' deprecation warning is fine)
"$VENV/bin/python" -c 'import pytorch_lightning as pl, torch; print("pytorch_lightning", pl.__version__, "torch", torch.__version__)'
