"""torch_xla.distributed.parallel_loader.MpDeviceLoader, recording: batches are the loader's (the device is
the CPU); each iteration is recorded."""

from tests.standins.calls import CALLS


class MpDeviceLoader:
    def __init__(self, loader, device, **kwargs):
        CALLS.append(("MpDeviceLoader", str(device), type(loader.sampler).__name__))
        self._loader = loader
        self._device = device

    def __iter__(self):
        CALLS.append(("MpDeviceLoader.iter",))
        return iter(self._loader)

    def __len__(self):
        return len(self._loader)
