#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Run a command that must fail -- end with a non-zero status -- within a time limit. Passes
# when it fails in time; fails when it succeeds or hangs. Usage: expect_failure.sh SECONDS CMD...
# EXPECT_MENTIONS="word1,word2": the output must also contain each word (the diagnosis).
limit=$1
shift
start=$(date +%s)
out=$(mktemp)
timeout --kill-after=5 "$limit" "$@" 2>&1 | tee "$out"
rc=${PIPESTATUS[0]}
took=$(($(date +%s) - start))
if [ $rc -eq 0 ]; then
  echo "expect_failure: the job succeeded but should have failed"
  exit 1
elif [ $rc -eq 124 ] || [ $took -ge "$limit" ]; then
  echo "expect_failure: the job hung (killed after $limit s)"
  exit 1
fi
IFS=, read -ra words <<<"${EXPECT_MENTIONS:-}"
for w in "${words[@]}"; do
  if ! grep -q -- "$w" "$out"; then
    echo "expect_failure: the job failed, but its output never mentions '$w'"
    rm -f "$out"
    exit 1
  fi
done
rm -f "$out"
echo "expect_failure: the job failed as it should (exit $rc) after $took s (limit $limit s)"
exit 0
