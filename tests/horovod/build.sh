#!/usr/bin/env bash
# Build horovod 0.28.1 (PyTorch + Gloo, CPU, no MPI) against the venvs' torch and install it into them.
#
#   bash tests/horovod/build.sh VENV_DIR [VENV_DIR ...]      (e.g. .venv .venv195)
#
# horovod 0.28.1 (the last release) asks CMake for C++14 and current torch needs C++17: the sdist is patched
# as upstream PR #3998 (merged, unreleased) does, `CMAKE_CXX_STANDARD 17` in CMakeLists.txt and
# horovod/torch/CMakeLists.txt. The wheel is built once (about 2-4 minutes) with the first venv's python and
# kept in $LOOPGEN_WHEEL_CACHE (default ~/.cache/loopgen/wheels); later runs install that wheel. The venvs
# must share the torch release the wheel was built against (torch 2.13.0 in .venv and .venv195).
# Idempotent: a venv that already imports horovod.torch is left as it is.
set -euo pipefail

[ $# -ge 1 ] || { echo "usage: build.sh VENV_DIR [VENV_DIR ...]" >&2; exit 2; }
VERSION=0.28.1
CACHE=${LOOPGEN_WHEEL_CACHE:-$HOME/.cache/loopgen/wheels}
mkdir -p "$CACHE"

imports() {
    "$1/bin/python" -c 'import horovod.torch' 2>/dev/null
}

wheel() {
    ls "$CACHE"/horovod-$VERSION-*.whl 2>/dev/null | head -1
}

build() {
    local python=$1 work
    work=$(mktemp -d)
    trap 'rm -rf "$work"' RETURN
    "$python" -m pip download -q --disable-pip-version-check --no-deps --no-binary :all: \
        "horovod==$VERSION" -d "$work"
    tar xzf "$work/horovod-$VERSION.tar.gz" -C "$work"
    local src="$work/horovod-$VERSION"
    sed -i 's/^set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD 17)/' "$src/CMakeLists.txt"
    sed -i 's/set(CMAKE_CXX_STANDARD 14)/set(CMAKE_CXX_STANDARD 17)/' "$src/horovod/torch/CMakeLists.txt"
    grep -q 'CMAKE_CXX_STANDARD 17' "$src/horovod/torch/CMakeLists.txt"
    HOROVOD_WITH_PYTORCH=1 HOROVOD_WITH_GLOO=1 HOROVOD_WITHOUT_MPI=1 HOROVOD_WITHOUT_TENSORFLOW=1 \
        HOROVOD_WITHOUT_MXNET=1 HOROVOD_CPU_OPERATIONS=gloo MAKEFLAGS="-j${HOROVOD_BUILD_JOBS:-2}" \
        "$python" -m pip wheel -q --disable-pip-version-check --no-deps --no-build-isolation \
        -w "$work/out" "$src"
    mv "$work"/out/horovod-$VERSION-*.whl "$CACHE"/
}

for venv in "$@"; do
    if imports "$venv"; then
        echo "horovod: $venv already imports horovod.torch"
        continue
    fi
    if [ -z "$(wheel)" ]; then
        echo "horovod: building $VERSION (PyTorch, Gloo, CPU) with $venv/bin/python, wheel into $CACHE"
        build "$venv/bin/python"
    fi
    "$venv/bin/python" -m pip install -q --disable-pip-version-check "$(wheel)"
    "$venv/bin/python" -c 'import horovod, horovod.torch; print("horovod", horovod.__version__, "in", __import__("sys").prefix)'
done
