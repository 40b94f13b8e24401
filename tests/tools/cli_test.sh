#!/usr/bin/env bash
# The tilejit command line: every listed kernel's `emit` output in every format, PTX
# assembled by ptxas for sm_80 and sm_90a when the toolkit is installed, every kernel run in
# the emulator, info, the cache commands, and clear errors.
set -euo pipefail
tilejit="$1"
ptxas="${CUDA_HOME:-/usr/local/cuda}/bin/ptxas"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
passed=0 failed=0

check() {  # check NAME COMMAND...: runs the command, counts the result
  local name="$1"; shift
  if "$@" >"$work/out" 2>&1; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAILED: $name"; cat "$work/out"; fi
}

"$tilejit" --version | grep -q "tilejit .* (LLVM " || { echo "FAILED: --version"; exit 1; }
kernels=$("$tilejit" list | awk '{print $1}')
[ -n "$kernels" ] || { echo "FAILED: list printed nothing"; exit 1; }
for k in $kernels; do
  check "$k ir" bash -c "'$tilejit' emit $k --format ir | grep -q '^kernel @$k('"
  check "$k llvm" bash -c "'$tilejit' emit $k --format llvm | grep -q 'ptx_kernel void @$k('"
  for arch in sm_80 sm_90a; do
    "$tilejit" emit "$k" --arch "$arch" >"$work/$k.$arch.ptx"
    if [ -x "$ptxas" ]; then
      check "$k $arch ptxas" "$ptxas" -v -arch="$arch" "$work/$k.$arch.ptx" -o "$work/$k.$arch.cubin"
      grep -E "registers|spill" "$work/out" | sed "s/^/$k $arch: /"
    else
      check "$k $arch ptx" grep -q ".target $arch" "$work/$k.$arch.ptx"
    fi
  done
done
check "--set" bash -c "'$tilejit' emit softmax --set BLOCK_N=2048 --set num_warps=8 --format ir | grep -q 'BLOCK_N = 2048'"
check "unknown kernel" bash -c "'$tilejit' emit nope 2>&1 | grep -q \"no registered kernel 'nope'\""
check "unknown kernel exits non-zero" bash -c "! '$tilejit' emit nope"
check "unknown constant" bash -c "'$tilejit' emit gemm --set NOPE=1 2>&1 | grep -q \"unknown constant 'NOPE'\""
check "bad value" bash -c "'$tilejit' emit gemm --set BLOCK_M=x 2>&1 | grep -q 'is not an integer'"
check "unknown arch" bash -c "'$tilejit' emit gemm --arch sm_12 2>&1 | grep -q \"unknown target architecture 'sm_12'\""
# Running kernels: every listed kernel in the emulator, checked against its reference.
for k in $kernels; do
  check "$k run emu" bash -c "'$tilejit' run $k --device emu | grep -E '^$k +ok '"
done
check "run with --set" bash -c "'$tilejit' run gemm --device emu --set BLOCK_M=32 --set num_warps=2 | grep -q ' ok '"
check "run unknown kernel" bash -c "'$tilejit' run nope --device emu 2>&1 | grep -q \"no example run for kernel 'nope'\""
check "run unknown device" bash -c "'$tilejit' run gemm --device tpu 2>&1 | grep -q \"unknown device 'tpu'\""
check "info" bash -c "'$tilejit' info | grep -q 'tilejit emulator'"
if "$tilejit" info | grep -q "no GPU"; then
  check "run on a missing GPU fails clearly" bash -c "! '$tilejit' run vector_add --device cuda 2>$work/err && grep -q 'libcuda.so.1' $work/err"
fi

# The kernel cache commands, on a cache of their own.
export TILEJIT_CACHE_DIR="$work/cache"
check "cache stats" bash -c "'$tilejit' cache stats | grep -q 'entries'"
check "cache ls" "$tilejit" cache ls
check "cache clear" bash -c "'$tilejit' cache clear | grep -q 'removed 0 entries'"
check "info names the cache" bash -c "'$tilejit' info | grep -q '$work/cache'"
[ -x "$ptxas" ] || echo "ptxas not installed: PTX checked for its target line only"
echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
