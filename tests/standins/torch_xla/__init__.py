"""A recording stand-in of torch_xla for the tests (torch_xla cannot be installed here): the "XLA device" is the
CPU, xmp.spawn runs the function in this process as ordinal 0, and every call is appended to
tests.standins.calls.CALLS with its arguments. WORLD_SIZE is the number of processes the runtime reports
(set by tests.standins.fake_xla), ORDINAL this process's place among them (0 unless a test plays another);
collectives behave as if every process held this process's values."""

WORLD_SIZE = 1
ORDINAL = 0
