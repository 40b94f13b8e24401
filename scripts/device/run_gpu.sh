#!/usr/bin/env bash
# On the GPU machine, from the project root with .device/ carried over (bundle.sh makes it):
# the whole GPU session in one command, most important first, within BUDGET seconds (default
# 560, for a command limit of 600): the gpu tests (each in its own process), the collectives'
# tests and their overhead over raw NCCL, the proxy fence's probe, gemm against cuBLASLt,
# attention and scaled_dot against PyTorch and JAX, Nsight Compute on attention's kernels, one
# shape tuned end to end and the cold start from a cache, the module load and launch overhead,
# the gemm schedules, the tuned packs of caches/ (tune_pack.sh), every registered kernel with
# its PTX dumped (scripts/sass_report.sh reads it back here), and the top 8 against the
# exhaustive search. What comes back in $OUT: logs.tar.gz (every log, summary.txt first) and
# the packs. Naming steps runs only those (a later session picks up where a cut-off one stopped):
#   bash scripts/device/run_gpu.sh [BUDGET [STEP...]]
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/device/environment.sh
source scripts/device/steps.sh
start_steps "${1:-560}" "${@:2}"
# The bundled Google Benchmark (Debian's 1.7) takes --benchmark_min_time in plain seconds.
bench_args=(--benchmark_repetitions=3 --benchmark_min_time=0.2 --benchmark_report_aggregates_only=true)

{ nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,driver_version --format=csv
  $b/tilejit info
  echo "libraries not found:"; ldd $b/* | grep 'not found' | sort -u; } >"$logs/machine.log" 2>&1
cat "$logs/machine.log"
# The block copies run once, under the sanitizer (below), not a process each.
step test_gpu 150 bash scripts/device/each_test.sh $b/test_gpu '-Gpu/DescriptorCopyOnGpu.*'
# Where a kernel faults (an illegal instruction, address, ...), the sanitizer names it and the
# faulting instruction; a clean run says so in a few seconds.
step sanitize_descriptors 40 "$CUDA_HOME/bin/compute-sanitizer" --tool memcheck --print-limit 4 --error-exitcode 1 \
  $b/test_gpu --gtest_filter='Gpu/DescriptorCopyOnGpu.*'
step test_gpu_collectives 40 bash scripts/device/each_test.sh $b/test_gpu_collectives
# The emulator's benchmarks are for the development machine; here only the GPU's.
step collectives_bench 30 $b/collectives_bench --benchmark_filter='RawNccl|OnGpu' "${bench_args[@]}"
# Whether a fence.proxy.async waits for the loads or copies a thread has in flight (a few seconds).
step proxy_fence_bench 20 $b/proxy_fence_bench "${bench_args[@]}"
step gemm_bench 100 $b/gemm_bench --benchmark_filter='^(tilejit|cublaslt)/' "${bench_args[@]}"
step peers 180 python3 bench/peers.py --tilejit $b/tilejit --json "$logs/peers.json"
# Where attention's time goes (the largest gap to a peer): Nsight Compute's throughput, warp stall, issue slot and
# pipe sections for the forward and the backward's dk / dv and dq at H = 128.
step profile_attention 60 bash scripts/device/profile_attention.sh "$CUDA_HOME/bin/ncu" $b/tilejit
# Tuning with the kernel cache off: every candidate is a cold compile, as on a first run.
step autotune_bench 60 env TILEJIT_CACHE_DISABLE=1 $b/autotune_bench --benchmark_filter='BM_(TuneOneShape/.*cuda|ColdStart|MakeTuningProblem)' \
  --benchmark_repetitions=1
step runtime_bench 20 $b/runtime_bench --benchmark_filter='Cuda|ColdStart' "${bench_args[@]}"
step gemm_schedules 60 $b/gemm_bench --benchmark_filter='^tilejit_schedule/' "${bench_args[@]}"
step tune_pack_gemm 120 bash scripts/device/tune_pack.sh gemm
step tune_pack_attention 150 bash scripts/device/tune_pack.sh attention
# The PTX of every kernel built goes to dump/ in the logs: scripts/sass_report.sh shows its SASS.
step kernels 60 bash -c 'for k in $("$1" list | awk "{print \$1}"); do TILEJIT_DUMP_DIR="$2" "$1" run "$k" --device cuda; done' \
  _ $b/tilejit "$logs/dump"
step examples 30 bash -c '"$1"/demo && "$1"/tp_mlp --device cuda' _ $b
# The cost model's top 8 against every config of the space, once per shape (each is minutes).
step autotune_exhaustive 300 $b/autotune_bench --benchmark_filter='BM_TopKAgainstExhaustive/.*cuda'
finish_steps
echo "== gemm, median TFLOP/s"; grep -h '_median' "$logs/gemm_bench.log" 2>/dev/null |
  sed -E 's/^([^ ]+).*(TFLOP\/s=[^ ]+).*/\1 \2/'
echo "== peers"; tail -n 30 "$logs/peers.log" 2>/dev/null
