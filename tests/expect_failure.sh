#!/usr/bin/env bash
# Run a command that must fail -- end with a non-zero status -- within a time limit. Passes
# when it fails in time; fails when it succeeds or hangs. Usage: expect_failure.sh SECONDS CMD...
limit=$1
shift
start=$(date +%s)
timeout --kill-after=5 "$limit" "$@"
rc=$?
took=$(($(date +%s) - start))
if [ $rc -eq 0 ]; then
  echo "expect_failure: the job succeeded but should have failed"
  exit 1
elif [ $rc -eq 124 ] || [ $took -ge "$limit" ]; then
  echo "expect_failure: the job hung (killed after $limit s)"
  exit 1
fi
echo "expect_failure: the job failed as it should (exit $rc) after $took s (limit $limit s)"
exit 0
