"""Every test session renders into its own cache directory (see loopgen/cache.py), removed when it ends; under
`-n N` the workers get the longest work first (tests/schedule.py). Each session (each worker) has one parity
runner server, which the modules that run a side in a fresh process share (`runner`)."""

import os
import shutil
import tempfile

import pytest

_CACHE = None
if "LOOPGEN_CACHE_DIR" not in os.environ:
    _CACHE = os.environ["LOOPGEN_CACHE_DIR"] = tempfile.mkdtemp(prefix="loopgen-test-cache-")


def pytest_sessionfinish(session, exitstatus):
    """The session's cache goes with it (each xdist worker made its own)."""
    if _CACHE is not None:
        shutil.rmtree(_CACHE, ignore_errors=True)


def pytest_configure(config):
    """Under `-n N`, the controller records each test's seconds for the next run's order (tests/schedule.py)."""
    if getattr(config.option, "dist", "no") != "no" and not hasattr(config, "workerinput"):
        from tests.schedule import Recorder

        config.pluginmanager.register(Recorder(config), "loopgen-durations")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Plain `-n N`: the longest work first, a module's shared expensive fixture on one worker (tests/schedule.py)."""
    from tests.schedule import make_scheduler

    return make_scheduler(config, log)


@pytest.fixture(scope="session")
def runner():
    """tests/parity/runner.py's server: it imports torch and Lightning once and forks a fresh child per job (a new
    interpreter spends seconds of CPU importing them). Used by the parity cases, the one-process evaluation cases
    and the scripts of the Lightning 1.9.5 cases."""
    from tests.parity.test_parity import Runner

    runner = Runner()
    yield runner
    runner.close()
