"""Every test session renders into its own cache directory (see loopgen/cache.py)."""

import os
import tempfile

os.environ.setdefault("LOOPGEN_CACHE_DIR", tempfile.mkdtemp(prefix="loopgen-test-cache-"))
