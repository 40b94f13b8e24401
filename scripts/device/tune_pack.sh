#!/usr/bin/env bash
# On the GPU machine (bundle as for run_gpu.sh): tunes the library's gemm for every shape of
# caches/gemm_shapes.txt, in bf16 and fp8 e4m3 with weights stored (N, K), and its attention
# kernels (forward, dk / dv, dq) for every shape of caches/attention_shapes.txt (bf16, head dim
# 128, causal and not), into a fresh kernel cache, and packs the tuned configs with the kernels
# they run (not the other candidates') into $OUT/<arch>.tjpack, which goes under caches/ so
# that an application on that GPU starts with tuned kernels:
#   TILEJIT_PREBUILT=caches/sm_90a.tjpack ./app
set -uo pipefail
cd "$(dirname "$0")/../.."
export TILEJIT_CACHE_DIR=/tmp/tilejit-pack-cache
rm -rf "$TILEJIT_CACHE_DIR"
source scripts/device/environment.sh
arch=$($b/tilejit info | grep -o 'target sm_[0-9a-z]*' | head -n 1 | cut -d' ' -f2)
tune() {  # op, shapes file
  echo "== tune $1"
  $b/tilejit tune --op "$1" --shapes "$2" --device cuda 2>"$out/tune_$1.progress" | tee "$out/tune_$1.log"
}
for op in gemm_bf16_nt gemm_f8e4m3_nt; do tune "$op" caches/gemm_shapes.txt; done
for kernel in attention attention_dkdv attention_dq; do
  for op in ${kernel}_bf16_h128 ${kernel}_bf16_h128_causal; do tune "$op" caches/attention_shapes.txt; done
done
$b/tilejit cache pack -o "$out/$arch.tjpack" --device cuda --tuned-only | tee "$out/pack.log"
$b/tilejit cache verify "$out/$arch.tjpack" | tee -a "$out/pack.log"
