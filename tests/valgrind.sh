#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# One 2-rank run of a test under valgrind memcheck: no invalid access and no definite leak from
# gmpi's own code (MPI's and its runtime's are suppressed). Usage: valgrind.sh MPIEXEC TEST [ARGS]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
mpiexec=$1
shift
supp=(--suppressions="$here/valgrind-mpi.supp")
[ -f /usr/share/openmpi/openmpi-valgrind.supp ] &&
  supp+=(--suppressions=/usr/share/openmpi/openmpi-valgrind.supp)
extra=()
"$mpiexec" --version 2>/dev/null | grep -qE "Open MPI|OpenRTE" && extra+=(--oversubscribe)
exec "$mpiexec" -n 2 "${extra[@]}" valgrind -q --leak-check=full --show-leak-kinds=definite \
  --errors-for-leak-kinds=definite "${supp[@]}" --error-exitcode=9 "$@"
