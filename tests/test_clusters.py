"""Cluster environments under DDP (Trainer(plugins=[SLURMEnvironment()]) and LSF's, Kubeflow's): the processes
are started by the cluster's launcher, each reading its place from that launcher's variables.

Each environment's job runs twice on 2 CPU processes with gloo, started as srun, jsrun or a PyTorchJob would
start them (the same variables, set by the test, and no torchrun): Lightning 2.6.6's DDPStrategy with the plugin
(tests/ddp_runner.py), and the rendered script as a user runs it (`python train.py`). The weights are equal
(`torch.equal`) and so is what each process's trainer says of its ranks. The address and port come from the
variables as Lightning derives them: SLURM's from SLURM_NODELIST and the job id, LSF's from the rank file and
LSB_JOBID, Kubeflow's from MASTER_ADDR and MASTER_PORT.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from loopgen.cli import _launcher
from loopgen.errors import LoopgenError
from tests import test_ddp as ddp
from tests.harness import ROOT, env_with_root

ENVIRONMENTS = ("SLURMEnvironment", "LSFEnvironment", "KubeflowEnvironment")


def port_from(low: int, high: int) -> int:
    """A free port in [low, high): the ports Lightning derives from a job id lie there."""
    for port in range(low + (time.time_ns() // 1000) % (high - low), high):
        with socket.socket() as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in [{low}, {high})")


def variables(environment: str, rank: int, directory: Path, port: int) -> dict[str, str]:
    """What the cluster's launcher gives process `rank` of 2 on one node."""
    if environment == "SLURMEnvironment":  # port: 15000 + the job id's last four digits
        return {"SLURM_NTASKS": "2", "SLURM_NTASKS_PER_NODE": "2", "SLURM_NNODES": "1", "SLURM_PROCID": str(rank),
                "SLURM_LOCALID": str(rank), "SLURM_NODEID": "0", "SLURM_NODELIST": "127.0.0.1",
                "SLURM_JOB_ID": f"31{port - 15000:04d}", "SLURM_JOB_NAME": "train"}  # fmt: skip
    if environment == "LSFEnvironment":  # port: 10000 + LSB_JOBID mod 1000; the hosts past the launch node
        rankfile = directory / "rankfile"
        rankfile.write_text(f"launch-node\n{socket.gethostname()}\n{socket.gethostname()}\n", encoding="utf-8")
        return {"LSB_JOBID": str(7000 + port - 10000), "LSB_DJOB_RANKFILE": str(rankfile),
                "JSM_NAMESPACE_RANK": str(rank), "JSM_NAMESPACE_SIZE": "2", "JSM_NAMESPACE_LOCAL_RANK": str(rank)}  # fmt: skip
    return {"RANK": str(rank), "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port)}


def port_for(environment: str) -> int:
    if environment == "SLURMEnvironment":
        return port_from(15000, 25000)
    if environment == "LSFEnvironment":
        return port_from(10000, 11000)
    return ddp.free_port()


def job_spec(environment: str) -> dict:
    flags = {"max_epochs": 2, "plugins": [environment]}
    if environment == "SLURMEnvironment":
        flags["plugins"] = [{"class_path": "SLURMEnvironment", "init_args": {"auto_requeue": False}}]
    return ddp.spec({"dropout": 0.2, "plateau": True, "log_train": True}, flags, "ClusterNet")


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict:
    directory = tmp_path_factory.mktemp("clusters")
    env = {**env_with_root(), "OMP_NUM_THREADS": "1"}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(name, None)
    runner = str(ROOT / "tests" / "ddp_runner.py")
    launches, ports = {}, {}
    for environment in ENVIRONMENTS:
        spec_path = ddp.write_spec(directory, environment, job_spec(environment))
        script = ddp.render(spec_path)
        for side in ("lightning", "loopgen"):
            out = directory / side / environment
            out.mkdir(parents=True)
            port = ports[side, environment] = port_for(environment)
            for rank in (0, 1):
                command = ([sys.executable, runner, "lightning", str(directory / side), str(spec_path)]
                           if side == "lightning" else [sys.executable, str(script)])  # fmt: skip
                given = {**env, **variables(environment, rank, directory, port), "DDP_SAVE": str(out)}
                launches[f"{side}_{environment}_{rank}"] = ddp.Launch(f"{side}_{environment}_{rank}", command,
                                                                       directory, given)  # fmt: skip
            ddp.wait_for(launches, time.monotonic() + 300, f"the {environment} launches")
    return {"directory": directory, "launches": launches, "ports": ports}


@pytest.mark.parametrize("environment", ENVIRONMENTS)
def test_the_script_trains_as_lightning_under_the_cluster_environment(runs: dict, environment: str) -> None:
    for name, launch in runs["launches"].items():
        if environment in name:
            assert launch.returncode == 0, launch.output
    lightning = ddp.weights(runs["directory"] / "lightning" / environment)
    script = ddp.weights(runs["directory"] / "loopgen" / environment)
    ddp.assert_equal(script[0], script[1])
    ddp.assert_equal(script[0], lightning[0])
    for rank in (0, 1):
        seen = [json.loads((runs["directory"] / side / environment / f"rank{rank}.json").read_text())
                for side in ("lightning", "loopgen")]  # fmt: skip
        assert seen[1]["ranks"] == seen[0]["ranks"]
        local_rank = 0 if environment == "KubeflowEnvironment" else rank
        node_rank = rank if environment == "KubeflowEnvironment" else 0
        assert seen[1]["ranks"] == [2, rank, local_rank, node_rank]
        host = socket.gethostname() if environment == "LSFEnvironment" else "127.0.0.1"
        for side in ("lightning", "loopgen"):  # as each derived them from the variables
            met = json.loads((runs["directory"] / side / environment / f"address{rank}.json").read_text())
            assert met == [host, str(runs["ports"][side, environment])], side


def render_one(tmp_path: Path, environment: str, **trainer) -> Path:
    spec = job_spec(environment)
    spec["trainer"].update(trainer)
    return ddp.render(ddp.write_spec(tmp_path, "job", spec))


def run_alone(script: Path, given: dict[str, str]) -> subprocess.CompletedProcess:
    env = {**env_with_root(), **given}
    for name in ("RANK", "WORLD_SIZE", "LOCAL_RANK"):
        if name not in given:
            env.pop(name, None)
    return subprocess.run([sys.executable, str(script)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)  # fmt: skip


def test_outside_srun_the_script_says_how_to_launch_it(tmp_path: Path) -> None:
    done = run_alone(render_one(tmp_path, "SLURMEnvironment"), {})
    assert done.returncode == 2, done.stderr
    assert "launch it with\n`srun --nodes=1 --ntasks-per-node=2 python job.py`" in done.stderr.replace(" `", "\n`")


def test_slurm_tasks_that_do_not_match_the_devices_stop_it_with_lightnings_error(tmp_path: Path) -> None:
    given = variables("SLURMEnvironment", 0, tmp_path, 15001)
    done = run_alone(render_one(tmp_path, "SLURMEnvironment"), {**given, "SLURM_NTASKS_PER_NODE": "4"})
    assert done.returncode == 1
    assert (
        "You set `devices=2` in Lightning, but the number of tasks per node configured in SLURM"
        " `--ntasks-per-node=4` does not match. HINT: Set `devices=4`." in done.stderr
    )


def test_lightnings_own_launcher_and_other_engines_are_refused(tmp_path: Path) -> None:
    with pytest.raises(LoopgenError, match="LightningEnvironment with ddp"):
        render_one(tmp_path, "LightningEnvironment")
    with pytest.raises(LoopgenError, match="SLURMEnvironment with horovod"):
        render_one(tmp_path, "SLURMEnvironment", strategy="horovod")


def test_loopgen_run_leaves_the_launch_to_the_cluster(tmp_path: Path) -> None:
    path = ddp.write_spec(tmp_path, "job", job_spec("SLURMEnvironment"))
    with pytest.raises(LoopgenError, match="SLURMEnvironment: the cluster's launcher starts the processes"):
        _launcher(path)
