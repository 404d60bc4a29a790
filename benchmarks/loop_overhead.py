"""Training-loop overhead: the rendered script against pytorch_lightning.Trainer on the same module and flags.

    python benchmarks/loop_overhead.py [--epochs N] [--repeats R]

Trains examples/lit_classifier.yaml's LitClassifier (small MLP, 512 samples, batch 32: the loop's own cost
dominates) in a fresh interpreter per run, with one intra-op thread (OMP_NUM_THREADS=1: on a small
shared machine, torch's thread pool otherwise adds noise larger than the loop's own cost), and prints the median training time of each, the time to import
what each needs, and the peak resident memory. Both runs end with bit-identical weights (the parity tests check
that; this script only measures).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

COMMON = """
import json, resource, sys, time, warnings
warnings.filterwarnings("ignore")
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
{train}
t2 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({{"import_s": t1 - t0, "train_s": t2 - t1, "peak_mib": peak}}))
"""

LIGHTNING = COMMON.format(
    imports="import pytorch_lightning as pl\nfrom examples.lightning_models import LitClassifier",
    train=(
        "pl.seed_everything(42, verbose=False)\n"
        "model = LitClassifier(hidden=64, lr=0.05)\n"
        "trainer = pl.Trainer(accelerator='cpu', max_epochs={epochs}, logger=False, enable_checkpointing=False,"
        " enable_progress_bar=False, enable_model_summary=False)\n"
        "trainer.fit(model)"
    ),
)

LOOPGEN = COMMON.format(
    imports="import runpy\nnamespace = runpy.run_path({script!r})",
    train="namespace['main']()",
)


def run(code: str) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "OMP_NUM_THREADS": "1"},
    )
    if result.returncode:
        raise SystemExit(result.stderr)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    import yaml

    from loopgen.pipeline import render_spec

    spec = yaml.safe_load((ROOT / "examples" / "lit_classifier.yaml").read_text())
    spec["trainer"]["max_epochs"] = args.epochs
    with tempfile.TemporaryDirectory() as tmp:
        spec_path = Path(tmp) / "bench.yaml"
        spec_path.write_text(yaml.safe_dump(spec))
        script = Path(tmp) / "train.py"
        script.write_text(render_spec(spec_path)[0])
        results = {"lightning": [], "loopgen": []}
        for _ in range(args.repeats):
            results["lightning"].append(run(LIGHTNING.replace("{epochs}", str(args.epochs))))
            results["loopgen"].append(run(LOOPGEN.replace("{script!r}", repr(str(script)))))
    print(f"{args.epochs} epochs x 16 batches, median of {args.repeats} fresh runs")
    print(f"{'':10} {'import (s)':>11} {'train (s)':>10} {'per batch (ms)':>15} {'peak RSS (MiB)':>15}")
    for name, runs in results.items():
        train = statistics.median(r["train_s"] for r in runs)
        print(
            f"{name:10} {statistics.median(r['import_s'] for r in runs):11.2f} {train:10.2f}"
            f" {1000 * train / (16 * args.epochs):15.2f} {max(r['peak_mib'] for r in runs):15.0f}"
        )


if __name__ == "__main__":
    main()
