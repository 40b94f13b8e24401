#!/usr/bin/env bash
# Nsight Compute on the attention kernels at the benchmark's head dim (H = 128, 16 heads, 8192 tokens):
# the forward's first launch, then the backward's dk / dv and dq. Sections: throughput against the
# GPU's peaks, warp states (what each warp waited on), the schedulers' issue slots, the pipes' use.
#   profile_attention.sh NCU TILEJIT
set -uo pipefail
ncu="$1" tilejit="$2"
shape=(--device cuda --set B=1 --set T=8192 --set S=8192 --set N=16 --set K=16 --set H=128)
sections=(--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section ComputeWorkloadAnalysis
          --section LaunchStats --section Occupancy)
"$ncu" "${sections[@]}" -k regex:attention_forward --launch-count 1 "$tilejit" run attention "${shape[@]}"
"$ncu" "${sections[@]}" -k regex:'attention_backward_(dkdv|dq)$' --launch-count 2 "$tilejit" run attention_backward \
  "${shape[@]}"
