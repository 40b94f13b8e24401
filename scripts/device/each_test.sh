#!/usr/bin/env bash
# Runs each test of a GoogleTest binary in a process of its own: a kernel fault leaves the
# process's CUDA context unusable, and with every test in one process a fault in one would
# fail (or abort) all the tests after it. Prints each test's output, then one line per
# failure and a count; exits 1 if any test failed or timed out, or the binary cannot list its
# tests.
#   each_test.sh BINARY [GTEST_FILTER [SECONDS_PER_TEST]]
set -uo pipefail
binary="$1" filter="${2:-*}" per_test="${3:-60}"
# --gtest_list_tests prints "Suite." lines, then "  Test" lines (parameterized ones with a
# "# GetParam() = ..." comment after the name). Disabled tests would not run: left out.
if ! listing=$("$binary" --gtest_list_tests --gtest_filter="$filter"); then
  echo "== $(basename "$binary"): cannot list its tests"
  exit 1
fi
tests=$(awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}' <<<"$listing" | grep -v 'DISABLED_')
if [ -z "$tests" ]; then
  echo "== $(basename "$binary"): no test matches '$filter'"
  exit 1
fi
passed=0 skipped=0 failed=()
output=$(mktemp)
for t in $tests; do
  if timeout -k 5 "$per_test" "$binary" --gtest_filter="$t" --gtest_brief=1 >"$output" 2>&1; then
    if grep -q '^\[  SKIPPED \]' "$output"; then skipped=$((skipped + 1)); else passed=$((passed + 1)); fi
  else
    failed+=("$t")
  fi
  cat "$output"
done
rm -f "$output"
for t in "${failed[@]}"; do echo "FAILED $t"; done
echo "== $(basename "$binary"): ${passed} passed, ${skipped} skipped, ${#failed[@]} failed (or timed out after ${per_test} s), each in its own process"
(( ${#failed[@]} == 0 ))
