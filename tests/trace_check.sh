#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# GMPI_DEBUG=trace logs every public call and each operation's arguments and outcome, on every
# rank: run test_p2p at 2 ranks with it and look for those lines from both ranks.
# Each rank's stderr goes to its own file: mpiexec forwards ranks' output in chunks that need not
# end at a line, so in one merged stream a line of one rank can be cut by the other's.
# Usage: trace_check.sh TEST_P2P MPIEXEC [mpiexec flags...]
set -uo pipefail
prog=$1 mpiexec=$2
shift 2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
# Open MPI names the rank OMPI_COMM_WORLD_RANK, MPICH's Hydra PMI_RANK.
# shellcheck disable=SC2016 # expanded by the rank's shell, not here
per_rank='exec "$0" 2> "$1/stderr.${OMPI_COMM_WORLD_RANK:-${PMI_RANK:?no rank variable}}"'
if ! out=$(GMPI_DEBUG=trace "$mpiexec" -n 2 "$@" sh -c "$per_rank" "$prog" "$dir" 2>&1); then
  echo "$out" | tail -20
  tail -n 20 "$dir"/stderr.* 2>/dev/null
  exit 1
fi
failures=0
for r in 0 1; do
  for want in "TRACE gmpi_send\$" "TRACE gmpi_irecv\$" "TRACE #[0-9]+ isend count 7 peer/root [01] tag 5: started" "TRACE #[0-9]+ done"; do
    if grep -qE "^\[gmpi $r\] $want" "$dir/stderr.$r" 2>/dev/null; then
      echo "trace_check: rank $r logs '$want'"
    else
      echo "trace_check: FAIL: rank $r never logs '$want'"
      failures=$((failures + 1))
    fi
  done
done
exit $((failures != 0))
