"""What a rendered script's guards say of each of several copies of a project (tests/test_guards.py), in one
interpreter: for each copy, the project's modules are imported afresh and the script's check_user_code runs as
`python train.py` would run it first.

    python -m tests.guards_driver '{"case": "/path/to/copy", ...}'   # prints {"case": {"status", "message"}}
"""

from __future__ import annotations

import contextlib
import io
import json
import runpy
import sys


def verdict(directory: str) -> dict[str, object]:
    for name in [name for name in sys.modules if name == "guarded" or name.startswith("guarded.")]:
        del sys.modules[name]
    sys.path.insert(0, directory)
    try:
        script = runpy.run_path(f"{directory}/train.py", run_name="train")
        stderr = io.StringIO()
        status = 0
        with contextlib.redirect_stderr(stderr):
            try:
                script["check_user_code"](False)
            except SystemExit as stop:
                status = stop.code
        return {"status": status, "message": stderr.getvalue()}
    finally:
        sys.path.remove(directory)


def main() -> None:
    cases = json.loads(sys.argv[1])
    print(json.dumps({name: verdict(directory) for name, directory in cases.items()}))


if __name__ == "__main__":
    main()
