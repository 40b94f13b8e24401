#!/usr/bin/env bash
# The tilejit command line: every listed kernel's `emit` output in every format, PTX
# assembled by ptxas for sm_80 and sm_90a when the toolkit is installed, every kernel run in
# the emulator, info, the cache commands, tuning (resumed after Ctrl-C), cache packs (made,
# verified, loaded read-only by a fresh cache, imported, refused), and clear errors.
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
kernels=$("$tilejit" list --kernels | awk '{print $1}')
library_ops=$("$tilejit" list --ops | awk '{print $1}')
[ "$("$tilejit" list | wc -l)" -eq "$(($(echo "$kernels" | wc -l) + $(echo "$library_ops" | wc -l)))" ] ||
  { echo "FAILED: list prints kernels and ops"; exit 1; }
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
# Every library op in the emulator at its small default size, checked against its reference.
for op in $library_ops; do
  check "$op run emu" bash -c "'$tilejit' run $op --device emu | grep -E '^$op +ok '"
done
check "op with its dimensions set" bash -c "'$tilejit' run bf16_gemm --device emu --set M=100 --set K=48 | grep -E 'ok +M=100 N=256 K=48 '"
check "op with an unknown dimension" bash -c "'$tilejit' run bf16_gemm --device emu --set Q=1 2>&1 | grep -q 'no problem dimension named Q (it has M, N, K)'"
check "run with --set" bash -c "'$tilejit' run gemm --device emu --set BLOCK_M=32 --set num_warps=2 | grep -q ' ok '"
check "run with a block of 0" bash -c "! '$tilejit' run vector_add --device emu --set BLOCK=0 2>'$work/err' && grep -q 'BLOCK=0 must be at least 1' '$work/err'"
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

