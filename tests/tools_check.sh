#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# gmpi-bench and gmpi-info refuse what they cannot do, by name, with a non-zero exit, and answer
# --help. Each case: the exit status and a piece of the message that must be printed.
# Usage: tools_check.sh BENCH INFO MPIEXEC [mpiexec flags...]
set -uo pipefail
bench=$1 info=$2 mpiexec=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
failures=0
expect() { # expect STATUS TEXT -- command...
  local want=$1 text=$2
  shift 3
  "$@" >"$work/out" 2>&1
  local got=$?
  if [ "$got" != "$want" ] || ! grep -qF -- "$text" "$work/out"; then
    echo "tools_check: FAIL: $* -> exit $got (want $want), output lacks '$text':"
    sed 's/^/    /' "$work/out" | head -8
    failures=$((failures + 1))
  else
    echo "tools_check: ok: $* -> exit $got, says '$text'"
  fi
}
run2=("$mpiexec" -n 2 "$@")
expect 0 "usage: mpiexec -n N gmpi-bench" -- "${run2[@]}" "$bench" --help
expect 2 "--coll 'foo': unknown collective" -- "${run2[@]}" "$bench" --coll foo
expect 2 "--iters 'x': not a whole number" -- "${run2[@]}" "$bench" -n x
expect 2 "--datatype 'float33': unknown type" -- "${run2[@]}" "$bench" -d float33
expect 2 "--mode 'fast': unknown mode" -- "${run2[@]}" "$bench" --mode fast
expect 2 "--minbytes 1048576 is larger than --maxbytes 8" -- "${run2[@]}" "$bench" -b 1M -e 8
expect 2 "--root '5': out of range for 2 ranks" -- "${run2[@]}" "$bench" -r 5 -e 64
# A report that cannot be written is refused before the run (exit 2, no rows measured).
expect 2 "cannot write /nonexistent/x.svg" -- "${run2[@]}" "$bench" -e 64 --plot /nonexistent/x.svg
expect 2 "cannot write /nonexistent/x.json" -- "${run2[@]}" "$bench" -e 64 -J /nonexistent/x.json
if grep -q "allreduce" "$work/out"; then
  echo "tools_check: FAIL: a run measured rows although its -J path was bad"; failures=$((failures + 1))
fi
expect 2 "--average '7': 0 (rank 0), 1 (mean), 2 (min) or 3 (max)" -- "${run2[@]}" "$bench" -a 7
expect 2 "--op 'mulsum': unknown op" -- "${run2[@]}" "$bench" -o mulsum
# nccl-tests' names and habits: -d float/half, -o all, -a, the units row, the footer.
expect 0 "# Avg bus bandwidth    :" -- "${run2[@]}" "$bench" -e 64 -d float -o all -a 3 --coll allreduce,bcast
expect 0 "float16" -- "${run2[@]}" "$bench" -e 64 -d half --baseline mpi
expect 0 "ratio = gmpi time / baseline time" -- "${run2[@]}" "$bench" -e 64 --baseline mpi
expect 0 "(GB/s)" -- "${run2[@]}" "$bench" -e 64
expect 0 "gmpi-bench 0." -- "${run2[@]}" "$bench" --version
expect 0 "gmpi-info 0." -- "$info" --version
# Stream mode needs the cuda backend: on cpu it is refused with the backend's reason.
expect 2 "--mode 'stream': needs the cuda backend" -- env GMPI_BACKEND=cpu "${run2[@]}" "$bench" --mode stream
expect 0 "usage: mpiexec -n N gmpi-info" -- "$info" --help
expect 2 "gmpi-info: unknown argument '--x'" -- "$info" --x
expect 0 "backend chosen (rank 0): GMPI_BACKEND=cpu" -- env GMPI_BACKEND=cpu "${run2[@]}" "$info"
[ $failures = 0 ] && echo "tools_check: all cases as expected" || echo "tools_check: $failures FAILED"
exit $((failures != 0))
