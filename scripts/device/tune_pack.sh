#!/usr/bin/env bash
# On the GPU machine (bundle as for run_gpu.sh, which runs both families): tunes one family of
# the library's kernels into a fresh kernel cache and packs the tuned configs with the kernels
# they run (not the other candidates') into $OUT/<arch>-<family>.tjpack, which goes under
# caches/ so that an application on that GPU starts with tuned kernels:
#   TILEJIT_PREBUILT=caches/sm_90a-gemm.tjpack:caches/sm_90a-attention.tjpack ./app
# With STEP_SECONDS set (run_gpu.sh sets it), the tuning stops in time to pack what it finished
# (every trial is recorded as it is made; the same command later resumes where this one stopped).
# Families, one per call:
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
pack_s=25  # kept back for packing
deadline=$(( $(date +%s) + ${STEP_SECONDS:-100000} - pack_s ))
tune() {  # op, shapes file
  local left=$(( deadline - $(date +%s) ))
  (( left > 0 )) || { echo "== tune $1: no time left"; return; }
  echo "== tune $1"
  timeout -s INT -k 10 "$left" $b/tilejit tune --op "$1" --shapes "$2" --device cuda 2>"$logs/tune_$1.progress" | tee "$logs/tune_$1.log"
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
$b/tilejit cache pack -o "$pack" --device cuda --tuned-only | tee "$logs/pack_$family.log"
$b/tilejit cache verify "$pack" | tee -a "$logs/pack_$family.log"
