#!/usr/bin/env bash
# On the GPU machine, from the project root with .device/ carried over (environment.sh sets
# it up): runs the gpu tests, the emulator tests, the runtime, autotune, gemm and collectives
# benchmarks, the Python peers of attention and scaled_dot, the CLI and the examples against
# the GPU. Logs go to $OUT (or .device/out).
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/environment.sh
ldd $b/* | grep 'not found' | sort -u | tee "$out/missing_libraries.txt"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv | tee "$out/gpu.txt"
run() {  # run NAME COMMAND...: logs to $out/NAME.log, prints the tail
  local name="$1"; shift
  echo "== $name"
  "$@" >"$out/$name.log" 2>&1; local rc=$?
  tail -n 15 "$out/$name.log"; echo "(exit $rc)"
}
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
run autotune_bench env TILEJIT_CACHE_DISABLE=1 $b/autotune_bench --benchmark_filter='BM_(TuneOneShape|ColdStart)' \
  --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
# The cost model's top 8 against every config of the space, once per shape (each is minutes).
run autotune_exhaustive $b/autotune_bench --benchmark_filter='BM_TopKAgainstExhaustive/.*cuda'
run gemm_bench $b/gemm_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
# Attention and scaled_dot against PyTorch and JAX on this GPU, in the same run.
run peers python3 bench/peers.py --tilejit $b/tilejit --json "$out/peers.json"
run collectives_bench $b/collectives_bench --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
