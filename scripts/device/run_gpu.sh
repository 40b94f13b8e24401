#!/usr/bin/env bash
# On the GPU machine, from the project root with .device/ carried over: unpacks the bundled
# libraries into a scratch folder, then runs the gpu tests, the emulator tests, the runtime
# benchmarks and the CLI against the GPU. Logs go to $OUT (or .device/out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-.device/out}"
mkdir -p "$out" /tmp/sys
for f in .device/debs/*.deb; do dpkg -x "$f" /tmp/sys; done
export LD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:/tmp/sys/usr/lib/llvm-22/lib:${LD_LIBRARY_PATH:-}
export TILEJIT_CACHE_DIR=/tmp/tilejit-cache CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
ldd .device/bin/* | grep 'not found' | sort -u | tee "$out/missing_libraries.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee "$out/gpu.txt"
run() {  # run NAME COMMAND...: logs to $out/NAME.log, prints the tail
  local name="$1"; shift
  echo "== $name"
  "$@" >"$out/$name.log" 2>&1; local rc=$?
  tail -n 15 "$out/$name.log"; echo "(exit $rc)"
}
b=.device/bin
echo "== info";      $b/tilejit info 2>&1 | tee "$out/info.log"
run test_gpu     $b/test_gpu
run test_runtime $b/test_runtime
run test_emu     $b/test_emu
for k in $($b/tilejit list | awk '{print $1}'); do $b/tilejit run "$k" --device cuda 2>&1 | tee -a "$out/run.log"; done
$b/demo 2>&1 | tee "$out/demo.log"
run runtime_bench $b/runtime_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