# Tuning, on a cache of its own: a progress line per trial, results that a second run finds.
export TILEJIT_CACHE_DIR="$work/tuned"
shapes="$work/shapes.txt"
printf '# vector_add shapes\nn=30000\n\nn=5000  # a second bucket\n' >"$shapes"
tune_vector_add="'$tilejit' tune --op vector_add --shapes '$shapes' --device emu"
tune_add="$tune_vector_add --top-k 3"
check "tune" bash -c "$tune_add 2>'$work/progress' | grep -E '^\[n=30000\]  best [0-9.]+ ms  BLOCK=[0-9]+ num_warps=[0-9]+  \(3 timed.* pruned by constraints; [0-9.]+ s making the problem, [0-9.]+ s building, [0-9.]+ s checking and timing\)$'"
check "tune progress" grep -E '^\[#+\] +6/6 +took [0-9]+:[0-9]{2} +\[n=5000\] best [0-9.]+ ms' "$work/progress"
check "tune again finds both shapes" bash -c "$tune_add | grep -c 'already tuned' | grep -qx 2"
# A deeper search times only the configs the first did not; the bar counts those alone.
check "tune deeper" bash -c "$tune_vector_add --top-k 5 2>'$work/progress' | grep -E '^\[n=5000\]  best [0-9.]+ ms  .*  \(2 timed, 3 reused'"
check "tune deeper progress" grep -E '^\[#+\] +4/4 +took ' "$work/progress"
check "a shallower search finds both shapes" bash -c "$tune_add | grep -c 'already tuned' | grep -qx 2"
printf 'n=30000\r\n' >"$work/crlf_shapes.txt"
check "tune a shapes file with Windows line ends" bash -c "'$tilejit' tune --op vector_add --shapes '$work/crlf_shapes.txt' --device emu --top-k 3 | grep -q '^\[n=30000\]  already tuned'"
check "tune unknown op" bash -c "'$tilejit' tune --op nope --shapes '$shapes' 2>&1 | grep -q \"no tunable op 'nope'\""
echo 'rows=65536 cols=32768' >"$work/huge_rows.txt"
check "tune past 32-bit indexing" bash -c "'$tilejit' tune --op softmax --shapes '$work/huge_rows.txt' --device emu 2>&1 | grep -q 'x (65536 x 32768) has over 2147418111 elements'"
echo 'M=1048576 N=1048576 K=1048576' >"$work/huge_gemm.txt"
check "tune a gemm too large for the device" bash -c "! '$tilejit' tune --op gemm_bf16_nn --shapes '$work/huge_gemm.txt' --device emu 2>'$work/err' && grep -q 'gemm tuning \[M=1048576 N=1048576 K=1048576\]: its buffers need [0-9.]* GiB on' '$work/err'"
check "tune a directory as shapes" bash -c "'$tilejit' tune --op vector_add --shapes '$work' 2>&1 | grep -q \"cannot read the shapes file $work: Is a directory\""
printf 'n=3\nm=3\n' >"$work/bad_shapes.txt"
check "tune bad shape line" bash -c "'$tilejit' tune --op vector_add --shapes '$work/bad_shapes.txt' 2>&1 | grep -q \"bad_shapes.txt:2: vector_add: shape 'm=3' lacks dimension n\""
# The library's gemm, through its own launch path, into a cache of its own.
echo 'M=96 N=80 K=128' >"$work/library_gemm_shapes.txt"
# --plan prints what a tuning would time first (the heuristic's config, then the cost model's
# best, with their estimates) and compiles, runs and records nothing: the same shape then tunes.
plan="TILEJIT_CACHE_DIR='$work/planned' '$tilejit' tune --op gemm_bf16_nt --shapes '$work/library_gemm_shapes.txt' --device emu --top-k 3"
check "tune plan" bash -c "$plan --plan >'$work/plan' && grep -cE '^ +[123]  +[0-9.]+ ms  BLOCK_M=' '$work/plan' | grep -qx 3 && grep -qE '^ +1  .*  \(the heuristic.s\)$' '$work/plan'"
check "a plan records nothing" bash -c "$plan 2>/dev/null | grep -qE '^\[M=96 N=80 K=128\]  best .*\(3 timed'"
check "tune the library gemm" bash -c "TILEJIT_CACHE_DIR='$work/library_tuned' '$tilejit' tune --op gemm_bf16_nt --shapes '$work/library_gemm_shapes.txt' --device emu --top-k 2 2>/dev/null | grep -E '^\[M=96 N=80 K=128\]  best [0-9.]+ ms  BLOCK_M=[0-9]+ .*SPLIT_K=[0-9]+ PERSISTENT=[01] warp_specialize=[01] cluster_x=[12]  \(2 timed'"
check "tune lists the library gemms" bash -c "'$tilejit' tune --op nope --shapes '$shapes' 2>&1 | grep -qF 'gemm_<bf16|f16|'"
check "tune lists the library attention" bash -c "'$tilejit' tune --op nope --shapes '$shapes' 2>&1 | grep -qF 'attention_<bf16|f16|f32>_h<'"
echo 'BN=4 G=2 T=40 S=56' >"$work/library_attention_shapes.txt"
check "tune the library attention" bash -c "TILEJIT_CACHE_DIR='$work/library_tuned' '$tilejit' tune --op attention_bf16_h64_causal --shapes '$work/library_attention_shapes.txt' --device emu --top-k 2 2>/dev/null | grep -E '^\[BN=4 G=2 T=40 S=56\]  best [0-9.]+ ms  BLOCK_M=[0-9]+ BLOCK_N=[0-9]+ num_warps=[0-9]+ HEAD_CHUNK=[0-9]+ num_stages=[12] OVERLAP=[01] warp_specialize=[01] pingpong=[01]  \(2 timed'"
check "tune the attention backward's dk / dv" bash -c "TILEJIT_CACHE_DIR='$work/library_tuned' '$tilejit' tune --op attention_dkdv_bf16_h64_causal --shapes '$work/library_attention_shapes.txt' --device emu --top-k 2 2>/dev/null | grep -E '^\[BN=4 G=2 T=40 S=56\]  best [0-9.]+ ms  BLOCK_M=[0-9]+ .*  \(2 timed'"
# Emulator kernels are not cached: a pack of tuned kernels holds the three results and says so.
check "pack tuned only" bash -c "TILEJIT_CACHE_DIR='$work/library_tuned' '$tilejit' cache pack -o '$work/tuned.tjpack' --tuned-only --device emu | tr '\n' ' ' | grep -E '^packed 3 entries .* tuned only: 3 tuned results and the 0 kernel entries they run 3 tuned results name no compiled kernels'"
echo 'BN=3 G=2 T=40 S=56' >"$work/bad_groups.txt"
check "tune refuses heads that do not group" bash -c "TILEJIT_CACHE_DIR='$work/library_tuned' '$tilejit' tune --op attention_bf16_h64 --shapes '$work/bad_groups.txt' --device emu 2>&1 | grep -q 'BN = 3 query heads do not make groups of G = 2'"
check "tune refuses an attention head dim" bash -c "'$tilejit' tune --op attention_bf16_h20 --shapes '$work/library_attention_shapes.txt' 2>&1 | grep -q \"no tunable op 'attention_bf16_h20'\""

