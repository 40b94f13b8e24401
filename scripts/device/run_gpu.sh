#!/usr/bin/env bash
# On the GPU machine, from the project root with .device/ carried over: unpacks the bundled
# libraries into a scratch folder, then runs the gpu tests, the emulator tests, the runtime,
# autotune and collectives benchmarks, the CLI and the examples against the GPU. Logs go to
# $OUT (or .device/out).
set -uo pipefail
cd "$(dirname "$0")/../.."
out="${OUT:-.device/out}"
mkdir -p "$out" /tmp/sys
for f in .device/debs/*.deb; do dpkg -x "$f" /tmp/sys; done
export LD_LIBRARY_PATH=/tmp/sys/usr/lib/x86_64-linux-gnu:/tmp/sys/usr/lib/llvm-22/lib:${LD_LIBRARY_PATH:-}
export TILEJIT_CACHE_DIR=/tmp/tilejit-cache CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
# NCCL is too large to bundle: use the machine's, or the one PyTorch's wheels bring.
if [ -z "${TILEJIT_NCCL_LIBRARY:-}" ] && ! ldconfig -p | grep -q libnccl.so.2 &&
   [ ! -e "$CUDA_HOME/lib64/libnccl.so.2" ] && [ ! -e "$CUDA_HOME/lib/libnccl.so.2" ]; then
  nccl_dir=$(python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib"))' 2>/dev/null)
  [ -n "$nccl_dir" ] && export TILEJIT_NCCL_LIBRARY="$nccl_dir/libnccl.so.2"
fi
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
run test_gpu_collectives $b/test_gpu_collectives
run test_runtime $b/test_runtime
run test_emu     $b/test_emu
run test_autotune $b/test_autotune
run test_autotune_emu $b/test_autotune_emu
run test_gemm  $b/test_gemm
for k in $($b/tilejit list | awk '{print $1}'); do
  TILEJIT_DUMP_DIR="$out/dump" $b/tilejit run "$k" --device cuda 2>&1 | tee -a "$out/run.log"
done
# The PTX of every kernel built comes back in $OUT/dump: scripts/sass_report.sh shows its SASS.
$b/demo 2>&1 | tee "$out/demo.log"
$b/tp_mlp --device cuda 2>&1 | tee "$out/tp_mlp.log"
run runtime_bench $b/runtime_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
# Tuning with the kernel cache off: every candidate is a cold compile, as on a first run.
run autotune_bench env TILEJIT_CACHE_DISABLE=1 $b/autotune_bench --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
run gemm_bench $b/gemm_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
run collectives_bench $b/collectives_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
