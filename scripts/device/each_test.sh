#!/usr/bin/env bash
# Runs each test of a GoogleTest binary in a process of its own: a kernel fault leaves the
# process's CUDA context unusable, and with every test in one process a fault in one would
# fail (or abort) all the tests after it. Prints each test's output, then one line per test
# and the failures; exits 1 if any test failed.
#   each_test.sh BINARY [GTEST_FILTER]
set -uo pipefail
binary="$1" filter="${2:-*}"
# --gtest_list_tests prints "Suite." lines, then "  Test" lines (parameterized ones with a
# "# GetParam() = ..." comment after the name).
tests=$("$binary" --gtest_list_tests --gtest_filter="$filter" |
        awk '/^[^ ]/ {suite = $1} /^  / {print suite $1}')
passed=0 skipped=0 failed=()
output=$(mktemp)
for t in $tests; do
  if "$binary" --gtest_filter="$t" --gtest_brief=1 >"$output" 2>&1; then
    if grep -q '^\[  SKIPPED \]' "$output"; then skipped=$((skipped + 1)); else passed=$((passed + 1)); fi
  else
    failed+=("$t")
  fi
  cat "$output"
done
rm -f "$output"
echo "== $(basename "$binary"): ${passed} passed, ${skipped} skipped, ${#failed[@]} failed, each in its own process"
for t in "${failed[@]}"; do echo "FAILED $t"; done
(( ${#failed[@]} == 0 ))
