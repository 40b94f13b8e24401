#!/usr/bin/env bash
# Sets up and builds tilejit, then runs the demo: example GEMM, softmax and layernorm kernels on
# the GPU if there is one, else in the emulator, each checked against a C++ reference.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./build/examples/demo
