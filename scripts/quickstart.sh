#!/usr/bin/env bash
# Sets up and builds tilejit, then runs the demo: the example GEMM traced, compiled to PTX
# for sm_90a, and assembled by the CUDA toolkit's ptxas (when installed) with its report.
set -euo pipefail
cd "$(dirname "$0")/.."
./scripts/setup.sh
./build/examples/demo
