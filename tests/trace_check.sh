#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GMPI_DEBUG=trace logs every public call and each operation's arguments and outcome, on every
# rank: run test_p2p at 2 ranks with it and look for those lines from both ranks.
# Usage: trace_check.sh TEST_P2P MPIEXEC [mpiexec flags...]
set -uo pipefail
prog=$1 mpiexec=$2
shift 2
out=$(GMPI_DEBUG=trace "$mpiexec" -n 2 "$@" "$prog" 2>&1) || { echo "$out" | tail -20; exit 1; }
failures=0
for r in 0 1; do
  for want in "TRACE gmpi_send\$" "TRACE gmpi_irecv\$" "TRACE #[0-9]+ isend count 7 peer/root [01] tag 5: started" "TRACE #[0-9]+ done"; do
    if echo "$out" | grep -qE "^\[gmpi $r\] $want"; then
      echo "trace_check: rank $r logs '$want'"
    else
      echo "trace_check: FAIL: rank $r never logs '$want'"
      failures=$((failures + 1))
    fi
  done
done
exit $((failures != 0))
