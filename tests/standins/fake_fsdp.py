"""tests.standins.fake_cuda plus a recording FullyShardedDataParallel, for the FSDP script, which torch runs on
CUDA only. The test starts one process with torchrun's environment set; the process group is made on gloo
whatever backend the script names (recorded). The stand-in FullyShardedDataParallel records how it is built and
every state-dict call, and runs the module it wraps as it is: with one process each shard is the whole tensor, so
the script trains as the one-device script does, and its checkpoints hold what the real one's hold (names without
the wrappers' prefixes, the optimizer's state by parameter name inside the state-dict contexts).

    python -m tests.standins.fake_fsdp SCRIPT OUT.json [WEIGHTS.pt] [-- SCRIPT ARGUMENTS]
"""

from __future__ import annotations

import contextlib

import torch
import torch.distributed as dist
import torch.distributed.algorithms._checkpoint.checkpoint_wrapper as checkpoint_wrappers
import torch.distributed.checkpoint.filesystem as dcp_filesystem
import torch.distributed.checkpoint.optimizer as dcp_optimizer
from torch.distributed import fsdp
from torch.distributed.checkpoint.state_dict_loader import _load_state_dict_from_keys

from tests.standins import fake_cuda
from tests.standins.calls import CALLS

WRAPPERS = ("_fsdp_wrapped_module.", "_checkpoint_wrapped_module.")
_apply_activation_checkpointing = checkpoint_wrappers.apply_activation_checkpointing

torch.cuda.set_device = lambda device: CALLS.append(("cuda.set_device", str(device)))
_init_process_group = dist.init_process_group


def init_process_group(backend, **kwargs):
    CALLS.append(("init_process_group", backend))
    _init_process_group("gloo", **kwargs)


dist.init_process_group = init_process_group


def _name(name: str) -> str:
    for prefix in WRAPPERS:
        name = name.replace(prefix, "")
    return name


def _described(value):
    """An argument of FullyShardedDataParallel as JSON can hold it."""
    if isinstance(value, fsdp.MixedPrecision):
        return [str(value.param_dtype), str(value.reduce_dtype), str(value.buffer_dtype)]
    if isinstance(value, fsdp.CPUOffload):
        return value.offload_params
    if isinstance(value, fsdp.ShardingStrategy):
        return value.name
    if hasattr(value, "_module_classes"):  # ModuleWrapPolicy
        return sorted(cls.__name__ for cls in value._module_classes)
    return value


def _without_prefix(module, state_dict, prefix, local_metadata):
    wrapped = f"{prefix}_fsdp_wrapped_module."
    for key in [key for key in state_dict if key.startswith(wrapped)]:
        state_dict[prefix + key[len(wrapped) :]] = state_dict.pop(key)
    return state_dict


def _with_prefix(state_dict, prefix, *args):
    for key in [key for key in state_dict if key.startswith(prefix)]:
        state_dict[f"{prefix}_fsdp_wrapped_module.{key[len(prefix) :]}"] = state_dict.pop(key)


class FullyShardedDataParallel(torch.nn.Module):
    def __init__(self, module, **kwargs):
        super().__init__()
        self._fsdp_wrapped_module = module
        arguments = {key: _described(value) for key, value in sorted(kwargs.items())}
        CALLS.append(("FullyShardedDataParallel", type(module).__name__, arguments))
        # the state dicts name the module's tensors without the wrapper's prefix, as FSDP's do
        self._register_state_dict_hook(_without_prefix)
        self._register_load_state_dict_pre_hook(_with_prefix)

    def forward(self, *args, **kwargs):
        CALLS.append(("fsdp.forward",))
        return self._fsdp_wrapped_module(*args, **kwargs)

    @staticmethod
    @contextlib.contextmanager
    def state_dict_type(module, state_dict_type, state_dict_config=None, optim_state_dict_config=None):
        configs = [type(config).__name__ for config in (state_dict_config, optim_state_dict_config)]
        rank0_only = getattr(state_dict_config, "rank0_only", None)
        offload = state_dict_config.offload_to_cpu
        CALLS.append(("state_dict_type", state_dict_type.name, configs, offload, rank0_only))
        yield
        CALLS.append(("state_dict_type.exit",))

    @staticmethod
    def optim_state_dict(model, optim):
        """The optimizer's state keyed by the parameters' names, as FSDP's."""
        CALLS.append(("optim_state_dict",))
        names = {id(parameter): _name(name) for name, parameter in model.named_parameters()}
        parameters = [parameter for group in optim.param_groups for parameter in group["params"]]
        state = optim.state_dict()

        def key(index):
            return names[id(parameters[index])]

        groups = [{**group, "params": [key(index) for index in group["params"]]} for group in state["param_groups"]]
        return {"state": {key(index): value for index, value in state["state"].items()}, "param_groups": groups}

    @staticmethod
    def rekey_optim_state_dict(optim_state_dict, optim_state_key_type, model):
        CALLS.append(("rekey_optim_state_dict", optim_state_key_type.name))
        names = [_name(name) for name, _ in model.named_parameters()]
        if optim_state_key_type == fsdp.OptimStateKeyType.PARAM_ID:
            key = names.index
        else:
            key = names.__getitem__
        state = {key(name): value for name, value in optim_state_dict["state"].items()}
        groups = [{**group, "params": [key(name) for name in group["params"]]} for group in
                  optim_state_dict["param_groups"]]  # fmt: skip
        return {"state": state, "param_groups": groups}

    @staticmethod
    def optim_state_dict_to_load(model, optim, optim_state_dict):
        """The state keyed by name as the optimizer's own (its parameters' positions)."""
        CALLS.append(("optim_state_dict_to_load",))
        names = {id(parameter): _name(name) for name, parameter in model.named_parameters()}
        order = [names[id(parameter)] for group in optim.param_groups for parameter in group["params"]]
        state = {order.index(name): value for name, value in optim_state_dict["state"].items()}
        groups = [{**group, "params": [order.index(name) for name in group["params"]]} for group in
                  optim_state_dict["param_groups"]]  # fmt: skip
        return {"state": state, "param_groups": groups}


def load_sharded_optimizer_state_dict(model_state_dict, optimizer_key, storage_reader):
    """The optimizer's stored state (one process: the shards are whole), as {optimizer_key: state}."""
    CALLS.append(("load_sharded_optimizer_state_dict", optimizer_key, sorted(model_state_dict)))
    return _load_state_dict_from_keys({optimizer_key}, storage_reader=storage_reader)


def apply_activation_checkpointing(model, checkpoint_wrapper_fn, auto_wrap_policy):
    CALLS.append(("apply_activation_checkpointing", type(model).__name__, _described(auto_wrap_policy)))
    _apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=checkpoint_wrapper_fn, auto_wrap_policy=auto_wrap_policy
    )


fsdp.FullyShardedDataParallel = FullyShardedDataParallel
checkpoint_wrappers.apply_activation_checkpointing = apply_activation_checkpointing
dcp_optimizer.load_sharded_optimizer_state_dict = load_sharded_optimizer_state_dict
# torch.distributed.checkpoint's writer stages the tensors through CUDA streams when CUDA is there: the tensors
# are on the CPU, as real FSDP's are once offloaded, so it stages them as it does without CUDA
dcp_filesystem._OverlappingCpuLoader = lambda resolve_fun, **_: dcp_filesystem._SerialCpuLoader(resolve_fun)

if __name__ == "__main__":
    fake_cuda.main()
