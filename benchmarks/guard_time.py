"""What a script's guards cost when it starts: `check_user_code` (templates/guards.j2), which reads, parses and
fingerprints the user's modules the render read and checks the Lightning bases of the classes the script calls.

    python benchmarks/guard_time.py [--repeats N] [--lines N ...]

For every example's script (generated_examples/), in a fresh interpreter that imports the script as a module (so
its user code and torch are loaded, as at start-up), the first call and the median of N more (milliseconds); then
the same for a LightningModule grown to N lines of methods, for how the cost grows with the module's size: as
rendered (each file's sha256 matches: nothing is parsed), and after an edit the render did not read (a function
appended to the module: the file is parsed and each class read is fingerprinted again, and the script runs).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

TIMER = """
import json, runpy, sys, time
sys.path.insert(0, sys.argv[2])
script = runpy.run_path(sys.argv[1], run_name="guarded")
check = script["check_user_code"]
start = time.perf_counter(); check(False); first = time.perf_counter() - start
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter(); check(False); times.append(time.perf_counter() - start)
lines = sum(len(open(sys.modules[m].__file__).read().splitlines()) for m in script["USER_CODE"])
print(json.dumps({"first": first, "times": times, "lines": lines}))
"""

BIG_METHOD = """
    def method_{i}(self, x):
        y = x * {i}
        for _ in range(3):
            y = y + self.layer(x).sum()
        return y
"""


def timed(script: Path, root: Path, repeats: int) -> dict:
    result = subprocess.run(
        [sys.executable, "-c", TIMER, str(script), str(root), str(repeats)],
        cwd=root, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return json.loads(result.stdout.splitlines()[-1])


def big_project(directory: Path, lines: int) -> Path:
    """A project whose LightningModule has about `lines` lines, its script rendered."""
    package = directory / "big"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    methods = "".join(BIG_METHOD.format(i=i) for i in range(max(1, lines // 6)))
    (package / "models.py").write_text(textwrap.dedent("""
        import pytorch_lightning as pl
        import torch
        from torch.utils.data import DataLoader, TensorDataset


        class Big(pl.LightningModule):
            def __init__(self):
                super().__init__()
                self.layer = torch.nn.Linear(2, 1)

            def training_step(self, batch, batch_idx):
                return self.layer(batch[0]).sum()

            def configure_optimizers(self):
                return torch.optim.SGD(self.parameters(), lr=0.1)

            def train_dataloader(self):
                return DataLoader(TensorDataset(torch.randn(4, 2)), batch_size=2)
        """) + methods)
    (directory / "spec.yaml").write_text("model: big.models.Big\ntrainer: {accelerator: cpu, logger: false}\n")
    script = directory / "train.py"
    subprocess.run([sys.executable, "-m", "loopgen", "render", "spec.yaml", "-o", str(script)], cwd=directory,
                   check=True, capture_output=True)  # fmt: skip
    return script


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--lines", type=int, nargs="*", default=[1000, 5000])
    args = parser.parse_args()
    print("| script | user code read (lines) | first call ms | median ms |\n|---|---|---|---|")
    medians = []
    for script in sorted((ROOT / "generated_examples").glob("*.py")):
        found = timed(script, ROOT, args.repeats)
        medians.append(statistics.median(found["times"]))
        print(f"| {script.name} | {found['lines']} | {found['first'] * 1e3:.2f} | {medians[-1] * 1e3:.2f} |")
    print(f"| median of the examples | | | {statistics.median(medians) * 1e3:.2f} |")
    with tempfile.TemporaryDirectory() as tmp:
        for lines in args.lines:
            script = big_project(Path(tmp) / str(lines), lines)
            for state in ("as rendered", "after an edit elsewhere in it"):
                found = timed(script, script.parent, args.repeats)
                median = statistics.median(found["times"]) * 1e3
                row = f"a module of {found['lines']} lines, {state}"
                print(f"| {row} | {found['lines']} | {found['first'] * 1e3:.2f} | {median:.2f} |")
                with (script.parent / "big" / "models.py").open("a") as module:
                    module.write("\n\ndef appended():\n    return 0\n")


if __name__ == "__main__":
    main()
