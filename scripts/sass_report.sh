#!/usr/bin/env bash
# The tensor-core instructions in the SASS of kernels dumped with TILEJIT_DUMP_DIR=DIR: each
# NAME-DIGEST.ptx is assembled with ptxas for ARCH (default sm_90a) and disassembled with
# nvdisasm, and the counts of HGMMA / QGMMA / IGMMA (wgmma) and HMMA / QMMA / IMMA (mma.sync)
# are printed per kernel, with ptxas's warnings (e.g. serialized wgmma). Needs no GPU.
# nvdisasm comes with the CUDA toolkit, or with `pip install nvidia-cuda-nvdisasm`.
set -euo pipefail
dir=${1:?usage: scripts/sass_report.sh DUMP_DIR [ARCH]}
arch=${2:-sm_90a}
cuda=${CUDA_HOME:-/usr/local/cuda}
nvdisasm=$(command -v nvdisasm || true)
[ -z "$nvdisasm" ] && [ -x "$cuda/bin/nvdisasm" ] && nvdisasm="$cuda/bin/nvdisasm"
if [ -z "$nvdisasm" ]; then
  nvdisasm=$(python3 -c 'import glob, sys; print(next(iter(sorted(p for d in sys.path for p in glob.glob(d + "/nvidia/*/bin/nvdisasm"))), ""))')
fi
[ -n "$nvdisasm" ] || { echo "no nvdisasm: install the CUDA toolkit's or pip install nvidia-cuda-nvdisasm" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for ptx in "$dir"/*.ptx; do
  if ! "$cuda/bin/ptxas" -arch="$arch" "$ptx" -o "$work/k.cubin" 2>"$work/ptxas.log"; then
    echo "$(basename "$ptx"): ptxas failed: $(head -1 "$work/ptxas.log")"
    continue
  fi
  counts=$("$nvdisasm" "$work/k.cubin" | { grep -oE '\b(HGMMA|QGMMA|IGMMA|HMMA|QMMA|IMMA)[.A-Z0-9x]*' || true; } | sort | uniq -c |
           awk '{printf "%s%d %s", (NR > 1 ? ", " : ""), $1, $2}')
  echo "$(basename "$ptx"): ${counts:-no tensor-core instructions}$(grep -i warning "$work/ptxas.log" | head -1 | sed 's/^/ | /')"
done
