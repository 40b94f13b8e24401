#!/usr/bin/env bash
# On the GPU machine (bundle as for run_gpu.sh): tunes one family of the library's kernels into
# a fresh kernel cache and packs the tuned configs with the kernels they run (not the other
# candidates') into $OUT/<arch>-<family>.tjpack, which goes under caches/ so that an
# application on that GPU starts with tuned kernels:
#   TILEJIT_PREBUILT=caches/sm_90a-gemm.tjpack:caches/sm_90a-attention.tjpack ./app
# Families, one per call (each fits one device command):
#   gemm       every shape of caches/gemm_shapes.txt, bf16 and fp8 e4m3, weights stored (N, K)
#   attention  every shape of caches/attention_shapes.txt: the forward, dk / dv and dq kernels,
#              bf16, head dim 128, causal and not
set -uo pipefail
cd "$(dirname "$0")/../.."
family="${1:?usage: tune_pack.sh gemm|attention}"
export TILEJIT_CACHE_DIR=/tmp/tilejit-pack-cache-$family
rm -rf "$TILEJIT_CACHE_DIR"
source scripts/device/environment.sh
arch=$($b/tilejit info | grep -o 'target sm_[0-9a-z]*' | head -n 1 | cut -d' ' -f2)
tune() {  # op, shapes file
  echo "== tune $1"
  $b/tilejit tune --op "$1" --shapes "$2" --device cuda 2>"$out/tune_$1.progress" | tee "$out/tune_$1.log"
}
case "$family" in
  gemm)
    for op in gemm_bf16_nt gemm_f8e4m3_nt; do tune "$op" caches/gemm_shapes.txt; done ;;
  attention)
    for kernel in attention attention_dkdv attention_dq; do
      for op in ${kernel}_bf16_h128 ${kernel}_bf16_h128_causal; do tune "$op" caches/attention_shapes.txt; done
    done ;;
  *) echo "unknown family '$family': gemm or attention" >&2; exit 2 ;;
esac
pack="$out/$arch-$family.tjpack"
$b/tilejit cache pack -o "$pack" --device cuda --tuned-only | tee "$out/pack_$family.log"
$b/tilejit cache verify "$pack" | tee -a "$out/pack_$family.log"
