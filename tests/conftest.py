"""Every test session renders into its own cache directory (see loopgen/cache.py), removed when it ends."""

import os
import shutil
import tempfile

_CACHE = None
if "LOOPGEN_CACHE_DIR" not in os.environ:
    _CACHE = os.environ["LOOPGEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="loopgen-test-cache-")


def pytest_sessionfinish(session, exitstatus):
    """The session's cache goes with it (each xdist worker made its own)."""
    if _CACHE is not None:
        shutil.rmtree(_CACHE, ignore_errors=True)