# Ctrl-C (or SIGTERM) stops a tuning run after the trial in progress (exit status 130); the
# same command then resumes, reusing the recorded trials.
tune_interrupted_then_resumed() {  # signal
  export TILEJIT_CACHE_DIR="$work/interrupted_$1"
  echo 'M=96 N=96 K=96' >"$work/gemm_shapes.txt"
  local tune_gemm="$tilejit tune --op gemm --shapes $work/gemm_shapes.txt --device emu --top-k 16" pid status
  $tune_gemm >"$work/int.out" 2>"$work/int.err" &
  pid=$!
  for _ in $(seq 3000); do grep -q ' 1/16 ' "$work/int.err" 2>/dev/null && break; sleep 0.01; done
  kill -"$1" "$pid"
  wait "$pid" && status=0 || status=$?
  [ "$status" -eq 130 ] && grep -q 'interrupted: the trials so far are recorded' "$work/int.out" || return 1
  $tune_gemm 2>/dev/null | grep -E '\([0-9]+ timed, [1-9][0-9]* reused'
}
check "tune resumes after Ctrl-C" tune_interrupted_then_resumed INT
check "tune resumes after SIGTERM" tune_interrupted_then_resumed TERM
export TILEJIT_CACHE_DIR="$work/tuned"

# Cache packs: one file made from the tuned cache serves a fresh, empty cache read-only.
pack="$work/tuned.tjpack"
check "cache pack" bash -c "'$tilejit' cache pack -o '$pack' --device emu | grep -E '^packed [0-9]+ entries of .* for sm_'"
check "cache verify" bash -c "'$tilejit' cache verify '$pack' | grep -q '^usable:       yes'"
with_pack="TILEJIT_CACHE_DIR='$work/fresh' TILEJIT_PREBUILT='/nonexistent.tjpack:$pack'"
check "a prebuilt pack serves the tuning" bash -c "$with_pack $tune_add 2>/dev/null | grep -c 'already tuned' | grep -qx 2"
check "a missing prebuilt pack is a warning" bash -c "$with_pack $tune_add 2>&1 >/dev/null | grep -q 'nonexistent.tjpack: cannot open'"
check "prebuilt packs are listed" bash -c "$with_pack '$tilejit' cache stats 2>/dev/null | grep -q '^pack: .*tuned.tjpack (sm_.*, read-only)'"
check "the fresh cache stays empty" bash -c "TILEJIT_CACHE_DIR='$work/fresh' '$tilejit' cache stats | grep -q '^entries:   0'"
check "cache import" bash -c "TILEJIT_CACHE_DIR='$work/imported' '$tilejit' cache import '$pack' | grep -E '^imported [1-9][0-9]* entries'"
check "imported tuning" bash -c "TILEJIT_CACHE_DIR='$work/imported' $tune_add | grep -c 'already tuned' | grep -qx 2"
# Refusals, each with a clear message and a failing exit status.
head -c 200 "$pack" >"$work/truncated.tjpack"
echo "not a pack" >"$work/foreign.tjpack"
cp "$pack" "$work/flipped.tjpack"
printf 'X' | dd of="$work/flipped.tjpack" bs=1 seek=80 conv=notrunc status=none
check "truncated pack refused" bash -c "'$tilejit' cache verify '$work/truncated.tjpack' 2>&1 | grep -q 'truncated.tjpack is truncated: 200 bytes'"
check "truncated pack fails verify" bash -c "! '$tilejit' cache verify '$work/truncated.tjpack' 2>/dev/null"
check "foreign file refused" bash -c "'$tilejit' cache import '$work/foreign.tjpack' 2>&1 | grep -q 'foreign.tjpack is not a tilejit cache pack'"
check "damaged entry found" bash -c "'$tilejit' cache verify '$work/flipped.tjpack' | grep -q '^damaged: .*checksum mismatch'"
check "damaged pack fails verify" bash -c "! '$tilejit' cache verify '$work/flipped.tjpack' >/dev/null"
check "damaged pack imports nothing" bash -c "TILEJIT_CACHE_DIR='$work/none' '$tilejit' cache import '$work/flipped.tjpack' 2>&1 | grep -q 'is damaged; nothing imported'"
check "another arch refused" bash -c "'$tilejit' cache import '$pack' --arch sm_80 2>&1 | grep -q 'holds kernels for sm_.*; this machine needs sm_80: not used'"
check "verify names the arch mismatch" bash -c "'$tilejit' cache verify '$pack' --arch sm_80 | grep -q '^usable:       no: '"
check "pack for an unknown arch" bash -c "! '$tilejit' cache pack -o '$work/typo.tjpack' --arch sm_9 --device emu 2>'$work/err' && grep -q \"unknown target architecture 'sm_9'\" '$work/err' && [ ! -e '$work/typo.tjpack' ]"
[ -x "$ptxas" ] || echo "ptxas not installed: PTX checked for its target line only"
echo "cli: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
