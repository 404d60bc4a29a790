"""A recording stand-in for NVIDIA apex (which needs CUDA): calls land in tests.standins.calls.CALLS."""
